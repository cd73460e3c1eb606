"""Risk scores per GPU in ClickHouse: write a scoring run, read the latest risk per GPU."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd

from analytics.prediction_tables import GPU_RISK, GPU_RISK_TYPES
from analytics.store import Store

RISK_COLUMNS = ["ts", "node", "gpu", "uuid", "horizon_h", "risk", "alert", "model", "reason"]


def write_risk(store: Store, risk: pd.DataFrame) -> int:
    """Insert risk rows (columns RISK_COLUMNS; ts in epoch seconds); return the row count."""
    if risk.empty:
        return 0
    missing = set(RISK_COLUMNS) - set(risk.columns)
    if missing:
        raise ValueError(f"risk frame lacks columns {sorted(missing)}")
    cast = {"ts": int, "gpu": int, "horizon_h": int, "risk": float, "alert": int}
    columns = {
        c: [cast[c](v) for v in risk[c]] if c in cast else [str(v) for v in risk[c]]
        for c in RISK_COLUMNS
    }
    store.insert(GPU_RISK.name, columns, GPU_RISK_TYPES)
    return len(risk)


def gpu_risk(
    store: Store,
    horizon_h: int | None = None,
    since: datetime | None = None,
    min_risk: float = 0.0,
    alerts_only: bool = False,
    limit: int = 100,
) -> pd.DataFrame:
    """Return the latest risk of each GPU, riskiest first."""
    where = ["ts >= toDateTime(%(since)s)"]
    params: dict[str, object] = {
        "since": int(since.astimezone(UTC).timestamp()) if since else 0,
        "min_risk": float(min_risk),
    }
    if horizon_h is not None:
        where.append("horizon_h = %(horizon)s")
        params["horizon"] = int(horizon_h)
    sql = (
        "SELECT node, gpu, horizon_h, toUInt32(max(ts)) AS last_ts, argMax(uuid, ts) AS uuid, "
        "argMax(risk, ts) AS risk, argMax(alert, ts) AS alert, argMax(model, ts) AS model, "
        "argMax(reason, ts) AS reason "
        f"FROM `{store.database}`.`{GPU_RISK.name}` WHERE {' AND '.join(where)} "
        "GROUP BY node, gpu, horizon_h "
        f"HAVING risk >= %(min_risk)s {'AND alert = 1' if alerts_only else ''} "
        f"ORDER BY risk DESC, node, gpu LIMIT {int(limit)}"
    )
    frame = store.query_df(sql, params)
    if frame.empty:
        return pd.DataFrame(columns=RISK_COLUMNS)
    frame = frame.rename(columns={"last_ts": "ts"})
    frame["time"] = pd.to_datetime(frame["ts"].astype("int64"), unit="s", utc=True)
    return frame.astype({"gpu": "int64", "horizon_h": "int64", "alert": "int64", "risk": "float64"})
