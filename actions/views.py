"""Read models of the action engine for the API: action pages, the audit trail, the breaker."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from actions.model import Action, State
from actions.safety import BREAKER
from actions.store import breaker_state, isolated_since, stored_action
from analytics.action_tables import ACTION_AUDIT, ACTION_STATE
from analytics.incident_tables import INCIDENTS
from analytics.store import Store
from analytics.tables import cluster_name, stored_cluster


def action_page(
    store: Store,
    states: Sequence[State] | None = None,
    incident_id: str | None = None,
    after: int | None = None,
    limit: int = 50,
    action_ids: Sequence[str] | None = None,
    cluster: str | None = None,
) -> tuple[list[Action], int | None]:
    """Return actions, most recently changed first, and the position after the page.

    `cluster` keeps the actions on incidents of that cluster (by the incident, not the
    action's own `cluster`, so actions stored before actions carried it are found too).
    """
    outer, params = ["1"], {"limit": int(limit) + 1}  # type: tuple[list[str], dict[str, Any]]
    inner = ["1"]
    if incident_id is not None:
        inner.append("incident_id = %(inc)s")
        params["inc"] = incident_id
    if cluster is not None:
        inner.append(
            f"incident_id IN (SELECT id FROM `{store.database}`.`{INCIDENTS.name}` "
            "WHERE cluster = %(cluster)s)"
        )
        params["cluster"] = stored_cluster(cluster)
    if action_ids is not None:
        inner.append("action_id IN %(ids)s")
        params["ids"] = tuple(action_ids) or ("",)
    if states is not None:
        outer.append("s IN %(states)s")
        params["states"] = tuple(s.value for s in states) or ("",)
    if after is not None:
        outer.append("q < %(after)s")
        params["after"] = int(after)
    frame = store.query_df(
        f"SELECT action_id, s, p, r, toUInt32(t) AS t, tu, q FROM ("
        f"SELECT action_id, argMax(state, seq) AS s, argMax(plan, seq) AS p, "
        f"argMax(result, seq) AS r, argMax(at, seq) AS t, argMax(at_us, seq) AS tu, "
        f"max(seq) AS q FROM `{store.database}`.`{ACTION_STATE.name}` "
        f"WHERE {' AND '.join(inner)} GROUP BY action_id) "
        f"WHERE {' AND '.join(outer)} ORDER BY q DESC LIMIT %(limit)s",
        params,
    )
    rows = [
        stored_action(p, s, r, t, tu, q) for _a, s, p, r, t, tu, q in frame.itertuples(index=False)
    ]
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (rows[-1].seq if more and rows else None)


def audit_page(
    store: Store, after: int | None = None, limit: int = 100, incident_id: str | None = None
) -> tuple[list[dict[str, Any]], int | None]:
    """Return audit rows, newest first, and the position after the page."""
    where, params = ["1"], {"limit": int(limit) + 1}  # type: tuple[list[str], dict[str, Any]]
    if after is not None:
        where.append("seq < %(after)s")
        params["after"] = int(after)
    if incident_id is not None:
        where.append("incident_id = %(inc)s")
        params["inc"] = incident_id
    frame = store.query_df(
        f"SELECT toUInt32(at) AS at, at_us, seq, event, actor, action_id, incident_id, kind, "
        f"target, mode, detail FROM `{store.database}`.`{ACTION_AUDIT.name}` "
        f"WHERE {' AND '.join(where)} ORDER BY seq DESC LIMIT %(limit)s",
        params,
    )
    rows: list[dict[str, Any]] = [
        {
            "at": datetime.fromtimestamp(int(at), UTC).replace(microsecond=int(us)),
            "seq": int(seq),
            "event": str(event),
            "actor": str(actor),
            "action_id": str(aid),
            "incident_id": str(inc),
            "kind": str(kind),
            "target": str(target),
            "mode": str(mode),
            "detail": str(detail),
        }
        for at, us, seq, event, actor, aid, inc, kind, target, mode, detail in frame.itertuples(
            index=False
        )
    ]
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (int(rows[-1]["seq"]) if more and rows else None)


def isolations(store: Store) -> dict[tuple[str, str], str]:
    """Return nodes TrainGuard isolated and has not resumed since: (cluster, node) -> kind.

    A node is isolated in its action's cluster only (an action stored before actions
    carried a cluster is in the default one); a resume in one cluster resumes that
    cluster's node. A node whose hardware-inspection action is done is reported as
    "hardware_inspection".
    """
    frame = store.query_df(
        f"SELECT c, one, k, toUInt32(t) AS t FROM (SELECT action_id, any(node) AS n, "
        f"any(cluster) AS c, any(kind) AS k, argMax(state, seq) AS s, max(at) AS t "
        f"FROM `{store.database}`.`{ACTION_STATE.name}` WHERE node != '' AND kind IN "
        f"('isolate_node', 'isolate_gpu', 'isolate_switch', 'resume_node', "
        f"'hardware_inspection') GROUP BY action_id) ARRAY JOIN splitByChar(',', n) AS one "
        f"WHERE s = 'done' ORDER BY t"
    )
    state: dict[tuple[str, str], str] = {}
    for stored, node, kind, _t in frame.itertuples(index=False):
        key = (cluster_name(stored), str(node))
        if kind == "resume_node":
            state.pop(key, None)
        elif kind == "hardware_inspection" or key not in state:
            state[key] = str(kind)
    return state


def isolated_nodes(store: Store, cluster: str | None = None) -> dict[str, str]:
    """Return isolated nodes by name: node -> action kind (see `isolations`).

    With `cluster`, that cluster's nodes only. Without it, every cluster's, by name: a name
    isolated in several clusters is reported once ("hardware_inspection" wins).
    """
    found: dict[str, str] = {}
    for (where, node), kind in isolations(store).items():
        if cluster is not None and where != cluster:
            continue
        if kind == "hardware_inspection" or node not in found:
            found[node] = kind
    return found


@dataclass(frozen=True)
class BreakerStatus:
    """The isolation circuit breaker as stored, and how many nodes its window holds."""

    tripped: bool
    reason: str
    isolated_in_window: int


def breaker_status(store: Store, window_s: float, now: datetime | None = None) -> BreakerStatus:
    """Return the isolation breaker's state and the nodes isolated in its window."""
    tripped, reason = breaker_state(store, BREAKER)
    since = (now or datetime.now(UTC)) - timedelta(seconds=window_s)
    return BreakerStatus(tripped, reason, isolated_since(store, since))
