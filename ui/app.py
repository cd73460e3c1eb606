"""The TrainGuard incident console (run with `trainguard console`): an API client only."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run ui/app.py` puts ui/ on sys.path, not the checkout this file is in.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from ui import session  # noqa: E402
from ui.views import actions, incident, jobs, nodes, overview, scheduler, webhooks  # noqa: E402

RENDER = {
    "overview": overview.render,
    "incident": incident.render,
    "jobs": jobs.render,
    "nodes": nodes.render,
    "actions": actions.render,
    "scheduler": scheduler.render,
    "webhooks": webhooks.render,
}


def main() -> None:
    """Draw the sidebar and the page the URL names."""
    st.set_page_config(page_title="TrainGuard console", page_icon="🛡️", layout="wide")
    settings = session.load_settings()
    page = session.current_page()
    st.sidebar.title("🛡️ TrainGuard")
    names = list(session.PAGES)
    chosen = st.sidebar.radio(
        "Page", names, index=names.index(page), format_func=session.PAGES.__getitem__
    )
    if chosen != page:
        session.go(chosen)
    client = session.connection(settings)
    session.identify(client)
    seconds = session.refresh_control(settings)
    st.sidebar.caption(f"API: {client.base_url}")
    session.show_flash()
    with session.page_guard():
        with session.section("Clusters"):
            session.cluster_selector(client)
        RENDER[page](client)
    session.auto_refresh(seconds)


main()
