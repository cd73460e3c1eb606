"""Connect a training job from outside it: read its logs and dumps, discover it in the scheduler.

``trainguard ingest-logs --job J FILE...``   Megatron/DeepSpeed/torchtitan step lines -> TrainStep
``trainguard ingest-fr --job J PATH``        Flight Recorder dumps (a directory of per-rank files)
                                             or fr_trace analyzer text -> CollectiveProgress
``... --slurm JOBID`` (ingest-fr, ingest-ras)  instead of --job: also the running job's
                                             discovered topology, records on its group names
``trainguard ingest-ras --job J FILE``       NCCL RAS client output (text, or ``-f json``)
                                             -> CollectiveProgress
``trainguard stacks FILE...``                py-spy dumps grouped by stack; the outliers
``trainguard discover --slurm [ID...]``      running Slurm jobs -> JobTopology
``trainguard discover --k8s NS SELECTOR --job J``  a job's pods -> JobTopology

Events go to Kafka (TG_KAFKA_MODE=kafka, TG_KAFKA_BOOTSTRAP); ``--print`` writes them as JSON
lines to stdout instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from ingest.readers.alignment import align_progress, dump_members
from ingest.readers.discovery import discover_kubernetes, discover_slurm, slurm_runner
from ingest.readers.flight_recorder import (
    analysis_progress,
    load_dump,
    parse_fr_analysis,
    rank_of,
    read_dump_dir,
)
from ingest.readers.nccl_ras import (
    RasFormatError,
    looks_like_ras_json,
    parse_ras,
    parse_ras_json,
    ras_communicators,
    ras_json_progress,
    ras_progress,
)
from ingest.readers.pyspy import PyThread, parse_pyspy
from ingest.readers.train_log import TrainLogParser
from ingest.schema import CollectiveProgress, EventBase, encode_event


def _publish(events: Iterable[EventBase], args: argparse.Namespace) -> int:
    if args.print:
        n = 0
        for event in events:
            sys.stdout.write(encode_event(event).decode() + "\n")
            n += 1
        print(f"{n} event(s)", file=sys.stderr)
        return 0
    from trainguard.settings import BusSettings
    from trainguard.wiring import build_bus

    settings = BusSettings()
    if settings.mode == "embedded":
        print("needs TG_KAFKA_MODE=kafka and TG_KAFKA_BOOTSTRAP (or --print)", file=sys.stderr)
        return 2
    producer = build_bus(settings).producer()
    n = 0
    try:
        for event in events:
            producer.send(event)
            n += 1
        producer.flush()
    finally:
        producer.close()
    print(f"published {n} event(s) to {settings.bootstrap}", file=sys.stderr)
    return 0


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)


def cmd_ingest_logs(args: argparse.Namespace) -> int:
    """Parse training logs into steps."""

    def steps() -> Iterable[EventBase]:
        for path in args.files:
            parser = TrainLogParser(args.job, args.node, args.rank, args.peak_tflops)
            with open(path, errors="replace") as handle:
                yield from parser.feed_lines(handle, _mtime(Path(path)))

    return _publish(steps(), args)


Members = dict[str, list[int]]


def _job_of(args: argparse.Namespace) -> str | None:
    job = args.job or (f"slurm-{args.slurm}" if args.slurm else None)
    if job is None:
        print(f"trainguard {args.command}: give --job, or --slurm JOBID", file=sys.stderr)
    return job


def _publish_aligned(
    args: argparse.Namespace, progress: list[CollectiveProgress], members: Members
) -> int:
    """Publish the records; with --slurm, on that running job's discovered topology (and it)."""
    if not args.slurm:
        return _publish(progress, args)
    found = discover_slurm(slurm_runner(), [args.slurm], read_text=_read_if_readable)
    if not found:
        print(f"Slurm job {args.slurm} is not running: no topology to name", file=sys.stderr)
        return 2
    (topo,) = found
    aligned = align_progress(progress, members, topo)
    renamed = sum(a.comm != p.comm for a, p in zip(aligned, progress, strict=True))
    print(
        f"{renamed} of {len(aligned)} record(s) on {topo.job_id}'s communicators; "
        f"{topo.layout_source}",
        file=sys.stderr,
    )
    return _publish([topo, *aligned], args)


def cmd_ingest_fr(args: argparse.Namespace) -> int:
    """Read Flight Recorder dumps or fr_trace output into collective progress."""
    job = _job_of(args)
    if job is None:
        return 2
    path = Path(args.path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file())
        members = dump_members({rank_of(f): load_dump(f.read_bytes()) for f in files})
        return _publish_aligned(args, list(read_dump_dir(path, job)), members)
    seen = _mtime(path)
    reports = parse_fr_analysis(path.read_text(errors="replace"))
    progress = [p for r in reports for p in analysis_progress(r, job, seen)]
    return _publish_aligned(args, progress, {r.group: sorted(r.expected) for r in reports})


def cmd_ingest_ras(args: argparse.Namespace) -> int:
    """Read NCCL RAS client output into collective progress."""
    job = _job_of(args)
    if job is None:
        return 2
    path = Path(args.file)
    text = path.read_text(errors="replace")
    if not looks_like_ras_json(text):
        return _publish_aligned(args, ras_progress(parse_ras(text), job, _mtime(path)), {})
    try:
        status = parse_ras_json(text)
    except RasFormatError as exc:
        print(f"trainguard ingest-ras: {path}: {exc}", file=sys.stderr)
        return 2
    members = {c.comm: c.ranks for c in ras_communicators(status)}
    return _publish_aligned(args, ras_json_progress(status, job, _mtime(path)), members)


