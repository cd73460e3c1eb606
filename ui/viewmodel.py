"""Pure functions from API answers to what the console draws (no Streamlit, no I/O)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ui.models import (
    ActionItem,
    FleetSummary,
    GpuHealth,
    Incident,
    JobSummary,
    NodeHealth,
    TimelineEntry,
)

STATE_COLOURS = {
    "healthy": "#2e7d32",
    "suspect": "#f9a825",
    "lost": "#c62828",
    "isolated": "#6a1b9a",
    "inspection": "#1565c0",
}
SEVERITIES = ("critical", "error", "warning", "info")
SEVERITY_ICONS = {"critical": "🔴", "error": "🟠", "warning": "🟡", "info": "🔵"}
LIVE = ("open", "mitigating")
REFRESH_CHOICES = (0, 5, 15, 30, 60, 300)
ROLES = ("viewer", "operator", "admin")  # each includes the ones before it
_CULPRIT = "#c62828"
_STALLED_STYLE = 'style="filled,bold", fillcolor="#fff3e0", color="#ef6c00", penwidth=2'
_GROUP_STYLE = 'style=rounded, color="#90a4ae"'


def fleet_cells(gpus: Iterable[GpuHealth]) -> list[dict[str, Any]]:
    """Return one fleet-map cell per GPU: where it sits, its state, colour and tooltip."""
    return [
        {
            "node": g.node,
            "gpu": g.gpu,
            "state": g.state,
            "colour": STATE_COLOURS.get(g.state, "#9e9e9e"),
            "temp_c": g.temp_c,
            "power_w": g.power_w,
            "util": g.util,
            "incidents": ", ".join(g.incidents),
        }
        for g in sorted(gpus, key=lambda g: (g.node, g.gpu))
    ]


MAP_GPUS = 512  # up to this many GPUs the overview draws one cell per GPU; beyond, job groups


def group_rows(summary: FleetSummary) -> list[dict[str, Any]]:
    """Return one row per job group: size, GPUs per state, unhealthy share; worst first."""
    rows = []
    for g in summary.groups:
        unhealthy = g.gpus - g.states.get("healthy", 0)
        rows.append(
            {
                "job": g.group,
                "cluster": g.cluster,
                "nodes": g.nodes,
                "gpus": g.gpus,
                **{state: g.states.get(state, 0) for state in STATE_COLOURS},
                "unhealthy_pct": round(100 * unhealthy / g.gpus, 1) if g.gpus else 0.0,
                "temp_max_c": g.temp_max_c,
            }
        )
    return sorted(rows, key=lambda r: (-r["unhealthy_pct"], r["job"], r["cluster"]))


def group_bars(summary: FleetSummary) -> list[dict[str, Any]]:
    """Return (job, state, GPUs) rows of the GPUs needing attention, for a bar per group.

    Healthy GPUs are left out: next to a thousand healthy ones, a lost GPU would not show.
    """
    multi = len({g.cluster for g in summary.groups}) > 1
    return [
        {
            "job": f"{g.group} · {g.cluster}" if multi else g.group,
            "state": state,
            "order": order,
            "gpus": g.states.get(state, 0),
        }
        for g in summary.groups
        for order, state in enumerate(STATE_COLOURS)
        if state != "healthy" and g.states.get(state, 0)
    ]


def worst_nodes_first(nodes: Iterable[NodeHealth]) -> list[dict[str, Any]]:
    """Return a group's nodes as rows, unhealthy ones first (then by name)."""
    rank = {s: n for n, s in enumerate(reversed(STATE_COLOURS))}
    ordered = sorted(nodes, key=lambda n: (rank.get(n.state, 0), -n.gpus_unhealthy, n.node))
    return [
        {
            "node": n.node,
            "cluster": n.cluster,
            "state": n.state,
            "gpus": n.gpus,
            "gpus_unhealthy": n.gpus_unhealthy,
        }
        for n in ordered
    ]


