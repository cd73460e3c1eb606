"""Scoring of diagnosed incidents against the twin's ground truth (truth.json entries).

Top-1 localization: the incident's first suspect names the injected component (the GPU of a
GPU or rank fault, the NIC, one of the failed switches, the node of a host fault; a
job-level fault matches an application incident of the job or a job suspect).

Healthy nodes blamed per incident: for each incident matched to a fault, the number of
distinct nodes named by its suspects (all of them, not only the first) that are not the
faulty component's nodes. The faulty nodes are the node holding the GPU, rank, NIC or host
resource; for a switch, the nodes cabled to it (their links went down with it); for a
job-level fault, none (any node named is healthy). A suspect without a node (a switch, the
job) names no node. ByteRobust evicts whole parallel groups, about 6-7 healthy machines
per decision; the target is <= 0.1.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from diagnosis.incidents import Incident


def matches(incident: Incident, truth: dict[str, Any]) -> bool:
    """Whether an incident's top suspect names the injected component."""
    comp = truth["component"]
    if not incident.suspects:
        return comp["type"] == "job" and incident.job == comp["job"]
    top = incident.suspects[0]
    kind = comp["type"]
    if kind in ("gpu", "rank"):
        return top.node == comp["node"] and top.gpu == comp["gpu"]
    if kind == "nic":
        return top.node == comp["node"] and top.nic == comp["nic"]
    if kind == "switch":
        return top.switch in comp["switches"]
    if kind == "node":
        return top.node == comp["node"]
    return top.component.value == "job" or incident.blame.value == "application"


def faulty_nodes(truth: dict[str, Any]) -> set[str]:
    """Return the nodes the injected component lives on (or is cabled to, for a switch)."""
    comp = truth["component"]
    if comp["type"] == "switch":
        return set(comp.get("nodes", []))
    if "node" in comp:
        return {comp["node"]}
    return set()


def healthy_nodes_blamed(incident: Incident, truth: dict[str, Any]) -> int:
    """Return how many distinct healthy nodes an incident's suspects name."""
    named = {s.node for s in incident.suspects if s.node is not None}
    return len(named - faulty_nodes(truth))


def percentile(values: list[float], q: float) -> float | None:
    """Return the nearest-rank q-th percentile (0 < q <= 100) of values, None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def _blamed(runs: list[dict[str, Any]]) -> list[int]:
    return [r["healthy_nodes_blamed"] for r in runs if r.get("healthy_nodes_blamed") is not None]


def summarise_kinds(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Return per fault kind: recall, top-1 precision, latency p50/p99/max, blame counts."""
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if "kind" in run:
            by_kind[run["kind"]].append(run)
    kinds = {}
    for kind, rs in sorted(by_kind.items()):
        lat = [r["latency_s"] for r in rs if r["latency_s"] is not None]
        blamed = _blamed(rs)
        kinds[kind] = {
            "runs": len(rs),
            "recall": round(sum(r["detected"] for r in rs) / len(rs), 2),
            "top1_precision": round(sum(r["localized"] for r in rs) / len(rs), 2),
            "latency_p50_s": percentile(lat, 50),
            "latency_max_s": max(lat) if lat else None,
            "extra_incidents": sum(r["extra_incidents"] for r in rs),
            "latency_p99_s": percentile(lat, 99),
            "gpus": sorted({r["gpus"] for r in rs}),
            "healthy_nodes_blamed_per_incident": round(sum(blamed) / len(blamed), 3)
            if blamed
            else None,
            "healthy_nodes_blamed_max": max(blamed) if blamed else None,
        }
    return kinds


