"""`trainguard sim run|stream`: run a digital-twin scenario to files or onto the bus."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from sim.output import BusSink, FileSink, write_truth
from sim.scenario import load_scenario
from sim.twin import Twin


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `sim run` and `sim stream`."""
    sim = sub.add_parser(
        "sim",
        help="run the cluster digital twin",
        description="Run the cluster digital twin on a scenario file.",
    )
    verbs = sim.add_subparsers(dest="sim_command", required=True)
    run = verbs.add_parser("run", help="write telemetry files and truth.json")
    run.add_argument("scenario", type=Path)
    run.add_argument("--out", type=Path, required=True, help="output directory")
    run.set_defaults(func=cmd_sim_run)
    stream = verbs.add_parser("stream", help="publish telemetry to the bus")
    stream.add_argument("scenario", type=Path)
    stream.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="simulated seconds per wall second (0: as fast as possible)",
    )
    stream.add_argument("--truth", type=Path, help="also write the ground truth here")
    stream.set_defaults(func=cmd_sim_stream)


def _progress(scenario_s: float, started: float) -> Callable[[float], None]:
    last = [0.0]

    def on_tick(t: float) -> None:
        now = time.monotonic()
        if now - last[0] >= 2 or t >= scenario_s:
            last[0] = now
            sys.stderr.write(
                f"\r  simulated {t:,.0f}/{scenario_s:,.0f} s "
                f"({t / max(now - started, 1e-9):,.1f}x real time)"
            )
            sys.stderr.flush()

    return on_tick


def cmd_sim_run(args: argparse.Namespace) -> int:
    """Simulate a scenario into files."""
    scenario = load_scenario(args.scenario)
    started = time.monotonic()
    with FileSink(args.out) as sink:
        twin = Twin(scenario, sink, on_tick=_progress(scenario.duration_s, started))
        truth = twin.run()
        sink.write_truth(truth, scenario.model_dump(mode="json"))
        sink.write_inventory(twin.hw.inventory(twin.node_names))
    sys.stderr.write("\n")
    counts = ", ".join(f"{n}: {c:,}" for n, c in sorted(sink.counts.items()))
    print(
        f"wrote {args.out}/ ({counts}) and truth.json with {len(truth)} fault(s) "
        f"in {time.monotonic() - started:.1f} s"
    )
    return 0


def cmd_sim_stream(args: argparse.Namespace) -> int:
    """Simulate a scenario onto the bus, paced or as fast as possible."""
    from trainguard.settings import BusSettings
    from trainguard.wiring import build_bus

    scenario = load_scenario(args.scenario)
    settings = BusSettings()
    if settings.mode == "embedded":
        print("trainguard sim stream needs TG_KAFKA_MODE=kafka", file=sys.stderr)
        return 2
    producer = build_bus(settings).producer()
    sink = BusSink(producer, args.speed or None)
    started = time.monotonic()
    progress = _progress(scenario.duration_s, started)

    def on_tick(t: float) -> None:
        sink.on_tick(t)
        progress(t)

    try:
        truth = Twin(scenario, sink, start=datetime.now(UTC), on_tick=on_tick).run()
    finally:
        producer.close()
    if args.truth:
        write_truth(args.truth, truth, scenario.model_dump(mode="json"))
    print(f"\npublished {sink.sent:,} events; {len(truth)} fault(s) injected")
    return 0
