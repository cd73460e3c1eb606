"""Slurm executors: drain/resume nodes, requeue jobs away from isolated nodes, reboot nodes.

Every command is an argv list run without a shell; node names and job ids are validated
first. TrainGuard's drains carry the reason prefix `trainguard:<incident id>:` and only
those are ever resumed: a drain a person made is preserved and never undone.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from actions.model import ActionKind, ActionPlan, ActionResult, Risk, done, failed, skipped
from actions.registry import ActionRequest, make_plan
from diagnosis.fabric import Fabric
from ingest.slurm_commands import SlurmCommands, SlurmError

__all__ = [
    "REASON_PREFIX",
    "Slurm",
    "SlurmDrain",
    "SlurmDrainSwitch",
    "SlurmError",
    "SlurmReboot",
    "SlurmRequeue",
    "SlurmResume",
    "DrainReason",
    "check_node",
    "clean_reason",
    "hostlist",
]

log = logging.getLogger(__name__)

REASON_PREFIX = "trainguard:"
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
_JOB_ID = re.compile(r"^[0-9]{1,12}(_[0-9]{1,9})?$")
_JOB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
_FIELD = re.compile(r"(\w+)=(\S*)")


def check_node(name: str) -> str:
    """Return a node name if it is one plain Slurm host name; raise SlurmError."""
    if not _NODE.match(name or "") or ".." in name:
        raise SlurmError(f"not a valid node name: {name!r}")
    return name


def hostlist(nodes: Sequence[str]) -> str:
    """Return a comma hostlist of validated node names (no ranges: nothing to expand wrongly)."""
    return ",".join(sorted({check_node(n) for n in nodes}))


def clean_reason(text: str) -> str:
    """Return a one-line reason Slurm stores as given."""
    return re.sub(r"[\x00-\x1f\"'=\s]+", " ", text).strip()[:200]


@dataclass(frozen=True)
class NodeState:
    """What `scontrol show node` says about a node."""

    name: str
    flags: frozenset[str]
    reason: str

    @property
    def drained(self) -> bool:
        """Whether the node is draining or drained."""
        return bool(self.flags & {"DRAIN", "DRAINING", "DRAINED"})

    @property
    def ours(self) -> bool:
        """Whether TrainGuard set the current reason."""
        return self.reason.startswith(REASON_PREFIX)

    def drained_for(self, incident_id: str) -> bool:
        """Whether the node is drained with TrainGuard's reason for this incident."""
        mine = f"{REASON_PREFIX}{incident_id}"
        return self.drained and (self.reason == mine or self.reason.startswith(f"{mine}:"))


class Slurm(SlurmCommands):
    """Runs scontrol/squeue for one cluster (SLURM_CONF) with a timeout (ingest/slurm_commands)."""

    def node(self, name: str) -> NodeState:
        """Return a node's state flags and reason."""
        text = self.run(["scontrol", "show", "node", check_node(name)])
        flags: frozenset[str] = frozenset()
        reason = ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("Reason="):
                reason = re.sub(r" \[[^\]]*\]$", "", line.removeprefix("Reason="))
            for key, value in _FIELD.findall(line):
                if key == "State":
                    flags = frozenset(value.rstrip("*").split("+"))
        return NodeState(name, flags, reason)

    def drain(self, name: str, reason: str) -> None:
        """Drain a node with a reason."""
        self.run(
            [
                "scontrol",
                "update",
                f"NodeName={check_node(name)}",
                "State=DRAIN",
                f"Reason={clean_reason(reason)}",
            ]
        )

    def resume(self, name: str) -> None:
        """Resume a node."""
        self.run(["scontrol", "update", f"NodeName={check_node(name)}", "State=RESUME"])

    def reboot(self, name: str, reason: str) -> None:
        """Ask Slurm to reboot a node once idle and resume it afterwards."""
        self.run(
            [
                "scontrol",
                "reboot",
                "ASAP",
                "nextstate=RESUME",
                f"reason={clean_reason(reason)}",
                check_node(name),
            ]
        )

    def job_ids(self, job: str) -> list[str]:
        """Return Slurm job ids for a job id or job name."""
        if _JOB_ID.match(job):
            return [job]
        if not _JOB_NAME.match(job):
            raise SlurmError(f"not a valid job id or name: {job!r}")
        out = self.run(["squeue", "-h", "-n", job, "-o", "%i"])
        return [j.strip() for j in out.split() if _JOB_ID.match(j.strip())]

    def hostnames(self, expression: str) -> list[str]:
        """Expand a Slurm hostlist expression (as Slurm printed it) into node names."""
        return self.run(["scontrol", "show", "hostnames", expression]).split()

    def job(self, job_id: str) -> dict[str, str]:
        """Return `scontrol show job` as fields."""
        return dict(_FIELD.findall(self.run(["scontrol", "show", "job", "-o", job_id])))


