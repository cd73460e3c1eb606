"""`trainguard act`: wires the action engine and runs its consumer loop (actions/consumer.py)."""

from __future__ import annotations

import argparse
import logging
import threading

from pydantic import SecretStr, ValidationError

from actions.checkpoint import AwaitCheckpoint, LogCheckpoints
from actions.claims import Claims, replica_name
from actions.consumer import recover_and_consume
from actions.engine import ActionEngine, EngineConfig
from actions.executors.scheduler import CapacityProvider, SchedulerCapacity
from actions.executors.webhook import NoEndpoint, OperatorWebhook
from actions.holds import Holds, NodeOptOut
from actions.model import ActionKind, Mode, Risk
from actions.policy import DEFAULT_POLICY, load_policy
from actions.progress import TrainStepsProgress, VerifyProgress
from actions.registry import ActionRegistry
from actions.safety import BreakerLimits
from actions.webhooks.delivery import Deliverer, Dispatcher, Subscription
from actions.webhooks.formats import EventType
from analytics.migrations import migrate
from analytics.store import Store
from ingest.bus import Bus, Consumer
from ingest.schema import validation_reason
from scheduler.service import Replacement
from trainguard.settings import ActSettings
from trainguard.silence_cli import add_silence_parser

log = logging.getLogger("trainguard.act")
OPERATOR_KINDS = {
    ActionKind.CAPTURE_DIAGNOSTICS: Risk.LOW,
    ActionKind.NOTIFY_OWNER: Risk.LOW,
    ActionKind.HARDWARE_INSPECTION: Risk.LOW,
    ActionKind.ROLLBACK_CHECKPOINT: Risk.HIGH,
}


SCHEDULER_SOURCE = "act"
"""The name the engine's scheduler stores its snapshots under."""


