"""Webhooks: subscriptions, a test delivery, recent deliveries and redelivery (admin)."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from ui.client import ApiClient
from ui.session import allowed, flash, needs, section


def render(client: ApiClient) -> None:
    """Draw the webhooks."""
    st.title("Webhooks")
    if not allowed("admin"):
        needs("admin", "Managing webhooks")
        return
    with section("Webhooks"):
        hooks = client.webhooks()
        st.subheader(f"Subscriptions ({len(hooks)})")
        for hook in hooks:
            with st.container(border=True):
                extra = {k: v for k, v in hook.model_dump().items() if k not in ("id", "url")}
                st.markdown(f"**{hook.id}** → `{hook.url}`")
                if extra:
                    st.caption(json.dumps(extra, default=str))
                test, show, delete, _ = st.columns([1, 1, 1, 3])
                with section("Test"):
                    if test.button("Send test", key=f"test-{hook.id}"):
                        client.test_webhook(hook.id)
                        flash("success", f"Test delivery sent to {hook.url}.")
                        st.rerun()
                if show.toggle("Deliveries", key=f"show-{hook.id}"):
                    with section("Deliveries"):
                        _deliveries(client, hook.id)
                with section("Delete"):
                    if delete.button("Delete", key=f"delete-{hook.id}"):
                        client.delete_webhook(hook.id)
                        flash("success", f"Deleted webhook {hook.id}.")
                        st.rerun()
        with section("New webhook"):
            _create(client)


def _deliveries(client: ApiClient, webhook_id: str) -> None:
    deliveries = client.deliveries(webhook_id)
    if not deliveries:
        st.caption("No deliveries yet.")
        return
    st.dataframe(pd.DataFrame([d.model_dump() for d in deliveries]), hide_index=True)
    ids = [d.id for d in deliveries]
    pick, go_again = st.columns([3, 1], vertical_alignment="bottom")
    chosen = pick.selectbox("Delivery", ids, key=f"delivery-{webhook_id}")
    if go_again.button("Redeliver", key=f"redeliver-{webhook_id}") and chosen:
        client.redeliver(chosen)
        flash("success", f"Delivery {chosen} queued again.")
        st.rerun()


def _create(client: ApiClient) -> None:
    with st.form("new-webhook"):
        st.subheader("New webhook (admin)")
        url = st.text_input("URL", placeholder="https://hooks.example.com/trainguard")
        options = st.text_area(
            "Other fields (JSON object)", value="{}", help="e.g. format, events, secret"
        )
        if not st.form_submit_button("Create"):
            return
    try:
        extra = json.loads(options or "{}")
    except ValueError as exc:
        st.error(f"Other fields are not JSON: {exc}")
        return
    if not isinstance(extra, dict):
        st.error("Other fields must be a JSON object.")
        return
    hook = client.create_webhook({**extra, "url": url})
    flash("success", f"Created webhook {hook.id}.")
    st.rerun()
