"""Scheduler: pools, loans of nodes between pools, standby nodes and the job queue."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.session import section


def render(client: ApiClient) -> None:
    """Draw the scheduler's state."""
    st.title("Scheduler")
    with section("Scheduler"):
        state = client.scheduler_state()
        left, right = st.columns(2, gap="large")
        for col, title, rows in (
            (left, "Pools", state.pools),
            (right, "Loans", state.loans),
            (left, "Standby nodes", state.standbys),
            (right, "Queue", state.queue),
        ):
            with col:
                st.subheader(f"{title} ({len(rows)})")
                if rows:
                    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
                else:
                    st.caption("None.")