@dataclass(frozen=True)
class DrainReason:
    """The reason TrainGuard gives Slurm for a drain or reboot, carried in the plan as data.

    The plan stores it as `params["reason"]` when it is made (from the incident's id and
    summary); Slurm shows it as `trainguard:<incident id>: <summary>`, which is how a node
    TrainGuard drained is told from one a person drained.
    """

    incident_id: str
    summary: str

    def text(self) -> str:
        """Return the reason as Slurm stores it (before `clean_reason`)."""
        return f"{REASON_PREFIX}{self.incident_id}: {self.summary}"

    @classmethod
    def of(cls, request: ActionRequest) -> DrainReason:
        """Return the reason for a request's incident."""
        return cls(request.incident.id, request.incident.summary)

    @classmethod
    def text_of(cls, plan: ActionPlan) -> str:
        """Return a plan's reason text; a plan stored before plans carried it is read from
        its `why` (`<incident id>: <summary>`)."""
        stored = plan.params.get("reason")
        if isinstance(stored, str) and stored:
            return stored
        return cls(plan.incident_id, plan.why.removeprefix(f"{plan.incident_id}: ")).text()


class SlurmDrain:
    """Isolate a node: `scontrol update NodeName=X State=DRAIN Reason=trainguard:<id>: ...`."""

    name = "slurm"
    risk = Risk.HIGH

    def __init__(self, slurm: Slurm, kind: ActionKind = ActionKind.ISOLATE_NODE) -> None:
        self.slurm, self.kind = slurm, kind

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = check_node(request.target.node or "")
        gpu = f" (GPU {request.target.gpu} inside)" if request.target.gpu is not None else ""
        reason = DrainReason.of(request).text()
        return make_plan(self, request, f"drain Slurm node {node}{gpu}", node=node, reason=reason)

    def execute(self, plan: ActionPlan) -> ActionResult:
        try:
            state = self.slurm.node(plan.params["node"])
            if state.drained and not state.ours:
                return skipped(f"already drained by someone else ({state.reason!r}): preserved")
            if state.drained_for(plan.incident_id):
                return done("already drained for this incident")
            self.slurm.drain(plan.params["node"], DrainReason.text_of(plan))
            return done(f"drained {plan.params['node']}")
        except SlurmError as exc:
            return failed(str(exc))

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        try:
            state = self.slurm.node(plan.params["node"])
        except SlurmError as exc:
            return failed(f"cannot check node after restart: {exc}")
        if state.drained_for(plan.incident_id):
            return done("drain found in Slurm after restart")
        if state.drained:
            return skipped(f"drained by someone else ({state.reason!r}): preserved")
        return None


class SlurmDrainSwitch:
    """Isolate a bad leaf switch: drain every node cabled to it (from the fabric inventory).

    Nodes someone else drained are left as they are; the breaker counts every node of the
    plan, so a leaf serving more nodes than the limit allows is blocked, not half-drained.
    """

    name = "slurm"
    kind = ActionKind.ISOLATE_SWITCH
    risk = Risk.HIGH

    def __init__(self, slurm: Slurm, fabric: Fabric | None) -> None:
        self.slurm, self.fabric = slurm, fabric

    def plan(self, request: ActionRequest) -> ActionPlan:
        switch = request.target.switch
        if not switch:
            raise SlurmError(f"incident {request.incident.id} names no switch")
        if self.fabric is None:
            raise SlurmError("no fabric inventory (TG_ACT_FABRIC): the switch's nodes are unknown")
        nodes = sorted(
            check_node(n) for n, links in self.fabric.nodes.items() if switch in links.leaves
        )
        if not nodes:
            raise SlurmError(f"no node of the fabric inventory is cabled to {switch}")
        what = f"drain the {len(nodes)} Slurm node(s) behind leaf switch {switch}: "
        reason = DrainReason.of(request).text()
        return make_plan(
            self, request, what + hostlist(nodes), nodes=nodes, switch=switch, reason=reason
        )

    def execute(self, plan: ActionPlan) -> ActionResult:
        drained, kept = [], []
        try:
            for node in plan.params["nodes"]:
                state = self.slurm.node(node)
                if state.drained and not state.ours:
                    kept.append(node)
                elif not state.drained:
                    self.slurm.drain(node, DrainReason.text_of(plan))
                    drained.append(node)
        except SlurmError as exc:
            return failed(f"{exc} (drained so far: {','.join(drained) or 'none'})")
        detail = f"drained {len(drained)} node(s) behind {plan.params['switch']}"
        if kept:
            detail += f"; {len(kept)} already drained by someone else, preserved"
        return done(detail, drained=drained, preserved=kept)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # execute() skips nodes already drained, so running it again is safe


class SlurmResume:
    """Return a node TrainGuard drained; a drain with any other reason is left alone."""

    name = "slurm"
    kind = ActionKind.RESUME_NODE
    risk = Risk.LOW

    def __init__(self, slurm: Slurm) -> None:
        self.slurm = slurm

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = check_node(request.target.node or "")
        return make_plan(
            self, request, f"resume Slurm node {node} if TrainGuard drained it", node=node
        )

    def execute(self, plan: ActionPlan) -> ActionResult:
        try:
            state = self.slurm.node(plan.params["node"])
            if not state.drained:
                return skipped("not drained")
            if not state.ours:
                return skipped(f"drained by someone else ({state.reason!r}): not undone")
            self.slurm.resume(plan.params["node"])
            return done(f"resumed {plan.params['node']}")
        except SlurmError as exc:
            return failed(str(exc))

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        return None  # resuming again is checked against the node state by execute()


