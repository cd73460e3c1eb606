"""Failure-prediction alerts as incidents, so the action engine can drain at a checkpoint.

`predict score` stores every GPU's risk (gpu_risk); a GPU whose risk cleared the model's
precision-first cut becomes a `gpu.predicted` incident: its GPU the suspect (score = risk),
the job running on its node (so the policy waits for that job's checkpoint), the features
that moved as evidence. One incident per GPU while it is open: a later alert on the same GPU
is a new revision of it (same job: the ladder was planned for it), not a new incident. A GPU
that already has an open hardware incident failed already and gets none; nor does one whose
prediction was closed in the last week (drained already, or called a false alarm).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from analytics.store import Store
from diagnosis.incident_store import IncidentFilter, all_incidents
from diagnosis.incidents import Incident
from diagnosis.lifecycle import is_final
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity, Suspect

ACTIVE_S = 1800.0  # a job that logged a step this recently runs on its nodes
LOOKBACK = timedelta(days=90)  # how far back incidents are looked for
COOLDOWN = timedelta(days=7)  # a GPU whose prediction was closed this recently is not re-alerted
_FAILED = (Category.GPU_HARDWARE, Category.GPU_DEGRADED)

GpuKey = tuple[str, int]


def jobs_on_nodes(store: Store, at: datetime, active_s: float = ACTIVE_S) -> dict[str, str]:
    """Return node -> the job running there at `at` (latest topology, a step in `active_s`)."""
    db, end = store.database, int(at.timestamp())
    frame = store.query_df(
        f"SELECT t.job_id AS job, node, s.last AS last FROM ("
        f"SELECT job_id, arrayJoin(argMax(nodes, (ts, ts_us))) AS node FROM `{db}`.job_topology "
        f"WHERE ts <= %(end)s GROUP BY job_id) AS t INNER JOIN ("
        f"SELECT job_id, toUInt32(max(ts)) AS last FROM `{db}`.train_steps "
        f"WHERE ts <= %(end)s AND ts >= %(start)s GROUP BY job_id) AS s ON t.job_id = s.job_id "
        f"ORDER BY last",
        {"end": end, "start": end - int(active_s)},
    )
    return {str(node): str(job) for job, node, _ in frame.itertuples(index=False)}


def _by_gpu(
    store: Store, categories: tuple[Category, ...], since: datetime
) -> dict[GpuKey, list[Incident]]:
    """Return (node, gpu) -> the incidents of these categories blaming that GPU, newest first."""
    out: dict[GpuKey, list[Incident]] = {}
    for category in categories:
        for inc in all_incidents(store, IncidentFilter(category=category.value, since=since)):
            top = inc.suspects[0] if inc.suspects else None
            if top is not None and top.node is not None and top.gpu is not None:
                out.setdefault((top.node, int(top.gpu)), []).append(inc)
    return out


def _incident_id(node: str, gpu: int, uuid: str, window: datetime, at: datetime) -> str:
    text = f"predicted|{node}|{gpu}|{uuid}|{int(window.timestamp())}|{int(at.timestamp())}"
    return "pred-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def predicted_incidents(
    store: Store, risk: pd.DataFrame, at: datetime, min_risk: float = 0.0
) -> tuple[list[Incident], int]:
    """Return the incidents for a scoring run's alerts, and how many alerts were skipped.

    `risk` is `score_latest`'s frame (gpu_risk columns, ts: the window's decision time, up
    to an hour behind); `at` is when the run scored (the incidents' time, and when the job
    on each node is looked up). Skipped: alerts below `min_risk`, GPUs with an open hardware
    incident (they failed already) and GPUs whose last prediction was closed within
    `COOLDOWN` (drained already, or an operator called it a false alarm).
    """
    alerted = risk["alert"].astype(int) == 1
    alerts = risk[alerted & (risk["risk"] >= min_risk)]
    skipped = int(alerted.sum()) - len(alerts)
    if alerts.empty:
        return [], skipped
    since = at - LOOKBACK
    failed = _by_gpu(store, _FAILED, since)
    predicted = _by_gpu(store, (Category.GPU_PREDICTED,), since)
    jobs = jobs_on_nodes(store, at)
    out = []
    for row in alerts.to_dict("records"):
        key = (str(row["node"]), int(row["gpu"]))
        if any(not is_final(i.status) for i in failed.get(key, [])):
            skipped += 1
            continue
        mine = predicted.get(key, [])
        known = next((i for i in mine if not is_final(i.status)), None)
        closed = [i for i in mine if is_final(i.status)]
        if known is None and closed and (closed[0].updated_at or at) >= at - COOLDOWN:
            skipped += 1
            continue
        out.append(_incident(row, at, jobs.get(key[0]), known))
    return out, skipped


def _incident(
    row: Mapping[Hashable, Any], at: datetime, job: str | None, known: Incident | None
) -> Incident:
    node, gpu, score = str(row["node"]), int(row["gpu"]), float(row["risk"])
    model, horizon, reason = str(row["model"]), int(row["horizon_h"]), str(row["reason"] or "")
    window = datetime.fromtimestamp(int(row["ts"]), UTC)
    if known is not None:
        job = known.job  # the ladder planned for the first revision's job keeps it
    where = f"drain at job {job}'s next checkpoint" if job else "idle: drain for inspection"
    summary = (
        f"{node} GPU {gpu} predicted to fail within {horizon} h "
        f"(risk {score:.3f}, {model}); {where}"
    )
    suspect = Suspect(
        component=ComponentKind.GPU,
        score=min(max(score, 0.0), 1.0),
        node=node,
        gpu=gpu,
        explanation=f"failure predictor ({model}, {horizon} h): {reason or 'risk above the cut'}",
    )
    line = f"{window.isoformat()} risk {score:.4f} above the {model} cut; moved: {reason or '-'}"
    base: dict[str, Any] = {
        "category": Category.GPU_PREDICTED,
        "blame": Blame.INFRASTRUCTURE,
        "job": job,
        "suspects": [suspect],
        "summary": summary,
        "action": Action.ISOLATE_GPU,
        "severity": Severity.WARNING,
        "updated_at": at,
    }
    if known is None:
        uuid = str(row.get("uuid") or "")
        return Incident(
            id=_incident_id(node, gpu, uuid, window, at), detected_at=at, evidence=[line], **base
        )
    evidence = known.evidence if line in known.evidence else [*known.evidence, line][-50:]
    update = {"evidence": evidence, "findings": known.findings + 1, "revision": known.revision + 1}
    return known.model_copy(update={**base, **update})
