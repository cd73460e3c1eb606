"""Fleet series read from the store at scrape time, cached: GPU states, incidents, jobs, actions.

What the fleet looks like lives in ClickHouse, not in any process's memory, so these series
are read there when Prometheus scrapes (at most once per `cache_s`), not counted event by
event: they are right after a restart and the same from every replica (aggregate replicas
with `max by (...)`). A failed read keeps the last values, counts the failure in
`trainguard_fleet_read_errors_total` and leaves `trainguard_fleet_read_timestamp_seconds`
where it was.

Labels are bounded: states, categories, severities, action kinds and outcomes are enums;
the per-job ETTR series are capped at `max_jobs` running jobs (the most recently active).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from actions.model import FINAL_STATES, ActionKind, State
from actions.safety import BREAKER, BreakerLimits
from actions.store import breaker_state, isolated_since
from actions.views import isolations
from analytics.action_tables import ACTION_STATE
from analytics.incident_tables import INCIDENT_TRANSITIONS, INCIDENTS
from analytics.ops import gpu_latest, job_progress, latest_data_time
from analytics.store import Store, StoreError
from analytics.tables import cluster_name
from diagnosis.health import (
    HEALTHY,
    INSPECTION,
    ISOLATED,
    LOST,
    SUSPECT,
    gpu_state,
    suspects_by_component,
)
from diagnosis.incident_store import IncidentFilter, all_incidents
from diagnosis.incidents import Incident
from diagnosis.model import IncidentStatus

log = logging.getLogger(__name__)

GPU_STATES = (HEALTHY, SUSPECT, LOST, ISOLATED, INSPECTION)
GPU_WINDOW = timedelta(minutes=10)
"""A GPU unseen for longer than this is not counted (the API's fleet view uses the same)."""
JOB_ACTIVE = timedelta(minutes=10)
"""A job with no step this long before the fleet's latest telemetry is not running."""
MAX_JOBS = 500
"""Default cap on per-job ETTR series."""

Reader = Callable[[Store], list[Metric]]


def gpu_states(store: Store) -> list[Metric]:
    """Return `trainguard_gpus{state}`: GPUs seen in the last 10 minutes, by health state."""
    counts: Counter[str] = Counter({state: 0 for state in GPU_STATES})
    now = latest_data_time(store)
    if now is not None:
        frame = gpu_latest(store, now - GPU_WINDOW)
        live = [
            *all_incidents(store, IncidentFilter(status=IncidentStatus.OPEN)),
            *all_incidents(store, IncidentFilter(status=IncidentStatus.MITIGATING)),
        ]
        # node names are unique within one cluster only: suspects and isolations per cluster
        live_by_cluster: dict[str, list[Incident]] = {}
        for inc in live:
            live_by_cluster.setdefault(inc.cluster, []).append(inc)
        suspects = {c: suspects_by_component(incs) for c, incs in live_by_cluster.items()}
        isolated = isolations(store)
        for stored, node, gpu, error in zip(
            frame["cluster"].tolist(),
            frame["node"].tolist(),
            frame["gpu"].tolist(),
            frame["nvml_error"].tolist(),
            strict=True,
        ):
            cluster = cluster_name(stored)
            by_gpu, by_node = suspects.get(cluster, ({}, {}))
            key = (str(node), int(gpu))
            isolation = isolated.get((cluster, key[0]))
            counts[gpu_state(str(error or ""), key in by_gpu, key[0] in by_node, isolation)] += 1
    family = GaugeMetricFamily(
        "trainguard_gpus",
        "GPUs seen in the last 10 minutes of telemetry, by health state "
        "(healthy, suspect, lost, isolated, inspection).",
        labels=["state"],
    )
    for state in GPU_STATES:
        family.add_metric([state], float(counts[state]))
    return [family]


def open_incidents(store: Store) -> list[Metric]:
    """Return `trainguard_incidents_open{category,severity,status}` (open and mitigating)."""
    db = store.database
    frame = store.query_df(
        f"SELECT category, severity, if(status = '', 'open', status) AS st, count() AS n FROM ("
        f"SELECT id, argMax(category, revision) AS category, argMax(severity, revision) AS "
        f"severity FROM `{db}`.`{INCIDENTS.name}` GROUP BY id) AS latest ANY LEFT JOIN ("
        f"SELECT id, argMax(status, (at, at_us)) AS status FROM "
        f"`{db}`.`{INCIDENT_TRANSITIONS.name}` GROUP BY id) AS moved USING id "
        f"WHERE status IN ('', 'open', 'mitigating') GROUP BY category, severity, st "
        f"ORDER BY category, severity, st"
    )
    family = GaugeMetricFamily(
        "trainguard_incidents_open",
        "Incidents not yet resolved (status open or mitigating), by category and severity.",
        labels=["category", "severity", "status"],
    )
    for category, severity, status, n in frame.itertuples(index=False):
        family.add_metric([str(category), str(severity), str(status)], float(n))
    return [family]


def job_ettr(max_jobs: int = MAX_JOBS) -> Reader:
    """Return a reader of `trainguard_job_ettr{job}` for the `max_jobs` most recent running jobs."""

    def read(store: Store) -> list[Metric]:
        now = latest_data_time(store)
        ettr = GaugeMetricFamily(
            "trainguard_job_ettr",
            f"Effective training time ratio of each running job (at most {max_jobs}, "
            f"the most recently active): steps x median step time / time since its first step.",
            labels=["job_id"],
        )
        running = GaugeMetricFamily(
            "trainguard_jobs_running",
            "Jobs with a training step in the last 10 minutes of telemetry (all of them, "
            "also those beyond the ETTR series' cap).",
        )
        count = 0
        if now is not None:
            frame = job_progress(store, now=now)
            cutoff = int((now - JOB_ACTIVE).timestamp())
            active = frame[frame["last_ts"] >= cutoff].sort_values(
                ["last_ts", "job_id"], ascending=[False, True]
            )
            count = len(active)
            top = active.head(max_jobs)
            for job, value in zip(top["job_id"].tolist(), top["ettr"].tolist(), strict=True):
                ettr.add_metric([str(job)], float(value))
        running.add_metric([], float(count))
        return [ettr, running]

    return read


def actions(store: Store) -> list[Metric]:
    """Return finished actions by kind and outcome, and unfinished ones by kind and state."""
    frame = store.query_df(
        f"SELECT kind, s, count() AS n FROM (SELECT action_id, any(kind) AS kind, "
        f"argMax(state, seq) AS s FROM `{store.database}`.`{ACTION_STATE.name}` "
        f"GROUP BY action_id) GROUP BY kind, s ORDER BY kind, s"
    )
    finished = CounterMetricFamily(
        "trainguard_actions",
        "Actions that reached a final state, by kind and outcome (done, failed, skipped, "
        "blocked, dry_run, rejected, expired); read from the action store.",
        labels=["kind", "outcome"],
    )
    unfinished = GaugeMetricFamily(
        "trainguard_actions_unfinished",
        "Actions not finished yet, by kind and state (planned, awaiting_approval, approved, "
        "executing, waiting).",
        labels=["kind", "state"],
    )
    known_kinds = {k.value for k in ActionKind}
    for kind, state, n in frame.itertuples(index=False):
        if str(kind) not in known_kinds:
            continue  # rows of a newer version's kinds: left out, labels stay bounded
        if State(str(state)) in FINAL_STATES:
            finished.add_metric([str(kind), str(state)], float(n))
        else:
            unfinished.add_metric([str(kind), str(state)], float(n))
    return [finished, unfinished]


def breaker(limits: BreakerLimits, clock: Callable[[], datetime] | None = None) -> Reader:
    """Return a reader of the isolation breaker: open or closed, nodes isolated, the limit."""

    def read(store: Store) -> list[Metric]:
        tripped, _reason = breaker_state(store, BREAKER)
        now = clock() if clock else datetime.now(UTC)
        isolated = isolated_since(store, now - timedelta(seconds=limits.window_s))
        out: list[Metric] = []
        for name, help_text, value in (
            ("open", "1 while the isolation breaker is tripped (isolations stop).", tripped),
            ("isolated_nodes", "Nodes isolated within the breaker's window.", isolated),
            ("limit_nodes", "Most nodes the breaker lets isolate in its window.", limits.limit()),
        ):
            family = GaugeMetricFamily(f"trainguard_breaker_{name}", help_text, labels=["breaker"])
            family.add_metric([BREAKER], float(value))
            out.append(family)
        return out

    return read


class FleetCollector(Collector):
    """Read the fleet series from the store at scrape time, at most once per `cache_s`."""

    def __init__(
        self,
        store: Store,
        readers: Sequence[Reader],
        cache_s: float = 15.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store, self.readers, self.cache_s = store, tuple(readers), cache_s
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._metrics: list[Metric] = []
        self._read_at: float | None = None
        self._read_ts = 0.0
        self._errors = 0

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not query the store

    def collect(self) -> Iterable[Metric]:
        with self._lock:  # concurrent scrapes share one read
            now = self._monotonic()
            if self._read_at is None or now - self._read_at >= self.cache_s:
                self._refresh(now)
            metrics = list(self._metrics)
            errors, read_ts = self._errors, self._read_ts
        yield from metrics
        yield CounterMetricFamily(
            "trainguard_fleet_read_errors",
            "Reads of the fleet series from the store that failed (the last values are kept).",
            value=float(errors),
        )
        yield GaugeMetricFamily(
            "trainguard_fleet_read_timestamp_seconds",
            "Unix time of the last successful read of the fleet series.",
            value=read_ts,
        )

    def _refresh(self, now: float) -> None:
        self._read_at = now
        try:
            fresh = [m for reader in self.readers for m in reader(self.store)]
        except StoreError as exc:
            self._errors += 1
            log.warning("fleet metrics not read (last values kept): %s", exc)
            return
        self._metrics, self._read_ts = fresh, time.time()
