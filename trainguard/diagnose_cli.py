"""`trainguard diagnose DIR [--out incidents.json]`: replay a sim run and write its incidents."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from diagnosis.fabric import FabricError
from diagnosis.incidents import Incident
from diagnosis.replay import ReplayError, diagnose_dir
from ingest.schema import SchemaError

if TYPE_CHECKING:
    from analytics.store import Store
    from diagnosis.worker import DiagnosisWorker
    from trainguard.settings import DiagnoseSettings

SUSPECT_FIELDS: tuple[str, ...] = ("component", "node", "gpu", "nic", "switch", "rank", "score")


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `diagnose`."""
    p = sub.add_parser(
        "diagnose",
        help="diagnose live telemetry (Kafka) or a `sim run` directory into incidents",
        description=(
            "Without DIR: run the streaming diagnosis worker on the telemetry topics "
            "(TG_KAFKA_*, TG_CLICKHOUSE_*, TG_DIAGNOSE_*), storing incidents in ClickHouse and "
            "publishing them on the incidents topic. With DIR: replay a telemetry directory "
            "(from `trainguard sim run`) through the same diagnosis and write JSON."
        ),
    )
    p.add_argument("dir", type=Path, nargs="?", help="directory written by `trainguard sim run`")
    p.add_argument("--out", type=Path, help="write the incidents here (default: stdout)")
    p.set_defaults(func=cmd_diagnose)


def incident_json(incident: Incident) -> dict[str, object]:
    """Return one incident as the CLI's JSON object."""
    data = incident.model_dump(mode="json")
    data["suspects"] = [
        {name: s[name] for name in SUSPECT_FIELDS} | {"explanation": s["explanation"]}
        for s in data["suspects"]
    ]
    return data


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Diagnose a directory; exit 2 when it is missing or not a readable sim run."""
    if args.dir is None:
        if args.out is not None:
            print("trainguard diagnose: --out needs a DIR to replay", file=sys.stderr)
            return 2
        return cmd_diagnose_stream()
    try:
        incidents = diagnose_dir(args.dir)
    except (ReplayError, FabricError, SchemaError) as exc:
        print(f"trainguard diagnose: {exc}", file=sys.stderr)
        return 2
    except (OSError, EOFError) as exc:
        print(f"trainguard diagnose: cannot read {args.dir}: {exc}", file=sys.stderr)
        return 2
    text = json.dumps([incident_json(i) for i in incidents], indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
        print(f"wrote {len(incidents)} incident(s) to {args.out}")
    return 0


def serve_diagnosis_metrics(
    worker: DiagnosisWorker, store: Store, settings: DiagnoseSettings
) -> None:
    """Serve the worker's series and the fleet's (read through `store`, its own connection)."""
    from trainguard.metrics import fleet
    from trainguard.metrics.exposition import new_registry, serve_metrics
    from trainguard.metrics.services import register_diagnosis

    registry = new_registry("diagnose")
    register_diagnosis(registry, worker)
    readers = [fleet.gpu_states, fleet.open_incidents, fleet.job_ettr(settings.metrics_max_jobs)]
    registry.register(fleet.FleetCollector(store, readers, settings.metrics_cache_s))
    serve_metrics(registry, settings.metrics_host, settings.metrics_port or 0)


def cmd_diagnose_stream() -> int:
    """Run the streaming worker until SIGTERM."""
    from pydantic import ValidationError

    from trainguard.cli import tune_gc_for_batches
    from trainguard.settings import (
        BusSettings,
        DiagnoseSettings,
        EventTimeSettings,
        StoreSettings,
    )
    from trainguard.signals import stop_on_signals
    from trainguard.wiring import build_bus, build_diagnosis, build_router, build_store

    try:
        bus_settings, store_settings, settings = BusSettings(), StoreSettings(), DiagnoseSettings()
        event_time = EventTimeSettings()
    except ValidationError as exc:
        print(f"trainguard diagnose: bad settings: {exc}", file=sys.stderr)
        return 2
    if bus_settings.mode == "embedded":
        print(
            "trainguard diagnose needs TG_KAFKA_MODE=kafka to stream "
            "(or a DIR to replay; the embedded pipeline runs inside `demo`)",
            file=sys.stderr,
        )
        return 2
    if settings.fabric is not None and not settings.fabric.is_file():
        print(
            f"trainguard diagnose: TG_DIAGNOSE_FABRIC={settings.fabric}: no such file",
            file=sys.stderr,
        )
        return 2
    stop = stop_on_signals()
    store = build_store(store_settings)
    bus = build_bus(bus_settings)
    try:
        worker = build_diagnosis(bus, store, settings, event_time.policy())
        router = build_router(bus, settings) if settings.scale_out else None
    except ValueError as exc:  # topics not co-partitioned for scale-out
        print(f"trainguard diagnose: {exc}", file=sys.stderr)
        return 2
    if settings.metrics_port:
        serve_diagnosis_metrics(worker, build_store(store_settings), settings)
    tune_gc_for_batches()
    routing = None
    if router is not None:
        routing = threading.Thread(target=router.run, args=(stop,), name="route", daemon=True)
        routing.start()
    mode = f" as a member of {settings.group} (scale-out)" if router else ""
    print(f"diagnosing {bus_settings.bootstrap} into {store.database}{mode}", file=sys.stderr)
    try:
        worker.run(stop)
    finally:
        stop.set()
        if routing is not None and router is not None:
            routing.join(timeout=30)
            router.consumer.close()
            router.topologies.close()
            router.producer.close()
        worker.consumer.close()
        worker.producer.close()
    return 0