class SlurmReboot:
    """Reboot a drained node once idle; Slurm resumes it when it comes back healthy."""

    name = "slurm"
    kind = ActionKind.REBOOT_NODE
    risk = Risk.HIGH

    def __init__(self, slurm: Slurm) -> None:
        self.slurm = slurm

    def plan(self, request: ActionRequest) -> ActionPlan:
        node = check_node(request.target.node or "")
        what = f"scontrol reboot ASAP nextstate=RESUME {node}"
        return make_plan(self, request, what, node=node, reason=DrainReason.of(request).text())

    def execute(self, plan: ActionPlan) -> ActionResult:
        try:
            state = self.slurm.node(plan.params["node"])
            if state.drained and not state.ours:
                return skipped(f"drained by someone else ({state.reason!r}): not rebooted")
            self.slurm.reboot(plan.params["node"], DrainReason.text_of(plan))
            return done(f"reboot requested for {plan.params['node']}")
        except SlurmError as exc:
            return failed(str(exc))

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        try:
            state = self.slurm.node(plan.params["node"])
        except SlurmError as exc:
            return failed(f"cannot check node after restart: {exc}")
        if state.flags & {"REBOOT_REQUESTED", "REBOOT_ISSUED", "REBOOT"}:
            return done("reboot request found in Slurm after restart")
        return None


class SlurmRequeue:
    """Restart a job from its checkpoint away from isolated nodes.

    Slurm 22.05 refuses `scontrol update JobId=X ExcNodeList=...` on a running job ("Job is no
    longer pending execution"), so a running job is requeued held, its exclusion list updated
    while it is pending, then released; a pending job only gets the exclusion list.
    """

    name = "slurm"
    kind = ActionKind.RESTART_JOB
    risk = Risk.HIGH

    def __init__(self, slurm: Slurm, pending_timeout_s: float = 30.0) -> None:
        self.slurm = slurm
        self.pending_timeout_s = pending_timeout_s

    def plan(self, request: ActionRequest) -> ActionPlan:
        job = request.target.job
        if not job:
            raise SlurmError(f"incident {request.incident.id} names no job to restart")
        exclude = [check_node(n) for n in request.params.get("exclude", [])]
        what = f"requeue Slurm job {job} excluding {hostlist(exclude) or 'no nodes'}"
        return make_plan(self, request, what, job=job, exclude=sorted(set(exclude)))

    def execute(self, plan: ActionPlan) -> ActionResult:
        try:
            ids = self.slurm.job_ids(plan.params["job"])
            if not ids:
                return failed(f"no Slurm job {plan.params['job']!r} in the queue")
            for job_id in ids:
                self._requeue(job_id, plan.params["exclude"])
            return done(f"requeued {','.join(ids)}", jobs=ids)
        except SlurmError as exc:
            return failed(str(exc))

    def _requeue(self, job_id: str, exclude: list[str]) -> None:
        state = self.slurm.job(job_id).get("JobState", "")
        if state != "PENDING":
            self.slurm.run(["scontrol", "requeuehold", job_id])
            self._wait_pending(job_id)
        self._exclude(job_id, exclude)
        if state != "PENDING":
            self.slurm.run(["scontrol", "release", job_id])

    def _exclude(self, job_id: str, exclude: list[str]) -> None:
        if not exclude:
            return
        known = self.slurm.job(job_id).get("ExcNodeList", "(null)")
        # Slurm's own list may be a range expression (node-[0001-0200]): let Slurm expand it
        merged = set(exclude) | (set() if known == "(null)" else set(self.slurm.hostnames(known)))
        hosts = hostlist(list(merged))
        self.slurm.run(["scontrol", "update", f"JobId={job_id}", f"ExcNodeList={hosts}"])

    def _wait_pending(self, job_id: str) -> None:
        deadline = time.monotonic() + self.pending_timeout_s
        while self.slurm.job(job_id).get("JobState") != "PENDING":
            if time.monotonic() > deadline:
                raise SlurmError(
                    f"job {job_id} not pending {self.pending_timeout_s:.0f} s after requeue"
                )
            time.sleep(0.2)

    def reconcile(self, plan: ActionPlan) -> ActionResult | None:
        try:
            ids = self.slurm.job_ids(plan.params["job"])
            if not ids:
                return None  # nothing requeued to be found: running it now fails as it would
            finished = []
            for job_id in ids:
                info = self.slurm.job(job_id)
                if info.get("Restarts", "0") == "0":
                    return None  # never requeued: running it now is the first time
                if info.get("JobState") == "PENDING" and "Held" in info.get("Reason", ""):
                    self._exclude(job_id, plan.params["exclude"])
                    self.slurm.run(["scontrol", "release", job_id])
                finished.append(job_id)
            return done(
                f"requeue found in Slurm after restart: {','.join(finished)}", jobs=finished
            )
        except SlurmError as exc:
            return failed(f"cannot check job after restart: {exc}")
