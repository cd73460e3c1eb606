"""Fleet statistics over GPU telemetry."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from analytics.store import Store


def gpu_health_summary(
    store: Store, start: datetime, end: datetime, limit: int = 10
) -> pd.DataFrame:
    """Return the hottest GPUs in [start, end] with power, SBE growth and NVML errors."""
    sql = (
        "SELECT node, gpu, count() AS samples, "
        "round(avg(DCGM_FI_DEV_GPU_TEMP), 1) AS temp_avg, max(DCGM_FI_DEV_GPU_TEMP) AS temp_max, "
        "round(avg(DCGM_FI_DEV_POWER_USAGE), 1) AS power_avg, "
        "max(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL) - min(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL) AS sbe_delta, "
        "countIf(nvml_error != '') AS nvml_errors "
        f"FROM `{store.database}`.gpu_metrics "
        "WHERE ts >= toDateTime(%(start)s) AND ts <= toDateTime(%(end)s) "
        f"GROUP BY node, gpu ORDER BY temp_avg DESC LIMIT {int(limit)}"
    )
    frame = store.query_df(
        sql,
        {
            "start": int(start.astimezone(UTC).timestamp()),
            "end": int(end.astimezone(UTC).timestamp()) + 1,
        },
    )
    return frame
