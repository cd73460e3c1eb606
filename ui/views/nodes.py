"""Nodes and GPUs: every node's state; one node's GPUs, metric window and Xid history."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.session import current_cluster, go, section
from ui.views.charts import gpu_charts

_XIDS_SHOWN = 50


def render(client: ApiClient) -> None:
    """Draw the node list and the node the URL names."""
    st.title("Nodes / GPUs")
    current = st.query_params.get("node")
    with section("Nodes"):
        nodes = client.nodes(current_cluster())
        if not nodes:
            st.info("No node has reported GPU telemetry in the last 10 minutes of data.")
            return
        where = {n.cluster for n in nodes}
        # a node name repeats across clusters: with several listed, a choice names its cluster
        names = [f"{n.node} · {n.cluster}" if len(where) > 1 else n.node for n in nodes]
        by_name = dict(zip(names, nodes, strict=True))
        shown = next((k for k, n in by_name.items() if n.node == current), None)
        chosen = st.selectbox("Node", names, index=names.index(shown) if shown else None)
        if chosen and by_name[chosen].node != current:
            picked = by_name[chosen]
            go("nodes", node=picked.node, **({"cluster": picked.cluster} if len(where) > 1 else {}))
        if not current:
            st.dataframe(
                pd.DataFrame([n.model_dump() for n in nodes]), hide_index=True, width="stretch"
            )
    if current:
        with section(f"Node {current}"):
            _node(client, current)


def _node(client: ApiClient, node: str) -> None:
    minutes = st.slider("Window (minutes of telemetry)", 5, 240, 15, key="node-minutes")
    detail = client.node(node, minutes=minutes, cluster=current_cluster())
    cols = st.columns(3)
    cols[0].metric("State", detail.node.state)
    cols[1].metric("GPUs", detail.node.gpus)
    cols[2].metric("Unhealthy GPUs", detail.node.gpus_unhealthy)
    for incident_id in detail.node.incidents:
        if st.button(f"Incident {incident_id}", key=f"node-inc-{incident_id}"):
            go("incident", id=incident_id)
    st.subheader("GPUs")
    st.dataframe(
        pd.DataFrame([g.model_dump() for g in detail.gpus]), hide_index=True, width="stretch"
    )
    if detail.metrics:
        frame = pd.DataFrame(detail.metrics)
        frame["at"] = [datetime.fromtimestamp(int(t), UTC) for t in frame["ts"]]
        frame["gpu"] = [f"GPU {g}" for g in frame["gpu"]]
        gpu_charts(frame)
    st.subheader("Xid history")
    if detail.xids:
        st.table(pd.DataFrame([_xid_row(x) for x in detail.xids[:_XIDS_SHOWN]]).set_index("at"))
        if len(detail.xids) > _XIDS_SHOWN:
            st.caption(f"{len(detail.xids) - _XIDS_SHOWN} older Xid line(s) not shown.")
    else:
        st.caption("No Xid lines.")


def _xid_row(xid: dict[str, object]) -> dict[str, object]:
    ts = xid.get("ts")
    at = datetime.fromtimestamp(int(ts), UTC) if isinstance(ts, int | float) else ts
    return {
        "at": f"{at:%Y-%m-%d %H:%M:%S} UTC" if isinstance(at, datetime) else at,
        **{k: v for k, v in xid.items() if k != "ts"},
    }
