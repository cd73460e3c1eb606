"""Job discovery without the in-job integration: Slurm and Kubernetes -> JobTopology.

One rank per GPU, placed in node order (what torchrun and ``srun --gpus-per-task=1`` do):
world size = nodes x ranks per node, where ranks per node is torchrun's ``--nproc-per-node``
when the launch command states it, else the job's GPUs per node, else its task count spread
evenly. The parallel groups come from the launch command (`ingest.readers.launch`): Slurm's
batch script (``scontrol write batch_script``, else the job's ``Command``), a pod's command,
args and environment. When they cannot be read the topology has the world group only and
``layout_source`` says why. Kubernetes does not say which GPU of a node a pod got: ``gpu`` is
the pod's slot on its node (pods in rank order), the NVML index only when one pod holds all of
a node's GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from ingest.readers.launch import Launch, LayoutError, describe, layout_groups, read_launch
from ingest.schema import CommKind, Communicator, JobTopology, ParallelLayout, RankPlacement
from ingest.slurm_commands import SlurmCommands, SlurmError

Runner = Callable[[list[str]], str]
FIELD = re.compile(r"(\w[\w/:]*)=(\S*)")
COMMAND = re.compile(r"(?:^|\s)Command=(.*?)(?=\s\w+=|$)")
GPU_PER_NODE = re.compile(r"gpu(?::[\w.-]+)?:(\d+)")
GPU_TOTAL = re.compile(r"gres/gpu(?::[\w.-]+)?=(\d+)")


class DiscoveryError(RuntimeError):
    """The scheduler could not be asked (command failed, API unreachable)."""


def slurm_runner(conf: str | None = None, timeout_s: float = 30.0) -> Runner:
    """Return a runner of Slurm commands against one cluster (SLURM_CONF)."""
    commands = SlurmCommands(conf, timeout_s)

    def run(argv: list[str]) -> str:
        try:
            return commands.run(argv)
        except SlurmError as exc:
            raise DiscoveryError(str(exc)) from exc

    return run


def placements(nodes: Sequence[str], gpus_per_node: int, tasks: int) -> list[RankPlacement]:
    """Return one rank per GPU in node order, or `tasks` ranks spread evenly without GPUs."""
    if gpus_per_node > 0:
        return [
            RankPlacement(rank=i * gpus_per_node + g, node=n, gpu=g)
            for i, n in enumerate(nodes)
            for g in range(gpus_per_node)
        ]
    per_node = max(1, -(-tasks // max(len(nodes), 1)))
    return [
        RankPlacement(rank=r, node=nodes[r // per_node], gpu=r % per_node)
        for r in range(min(tasks, per_node * len(nodes)))
    ]


def _topology(
    job_id: str,
    scheduler: str,
    scheduler_job_id: str,
    ranks: list[RankPlacement],
    launch: Launch,
    notes: Sequence[str] = (),
) -> JobTopology:
    world = len(ranks)
    comms = [Communicator(comm="0", kind=CommKind.WORLD, ranks=list(range(world)))]
    try:
        layout, derived = layout_groups(launch, world)
        source = "; ".join([describe(launch, layout), *notes])
    except LayoutError as exc:
        layout, derived = ParallelLayout(), []
        source = "; ".join([f"world group only: {exc}", *launch.warnings, *notes])
    return JobTopology(
        ts=datetime.now(UTC),
        job_id=job_id,
        world_size=world,
        layout=layout,
        ranks=ranks,
        communicators=comms + derived,
        scheduler=scheduler,
        scheduler_job_id=scheduler_job_id,
        layout_source=source,
    )


# --------------------------------------------------------------------------- Slurm


def slurm_gpus_per_node(fields: Mapping[str, str]) -> int:
    """Return GPUs per node from ``TresPerNode``/``Gres``, else ``TRES``'s gres/gpu over nodes."""
    for key in ("TresPerNode", "Gres", "TresPerJob"):
        m = GPU_PER_NODE.search(fields.get(key, ""))
        if m and key != "TresPerJob":
            return int(m.group(1))
    nodes = max(int(fields.get("NumNodes", "1").split("-")[0] or 1), 1)
    m = GPU_TOTAL.search(fields.get("AllocTRES", "") or fields.get("TRES", ""))
    return int(m.group(1)) // nodes if m else 0


def slurm_launch_text(
    run: Runner, job_id: str, line: str, read_text: Callable[[str], str | None] | None = None
) -> tuple[str, list[str]]:
    """Return a job's batch script (else its ``Command``) and what could not be read."""
    try:
        return run(["scontrol", "write", "batch_script", job_id, "-"]), []
    except DiscoveryError as exc:
        m = COMMAND.search(line)
        command = m.group(1).strip() if m else ""
        script = read_text(command.split()[0]) if read_text and command else None
        if script is not None:  # the script's path, readable here (a shared file system)
            return script, []
        return command, [f"batch script not read ({exc}): the job's Command only"]


