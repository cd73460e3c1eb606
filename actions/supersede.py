"""Which long ladders an isolation makes pointless (they stand down instead of acting twice)."""

from __future__ import annotations

from actions import store as db
from actions.model import ISOLATING, PASSED_STATES, ActionPlan, State
from actions.phases import WAITING_KINDS
from analytics.store import Store


def superseded_ladders(store: Store, plan: ActionPlan) -> list[tuple[str, str]]:
    """Return (incident, node) of the long ladders an isolation just made pointless.

    A node just isolated (in the isolation's cluster: `n1` of another cluster is another
    node): long ladders of other incidents on it that have not isolated it
    yet stand down (a ladder with a waiting kind, still waiting or already past its wait but
    held for approval). E.g. a GPU predicted to fail that fails before its job checkpoints:
    the hardware incident's ladder drains the node and restarts the job, so the prediction's
    ladder must not drain and restart it again when the restarted job saves.
    """
    nodes = {n for n in [plan.target.node, *plan.params.get("nodes", [])] if n}
    if not nodes:
        return []
    unfinished = [State.WAITING, State.PLANNED, State.AWAITING_APPROVAL, State.APPROVED]
    pending = db.load_actions(store, states=unfinished)
    candidates = {
        (a.plan.incident_id, str(a.plan.target.node))
        for a in pending
        if a.plan.target.node in nodes
        and a.plan.cluster == plan.cluster
        and a.plan.incident_id != plan.incident_id
    }
    moving = {*PASSED_STATES, State.EXECUTING}
    found = []
    for incident_id, node in sorted(candidates):
        ladder = db.load_actions(store, incident_id=incident_id)
        isolating = [a for a in ladder if a.plan.kind in ISOLATING]
        waits = any(a.plan.kind in WAITING_KINDS for a in ladder)
        if waits and isolating and all(a.state not in moving for a in isolating):
            found.append((incident_id, node))
    return found
