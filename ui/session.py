"""Per-browser-session state of the console: the API connection, navigation, messages."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st
from pydantic import ValidationError

from ui.client import ApiClient, ApiError, ApiUnreachable, Forbidden, RouteMissing, TokenRejected
from ui.settings import ConsoleSettings
from ui.viewmodel import REFRESH_CHOICES, refresh_label, role_allows

PAGES = {
    "overview": "Overview",
    "incident": "Incident",
    "jobs": "Jobs",
    "nodes": "Nodes / GPUs",
    "actions": "Actions",
    "scheduler": "Scheduler",
    "webhooks": "Webhooks",
}


ALL_CLUSTERS = "All clusters"


class ConnectionProblem(Exception):
    """The API is unreachable or rejects the token: the page cannot show anything."""

    def __init__(self, error: ApiError) -> None:
        super().__init__(error.message)
        self.error = error


def load_settings() -> ConsoleSettings:
    """Return the console settings; a bad value stops the page with a clear message."""
    try:
        return ConsoleSettings()
    except ValidationError as exc:
        st.error(f"Invalid console settings (TG_CONSOLE_*):\n\n{exc}")
        st.stop()
        raise  # unreachable: st.stop() ends the run


def connection(settings: ConsoleSettings) -> ApiClient:
    """Draw the sidebar's connection box and return a client for what it holds."""
    state = st.session_state
    state.setdefault("api_url", settings.api_url)
    state.setdefault("token", settings.token.get_secret_value())
    with st.sidebar.expander("Connection", expanded=not state["token"]):
        st.text_input("API URL", key="api_url")
        st.text_input("API token", key="token", type="password", help="trainguard api token-create")
    key = (state["api_url"].strip(), state["token"].strip())
    if state.get("client_key") != key:
        old = state.get("client")
        if old is not None:
            old.close()
        state["client"] = ApiClient(key[0], key[1], timeout_s=settings.timeout_s)
        state["client_key"] = key
    client: ApiClient = state["client"]
    return client


def identify(client: ApiClient) -> None:
    """Ask the API who the token belongs to (once per connection) and say it in the sidebar.

    Pages then hide what the role may not do; the API enforces it either way. When the API
    cannot say (unreachable, an older API without /v1/me), the role is unknown and the
    buttons stay, so the API's answer is what the user sees.
    """
    state = st.session_state
    key = state.get("client_key")
    if state.get("caller_key") != key or state.get("caller") is None:
        try:
            state["caller"] = client.me()
        except ApiError:
            state["caller"] = None
        state["caller_key"] = key
    caller = state.get("caller")
    if caller is not None:
        st.sidebar.caption(f"Signed in as **{caller.name}** ({caller.role})")


def allowed(needed: str) -> bool:
    """Say whether the console's caller has at least the `needed` role (unknown: yes)."""
    caller = st.session_state.get("caller")
    return role_allows(None if caller is None else caller.role, needed)


def needs(needed: str, what: str) -> None:
    """Say that `what` is for a higher role than the caller's."""
    caller = st.session_state.get("caller")
    role = "unknown" if caller is None else caller.role
    st.caption(f"🔒 {what} needs the {needed} role (this token is {role}).")


def refresh_control(settings: ConsoleSettings) -> int:
    """Draw the auto-refresh choice; return the interval in seconds (0: off)."""
    choices = sorted({*REFRESH_CHOICES, settings.refresh_s})
    st.session_state.setdefault("refresh_s", settings.refresh_s)
    seconds: int = st.sidebar.selectbox(
        "Auto-refresh", choices, key="refresh_s", format_func=refresh_label
    )
    return seconds


def auto_refresh(seconds: int) -> None:
    """Rerun the whole page every `seconds` (a timer fragment; 0 turns it off)."""
    st.session_state["last_run"] = time.monotonic()
    if seconds <= 0:
        return

    @st.fragment(run_every=seconds)
    def tick() -> None:
        if time.monotonic() - st.session_state.get("last_run", 0.0) >= seconds - 0.5:
            st.rerun(scope="app")

    tick()


def current_page() -> str:
    """Return the page the URL names (overview when it names none we know)."""
    page = st.query_params.get("page", "overview")
    return page if page in PAGES else "overview"


def go(page: str, **params: str) -> None:
    """Navigate: put the page and its parameters in the URL (shareable) and rerun.

    The chosen cluster stays in the URL across pages.
    """
    cluster = current_cluster()
    kept = {"cluster": cluster} if cluster else {}
    st.query_params.from_dict({"page": page, **kept, **params})
    st.session_state["nav_nonce"] = st.session_state.get("nav_nonce", 0) + 1
    st.rerun()


def current_cluster() -> str | None:
    """Return the cluster the URL narrows the console to (None: every cluster)."""
    return st.query_params.get("cluster") or None


def cluster_selector(client: ApiClient) -> str | None:
    """Offer the clusters in the sidebar when there is more than one; return the chosen one.

    With one cluster (or an API without /v1/clusters) nothing is shown and nothing filtered.
    """
    try:
        names = [c.cluster for c in client.clusters()]
    except RouteMissing:
        return None
    current = current_cluster()
    if len(names) <= 1:
        return None
    options = [ALL_CLUSTERS, *names]
    chosen = st.sidebar.selectbox(
        "Cluster", options, index=options.index(current) if current in names else 0
    )
    picked = None if chosen == ALL_CLUSTERS else str(chosen)
    if picked != current:
        params = {k: v for k, v in st.query_params.to_dict().items() if k != "cluster"}
        st.query_params.from_dict({**params, **({"cluster": picked} if picked else {})})
        st.rerun()
    return picked


def nonce() -> int:
    """Return a number that changes on every navigation (keys selections to one visit)."""
    return int(st.session_state.get("nav_nonce", 0))


def flash(kind: str, text: str) -> None:
    """Keep a message to show after the next rerun."""
    st.session_state["flash"] = (kind, text)


def show_flash() -> None:
    """Show the message kept by `flash`, once."""
    kept = st.session_state.pop("flash", None)
    if kept is None:
        return
    kind, text = kept
    (st.success if kind == "success" else st.error)(text)


@contextmanager
def section(what: str) -> Iterator[None]:
    """Draw one part of a page; API errors become a message there instead of a traceback.

    An unreachable API or a rejected token concerns the whole page: it is raised as
    `ConnectionProblem` for `page_guard` to show once.
    """
    try:
        yield
    except (ApiUnreachable, TokenRejected) as exc:
        raise ConnectionProblem(exc) from exc
    except RouteMissing as exc:
        st.info(f"{what}: not available yet (this API does not serve `{exc.route}`).")
    except Forbidden as exc:
        st.warning(f"{what}: {exc.message}")
    except ApiError as exc:
        st.error(f"{what}: {exc.message}")


@contextmanager
def page_guard() -> Iterator[None]:
    """Show a connection problem once, with what to do about it."""
    try:
        yield
    except ConnectionProblem as exc:
        error = exc.error
        if isinstance(error, TokenRejected):
            st.error(f"🔒 Token rejected. {error.message}.")
        else:
            st.error(f"🔌 API unreachable: {error.message}")
        st.caption("Fix the connection in the sidebar; the page retries on the next refresh.")
