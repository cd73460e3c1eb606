"""The table of GPU failure risk scores written by `trainguard predict score`.

Kept out of `analytics.tables.ALL_TABLES`: those are the sink's telemetry tables, whose
Kafka watermarks the writer tracks; risk rows come from the predictor, not from Kafka.
"""

from __future__ import annotations

from analytics.tables import Column, Table

GPU_RISK = Table(
    "gpu_risk",
    (
        Column("ts", "DateTime", codec="DoubleDelta, LZ4"),
        Column("node", "String", low_cardinality=True),
        Column("gpu", "UInt16"),
        Column("uuid", "String"),
        Column("horizon_h", "UInt32"),
        Column("risk", "Float64"),
        Column("alert", "UInt8"),
        Column("model", "String", low_cardinality=True),
        Column("reason", "String"),
    ),
    order_by=("node", "gpu", "horizon_h", "ts"),
)
GPU_RISK_TYPES: dict[str, str] = {c.name: c.type for c in GPU_RISK.columns}
PREDICTION_TABLES: tuple[Table, ...] = (GPU_RISK,)
