"""Action state, audit and breaker rows in ClickHouse; functions take the store."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from actions.model import ISOLATING, Action, ActionKind, ActionPlan, ActionResult, State
from actions.policy import HistoryView
from actions.safety import BREAKER, BreakerLimits, Budgets, LimitCounts, reads_limits
from analytics.action_tables import ACTION_AUDIT, ACTION_STATE, BREAKER_STATE
from analytics.store import Store
from analytics.tables import stored_cluster

_STATE_TYPES = {c.name: c.type for c in ACTION_STATE.columns}
_AUDIT_TYPES = {c.name: c.type for c in ACTION_AUDIT.columns}
_BREAKER_TYPES = {c.name: c.type for c in BREAKER_STATE.columns}
_seq_lock = threading.Lock()
_last_seq = [0]


def next_seq() -> int:
    """Return a version number that grows across calls (and, by the ns clock, processes)."""
    with _seq_lock:
        _last_seq[0] = max(_last_seq[0] + 1, time.time_ns())
        return _last_seq[0]


def _at(now: datetime) -> tuple[int, int]:
    now = now.astimezone(UTC)
    return int(now.timestamp()), now.microsecond


def save_state(
    store: Store,
    plan: ActionPlan,
    state: State,
    now: datetime,
    result: ActionResult | None = None,
) -> None:
    """Persist an action's new state (the latest `seq` wins when read back)."""
    save_states(store, [plan], state, now, result)


def save_states(
    store: Store,
    plans: Sequence[ActionPlan],
    state: State,
    now: datetime,
    result: ActionResult | None = None,
) -> None:
    """Persist several actions' new state in one INSERT: readers see all of them or none."""
    rows = [_state_row(plan, state, now, result) for plan in plans]
    if rows:
        store.insert(ACTION_STATE.name, {k: [r[k] for r in rows] for k in rows[0]}, _STATE_TYPES)


def _state_row(
    plan: ActionPlan, state: State, now: datetime, result: ActionResult | None
) -> dict[str, Any]:
    at, us = _at(now)
    row: dict[str, Any] = {
        "action_id": plan.action_id,
        "seq": next_seq(),
        "at": at,
        "at_us": us,
        "incident_id": plan.incident_id,
        "step": plan.step,
        "kind": plan.kind.value,
        # a multi-node isolation (a leaf switch's nodes) lists them all, comma-separated
        "node": plan.target.node or ",".join(plan.params.get("nodes", [])),
        "job_id": plan.target.job or "",
        "component_key": plan.component_key,
        "state": state.value,
        "plan": plan.model_dump_json(),
        "result": result.model_dump_json() if result else "",
        "cluster": stored_cluster(plan.cluster),
    }
    return row


def load_actions(
    store: Store,
    action_ids: Sequence[str] | None = None,
    incident_id: str | None = None,
    states: Sequence[State] | None = None,
) -> list[Action]:
    """Return actions at their latest state, by incident and ladder step."""
    where, params = ["1"], {}
    if action_ids is not None:
        where.append("action_id IN %(ids)s")
        params["ids"] = tuple(action_ids) or ("",)
    if incident_id is not None:
        where.append("incident_id = %(inc)s")
        params["inc"] = incident_id  # type: ignore[assignment]
    having = ""
    if states is not None:  # filtered on the server: a poll reads the matching actions only
        having = "HAVING s IN %(states)s "
        params["states"] = tuple(s.value for s in states) or ("",)
    frame = store.query_df(
        f"SELECT action_id, argMax(state, seq) AS s, argMax(plan, seq) AS p, "
        f"argMax(result, seq) AS r, any(incident_id) AS i, any(step) AS st, "
        f"toUInt32(argMax(at, seq)) AS t, argMax(at_us, seq) AS tu, max(seq) AS q "
        f"FROM `{store.database}`.`{ACTION_STATE.name}` WHERE {' AND '.join(where)} "
        f"GROUP BY action_id {having}ORDER BY i, st",
        params,
    )
    return [
        stored_action(p, s, r, t, tu, q)
        for _aid, s, p, r, _i, _st, t, tu, q in frame.itertuples(index=False)
    ]


def stored_action(plan: Any, state: Any, result: Any, at: Any, at_us: Any, seq: Any) -> Action:
    """Return an action from the columns of its latest `action_state` row."""
    return Action(
        plan=ActionPlan.model_validate_json(plan),
        state=State(str(state)),
        result=ActionResult.model_validate_json(result) if result else None,
        updated_at=datetime.fromtimestamp(int(at), UTC).replace(microsecond=int(at_us)),
        seq=int(seq),
    )


def write_audit(
    store: Store,
    event: str,
    now: datetime,
    actor: str,
    mode: str,
    plan: ActionPlan | None = None,
    incident_id: str = "",
    component_key: str = "",
    detail: dict[str, Any] | None = None,
) -> None:
    """Append one audit row: who did what, when, to what, with what result."""
    at, us = _at(now)
    row: dict[str, Any] = {
        "at": at,
        "at_us": us,
        "seq": next_seq(),
        "event": event,
        "actor": actor,
        "action_id": plan.action_id if plan else "",
        "incident_id": plan.incident_id if plan else incident_id,
        "kind": plan.kind.value if plan else "",
        "target": plan.target.key() if plan else "",
        "component_key": plan.component_key if plan else component_key,
        "mode": mode,
        "detail": json.dumps(detail or {}, default=str, sort_keys=True),
    }
    store.insert(ACTION_AUDIT.name, {k: [v] for k, v in row.items()}, _AUDIT_TYPES)