def summarise_blame(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return healthy nodes blamed per matched incident over every fault run."""
    blamed = _blamed(runs)
    return {
        "matched_incidents": len(blamed),
        "healthy_nodes_blamed_total": sum(blamed),
        "healthy_nodes_blamed_per_incident": round(sum(blamed) / len(blamed), 3)
        if blamed
        else None,
        "healthy_nodes_blamed_max": max(blamed) if blamed else None,
    }


def summarise_cpu(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return diagnosis and localization CPU time per run, grouped by cluster size."""
    by_size: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        by_size[run["gpus"]].append(run)
    out = {}
    for gpus, rs in sorted(by_size.items()):
        diag = [r["diagnose_cpu_s"] for r in rs]
        calls = [c for r in rs for c in r.get("localization", {}).get("calls_cpu_s", [])]
        out[str(gpus)] = {
            "runs": len(rs),
            "sim_cpu_s_total": round(sum(r.get("sim_cpu_s", 0.0) for r in rs), 1),
            "diagnose_cpu_s_p50": percentile(diag, 50),
            "diagnose_cpu_s_max": max(diag),
            "diagnose_cpu_s_total": round(sum(diag), 1),
            "localization_calls": len(calls),
            "localization_cpu_s_p50": percentile(calls, 50),
            "localization_cpu_s_p99": percentile(calls, 99),
            "localization_cpu_s_max": max(calls) if calls else None,
        }
    return out


def summarise_random(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the drawn scenarios' results: per kind, and one incident per fault over any window.

    A run is "one incident" when its fault was localized and nothing else was opened; late
    runs are those whose job crashed more than five minutes (the correlator's window) after
    the onset, e.g. the NCCL watchdog firing 5-30 minutes after a hang.
    """
    late = [r for r in runs if (r.get("crash_after_onset_s") or 0) > 300]
    one = [r for r in late if r["localized"] and r["extra_incidents"] == 0]
    lat = [r["latency_s"] for r in runs if r["latency_s"] is not None]
    return {
        "runs": len(runs),
        "gpus": sorted({r["gpus"] for r in runs}),
        "recall": round(sum(r["detected"] for r in runs) / len(runs), 3),
        "top1_precision": round(sum(r["localized"] for r in runs) / len(runs), 3),
        "extra_incidents": sum(r["extra_incidents"] for r in runs),
        "latency_p50_s": percentile(lat, 50),
        "latency_max_s": max(lat) if lat else None,
        "late_consequence_runs": len(late),
        "late_consequence_one_incident": len(one),
        "late_crash_after_onset_s": sorted(r["crash_after_onset_s"] for r in late),
        "kinds": summarise_kinds(runs),
        "misses": [
            {"scenario": r["scenario"], "kind": r["kind"], "incidents": r["incidents"]}
            for r in runs
            if not r["localized"] or r["extra_incidents"]
        ],
    }


SLOWDOWN_BINS = ((1.0, 1.03), (1.03, 1.05), (1.05, 1.1), (1.1, 1.2), (1.2, 1.3), (1.3, 9.0))
FAILSLOW_DEADLINE_S = 600.0  # detected and localized within ten minutes of the onset


def _failslow_row(rs: list[dict[str, Any]]) -> dict[str, Any]:
    found = [
        r
        for r in rs
        if r["localized"] and r["latency_s"] is not None and r["latency_s"] <= FAILSLOW_DEADLINE_S
    ]
    lat = [r["latency_s"] for r in found]
    return {
        "runs": len(rs),
        "detected": round(sum(r["detected"] for r in rs) / len(rs), 3) if rs else None,
        "localized_within_10_min": round(len(found) / len(rs), 3) if rs else None,
        "latency_p50_s": percentile(lat, 50),
        "latency_max_s": max(lat) if lat else None,
        "extra_incidents": sum(r["extra_incidents"] for r in rs),
    }


def summarise_failslow(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return fail-slow detection and latency by job-level slowdown, TP size and part.

    The job-level slowdown is measured from each run's step times (median after the onset
    over median before); the GPU's own slowdown is what the fault injected (over its own
    speed). `runs_by_job_slowdown` rows: job slowdown, part, TP, GPU slowdown, localized,
    latency (s).
    """
    measured = [r for r in runs if r.get("job_slowdown") is not None]
    gpu = [r for r in measured if r.get("component", "gpu") == "gpu"]
    by_bin = {}
    for low, high in SLOWDOWN_BINS:
        rs = [r for r in measured if low <= r["job_slowdown"] < high]
        by_bin[f"{low:.2f}-{high:.2f}"] = _failslow_row(rs)
    by_tp: dict[str, Any] = {}
    for tp in sorted({r["params"]["layout"]["tp"] for r in gpu}):
        rs = [r for r in gpu if r["params"]["layout"]["tp"] == tp]
        by_tp[str(tp)] = {
            "all": _failslow_row(rs),
            "job_slowdown_at_least_5pct": _failslow_row(
                [r for r in rs if r["job_slowdown"] >= 1.05]
            ),
            "gpu_slowdowns": sorted(r["gpu_slowdown"] for r in rs),
        }
    return {
        "deadline_s": FAILSLOW_DEADLINE_S,
        "by_job_slowdown": by_bin,
        "job_slowdown_at_least_5pct": _failslow_row(
            [r for r in measured if r["job_slowdown"] >= 1.05]
        ),
        "by_tp": by_tp,
        "by_component": _by_component(measured),
        "runs_by_job_slowdown": sorted(
            (
                r["job_slowdown"],
                r.get("component", "gpu"),
                r["params"]["layout"]["tp"],
                r.get("gpu_slowdown"),
                r["localized"],
                r["latency_s"],
            )
            for r in measured
        ),
    }


def _by_component(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return fail-slow results per slow part (GPU, NIC, host), all and >= 5% job slowdown.

    A NIC's runs are also split by whether more than data-parallel traffic crosses nodes
    (pipeline or expert parallelism): with data parallelism alone every member of the slowed
    ring fits equally, so timing cannot name one NIC.
    """
    out: dict[str, Any] = {}
    for part in sorted({r.get("component", "gpu") for r in runs}):
        rs = [r for r in runs if r.get("component", "gpu") == part]
        row: dict[str, Any] = {
            "all": _failslow_row(rs),
            "job_slowdown_at_least_5pct": _failslow_row(
                [r for r in rs if r["job_slowdown"] >= 1.05]
            ),
        }
        if part == "nic":
            layout = [r["params"]["layout"] for r in rs]
            beyond = [
                r for r, lay in zip(rs, layout, strict=True) if lay["pp"] > 1 or lay["ep"] > 1
            ]
            only_dp = [r for r in rs if r not in beyond]
            row["pp_or_ep_crosses_nodes_at_least_5pct"] = _failslow_row(
                [r for r in beyond if r["job_slowdown"] >= 1.05]
            )
            row["only_dp_crosses_nodes_at_least_5pct"] = _failslow_row(
                [r for r in only_dp if r["job_slowdown"] >= 1.05]
            )
        out[part] = row
    return out
