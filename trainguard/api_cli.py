"""`trainguard api`: serve the REST API; `trainguard api token create|list|revoke`."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from fastapi import FastAPI

from actions.engine import ActionEngine
from actions.webhooks.delivery import reseal_subscriptions
from analytics.migrations import migrate
from analytics.store import Store, StoreError
from api.auth import Role, TokenBook
from api.context import ApiContext
from api.generation import Generation
from api.settings import ApiSettings
from scheduler.service import Scheduler
from trainguard.settings import BusSettings, StoreSettings


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `api` and its `token` subcommands."""
    p = sub.add_parser(
        "api",
        help="serve the on-call REST API (or manage its tokens)",
        description="Serve /v1 on TG_API_HOST:TG_API_PORT (default 127.0.0.1:8700).",
    )
    p.set_defaults(func=cmd_serve)
    tokens = p.add_subparsers(dest="api_command")
    create = tokens.add_parser("token-create", help="create a token (printed once)")
    create.add_argument("name", help="who or what uses it")
    create.add_argument("--role", choices=[r.value for r in Role], default=Role.VIEWER.value)
    create.set_defaults(func=cmd_token_create)
    listing = tokens.add_parser("token-list", help="list tokens (never their secrets)")
    listing.set_defaults(func=cmd_token_list)
    revoke = tokens.add_parser("token-revoke", help="revoke every token with this name")
    revoke.add_argument("name")
    revoke.set_defaults(func=cmd_token_revoke)


def build_context(
    store: Store,
    settings: ApiSettings,
    bus: BusSettings,
    engine: ActionEngine | None = None,
    scheduler: Scheduler | None = None,
) -> ApiContext:
    """Return the API's context with ClickHouse (and Kafka, when used) readiness checks."""
    checks = {"clickhouse": lambda: _check_store(store)}
    if bus.mode == "kafka":
        checks["kafka"] = lambda: _check_kafka(bus.bootstrap)
    return ApiContext(
        store=store,
        tokens=TokenBook(store, cache_s=settings.token_cache_s, check_s=settings.token_check_s),
        checks=checks,
        cache_s=settings.cache_s,
        max_body_bytes=settings.max_body_bytes,
        max_url_bytes=settings.max_url_bytes,
        risk_horizon_h=settings.risk_horizon_h,
        generation=Generation(settings.generation_file, store, settings.store_generation_ms),
        engine=engine,
        deliverer=engine.dispatcher.deliverer if engine and engine.dispatcher else None,
        scheduler=scheduler,
    )


def _check_store(store: Store) -> str | None:
    try:
        store.query_df("SELECT 1 AS ok")
    except StoreError as exc:
        return str(exc)
    return None


def _check_kafka(bootstrap: str) -> str | None:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=3000)
    except KafkaError as exc:
        return f"Kafka at {bootstrap} unreachable: {exc}"
    try:
        admin.list_topics()
    except KafkaError as exc:
        return f"Kafka at {bootstrap}: {exc}"
    finally:
        admin.close()
    return None


def _store(connections: int | None = None) -> Store:
    from trainguard.wiring import build_store

    settings = StoreSettings()
    if connections is not None:
        settings = settings.model_copy(update={"connections": connections})
    store = build_store(settings)
    migrate(store)
    return store


def app_from_settings() -> FastAPI:
    """Build the app from the TG_* settings (one per server process)."""
    from api.app import create_app
    from trainguard.act_cli import build_engine
    from trainguard.settings import ActSettings

    store = _store(connections=ApiSettings().store_connections)
    # approvals continue a ladder here, with the same executors and limits as `trainguard act`
    engine = build_engine(ActSettings(), store, None, replica="api")
    observe = None
    if ApiSettings().metrics_port:  # the launcher serves them: PROMETHEUS_MULTIPROC_DIR is set
        from trainguard.metrics.api import request_observer

        observe = request_observer()
    app = create_app(build_context(store, ApiSettings(), BusSettings(), engine=engine), observe)
    # What start-up built (modules, the app) lives as long as the process: keep it out of
    # the full collections that cache rebuilds trigger, which otherwise stop every request
    # of the worker for 100-450 ms while the collector walks it (measured with bench/api.py).
    gc.collect()
    gc.freeze()
    return app


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve until interrupted (TG_API_WORKERS processes sharing one write counter)."""
    import uvicorn

    from api.server import server_options

    settings = ApiSettings()
    store = _store()  # migrate once, before the workers start
    reseal_subscriptions(store)  # webhook URLs and secrets stored in plaintext before sealing
    made = None
    if settings.generation_file is None and settings.workers > 1:  # one process needs no file
        fd, name = tempfile.mkstemp(prefix="trainguard-api-", suffix=".generation")
        os.close(fd)
        made = Path(name)
        os.environ["TG_API_GENERATION_FILE"] = name  # the workers' settings read it
    print(f"TrainGuard API on http://{settings.host}:{settings.port}/docs", file=sys.stderr)
    with contextlib.ExitStack() as cleanup:
        if made is not None:
            cleanup.callback(made.unlink, missing_ok=True)
        if settings.metrics_port:
            cleanup.enter_context(_worker_metrics(settings.metrics_host, settings.metrics_port))
        # uvicorn re-raises SIGTERM once it has shut down; by default that would end the
        # process before the cleanup above runs (the single-worker case)
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        uvicorn.run(
            "trainguard.api_cli:app_from_settings",
            factory=True,
            workers=settings.workers,
            **server_options(settings),  # problem+json refusals from the server too
        )
    return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


@contextlib.contextmanager
def _worker_metrics(host: str, port: int) -> Iterator[None]:
    """Serve every worker's series on host:port from a directory of this start only.

    The directory is set before prometheus_client is first imported (its choice of where
    values live is made then; nothing imported so far imports it), and removed at exit.
    """
    if "prometheus_client" in sys.modules:
        raise RuntimeError("prometheus_client imported before its multiprocess directory was set")
    directory = Path(tempfile.mkdtemp(prefix="trainguard-api-metrics-"))
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)  # the workers inherit it
    try:
        from trainguard.metrics.api import launcher_registry
        from trainguard.metrics.exposition import serve_metrics

        endpoint = serve_metrics(launcher_registry(directory), host, port)
        try:
            yield
        finally:
            endpoint.close()
    finally:
        os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
        shutil.rmtree(directory, ignore_errors=True)


def cmd_token_create(args: argparse.Namespace) -> int:
    """Create a token and print it (the only time it is shown)."""
    token = TokenBook(_store()).create(args.name, Role(args.role))
    print(token)
    print(f"created a {args.role} token for {args.name}; it is not shown again", file=sys.stderr)
    return 0


def cmd_token_list(args: argparse.Namespace) -> int:
    """List tokens."""
    for t in TokenBook(_store()).tokens():
        state = "revoked" if t.revoked else "active"
        print(f"{t.name:<24} {t.role.value:<9} {state:<8} created {t.created:%Y-%m-%d %H:%M}Z")
    return 0


def cmd_token_revoke(args: argparse.Namespace) -> int:
    """Revoke a name's tokens; exit 1 when there were none."""
    n = TokenBook(_store()).revoke(args.name)
    print(f"revoked {n} token(s) of {args.name}")
    return 0 if n else 1
