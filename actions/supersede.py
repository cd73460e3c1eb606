"""Which long ladders an isolation makes pointless (they stand down instead of acting twice).

A node just isolated (in the isolation's cluster: `n1` of another cluster is another node):
long ladders of other incidents on it that have not isolated it yet stand down (a ladder
with a long wait, `phases.LONG_WAITS`, still waiting or already past its wait but held for
approval). E.g. a GPU predicted to fail that fails before its job checkpoints: the hardware
incident's ladder drains the node and restarts the job, so the prediction's ladder must not
drain and restart it again when the restarted job saves. The rule is `decisions.superseded`;
this module reads what it needs.
"""

from __future__ import annotations

from actions import store as db
from actions.decisions import isolated_nodes, superseded, superseded_candidates
from actions.model import ActionPlan, State
from analytics.store import Store

UNFINISHED = (State.WAITING, State.PLANNED, State.AWAITING_APPROVAL, State.APPROVED)


def superseded_ladders(store: Store, plan: ActionPlan) -> list[tuple[str, str]]:
    """Return (incident, node) of the long ladders an isolation just made pointless."""
    if not isolated_nodes(plan):
        return []
    pending = db.load_actions(store, states=list(UNFINISHED))
    candidates = superseded_candidates(plan, pending)
    ladders = {i: db.load_actions(store, incident_id=i) for i, _node in candidates}
    return superseded(plan, pending, ladders)
