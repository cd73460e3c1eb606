"""Actions: what the action engine proposed and did, approvals, and its audit log."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.models import ActionItem
from ui.session import allowed, current_cluster, flash, go, needs, section
from ui.viewmodel import action_decidable

STATUSES = (
    "pending",
    "approved",
    "waiting",
    "executing",
    "done",
    "failed",
    "rejected",
    "dry_run",
)


def render(client: ApiClient) -> None:
    """Draw the actions and the audit log."""
    st.title("Actions")
    with section("Actions"):
        _actions(client)
    with section("Audit log"):
        _audit(client)


def _actions(client: ApiClient) -> None:
    status = st.selectbox("Status", STATUSES, index=0, key="actions-status")
    actions = client.actions(status=status, cluster=current_cluster()).items
    st.subheader(f"{status} ({len(actions)})")
    if not actions:
        st.caption("None.")
    elif status == "pending":
        for action in actions:
            decide(client, action)
    else:
        st.dataframe(pd.DataFrame([action_row(a) for a in actions]), hide_index=True)


def _audit(client: ApiClient) -> None:
    st.subheader("Audit log")
    cursors: list[str | None] = st.session_state.setdefault("audit-cursors", [None])
    page = client.audit(limit=100, cursor=cursors[-1])
    rows = [
        {
            "at": e.at,
            "event": e.event,
            "actor": e.actor,
            "action": e.action_id,
            "incident": e.incident_id,
            "detail": "" if e.detail is None else str(e.detail),
        }
        for e in page.items
    ]
    if rows:
        st.table(pd.DataFrame(rows).set_index("at"))
    else:
        st.caption("No audit entries.")
    newer, older, _ = st.columns([1, 1, 6])
    if newer.button("Newer", disabled=len(cursors) == 1):
        cursors.pop()
        st.rerun()
    if older.button("Older", disabled=page.next_cursor is None):
        cursors.append(page.next_cursor)
        st.rerun()


def decide(client: ApiClient, action: ActionItem) -> None:
    """Draw one pending action with approve and reject (operators)."""
    with st.container(border=True):
        st.markdown(
            f"**{action.kind}** on `{action.target}` · risk {action.risk} · mode {action.mode}"
            + (f" · incident `{action.incident_id}`" if action.incident_id else "")
        )
        st.write(f"{action.plan.what} — {action.plan.why}")
        if not allowed("operator"):
            needs("operator", "Approving or rejecting")
            if action.incident_id and st.button("Incident", key=f"inc-{action.id}"):
                go("incident", id=action.incident_id)
            return
        reason = st.text_input("Reason", key=f"reason-{action.id}")
        ok, no, link, _ = st.columns([1, 1, 1, 3])
        disabled = not action_decidable(action)
        with section("Approve"):
            if ok.button("Approve", key=f"approve-{action.id}", type="primary", disabled=disabled):
                client.approve(action.id, reason or "approved in the console")
                flash("success", f"Approved {action.kind} on {action.target}.")
                st.rerun()
        with section("Reject"):
            if no.button("Reject", key=f"reject-{action.id}", disabled=disabled):
                client.reject(action.id, reason or "rejected in the console")
                flash("success", f"Rejected {action.kind} on {action.target}.")
                st.rerun()
        if action.incident_id and link.button("Incident", key=f"inc-{action.id}"):
            go("incident", id=action.incident_id)


def action_row(action: ActionItem) -> dict[str, object]:
    """Return an action as a table row."""
    return {
        "id": action.id,
        "incident": action.incident_id,
        "kind": action.kind,
        "target": action.target,
        "risk": action.risk,
        "mode": action.mode,
        "status": action.status,
        "what": action.plan.what,
        "why": action.plan.why,
        "created": action.created_at,
        "updated": action.updated_at,
        "result": "" if action.result is None else str(action.result),
    }
