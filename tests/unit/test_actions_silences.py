"""Maintenance-window matching and validation (no store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from actions.holds import plan_nodes
from actions.model import ActionKind, ActionPlan, Risk, Target
from actions.silences import MaintenanceWindow, Subject, WindowSpec, first_match, matches

NOW = datetime(2026, 12, 2, 4, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def window(**matchers: str) -> MaintenanceWindow:
    start = matchers.pop("start", None)
    return MaintenanceWindow(
        id=f"mw-{len(matchers)}",
        starts_at=NOW - HOUR if start is None else NOW + HOUR,
        ends_at=NOW + 2 * HOUR,
        reason="rack 12 firmware",
        author="alice",
        created_at=NOW - HOUR,
        **matchers,
    )


def subject(node: str = "gpu-0101", job: str = "llama-70b", cluster: str = "prod-a") -> Subject:
    return Subject((node,), job, cluster, "gpu.hardware")


def test_every_given_matcher_must_match():
    w = window(node="gpu-01*", category="gpu.*")
    assert matches(w, subject())
    assert not matches(w, subject(node="gpu-0201"))
    assert not matches(w.model_copy(update={"category": "network"}), subject())
    assert matches(window(job="llama-*", cluster="prod-a"), subject())
    assert not matches(window(job="llama-*", cluster="prod-b"), subject())


def test_globs_are_case_sensitive_and_whole_name():
    assert not matches(window(node="GPU-0101"), subject())
    assert not matches(window(node="gpu-01"), subject()), "a prefix is not a match"
    assert matches(window(node="gpu-010[0-9]"), subject())


def test_a_multi_node_action_matches_when_any_node_is_covered():
    s = Subject(("gpu-0201", "gpu-0101"), "", "", "network")
    assert matches(window(node="gpu-01*"), s)
    assert not matches(window(node="gpu-03*"), s)


def test_only_active_windows_match():
    covering = window(node="gpu-0101")
    assert first_match([covering], subject(), NOW) is covering
    assert first_match([covering], subject(), NOW + 2 * HOUR) is None, "end is exclusive"
    assert first_match([covering], subject(), NOW - HOUR) is covering, "start is inclusive"
    assert first_match([window(node="gpu-0101", start="later")], subject(), NOW) is None
    deleted = covering.model_copy(update={"deleted": True, "deleted_by": "bob"})
    assert first_match([deleted], subject(), NOW) is None


def test_a_window_needs_a_matcher_and_an_end_after_its_start():
    with pytest.raises(ValidationError, match="at least one matcher"):
        WindowSpec(starts_at=NOW, ends_at=NOW + HOUR, reason="x")
    with pytest.raises(ValidationError, match="after starts_at"):
        WindowSpec(node="n", starts_at=NOW, ends_at=NOW, reason="x")
    with pytest.raises(ValidationError):
        WindowSpec(node="n; rm -rf /", starts_at=NOW, ends_at=NOW + HOUR, reason="x")
    with pytest.raises(ValidationError):
        WindowSpec(node="n", starts_at=NOW.replace(tzinfo=None), ends_at=NOW + HOUR, reason="x")
    freeze = WindowSpec(cluster="*", starts_at=NOW, ends_at=NOW + HOUR, reason="change freeze")
    assert matches(freeze, subject(cluster=""))


def test_plan_nodes_lists_a_switch_isolation_s_nodes_once():
    plan = ActionPlan(
        action_id="act-1",
        incident_id="inc-1",
        kind=ActionKind.ISOLATE_SWITCH,
        target=Target(switch="leaf-3", node="gpu-1"),
        risk=Risk.HIGH,
        executor="slurm",
        step=0,
        rule="r",
        what="w",
        why="y",
        params={"nodes": ["gpu-1", "gpu-2"]},
        created_at=NOW,
    )
    assert plan_nodes(plan) == ("gpu-1", "gpu-2")