def audit_events(
    store: Store, incident_id: str | None = None, action_id: str | None = None
) -> pd.DataFrame:
    """Return audit rows, oldest first."""
    where, params = ["1"], {}
    if incident_id is not None:
        where.append("incident_id = %(inc)s")
        params["inc"] = incident_id
    if action_id is not None:
        where.append("action_id = %(aid)s")
        params["aid"] = action_id
    return store.query_df(
        f"SELECT toUInt32(at) AS at, at_us, event, actor, action_id, incident_id, kind, target, "
        f"component_key, mode, detail FROM `{store.database}`.`{ACTION_AUDIT.name}` "
        f"WHERE {' AND '.join(where)} ORDER BY at, at_us, seq",
        params,
    )


def _count(store: Store, sql: str, params: dict[str, Any]) -> int:
    frame = store.query_df(sql, params)
    return 0 if frame.empty else int(str(frame.iloc[0, 0]))


def isolated_since(store: Store, since: datetime) -> int:
    """Return distinct nodes whose isolation is executing or done and started since a time.

    A node is a (cluster, node) pair: `n1` isolated in two clusters is two nodes, and the
    same `n1` isolated twice in one cluster is one.
    """
    return _count(
        store,
        f"SELECT uniqExact(c, one) FROM (SELECT action_id, any(node) AS n, any(cluster) AS c, "
        f"argMax(state, seq) AS s, max(at) AS t FROM `{store.database}`.`{ACTION_STATE.name}` "
        f"WHERE kind IN %(kinds)s GROUP BY action_id) ARRAY JOIN splitByChar(',', n) AS one "
        f"WHERE s IN ('executing', 'done') AND t >= %(since)s AND one != ''",
        {"kinds": tuple(k.value for k in ISOLATING), "since": _at(since)[0]},
    )


def executions_since(
    store: Store,
    since: datetime,
    node: str | None = None,
    job: str | None = None,
    kinds: Sequence[ActionKind] | None = None,
    cluster: str | None = None,
) -> int:
    """Return distinct actions that started executing since a time, on a node or job.

    With `cluster`, only actions on that cluster's incidents (node and job names repeat
    across clusters).
    """
    where = ["state = 'executing'", "at >= %(since)s"]
    params: dict[str, Any] = {"since": _at(since)[0]}
    if cluster is not None:
        where.append("cluster = %(cluster)s")
        params["cluster"] = stored_cluster(cluster)
    if node is not None:
        where.append("node = %(node)s")
        params["node"] = node
    if job is not None:
        where.append("job_id = %(job)s")
        params["job"] = job
    if kinds is not None:
        where.append("kind IN %(kinds)s")
        params["kinds"] = tuple(k.value for k in kinds) or ("",)
    return _count(
        store,
        f"SELECT uniqExact(action_id) FROM `{store.database}`.`{ACTION_STATE.name}` "
        f"WHERE {' AND '.join(where)}",
        params,
    )


def component_history(store: Store, key: str, since: datetime) -> HistoryView:
    """Return how often a component was seen and which actions were done on it since a time."""
    seen = _count(
        store,
        f"SELECT uniqExact(incident_id) FROM `{store.database}`.`{ACTION_AUDIT.name}` "
        f"WHERE event = 'seen' AND component_key = %(key)s AND at >= %(since)s",
        {"key": key, "since": _at(since)[0]},
    )
    frame = store.query_df(
        f"SELECT DISTINCT kind FROM `{store.database}`.`{ACTION_STATE.name}` "
        f"WHERE component_key = %(key)s AND state = 'done' AND at >= %(since)s",
        {"key": key, "since": _at(since)[0]},
    )
    kinds = frozenset(ActionKind(str(k)) for k in frame["kind"]) if len(frame) else frozenset()
    return HistoryView(occurrences=seen, done_kinds=kinds)


def breaker_state(store: Store, name: str) -> tuple[bool, str]:
    """Return (tripped, reason) of a circuit breaker; never set means closed."""
    frame = store.query_df(
        f"SELECT argMax(tripped, seq) AS t, argMax(reason, seq) AS r "
        f"FROM `{store.database}`.`{BREAKER_STATE.name}` WHERE name = %(name)s GROUP BY name",
        {"name": name},
    )
    if frame.empty:
        return False, ""
    return bool(int(str(frame.iloc[0, 0]))), str(frame.iloc[0, 1])


def set_breaker(
    store: Store, name: str, tripped: bool, reason: str, actor: str, now: datetime
) -> None:
    """Trip or reset a circuit breaker."""
    at, us = _at(now)
    store.insert(
        BREAKER_STATE.name,
        {
            "name": [name],
            "seq": [next_seq()],
            "at": [at],
            "at_us": [us],
            "tripped": [int(tripped)],
            "reason": [reason],
            "actor": [actor],
        },
        _BREAKER_TYPES,
    )


def limit_counts(
    store: Store, plan: ActionPlan, now: datetime, breaker: BreakerLimits, budgets: Budgets
) -> LimitCounts:
    """Return the counts a step's safety limits are judged on (only those it needs)."""
    isolating, node, job = reads_limits(plan)
    tripped, reason, isolated = False, "", 0
    if isolating:
        tripped, reason = breaker_state(store, BREAKER)
        if not tripped:  # an open breaker blocks whatever the count
            isolated = isolated_since(store, now - timedelta(seconds=breaker.window_s))
    node_n = job_n = 0
    if node:
        node_n = executions_since(
            store,
            now - timedelta(seconds=budgets.node_window_s),
            node=plan.target.node,
            kinds=sorted(ISOLATING),
            cluster=plan.cluster,
        )
    if job:
        job_n = executions_since(
            store,
            now - timedelta(seconds=budgets.job_window_s),
            job=plan.target.job,
            kinds=[ActionKind.RESTART_JOB],
            cluster=plan.cluster,
        )
    return LimitCounts(tripped, reason, isolated, node_n, job_n)