def _slurm_env(fields: Mapping[str, str], nodes: Sequence[str], gpus: int) -> dict[str, str]:
    """Return the SLURM_* values a batch script may use in its launch arguments."""
    env = {
        "SLURM_JOB_ID": fields.get("JobId", ""),
        "SLURM_NNODES": str(len(nodes)),
        "SLURM_JOB_NUM_NODES": str(len(nodes)),
        "SLURM_NTASKS": fields.get("NumTasks", "1"),
    }
    if gpus:
        env.update(SLURM_GPUS_ON_NODE=str(gpus), SLURM_GPUS_PER_NODE=str(gpus))
    return env


def _node_order_note(launch: Launch, nodes: Sequence[str]) -> list[str]:
    if len(nodes) < 2:
        return []
    if launch.node_rank and re.search(r"SLURM_(NODEID|PROCID)", launch.node_rank):
        return ["node i of the allocation holds ranks i x nproc_per_node onwards (--node-rank)"]
    return [
        "ranks assumed node by node in allocation order (no --node-rank=$SLURM_NODEID:"
        " a rendezvous may order nodes differently)"
    ]


def discover_slurm(
    run: Runner,
    job_ids: Sequence[str] = (),
    prefix: str = "slurm-",
    read_text: Callable[[str], str | None] | None = None,
) -> list[JobTopology]:
    """Return the topology of running Slurm jobs (all of them, or `job_ids`)."""
    ids = list(job_ids) or run(["squeue", "-h", "-t", "RUNNING", "-o", "%i"]).split()
    out = []
    for jid in ids:
        line = run(["scontrol", "show", "job", "-o", jid])
        fields = dict(FIELD.findall(line))
        if fields.get("JobState") != "RUNNING" or fields.get("NodeList") in (None, "", "(null)"):
            continue
        nodes = run(["scontrol", "show", "hostnames", fields["NodeList"]]).split()
        tasks = int(fields.get("NumTasks", "1") or 1)
        gpus = slurm_gpus_per_node(fields)
        text, unread = slurm_launch_text(run, jid, line, read_text)
        launch = read_launch(text, _slurm_env(fields, nodes, gpus), read_text)
        per_node = launch.nproc_per_node or gpus
        ranks = placements(nodes, per_node, tasks)
        notes = [*_node_order_note(launch, nodes), *unread]
        out.append(_topology(f"{prefix}{jid}", "slurm", jid, ranks, launch, notes))
    return out


# --------------------------------------------------------------------------- Kubernetes


def _pod_gpus(pod: Any) -> int:
    total = 0
    for c in pod.spec.containers or []:
        limits = (c.resources.limits if c.resources else None) or {}
        total += int(limits.get("nvidia.com/gpu", 0))
    return total


_INDEX_KEYS = (
    "training.kubeflow.org/replica-index",  # Kubeflow PyTorchJob
    "batch.kubernetes.io/job-completion-index",  # indexed Job, JobSet (Kubeflow Trainer v2)
)


def _pod_order(pod: Any, position: int) -> tuple[int, int, str]:
    """Return a pod's rank order: a PyTorchJob's Master first, then by replica/completion index."""
    labels = {**(pod.metadata.annotations or {}), **(pod.metadata.labels or {})}
    master = 0 if labels.get("training.kubeflow.org/replica-type", "").lower() == "master" else 1
    index = next((int(v) for k in _INDEX_KEYS if (v := labels.get(k, "")).isdigit()), position)
    return master, index, pod.metadata.name


def pod_launch(pod: Any) -> Launch:
    """Return what a pod's first container's command, args and environment say."""
    containers = pod.spec.containers or []
    if not containers:
        return read_launch("")
    c = containers[0]
    text = "\n".join([*(c.command or []), *(c.args or [])])
    env = {e.name: e.value for e in (c.env or []) if getattr(e, "value", None) is not None}
    return read_launch(text, env)


def discover_kubernetes(
    core_v1: Any, namespace: str, selector: str, job_id: str
) -> JobTopology | None:
    """Return the topology of a job's running pods (``kubernetes.client.CoreV1Api``)."""
    from kubernetes.client.exceptions import ApiException

    try:
        pods = core_v1.list_namespaced_pod(namespace, label_selector=selector).items
    except (ApiException, OSError) as exc:
        raise DiscoveryError(f"listing pods {selector!r} in {namespace}: {exc}") from exc
    running = [p for p in pods if p.status and p.status.phase == "Running" and p.spec.node_name]
    if not running:
        return None
    ordered = [
        pod for _, pod in sorted(enumerate(running), key=lambda ip: _pod_order(ip[1], ip[0]))
    ]
    launch = pod_launch(ordered[0])
    ranks: list[RankPlacement] = []
    slots: dict[str, int] = {}  # pods sharing a node take its next GPU slots
    for pod in ordered:
        node = pod.spec.node_name
        first = slots.get(node, 0)
        count = launch.nproc_per_node or max(_pod_gpus(pod), 1)
        slots[node] = first + count
        base = len(ranks)
        ranks.extend(RankPlacement(rank=base + g, node=node, gpu=first + g) for g in range(count))
    return _topology(job_id, "kubernetes", f"{namespace}/{selector}", ranks, launch)