class BatchSchedulerCapacity:
    """Until a capacity scheduler is wired in: the batch scheduler places the requeued job."""

    def request_replacement(self, job_id: str, failed_node: str, gpus: int) -> Replacement:
        return Replacement(
            job_id=job_id,
            failed_node=failed_node,
            node="batch-scheduler",
            source="requeue",
            gpus=gpus,
        )

    def reclaim(self, node: str) -> list[str]:
        return []


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `act`."""
    p = sub.add_parser(
        "act",
        help="run the action engine on the incidents topic",
        description="Consume incidents and run remediation ladders (TG_ACT_* settings).",
    )
    p.set_defaults(func=cmd_act)
    add_silence_parser(p.add_subparsers(dest="act_command", metavar="{silence}"))


def _backend(settings: ActSettings, registry: ActionRegistry) -> NodeOptOut | None:
    if settings.executor == "local":
        from actions.executors.local import LocalCluster, local_executors

        for local in local_executors(LocalCluster()):
            registry.register(local)
        return None
    if settings.executor == "kubernetes":
        from actions.executors.kubernetes import kube_backend

        executors, optout = kube_backend(settings)
        for kube in executors:
            registry.register(kube)
        return optout
    from actions.executors.slurm import (
        Slurm,
        SlurmDrain,
        SlurmDrainSwitch,
        SlurmReboot,
        SlurmRequeue,
        SlurmResume,
    )
    from diagnosis.fabric import Fabric

    slurm = Slurm(str(settings.slurm_conf) if settings.slurm_conf else None)
    fabric = Fabric.from_json(settings.fabric.read_bytes()) if settings.fabric else None
    for executor in (
        SlurmDrain(slurm),
        SlurmDrainSwitch(slurm, fabric),
        SlurmRequeue(slurm),
        SlurmReboot(slurm),
        SlurmResume(slurm),
    ):
        registry.register(executor)
    return None


def build_engine(
    settings: ActSettings,
    store: Store,
    bus: Bus | None,
    capacity: CapacityProvider | None = None,
    replica: str = "act",
) -> ActionEngine:
    """Wire the registry, policy, webhooks and limits from settings.

    Every engine claims its moves (actions/claims.py) under a name unique to this process
    (`replica` is its prefix), so act replicas and API instances can share one store.
    """
    registry = ActionRegistry(
        [
            SchedulerCapacity(capacity or BatchSchedulerCapacity()),
            VerifyProgress(TrainStepsProgress(store)),
            AwaitCheckpoint(LogCheckpoints(store)),
        ]
    )
    optout = _backend(settings, registry)
    deliverer = Deliverer(store, settings.webhook_hosts, console_url=settings.console_url)
    for kind, risk in OPERATOR_KINDS.items():
        if settings.operator_url:
            sub = Subscription(
                id="operator",
                url=settings.operator_url,
                events=list(EventType),
                secret=SecretStr(settings.operator_secret.get_secret_value()),
            )
            registry.register(OperatorWebhook(kind, deliverer, sub, risk))
        else:
            registry.register(NoEndpoint(kind))
    limits = BreakerLimits(
        fleet_nodes=settings.fleet_nodes,
        max_share=settings.breaker_share,
        max_nodes=settings.breaker_max_nodes,
        window_s=settings.breaker_window_s,
    )
    config = EngineConfig(
        mode=Mode(settings.mode),
        breaker=limits,
        incident_ttl_s=settings.incident_ttl_s,
        cluster=settings.cluster,
    )
    producer = bus.producer() if bus is not None else None
    return ActionEngine(
        store,
        registry,
        load_policy(settings.policy or DEFAULT_POLICY),
        config,
        producer=producer,
        actions_topic=bus.topics.actions if bus else "tg.actions",
        dispatcher=Dispatcher(deliverer),
        holds=Holds(store, optout),
        claims=Claims(store, replica_name(replica), settings.lease_s, settings.heartbeat_s),
    )


def lyra_capacity(settings: ActSettings, store: Store) -> CapacityProvider:
    """Return the Lyra scheduler as the capacity provider, its state kept in ClickHouse.

    A restart resumes from the newest stored snapshot of this engine's scheduler (standbys
    already handed out stay handed out); the first start builds it from TG_ACT_INVENTORY.
    Every change is stored before the call that made it returns.
    """
    from actions.executors.scheduler import LyraCapacity
    from scheduler.service import Inventory, Scheduler
    from scheduler.state_store import SnapshotPublisher, latest_snapshot

    state = latest_snapshot(store, source=SCHEDULER_SOURCE)
    if state is not None:
        scheduler = Scheduler.from_state(state)
        log.info("act: scheduler resumed from its snapshot of %s", state.as_of)
    elif settings.inventory is None:
        raise ValueError("TG_ACT_CAPACITY=lyra needs TG_ACT_INVENTORY (no stored state yet)")
    else:
        try:
            inventory = Inventory.model_validate_json(settings.inventory.read_bytes())
        except ValidationError as exc:
            raise ValueError(f"{settings.inventory}: {validation_reason(exc)}") from None
        scheduler = Scheduler.from_inventory(inventory)
    publisher = SnapshotPublisher(store, source=SCHEDULER_SOURCE, interval_s=0.0)
    scheduler.on_change = publisher.changed
    publisher.changed(scheduler.snapshot)
    return LyraCapacity(scheduler)


def start_alerts(store: Store, console_url: str | None, stop: threading.Event) -> bool:
    """Post incidents to Alertmanager on a thread when TG_ALERTMANAGER_URL is set."""
    from actions.alertmanager import AlertmanagerClient, AlertSync, Auth
    from trainguard.settings import AlertmanagerSettings

    am = AlertmanagerSettings()
    if not am.url:
        return False
    auth = Auth(am.username, am.password_file, am.bearer_token_file)
    client = AlertmanagerClient(am.url, auth, am.timeout_s)
    sync = AlertSync(store, client, am.interval_s, am.resolved_retention_s, console_url)
    threading.Thread(target=sync.run, args=(stop,), name="act-alerts", daemon=True).start()
    log.info("act: incidents go to Alertmanager at %s every %.0fs", am.url, am.interval_s)
    return True


def serve_act_metrics(engine: ActionEngine, store: Store, settings: ActSettings) -> None:
    """Serve step latencies and the action and breaker series (read through `store`)."""
    from trainguard.metrics import fleet
    from trainguard.metrics.exposition import new_registry, serve_metrics
    from trainguard.metrics.services import step_histogram

    registry = new_registry("act")
    engine.observe_step = step_histogram(registry)
    readers = [fleet.actions, fleet.breaker(engine.config.breaker)]
    registry.register(fleet.FleetCollector(store, readers, settings.metrics_cache_s))
    serve_metrics(registry, settings.metrics_host, settings.metrics_port or 0)


def cmd_act(args: argparse.Namespace) -> int:
    """Run the engine until SIGTERM: recover unfinished ladders, then consume incidents."""
    from trainguard.settings import BusSettings, StoreSettings
    from trainguard.signals import stop_on_signals
    from trainguard.wiring import build_bus, build_store

    settings, bus_settings = ActSettings(), BusSettings()
    if bus_settings.mode == "embedded":
        print("trainguard act needs TG_KAFKA_MODE=kafka (the embedded bus lives inside `demo`)")
        return 2
    stop = stop_on_signals()
    store = build_store(StoreSettings())
    migrate(store)
    bus = build_bus(bus_settings)
    try:
        capacity = lyra_capacity(settings, store) if settings.capacity == "lyra" else None
    except (OSError, ValueError) as exc:
        print(f"trainguard act: {exc}")
        return 2
    try:
        engine = build_engine(settings, store, bus, capacity=capacity)
    except ValueError as exc:  # e.g. no Kubernetes credentials: say which were tried
        print(f"trainguard act: {exc}")
        return 2
    if settings.metrics_port:
        serve_act_metrics(engine, build_store(StoreSettings()), settings)
    start_alerts(store, settings.console_url, stop)
    log.info("act: mode %s, recovering unfinished ladders", settings.mode)
    failure: list[Exception] = []

    def subscribe() -> Consumer:
        return bus.consumer(settings.group, [bus.topics.incidents])

    def work() -> None:
        try:
            recover_and_consume(engine, subscribe, stop, settings.poll_s, settings.recheck_s)
        except Exception as exc:  # noqa: BLE001 (the thread's outermost loop: reported, exit 1)
            failure.append(exc)
            stop.set()

    # A ladder step may wait minutes (progress verification); SIGTERM must not wait for it.
    # Every state is persisted before its side effect, so stopping mid-step is a crash the
    # next start reconciles.
    worker = threading.Thread(target=work, name="act", daemon=True)
    worker.start()
    stop.wait()
    worker.join(timeout=10)
    if failure:
        log.error("act stopped on an error: %s", failure[0])
        raise failure[0]
    if worker.is_alive():
        log.warning("act: stopped during a ladder step; the next start reconciles it")
    return 0
