"""The shipped Prometheus files pass Debian's promtool: rules, their unit tests, the config."""

from __future__ import annotations

import subprocess

import pytest

from tests.integration.conftest import REPO
from tests.integration.prometheus_helpers import PROMTOOL

pytestmark = pytest.mark.integration

PROMETHEUS_DIR = REPO / "deploy" / "prometheus"


@pytest.mark.parametrize(
    "args",
    [
        ["check", "rules", "rules.yml"],
        ["test", "rules", "rules_test.yml"],
        ["check", "config", "prometheus.yml"],
    ],
    ids=["check-rules", "test-rules", "check-config"],
)
def test_promtool_accepts(args: list[str]) -> None:
    assert PROMTOOL.exists(), "apt-get install prometheus (deploy/dev.sh installs it)"
    run = subprocess.run(
        [str(PROMTOOL), *args], cwd=PROMETHEUS_DIR, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "SUCCESS" in run.stdout + run.stderr


def test_a_broken_rule_is_refused(tmp_path) -> None:
    """promtool really checks: an expression that does not parse fails the check."""
    bad = tmp_path / "rules.yml"
    bad.write_text(
        "groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: rate(up[5m]\n"
    )
    run = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(bad)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode != 0 and "parse error" in run.stdout + run.stderr
