"""Incident: lifecycle buttons, timeline, suspects and evidence, parallel groups, metrics
around the onset, and the actions taken and pending."""

from __future__ import annotations

import math
from datetime import timedelta

import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.models import IncidentDetail
from ui.session import allowed, current_cluster, flash, go, needs, section
from ui.viewmodel import (
    SEVERITY_ICONS,
    lifecycle_buttons,
    onset_window,
    parallel_groups_dot,
    split_actions,
    stalled_communicators,
    suspect_rows,
    timeline_rows,
)
from ui.views.actions import action_row, decide
from ui.views.charts import gpu_charts

_BEFORE, _AFTER = timedelta(minutes=3), timedelta(minutes=2)


def render(client: ApiClient) -> None:
    """Draw the incident the URL names, or a chooser."""
    incident_id = st.query_params.get("id")
    if not incident_id:
        _choose(client)
        return
    detail: IncidentDetail | None = None
    with section("Incident"):
        detail = client.incident(incident_id)
    if detail is None:
        if st.button("Back to the overview"):
            go("overview")
        return
    _header(detail)
    with section("Lifecycle"):
        _lifecycle(client, detail)
    tab_what, tab_where, tab_metrics, tab_actions = st.tabs(
        ["Timeline and suspects", "Parallel groups", "Metrics around the onset", "Actions"]
    )
    with tab_what:
        _timeline_and_suspects(detail)
    with tab_where:
        _groups(detail)
    with tab_metrics, section("Metrics"):
        _metrics(client, detail)
    with tab_actions, section("Actions"):
        _actions(client, detail.incident.id)


def _choose(client: ApiClient) -> None:
    st.title("Incident")
    with section("Incidents"):
        items = client.incidents(limit=100, cluster=current_cluster()).items
        if not items:
            st.info("No incidents yet.")
            return
        labels = {i.id: f"{i.id} · {i.status} · {i.summary[:80]}" for i in items}
        chosen = st.selectbox("Incident", list(labels), format_func=labels.__getitem__, index=None)
        if chosen:
            go("incident", id=chosen)


def _header(detail: IncidentDetail) -> None:
    inc = detail.incident
    st.title(f"{SEVERITY_ICONS.get(inc.severity, '')} {inc.category} · {inc.id}")
    st.markdown(f"**{inc.summary}**")
    # values as long as "mitigating" or "infrastructure" fit a laptop-wide page uncut
    cols = st.columns([1.5, 1.2, 1.5, 1.0, 0.8])
    cols[0].metric("Status", inc.status)
    cols[1].metric("Severity", inc.severity)
    cols[2].metric("Blame", inc.blame)
    cols[3].metric("Job", inc.job or "-")
    cols[4].metric("Findings", inc.findings)
    st.markdown(f"Recommended action: `{inc.action}`")
    acked = ", ".join(detail.acknowledged_by)
    st.caption(
        f"Detected {inc.detected_at:%Y-%m-%d %H:%M:%S} UTC · revision {inc.revision}"
        + (f" · acknowledged by {acked}" if acked else "")
        + (f" · {inc.status_reason}" if inc.status_reason else "")
    )


def _lifecycle(client: ApiClient, detail: IncidentDetail) -> None:
    inc = detail.incident
    if not allowed("operator"):
        needs("operator", "Acknowledge, resolve and false alarm")
        return
    enabled = lifecycle_buttons(inc.status)
    ack, res, fa = st.columns(3)
    with ack.form("acknowledge", border=True):
        note = st.text_input("Note", placeholder="on it, looking at the node")
        if st.form_submit_button("Acknowledge", disabled=not enabled["acknowledge"]):
            client.acknowledge(inc.id, note)
            flash("success", "Acknowledged.")
            st.rerun()
    with res.form("resolve", border=True):
        reason = st.text_input("Resolution", placeholder="GPU replaced, job restarted")
        if st.form_submit_button("Resolve", disabled=not enabled["resolve"]):
            _close(client, inc.id, reason, resolve=True)
    with fa.form("false_alarm", border=True):
        why = st.text_input("Why it is a false alarm", placeholder="planned maintenance")
        if st.form_submit_button("False alarm", disabled=not enabled["false_alarm"]):
            _close(client, inc.id, why, resolve=False)


