"""The `trainguard` command line."""

from __future__ import annotations

import argparse
import gc
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from trainguard.settings import check_environment
from trainguard.signals import stop_on_signals

log = logging.getLogger("trainguard")

OWN_PACKAGES = frozenset(
    {"ingest", "analytics", "diagnosis", "actions", "scheduler", "api", "ui", "sim", "trainguard"}
)
"""Top-level packages of this distribution: a missing one is a broken install, not an extra."""

EXTRA_OF = {"agent": "agent", "console": "console", "demo": "embedded,server,console"}
"""The extra each command needs when it is not `server` (pyproject's optional-dependencies)."""

SUBCOMMAND_MODULES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("trainguard.sim_cli", "add_parsers", ("sim",)),
    ("trainguard.explain_cli", "add_parsers", ("explain",)),
    ("trainguard.diagnose_cli", "add_parsers", ("diagnose",)),
    ("trainguard.api_cli", "add_parsers", ("api",)),
    ("trainguard.act_cli", "add_parsers", ("act",)),
    ("trainguard.scheduler_cli", "register", ("scheduler",)),
    ("trainguard.predict_cli", "add_parsers", ("predict",)),
    ("trainguard.console_cli", "add_parsers", ("console",)),
    ("trainguard.topics_cli", "add_parsers", ("topics",)),
    (
        "trainguard.ingest_cli",
        "add_parsers",
        ("ingest-logs", "ingest-fr", "ingest-ras", "stacks", "discover"),
    ),
)
"""Modules registering more commands, and the commands each registers.

A module whose imports need an extra that is not installed (the node agent installs only
`agent`) registers its commands as stand-ins that say which extra to install.
"""


def tune_gc_for_batches() -> None:
    """Collect cycles rarely: a batch allocates ~10^6 short-lived, acyclic objects.

    With the default thresholds the cyclic collector runs every 700 allocations and rescans
    the live batch each time, which cost the sink about half its decode throughput, and the
    diagnosis worker (whose buffered events and detector windows stay alive for seconds)
    about a third of its CPU (bench/diagnosis_cpu.py). Freezing what start-up built keeps
    it out of every later full collection.
    """
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)


def cmd_migrate(args: argparse.Namespace) -> int:
    """Apply pending schema migrations; with TG_KAFKA_MODE=kafka, create the topics too."""
    from analytics.migrations import migrate
    from trainguard.settings import BusSettings, StoreSettings
    from trainguard.wiring import build_store

    settings = StoreSettings()
    store = build_store(settings)
    applied = migrate(store, settings.retention_days)
    print(f"database {store.database}: applied {applied or 'nothing (up to date)'}")
    bus = BusSettings()
    if bus.mode != "kafka":
        return 0
    from trainguard.topics_cli import create_topics

    created, problems = create_topics(bus)
    print(f"kafka {bus.bootstrap}: created topics {', '.join(created) or 'none (all existed)'}")
    # Existing topics are never altered: a difference (e.g. topics sized by
    # deploy/production/create-topics.sh) is reported, and `trainguard topics verify` fails on it.
    for problem in problems:
        print(f"  warning: topic differs from the plan: {problem}", file=sys.stderr)
    return 0


def cmd_sink(args: argparse.Namespace) -> int:
    """Consume telemetry topics into ClickHouse until SIGTERM."""
    from trainguard.metrics.exposition import new_registry, serve_metrics
    from trainguard.metrics.services import register_sink
    from trainguard.settings import (
        BusSettings,
        EventTimeSettings,
        SinkProcessSettings,
        StoreSettings,
    )
    from trainguard.wiring import build_bus, build_sink, build_store

    bus_settings, store_settings, sink_settings, event_time = (
        BusSettings(),
        StoreSettings(),
        SinkProcessSettings(),
        EventTimeSettings(),
    )
    if bus_settings.mode == "embedded":
        print(
            "trainguard sink needs TG_KAFKA_MODE=kafka (the embedded bus lives inside `demo`)",
            file=sys.stderr,
        )
        return 2
    stop = stop_on_signals()
    store = build_store(store_settings)
    sink = build_sink(build_bus(bus_settings), store, sink_settings, event_time.policy())
    tune_gc_for_batches()
    if sink_settings.metrics_port:
        registry = new_registry("sink")
        register_sink(registry, sink)
        serve_metrics(registry, sink_settings.metrics_host, sink_settings.metrics_port)
    log.info("sink consuming %s into %s", bus_settings.bootstrap, store.database)
    try:
        sink.run(stop)
    finally:
        sink.consumer.close()
    return 0


