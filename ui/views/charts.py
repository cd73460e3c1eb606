"""GPU metric charts shared by the incident and node pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

GPU_FIELDS = (("temp_c", "Temperature °C"), ("power_w", "Power W"), ("util", "Utilization %"))


def gpu_charts(
    frame: pd.DataFrame, highlight: str | None = None, onset: datetime | None = None
) -> None:
    """Draw temperature, power and utilization per GPU (columns `at`, `gpu`, the fields).

    `highlight` ("GPU 3") is drawn thicker; `onset` is a dashed rule.
    """
    rule = None
    if onset is not None:
        rule = alt.Chart(pd.DataFrame({"at": [onset]})).mark_rule(
            color="#c62828", strokeDash=[4, 4]
        )
    for col, (field, title) in zip(st.columns(3), GPU_FIELDS, strict=True):
        encoding: dict[str, Any] = {
            "x": alt.X("at:T", title=None),
            "y": alt.Y(f"{field}:Q", title=title),
            "color": alt.Color("gpu:N", legend=alt.Legend(orient="bottom", title=None)),
        }
        if highlight is not None:
            encoding["strokeWidth"] = alt.condition(
                alt.datum.gpu == highlight, alt.value(3), alt.value(1)
            )
        chart = alt.Chart(frame).mark_line().encode(**encoding)
        col.altair_chart(chart if rule is None else chart + rule.encode(x="at:T"), width="stretch")