STATE_MARKS = {
    "healthy": "green",
    "suspect": "orange",
    "lost": "red",
    "isolated": "violet",
    "inspection": "blue",
}


def state_line(states: dict[str, int]) -> str:
    """Return the GPU counts per state as one Markdown line (fits six-digit counts)."""
    return " · ".join(
        f":{STATE_MARKS.get(s, 'gray')}[**{n:,}**] {s}" for s, n in state_totals(states).items()
    )


def state_totals(states: dict[str, int]) -> dict[str, int]:
    """Return GPU counts per state, known states first (from an aggregated summary)."""
    known = {s: int(states.get(s, 0)) for s in STATE_COLOURS}
    return {**known, **{s: n for s, n in sorted(states.items()) if s not in known}}


def state_counts(gpus: Iterable[GpuHealth]) -> dict[str, int]:
    """Return how many GPUs are in each state, known states first."""
    counts = Counter(g.state for g in gpus)
    ordered = {s: counts.pop(s, 0) for s in STATE_COLOURS}
    return {**ordered, **dict(sorted(counts.items()))}


def severity_counts(incidents: Iterable[Incident]) -> dict[str, int]:
    """Return live (open or mitigating) incidents per severity, worst first."""
    counts = Counter(i.severity for i in incidents if i.status in LIVE)
    return {s: counts.get(s, 0) for s in SEVERITIES}


def incident_label(incident: Incident, width: int = 90) -> str:
    """Return a one-line button label: severity, category, where, summary."""
    where = incident.job or (incident.suspects[0].node if incident.suspects else None) or ""
    text = f"{SEVERITY_ICONS.get(incident.severity, '⚪')} {incident.category}"
    text += f" · {where}" if where else ""
    text += f" · {incident.summary}"
    return text if len(text) <= width else text[: width - 1] + "…"


def lifecycle_buttons(status: str) -> dict[str, bool]:
    """Return which incident buttons are enabled in a status (final states allow none)."""
    live = status in LIVE
    return {"acknowledge": live, "resolve": live, "false_alarm": live}


def role_allows(role: str | None, needed: str) -> bool:
    """Say whether a caller's role covers `needed` (None: unknown, so the API decides)."""
    if role is None:
        return True
    if role not in ROLES:
        return False
    return ROLES.index(role) >= ROLES.index(needed)


def action_decidable(action: ActionItem) -> bool:
    """Say whether an operator can still approve or reject an action."""
    return action.status == "pending"


def split_actions(actions: Iterable[ActionItem]) -> tuple[list[ActionItem], list[ActionItem]]:
    """Return (pending, taken) actions, newest first."""
    ordered = sorted(actions, key=lambda a: a.created_at or datetime.min.replace(tzinfo=UTC))
    ordered.reverse()
    return [a for a in ordered if action_decidable(a)], [
        a for a in ordered if not action_decidable(a)
    ]


def timeline_rows(timeline: Iterable[TimelineEntry]) -> list[dict[str, str]]:
    """Return the timeline as table rows, oldest first."""
    return [
        {"at": _utc_text(e.at), "event": e.event, "actor": e.actor, "detail": e.detail}
        for e in sorted(timeline, key=lambda e: e.at)
    ]


def suspect_rows(incident: Incident) -> list[dict[str, Any]]:
    """Return the ranked suspects as table rows."""
    return [
        {
            "#": n,
            "component": s.component,
            "where": where_text(s.node, s.gpu, s.rank, s.nic, s.switch),
            "score": s.score,
            "explanation": s.explanation,
        }
        for n, s in enumerate(incident.suspects, start=1)
    ]


def where_text(
    node: str | None,
    gpu: int | None,
    rank: int | None = None,
    nic: str | None = None,
    switch: str | None = None,
) -> str:
    """Return 'node-0001 GPU 2 (rank 10)'-style text for a component."""
    parts = [p for p in (node, None if gpu is None else f"GPU {gpu}", nic, switch) if p]
    text = " ".join(parts)
    if rank is not None:
        text += f" (rank {rank})" if text else f"rank {rank}"
    return text


