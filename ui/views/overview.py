"""Overview: the fleet map, live incidents by severity, ETTR per job, the breaker."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.models import GpuHealth, Incident
from ui.session import allowed, current_cluster, flash, go, needs, nonce, section
from ui.viewmodel import (
    LIVE,
    MAP_GPUS,
    SEVERITIES,
    SEVERITY_ICONS,
    STATE_COLOURS,
    ettr_rows,
    fleet_cells,
    incident_label,
    severity_counts,
    state_line,
)
from ui.views import fleet_groups


def render(client: ApiClient) -> None:
    """Draw the overview."""
    st.title("Fleet overview")
    left, right = st.columns([3, 2], gap="large")
    with left, section("Fleet map"):
        _fleet(client)
    with right:
        with section("Incidents"):
            _incidents(client)
        with section("Isolation breaker"):
            _breaker(client)
    with section("Jobs"):
        _ettr(client)


def _fleet(client: ApiClient) -> None:
    cluster = current_cluster()
    summary = client.fleet_groups(cluster)
    st.subheader("Fleet map")
    st.markdown(state_line(summary.states))
    if not summary.gpus:
        st.info("No GPU has reported in the last 10 minutes of telemetry.")
        return
    if summary.gpus > MAP_GPUS:
        fleet_groups.render(client, summary, cluster)  # one cell per GPU would be unreadable
        return
    _gpu_map(client.gpus(cluster=cluster))


def _gpu_map(gpus: list[GpuHealth]) -> None:
    frame = pd.DataFrame(fleet_cells(gpus))
    pick = alt.selection_point(fields=["node"], name="pick", on="click")
    chart = (
        alt.Chart(frame)
        .mark_rect(stroke="white", strokeWidth=2, cornerRadius=3)
        .encode(
            x=alt.X("gpu:O", title="GPU", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("node:N", title=None),
            color=alt.Color(
                "state:N",
                scale=alt.Scale(domain=list(STATE_COLOURS), range=list(STATE_COLOURS.values())),
                legend=alt.Legend(orient="bottom", title=None),
            ),
            tooltip=["node", "gpu", "state", "temp_c", "power_w", "util", "incidents"],
        )
        .add_params(pick)
        .properties(height=alt.Step(24))
    )
    event = st.altair_chart(
        chart, on_select="rerun", selection_mode="pick", key=f"fleet-{nonce()}", width="stretch"
    )
    picked = _picked_node(event)
    if picked:
        go("nodes", node=picked)
    nodes = sorted(frame["node"].unique())
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    chosen = c1.selectbox("Node", nodes, index=None, placeholder="click a cell, or choose a node")
    if c2.button("Open node", disabled=chosen is None):
        go("nodes", node=str(chosen))


def _picked_node(event: object) -> str | None:
    selection = getattr(event, "selection", None) or {}
    points = selection.get("pick") if isinstance(selection, dict) else None
    if isinstance(points, list) and points and "node" in points[0]:
        return str(points[0]["node"])
    return None


def _incidents(client: ApiClient) -> None:
    st.subheader("Live incidents")
    live: list[Incident] = []
    for status in LIVE:
        live += client.incidents(status=status, limit=200, cluster=current_cluster()).items
    counts = severity_counts(live)
    cols = st.columns(len(SEVERITIES))
    for col, sev in zip(cols, SEVERITIES, strict=True):
        col.metric(f"{SEVERITY_ICONS[sev]} {sev}", counts[sev])
    if not live:
        st.success("No open incidents.")
    order = {s: n for n, s in enumerate(SEVERITIES)}
    for inc in sorted(live, key=lambda i: (order.get(i.severity, 9), -i.detected_at.timestamp())):
        if st.button(incident_label(inc), key=f"open-{inc.id}", width="stretch"):
            go("incident", id=inc.id)
    st.caption("Closed incidents: Jobs and Nodes pages, or open one by id in the Incident page.")


def _breaker(client: ApiClient) -> None:
    st.subheader("Isolation breaker")
    breaker = client.breaker()
    if breaker.state == "open":
        st.error(
            f"OPEN since {breaker.opened_at or '?'}: automatic isolation is stopped "
            f"({breaker.isolated_in_window}/{breaker.limit} isolations in {breaker.window_s:.0f} s)"
        )
        if not allowed("admin"):
            needs("admin", "Resetting the breaker")
        elif st.button("Reset breaker (admin)"):
            client.reset_breaker()
            flash("success", "Breaker reset.")
            st.rerun()
    else:
        st.success(
            f"closed: {breaker.isolated_in_window}/{breaker.limit} isolations in the last "
            f"{breaker.window_s:.0f} s"
        )


def _ettr(client: ApiClient) -> None:
    st.subheader("ETTR per job")
    rows = ettr_rows(client.jobs(current_cluster()))
    if not rows:
        st.info("No job has reported a topology.")
        return
    frame = pd.DataFrame(rows)
    st.dataframe(
        frame,
        hide_index=True,
        column_config={
            "ettr_pct": st.column_config.ProgressColumn(
                "ETTR", format="%.1f%%", min_value=0, max_value=100
            ),
            "mfu_pct": st.column_config.NumberColumn("MFU", format="%.1f%%"),
        },
    )