def cmd_stacks(args: argparse.Namespace) -> int:
    """Group py-spy dumps by stack and print the groups, outliers first."""
    from diagnosis.localize.stacks import group_stacks, outlier_groups

    threads = [t for f in args.files for t in parse_pyspy(Path(f).read_text(), source=f)]
    groups = group_stacks(threads)
    outliers = outlier_groups(groups)
    for g in [*outliers, *(g for g in groups if g not in outliers)]:
        mark = "OUTLIER" if g in outliers else "       "
        ids = ", ".join(f"{Path(m.source).name}:{m.thread}" for m in g.members[:6])
        more = ", ..." if len(g.members) > 6 else ""
        print(f"{mark} {len(g.members):4d}  {g.where()}  [{ids}{more}]")
    if args.incident:
        return _attach_stacks(args.incident, threads)
    return 0


def _attach_stacks(incident_id: str, threads: list[PyThread]) -> int:
    """Add the outlier stacks to an incident as evidence (a new revision), as ByteRobust's
    stack aggregation feeds its diagnosis; the incident keeps its status."""
    from analytics.migrations import migrate
    from diagnosis.incident_store import IncidentNotFound, load_incident, save_incidents
    from diagnosis.localize.stacks import stack_outlier_finding
    from trainguard.settings import StoreSettings
    from trainguard.wiring import build_store

    finding = stack_outlier_finding(threads)
    if finding is None:
        print("no outlier stacks: nothing attached", file=sys.stderr)
        return 0
    store = build_store(StoreSettings())
    migrate(store)
    try:
        incident = load_incident(store, incident_id)
    except IncidentNotFound as exc:
        print(f"trainguard stacks: {exc}", file=sys.stderr)
        return 2
    evidence = f"py-spy: {finding.line}"
    if evidence not in incident.evidence:
        save_incidents(
            store,
            [
                incident.model_copy(
                    update={
                        "evidence": [*incident.evidence, evidence],
                        "findings": incident.findings + 1,
                        "revision": incident.revision + 1,
                        "updated_at": max(
                            datetime.now(UTC), incident.updated_at or incident.detected_at
                        ),
                    }
                )
            ],
        )
    print(f"attached to {incident_id}: {evidence}")
    return 0


def _read_if_readable(path: str) -> str | None:
    """Return a config file the job's command names, when this host can read it (shared FS)."""
    try:
        return Path(path).read_text()
    except OSError:
        return None


def cmd_discover(args: argparse.Namespace) -> int:
    """Discover running jobs in Slurm or Kubernetes and publish their topology."""
    if args.k8s:
        from kubernetes import client as k8s
        from kubernetes import config as k8s_config

        k8s_config.load_config()
        namespace, selector = args.k8s
        topo = discover_kubernetes(k8s.CoreV1Api(), namespace, selector, args.job or selector)
        topologies = [topo] if topo else []
    else:
        topologies = discover_slurm(slurm_runner(), args.slurm or [], read_text=_read_if_readable)
    for t in topologies:
        nodes = len({r.node for r in t.ranks})
        print(
            f"{t.job_id}: {t.world_size} ranks on {nodes} node(s), "
            f"{len(t.communicators)} communicator(s); {t.layout_source}",
            file=sys.stderr,
        )
    return _publish(topologies, args)


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register the ingest-* and discover subcommands."""

    def parser(name: str, func: object, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(func=func)
        p.add_argument("--print", action="store_true", help="write JSON lines, do not publish")
        return p

    p = parser("ingest-logs", cmd_ingest_logs, "training-log step lines -> TrainStep")
    p.add_argument("--job", required=True)
    p.add_argument("--node")
    p.add_argument("--rank", type=int, help="rank of the log (default: the job's steps)")
    p.add_argument("--peak-tflops", type=float, help="per-GPU peak, to turn TFLOP/s into MFU")
    p.add_argument("files", nargs="+")
    slurm_help = (
        "a running Slurm job: publish its discovered topology too and name communicators and"
        " nodes as it does (job id slurm-JOBID)"
    )
    p = parser("ingest-fr", cmd_ingest_fr, "Flight Recorder dumps or fr_trace text -> progress")
    p.add_argument("--job")
    p.add_argument("--slurm", metavar="JOBID", help=slurm_help)
    p.add_argument("path", help="directory of per-rank dump files, or fr_trace output")
    p = parser(
        "ingest-ras", cmd_ingest_ras, "NCCL RAS client output (text or JSON) -> collective progress"
    )
    p.add_argument("--job")
    p.add_argument("--slurm", metavar="JOBID", help=slurm_help)
    p.add_argument("file")
    p = parser("stacks", cmd_stacks, "group py-spy dumps by stack, outliers first")
    p.add_argument("files", nargs="+")
    p.add_argument(
        "--incident", help="add the outlier stacks to this incident's evidence (TG_CLICKHOUSE_*)"
    )
    p = parser("discover", cmd_discover, "running Slurm or Kubernetes jobs -> JobTopology")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--slurm", nargs="*", metavar="JOBID", help="all running jobs, or these")
    where.add_argument("--k8s", nargs=2, metavar=("NAMESPACE", "SELECTOR"))
    p.add_argument("--job", help="TrainGuard job id (Kubernetes; default: the selector)")