def stalled_communicators(incident: Incident, neighbourhood: Mapping[str, Any] | None) -> set[str]:
    """Return the culprit's communicators that the incident names (its stalled collectives)."""
    if not neighbourhood:
        return set()
    text = " ".join(
        [incident.summary, *incident.evidence, *(s.explanation for s in incident.suspects)]
    )
    words = set(re.findall(r"[A-Za-z0-9_.:-]+", text))
    return {str(c["comm"]) for c in neighbourhood.get("communicators", []) if c["comm"] in words}


def parallel_groups_dot(neighbourhood: Mapping[str, Any], stalled: set[str]) -> str:
    """Return Graphviz DOT of the culprit's parallel groups: one cluster per communicator.

    The culprit rank is red; stalled communicators are shaded and drawn in bold.
    """
    culprit = neighbourhood.get("rank")
    lines = [
        "graph parallel_groups {",
        '  graph [rankdir=LR, fontname="Helvetica", fontsize=11, compound=true];',
        '  node [shape=box, style="rounded,filled", fillcolor="#eceff1", fontname="Helvetica",'
        " fontsize=10];",
    ]
    for n, comm in enumerate(neighbourhood.get("communicators", [])):
        cid = str(comm["comm"])
        hot = cid in stalled
        title = f"{comm['kind']} {cid} · {comm['size']} ranks" + (" · STALLED" if hot else "")
        style = _STALLED_STYLE if hot else _GROUP_STYLE
        lines.append(f"  subgraph cluster_{n} {{")
        lines.append(f"    label={_quote(title)};")
        lines.append(f"    graph [{style}];")
        for m in comm.get("members", []):
            rank = m["rank"]
            label = f"rank {rank}\\n{m.get('node') or '?'} GPU {m.get('gpu')}"
            attrs = f"label={_quote(label)}"
            if rank == culprit:
                attrs += f', fillcolor="{_CULPRIT}", fontcolor="white", penwidth=2'
            lines.append(f'    "c{n}_r{rank}" [{attrs}];')
        if comm["size"] > len(comm.get("members", [])):
            more = comm["size"] - len(comm["members"])
            lines.append(f'    "c{n}_more" [label="+{more} more", style=dashed];')
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines)


def onset_window(
    metrics: Iterable[Mapping[str, Any]],
    onset: datetime,
    before: timedelta = timedelta(minutes=3),
    after: timedelta = timedelta(minutes=2),
) -> list[dict[str, Any]]:
    """Return the GPU samples within [onset - before, onset + after], with a UTC `at`."""
    lo, hi = onset - before, onset + after
    out = []
    for row in metrics:
        at = datetime.fromtimestamp(int(row["ts"]), UTC)
        if lo <= at <= hi:
            out.append({**row, "at": at, "gpu": f"GPU {row['gpu']}"})
    return out


def ettr_rows(jobs: Iterable[JobSummary]) -> list[dict[str, Any]]:
    """Return each job's ETTR (percent), progress and layout."""
    return [
        {
            "job": j.job_id,
            "ettr_pct": None if j.ettr is None else round(100 * j.ettr, 1),
            "last_step": j.last_step,
            "last_step_at": _utc_text(j.last_step_at) if j.last_step_at else "",
            "median_step_s": j.median_step_s,
            "mfu_pct": None if j.mfu is None else round(100 * j.mfu, 1),
            "world_size": j.world_size,
            "layout": f"tp{j.tp} pp{j.pp} dp{j.dp}" + (f" ep{j.ep}" if j.ep > 1 else ""),
        }
        for j in jobs
    ]


def refresh_label(seconds: int) -> str:
    """Return how an auto-refresh choice reads."""
    if seconds == 0:
        return "off"
    return f"every {seconds} s" if seconds < 60 else f"every {seconds // 60} min"


def _utc_text(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _quote(text: str) -> str:
    return '"' + text.replace('"', '\\"') + '"'