def _close(client: ApiClient, incident_id: str, reason: str, resolve: bool) -> None:
    if not reason.strip():
        st.warning("Say why (the reason is kept with the incident).")
        return
    if resolve:
        client.resolve(incident_id, reason.strip())
    else:
        client.false_alarm(incident_id, reason.strip())
    flash("success", "Resolved." if resolve else "Marked a false alarm.")
    st.rerun()


def _timeline_and_suspects(detail: IncidentDetail) -> None:
    inc = detail.incident
    left, right = st.columns([2, 3], gap="large")
    with left:
        st.subheader("Timeline")
        st.table(pd.DataFrame(timeline_rows(detail.timeline)).set_index("at"))
    with right:
        st.subheader("Suspects")
        rows = suspect_rows(inc)
        if rows:
            st.dataframe(
                pd.DataFrame(rows),
                hide_index=True,
                column_config={
                    "score": st.column_config.ProgressColumn(
                        "score", format="%.2f", min_value=0, max_value=1
                    ),
                    "explanation": st.column_config.TextColumn(width="large"),
                },
            )
            for n, s in enumerate(inc.suspects, start=1):
                st.markdown(f"**#{n}** ({s.score:.2f}) {s.explanation}")
        else:
            st.info("No suspect localized.")
    st.subheader(f"Evidence ({len(inc.evidence)} line(s))")
    st.code("\n".join(inc.evidence) or "(none)", language="text", wrap_lines=True)


def _groups(detail: IncidentDetail) -> None:
    hood = detail.neighbourhood
    if not hood or not hood.get("communicators"):
        st.info("No parallel groups: the incident has no culprit rank in a known topology.")
        return
    stalled = stalled_communicators(detail.incident, hood)
    st.caption(
        f"Culprit rank {hood.get('rank')} ({hood.get('node')} GPU {hood.get('gpu')}) in red; "
        + (f"stalled: {', '.join(sorted(stalled))}" if stalled else "no stalled collective named")
    )
    st.graphviz_chart(parallel_groups_dot(hood, stalled), width="stretch")


def _metrics(client: ApiClient, detail: IncidentDetail) -> None:
    inc = detail.incident
    top = next((s for s in inc.suspects if s.node), None)
    if top is None or top.node is None:
        st.info("No suspect node to chart.")
        return
    node = top.node
    gpus = client.gpus(node=node, cluster=inc.cluster)
    if not gpus:
        st.info(f"{node} has no telemetry in the last 10 minutes of data.")
        return
    newest = max(g.last_seen for g in gpus)
    minutes = math.ceil((newest - inc.detected_at + _BEFORE).total_seconds() / 60) + 1
    window = min(max(minutes, 1), 1440)
    samples = client.node(node, minutes=window, cluster=inc.cluster).metrics
    rows = onset_window(samples, inc.detected_at, _BEFORE, _AFTER)
    st.caption(f"GPU samples of {node} from 3 min before to 2 min after the onset (dashed).")
    if not rows:
        st.info("No samples around the onset.")
        return
    gpu_charts(pd.DataFrame(rows), highlight=f"GPU {top.gpu}", onset=inc.detected_at)


def _actions(client: ApiClient, incident_id: str) -> None:
    pending, taken = split_actions(client.actions(incident=incident_id).items)
    st.subheader(f"Pending approval ({len(pending)})")
    for action in pending:
        decide(client, action)
    st.subheader(f"Taken and proposed ({len(taken)})")
    if taken:
        st.dataframe(pd.DataFrame([action_row(a) for a in taken]), hide_index=True)
    else:
        st.caption("None.")
