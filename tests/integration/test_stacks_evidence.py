"""py-spy dumps as one more signal: `trainguard stacks --incident` adds the outlier stacks of a
real hang dump to the incident's evidence in the ClickHouse server (a new revision)."""

from __future__ import annotations

import pytest

from diagnosis.incident_store import load_incident, save_incidents
from tests.actions_builders import make_incident
from tests.readers_fixtures import REAL_SAMPLES
from trainguard.cli import main

pytestmark = pytest.mark.integration
BLOOM = REAL_SAMPLES / "pyspy_hang_dump_bloom176b_eval_deadlock.txt"


def test_outlier_stacks_become_evidence_of_the_incident(services, server_store, monkeypatch):
    for key, value in {
        "TG_CLICKHOUSE_MODE": "server",
        "TG_CLICKHOUSE_HOST": services.clickhouse_host,
        "TG_CLICKHOUSE_PORT": str(services.clickhouse_port),
        "TG_CLICKHOUSE_DATABASE": server_store.database,
    }.items():
        monkeypatch.setenv(key, value)
    incident = make_incident(9)
    save_incidents(server_store, [incident])
    assert main(["stacks", str(BLOOM), "--incident", incident.id]) == 0
    after = load_incident(server_store, incident.id)
    (added,) = [e for e in after.evidence if e.startswith("py-spy: ")]
    assert "outlier group" in added and after.revision == incident.revision + 1
    assert main(["stacks", str(BLOOM), "--incident", incident.id]) == 0  # again: no duplicate
    assert load_incident(server_store, incident.id).evidence == after.evidence
    assert main(["stacks", str(BLOOM), "--incident", "inc-nope"]) == 2
