"""Jobs: progress and ETTR of every job; one job's steps, communicators and incidents."""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.session import current_cluster, go, section
from ui.viewmodel import ettr_rows, incident_label


def render(client: ApiClient) -> None:
    """Draw the job list and the job the URL names."""
    st.title("Jobs")
    with section("Jobs"):
        jobs = client.jobs(current_cluster())
        if not jobs:
            st.info("No job has reported a topology.")
            return
        st.dataframe(pd.DataFrame(ettr_rows(jobs)), hide_index=True)
        ids = [j.job_id for j in jobs]
        current = st.query_params.get("job")
        chosen = st.selectbox(
            "Job", ids, index=ids.index(current) if current in ids else None, placeholder="choose"
        )
        if chosen and chosen != current:
            go("jobs", job=chosen)
    job_id = st.query_params.get("job")
    if job_id:
        with section(f"Job {job_id}"):
            _job(client, job_id)


def _job(client: ApiClient, job_id: str) -> None:
    detail = client.job(job_id, current_cluster())
    job = detail.job
    cols = st.columns(5)
    cols[0].metric("World size", job.world_size)
    cols[1].metric("Nodes", job.nodes)
    cols[2].metric("ETTR", "-" if job.ettr is None else f"{100 * job.ettr:.1f}%")
    cols[3].metric("Last step", "-" if job.last_step is None else job.last_step)
    cols[4].metric("Open incidents", job.open_incidents)
    st.caption(
        f"{job.scheduler} {job.scheduler_job_id} · communicators: "
        + ", ".join(f"{n} {kind}" for kind, n in sorted(detail.communicators.items()))
        + " · nodes: "
        + ", ".join(detail.nodes)
    )
    if detail.steps:
        frame = pd.DataFrame([s.model_dump() for s in detail.steps])
        left, right = st.columns(2)
        for col, field, title in (
            (left, "step_time_s", "Step time (s)"),
            (right, "loss", "Loss"),
        ):
            chart = (
                alt.Chart(frame)
                .mark_line(point=True)
                .encode(
                    x=alt.X("step:Q"), y=alt.Y(f"{field}:Q", title=title), tooltip=["step", field]
                )
            )
            col.altair_chart(chart, width="stretch")
    st.subheader("Incidents")
    for inc in detail.incidents:
        if st.button(f"{incident_label(inc)} [{inc.status}]", key=f"job-inc-{inc.id}"):
            go("incident", id=inc.id)
    if not detail.incidents:
        st.caption("None.")
