from datetime import UTC, datetime
from typing import Any

from bench.scoring import (
    faulty_nodes,
    healthy_nodes_blamed,
    matches,
    percentile,
    summarise_blame,
    summarise_failslow,
    summarise_kinds,
    summarise_random,
)
from diagnosis.incidents import Incident
from diagnosis.model import Action, Blame, Category, ComponentKind, Suspect


def make_suspect(node: str | None = "n1", gpu: int | None = 3, **kw: Any) -> Suspect:
    kw.setdefault("component", ComponentKind.GPU)
    return Suspect(score=0.9, node=node, gpu=gpu, explanation="test", **kw)


def make_incident(*suspects: Suspect, job: str | None = "job") -> Incident:
    return Incident(
        id="i1",
        category=Category.GPU_HARDWARE,
        blame=Blame.INFRASTRUCTURE,
        job=job,
        detected_at=datetime(2026, 12, 1, tzinfo=UTC),
        suspects=list(suspects),
        summary="test",
        action=Action.ISOLATE_GPU,
    )


GPU_TRUTH = {"component": {"type": "gpu", "node": "n1", "gpu": 3}}
SWITCH_TRUTH = {"component": {"type": "switch", "switches": ["leaf-0-1"], "nodes": ["n1", "n2"]}}
JOB_TRUTH = {"component": {"type": "job", "job": "job"}}


def test_only_the_faulty_gpu_named_blames_no_healthy_node() -> None:
    incident = make_incident(make_suspect(), make_suspect(gpu=5))
    assert matches(incident, GPU_TRUTH)
    assert healthy_nodes_blamed(incident, GPU_TRUTH) == 0


def test_distinct_other_nodes_count_once_each() -> None:
    incident = make_incident(
        make_suspect(), make_suspect("n2", 0), make_suspect("n2", 1), make_suspect("n7", 0)
    )
    assert healthy_nodes_blamed(incident, GPU_TRUTH) == 2


def test_nodes_cabled_to_a_failed_switch_are_not_healthy() -> None:
    incident = make_incident(
        make_suspect(None, None, component=ComponentKind.SWITCH, switch="leaf-0-1"),
        make_suspect("n2", None, component=ComponentKind.NIC, nic="mlx5_1"),
        make_suspect("n9", None, component=ComponentKind.NIC, nic="mlx5_1"),
    )
    assert matches(incident, SWITCH_TRUTH)
    assert faulty_nodes(SWITCH_TRUTH) == {"n1", "n2"}
    assert healthy_nodes_blamed(incident, SWITCH_TRUTH) == 1


def test_any_node_named_for_a_job_fault_is_healthy() -> None:
    incident = make_incident(make_suspect(None, None, component=ComponentKind.JOB))
    assert healthy_nodes_blamed(incident, JOB_TRUTH) == 0
    assert healthy_nodes_blamed(make_incident(make_suspect("n4", 0)), JOB_TRUTH) == 1


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([7.0], 99) == 7.0
    assert percentile([], 50) is None


def make_run(kind: str, latency: float | None, blamed: int | None) -> dict[str, Any]:
    return {
        "kind": kind,
        "gpus": 64,
        "detected": latency is not None,
        "localized": blamed is not None,
        "latency_s": latency,
        "extra_incidents": 0,
        "healthy_nodes_blamed": blamed,
    }


def test_summaries_average_blame_over_matched_incidents_only() -> None:
    runs = [make_run("hang", 10.0, 0), make_run("hang", 12.0, 3), make_run("hang", None, None)]
    kind = summarise_kinds(runs)["hang"]
    assert kind["recall"] == 0.67 and kind["top1_precision"] == 0.67
    assert kind["latency_p50_s"] == 10.0 and kind["latency_p99_s"] == 12.0
    assert kind["healthy_nodes_blamed_per_incident"] == 1.5
    overall = summarise_blame(runs)
    assert overall["matched_incidents"] == 2 and overall["healthy_nodes_blamed_max"] == 3


def slow_run(tp: int, job: float, localized: bool, latency: float | None) -> dict[str, Any]:
    return {
        "scenario": f"failslow/tp{tp}/1",
        "kind": "straggler",
        "gpus": 256,
        "detected": latency is not None,
        "localized": localized,
        "latency_s": latency,
        "extra_incidents": 0,
        "job_slowdown": job,
        "gpu_slowdown": job + 0.1,
        "params": {"layout": {"tp": tp}},
    }


def test_failslow_is_counted_by_job_slowdown_and_tp_within_ten_minutes():
    runs = [
        slow_run(2, 1.01, False, None),
        slow_run(2, 1.07, True, 120.0),
        slow_run(4, 1.08, True, 700.0),  # found, but after the ten minutes
        slow_run(8, 1.25, True, 30.0),
    ]
    out = summarise_failslow(runs)
    assert out["by_job_slowdown"]["1.00-1.03"]["localized_within_10_min"] == 0.0
    assert out["by_job_slowdown"]["1.05-1.10"] == {
        "runs": 2,
        "detected": 1.0,
        "localized_within_10_min": 0.5,
        "latency_p50_s": 120.0,
        "latency_max_s": 120.0,
        "extra_incidents": 0,
    }
    assert out["job_slowdown_at_least_5pct"]["localized_within_10_min"] == round(2 / 3, 3)
    assert out["by_tp"]["2"]["job_slowdown_at_least_5pct"]["runs"] == 1
    assert out["by_tp"]["8"]["all"]["latency_p50_s"] == 30.0


def test_failslow_parts_are_reported_apart_and_nics_by_what_crosses_nodes():
    def nic(pp: int, localized: bool) -> dict[str, Any]:
        run = slow_run(8, 1.12, localized, 40.0)
        return {**run, "component": "nic", "params": {"layout": {"tp": 8, "pp": pp, "ep": 1}}}

    runs = [slow_run(4, 1.08, True, 50.0), nic(4, True), nic(1, False), nic(1, False)]
    out = summarise_failslow(runs)
    assert set(out["by_tp"]) == {"4"}  # NIC runs do not count as a GPU under TP 8
    parts = out["by_component"]
    assert parts["gpu"]["all"]["localized_within_10_min"] == 1.0
    assert parts["nic"]["all"]["runs"] == 3
    assert parts["nic"]["pp_or_ep_crosses_nodes_at_least_5pct"]["localized_within_10_min"] == 1.0
    assert parts["nic"]["only_dp_crosses_nodes_at_least_5pct"]["localized_within_10_min"] == 0.0


def test_random_runs_count_late_consequences_as_one_incident_or_not():
    base = {"kind": "hang", "gpus": 2048, "detected": True, "latency_s": 20.0, "incidents": 1}
    runs = [
        {
            **base,
            "scenario": "random/1",
            "localized": True,
            "extra_incidents": 0,
            "crash_after_onset_s": 900.0,
        },
        {
            **base,
            "scenario": "random/2",
            "localized": True,
            "extra_incidents": 1,
            "crash_after_onset_s": 1500.0,
        },
        {
            **base,
            "scenario": "random/3",
            "localized": True,
            "extra_incidents": 0,
            "crash_after_onset_s": 60.0,
        },
    ]
    out = summarise_random(runs)
    assert (out["late_consequence_runs"], out["late_consequence_one_incident"]) == (2, 1)
    assert [m["scenario"] for m in out["misses"]] == ["random/2"]
