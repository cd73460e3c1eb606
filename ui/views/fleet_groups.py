"""The fleet map at scale: GPUs counted by state per job, a job's nodes, then one node.

Drawn instead of the one-cell-per-GPU map when the fleet is larger than `MAP_GPUS`: at
16,384 GPUs the page reads a few dozen aggregated rows from the API (counted in ClickHouse),
never one row per GPU.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.models import FleetSummary
from ui.session import go
from ui.viewmodel import STATE_COLOURS, group_bars, group_rows, worst_nodes_first

NO_GROUP = "(none)"  # nodes no job's topology places


def render(client: ApiClient, summary: FleetSummary, cluster: str | None) -> None:
    """Draw the job groups, the chosen group's nodes, and a way to one node."""
    st.caption(
        f"{summary.gpus:,} GPUs on {summary.nodes:,} nodes, grouped by job "
        f"(nodes outside any job: {NO_GROUP}). Choose a job to see its nodes."
    )
    _bars(summary)
    rows = group_rows(summary)
    st.table(pd.DataFrame(rows).set_index("job"))  # a few dozen rows: worst first
    multi = len({r["cluster"] for r in rows}) > 1
    labels = {(f"{r['job']} · {r['cluster']}" if multi else r["job"]): r for r in rows}
    chosen = st.selectbox(
        "Job group", list(labels), index=None, placeholder="choose a job to see its nodes"
    )
    if chosen is None:
        return
    row = labels[chosen]
    group_cluster = str(row["cluster"]) if multi or cluster else None
    nodes = worst_nodes_first(client.fleet_group_nodes(str(row["job"]), group_cluster))
    st.subheader(f"Nodes of {chosen}")
    attention = [n for n in nodes if n["state"] != "healthy"]
    st.caption(f"{len(nodes) - len(attention)} healthy node(s), {len(attention)} to look at:")
    if attention:
        st.table(pd.DataFrame(attention).set_index("node"))
    with st.expander(f"All {len(nodes)} nodes"):
        st.dataframe(pd.DataFrame(nodes), hide_index=True, width="stretch")
    names = [str(n["node"]) for n in nodes]
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    node = c1.selectbox("Group node", names, index=None, placeholder="choose a node")
    if c2.button("Open group node", disabled=node is None):
        go("nodes", node=str(node), **({"cluster": group_cluster} if group_cluster else {}))


def _bars(summary: FleetSummary) -> None:
    frame = pd.DataFrame(group_bars(summary))
    if frame.empty:
        st.success("Every GPU is healthy.")
        return
    st.caption("GPUs needing attention, per job:")
    chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("sum(gpus):Q", title="GPUs"),
            y=alt.Y("job:N", title=None, sort="-x", axis=alt.Axis(labelOverlap=False)),
            color=alt.Color(
                "state:N",
                scale=alt.Scale(domain=list(STATE_COLOURS), range=list(STATE_COLOURS.values())),
                legend=alt.Legend(orient="bottom", title=None),
            ),
            order=alt.Order("order:Q"),
            tooltip=["job", "state", "gpus"],
        )
        .properties(height=alt.Step(22))
    )
    st.altair_chart(chart, width="stretch")
