"""What the console draws, from recorded API answers (pure functions, no Streamlit)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ui.models import ActionItem, GpuHealth, Incident, IncidentDetail, JobSummary, TimelineEntry
from ui.viewmodel import (
    STATE_COLOURS,
    ettr_rows,
    fleet_cells,
    incident_label,
    lifecycle_buttons,
    onset_window,
    parallel_groups_dot,
    refresh_label,
    role_allows,
    severity_counts,
    split_actions,
    stalled_communicators,
    state_counts,
    suspect_rows,
    timeline_rows,
    where_text,
)

RECORDED = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "console" / "api_responses.json").read_text()
)
T0 = datetime(2026, 11, 2, 8, 1, tzinfo=UTC)


def detail(name: str) -> IncidentDetail:
    return IncidentDetail.model_validate(RECORDED[name])


def incidents() -> list[Incident]:
    return [Incident.model_validate(i) for i in RECORDED["incidents"]["items"]]


def make_action(id: str, status: str, minute: int) -> ActionItem:
    return ActionItem(
        id=id, kind="isolate_gpu", status=status, created_at=T0 + timedelta(minutes=minute)
    )


def test_fleet_cells_place_every_gpu_with_its_state_colour():
    gpus = [GpuHealth.model_validate(g) for g in RECORDED["gpus"]["items"]]
    cells = fleet_cells(reversed(gpus))
    assert len(cells) == 64
    assert [(c["node"], c["gpu"]) for c in cells] == sorted((g.node, g.gpu) for g in gpus)
    (lost,) = [c for c in cells if c["state"] == "lost"]
    assert (lost["node"], lost["gpu"], lost["colour"]) == ("node-0001", 2, STATE_COLOURS["lost"])
    counts = state_counts(gpus)
    assert list(counts)[:5] == list(STATE_COLOURS) and sum(counts.values()) == 64


def test_unknown_states_are_counted_after_the_known_ones():
    gpu = GpuHealth(node="n", gpu=0, state="draining", last_seen=T0)
    assert list(state_counts([gpu]))[-1] == "draining"
    assert fleet_cells([gpu])[0]["colour"] == "#9e9e9e"


def test_severity_counts_only_live_incidents():
    live = incidents()
    closed = live[0].model_copy(update={"status": "resolved"})
    assert severity_counts(live) == {"critical": 2, "error": 0, "warning": 0, "info": 0}
    assert severity_counts([closed, live[1]])["critical"] == 1


def test_incident_label_names_category_job_and_fits():
    hang = detail("incident_hang").incident
    label = incident_label(hang, width=60)
    assert label.startswith("🔴 hang · j2 · hang on job j2") and len(label) == 60
    assert label.endswith("…")


def test_lifecycle_buttons_only_while_the_incident_is_live():
    assert all(lifecycle_buttons("open").values()) and all(lifecycle_buttons("mitigating").values())
    assert not any(lifecycle_buttons("resolved").values())
    assert not any(lifecycle_buttons("false_alarm").values())


def test_split_actions_puts_pending_first_newest_first():
    pending, taken = split_actions(
        [
            make_action("a", "done", 1),
            make_action("b", "pending", 2),
            make_action("c", "pending", 3),
        ]
    )
    assert [a.id for a in pending] == ["c", "b"] and [a.id for a in taken] == ["a"]


def test_timeline_rows_are_oldest_first_in_utc():
    rows = timeline_rows(
        [
            TimelineEntry(at=T0 + timedelta(minutes=2), event="resolved", actor="op", detail="x"),
            TimelineEntry(at=T0, event="detected", actor="diagnosis"),
        ]
    )
    assert [r["event"] for r in rows] == ["detected", "resolved"]
    assert rows[0]["at"] == "2026-11-02 08:01:00 UTC"


def test_suspects_say_where_and_why():
    (row,) = suspect_rows(detail("incident_hang").incident)
    assert row["where"] == "node-0005 GPU 5 (rank 13)" and row["score"] == 1.0
    assert "has not joined all_reduce" in row["explanation"]
    assert where_text(None, None, rank=3) == "rank 3"


def test_hang_highlights_the_stalled_communicator_the_incident_names():
    hang = detail("incident_hang")
    stalled = stalled_communicators(hang.incident, hang.neighbourhood)
    assert stalled == {"tp-p0-d1"}
    dot = parallel_groups_dot(hang.neighbourhood or {}, stalled)
    assert dot.count("{") == dot.count("}")
    assert dot.count("subgraph cluster_") == 2
    assert 'label="tp tp-p0-d1 · 8 ranks · STALLED"' in dot
    assert 'label="dp dp-p0-t5 · 4 ranks"' in dot
    culprit = [line for line in dot.splitlines() if "#c62828" in line]
    assert len(culprit) == 2 and all('"rank 13\\nnode-0005 GPU 5"' in line for line in culprit)


def test_a_hardware_incident_names_no_stalled_collective():
    xid = detail("incident_gpu.hardware")
    assert stalled_communicators(xid.incident, xid.neighbourhood) == set()
    assert stalled_communicators(xid.incident, None) == set()
    assert "STALLED" not in parallel_groups_dot(xid.neighbourhood or {}, set())


def test_capped_members_are_summarised():
    hood = {
        "rank": 0,
        "communicators": [
            {"comm": "dp", "kind": "dp", "size": 5, "members": [{"rank": 0, "node": "n", "gpu": 0}]}
        ],
    }
    assert '"+4 more"' in parallel_groups_dot(hood, set())


def test_onset_window_keeps_the_samples_around_the_onset():
    metrics = RECORDED["node_1"]["metrics"]
    onset = datetime.fromtimestamp(metrics[0]["ts"], UTC) + timedelta(seconds=60)
    rows = onset_window(metrics, onset, before=timedelta(seconds=30), after=timedelta(seconds=10))
    assert rows
    assert all(
        onset - timedelta(seconds=30) <= r["at"] <= onset + timedelta(seconds=10) for r in rows
    )
    assert {r["gpu"] for r in rows} == {"GPU 1", "GPU 2"}


def test_ettr_rows_in_percent():
    jobs = [JobSummary.model_validate(j) for j in RECORDED["jobs"]["items"]]
    first = ettr_rows(jobs)[0]
    assert first["job"] == "j1" and first["ettr_pct"] == 33.7 and first["layout"] == "tp8 pp1 dp4"
    assert ettr_rows([JobSummary(job_id="x", world_size=1)])[0]["ettr_pct"] is None


def test_refresh_labels():
    assert [refresh_label(s) for s in (0, 15, 300)] == ["off", "every 15 s", "every 5 min"]


def test_roles_include_the_ones_below_and_an_unknown_role_leaves_it_to_the_api():
    assert role_allows("admin", "operator") and role_allows("operator", "operator")
    assert not role_allows("viewer", "operator") and not role_allows("operator", "admin")
    assert role_allows(None, "admin")  # /v1/me unanswered: show it, the API decides
    assert not role_allows("intern", "viewer")