def cmd_agent(args: argparse.Namespace) -> int:
    """Run the node agent until SIGTERM."""
    from ingest.agent.run import Agent, AgentSettings
    from trainguard.buses import build_bus
    from trainguard.settings import BusSettings

    bus_settings = BusSettings()
    if bus_settings.mode == "embedded":
        print("trainguard agent needs TG_KAFKA_MODE=kafka and TG_KAFKA_BOOTSTRAP", file=sys.stderr)
        return 2
    stop = stop_on_signals()
    settings = AgentSettings()
    producer = build_bus(bus_settings).producer()
    agent = Agent(settings, producer)
    if settings.metrics_port:
        from trainguard.metrics.exposition import new_registry, serve_metrics
        from trainguard.metrics.services import register_agent

        registry = new_registry("agent")
        register_agent(registry, agent)
        serve_metrics(registry, settings.metrics_host, settings.metrics_port)
    try:
        agent.run(stop)
    finally:
        producer.close()
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the live demo (API and console on a faulty simulated fleet) or, --once, one run."""
    from trainguard.demo import DEMO_SCENARIO, run_demo

    if args.once:
        return run_demo(args.scenario or DEMO_SCENARIO, data_dir=args.data_dir)
    from api.settings import ApiSettings
    from trainguard.live_demo import run_live

    return run_live(
        args.scenario or DEMO_SCENARIO,
        data_dir=args.data_dir,
        speed=args.speed,
        stop=stop_on_signals(),
        api=ApiSettings(),
    )


def cmd_retention(args: argparse.Namespace) -> int:
    """Drop day partitions older than --days."""
    from analytics.migrations import drop_old_partitions
    from trainguard.settings import StoreSettings
    from trainguard.wiring import build_store

    dropped = drop_old_partitions(build_store(StoreSettings()), args.days)
    print(f"dropped {len(dropped)} partition(s)" + (": " + ", ".join(dropped) if dropped else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand."""
    parser = argparse.ArgumentParser(prog="trainguard", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    commands: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
        "migrate": (cmd_migrate, "apply ClickHouse schema migrations (and create Kafka topics)"),
        "sink": (cmd_sink, "consume Kafka telemetry into ClickHouse"),
        "agent": (cmd_agent, "sample GPUs, host, kernel and training logs on this node"),
        "demo": (cmd_demo, "a simulated faulty fleet through the pipeline, API and console"),
        "retention": (cmd_retention, "drop old day partitions"),
    }
    subparsers = {}
    for name, (func, help_text) in commands.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        subparsers[name] = p
    subparsers["demo"].add_argument("--scenario", type=Path, help="scenario YAML (default: demo)")
    subparsers["demo"].add_argument("--data-dir", default=".tg/demo", help="embedded store dir")
    subparsers["demo"].add_argument(
        "--once", action="store_true", help="one scenario run, a printed summary, then exit"
    )
    subparsers["demo"].add_argument(
        "--speed", type=float, default=2.0, help="simulated seconds per real second (live)"
    )
    subparsers["retention"].add_argument("--days", type=int, required=True, help="days to keep")
    for module_name, register, names in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if not _third_party(exc):
                raise
            for name in names:
                _add_unavailable(sub, name, exc)
            continue
        getattr(module, register)(sub)
    return parser


def _third_party(exc: ModuleNotFoundError) -> bool:
    """Return whether the missing module belongs to another distribution (an extra)."""
    return bool(exc.name) and str(exc.name).partition(".")[0] not in OWN_PACKAGES


def missing_extra_message(command: str, exc: ModuleNotFoundError) -> str:
    """Return what to install for `command`, whose import of `exc.name` failed."""
    extra = EXTRA_OF.get(command, "server")
    return (
        f"trainguard {command} needs the {extra} extra (module {exc.name} is not installed): "
        f"pip install 'trainguard[{extra}]'"
    )


def _add_unavailable(
    sub: argparse._SubParsersAction,  # type: ignore[type-arg,unused-ignore]
    name: str,
    exc: ModuleNotFoundError,
) -> None:
    """Register `name` as a stand-in that exits 2 naming the extra to install."""
    message = missing_extra_message(name, exc)
    p = sub.add_parser(
        name, help=f"(not installed: needs the {EXTRA_OF.get(name, 'server')} extra)"
    )
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def unavailable(args: argparse.Namespace) -> int:
        print(message, file=sys.stderr)
        return 2

    p.set_defaults(func=unavailable)


def _known_errors(names: Sequence[tuple[str, str]]) -> tuple[type[BaseException], ...]:
    """Return the exception classes among `names` (module, class) whose module was imported.

    A command that never imported the store cannot raise StoreError: looking the classes up
    in sys.modules keeps the ClickHouse client (and the rest) out of the agent's imports.
    """
    found = []
    for module, name in names:
        loaded = sys.modules.get(module)
        if loaded is not None:
            found.append(getattr(loaded, name))
    return tuple(found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; settings and service errors end with a clear message."""
    refusal = check_environment()
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        logging.getLogger("kafka").setLevel(logging.WARNING)  # chatty at INFO
        # Its failed-connect warnings carry a traceback; StoreUnavailable says it in one line.
        logging.getLogger("clickhouse_driver").setLevel(logging.ERROR)
    try:
        return int(args.func(args))
    except ValidationError as exc:
        print(f"trainguard: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and closed: not an error
        sys.stderr.close()
        return 0
    except ModuleNotFoundError as exc:
        if not _third_party(exc):
            raise
        print(missing_extra_message(args.command, exc), file=sys.stderr)
        return 2
    except Exception as exc:
        if isinstance(exc, _known_errors([("sim.scenario", "ScenarioError")])):
            print(f"trainguard: {exc}", file=sys.stderr)
            return 2
        if isinstance(
            exc, _known_errors([("ingest.bus", "BusError"), ("analytics.store", "StoreError")])
        ):
            print(f"trainguard: {exc}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
