"""PyTorch distributed's own lines around the network: the TCPStore and its sockets, gloo's
connection set-up, torchelastic's rendezvous, read in their own wording before the general
network rules (diagnosis/explain/rules_comm.py) see a ``Connection reset by peer`` in them.

Read from the producers' sources, not from examples (catalogued in the session notes of
2026-12-05: pytorch's c10d socket.cpp, TCPStore.cpp and ProcessGroupGloo.cpp, gloo's tcp
transport and debug logger, torchelastic's rendezvous and agent):

- Retries are not faults: the store client's ``failed to connect/validate ... - retrying
  (try=N`` is a peer still starting while N is small and the network once the client has
  retried ``RETRIES_BEFORE_FAULT`` times; its ``- timed out`` is the network. gloo's
  ``failed to connect, willRetry=1`` is silent, ``willRetry=0`` the network; a rank
  ``NOT connected to`` its peers is the network.
- The caller's set-up: a store port already taken (``failed to bind to ... Address already in
  use``, ``failed to listen on any local network address``, elastic's ``port: N already in
  use``) and an interface gloo cannot find (``Unable to find address for``) are the job's
  configuration, and so is a store-based barrier that counted more workers than the world
  (``world_size=2, worker_count=4``: another launch's or a stale rendezvous's workers on the
  same store). The agent store's own ignored bind failure (``TORCHELASTIC_USE_AGENT_STORE is
  enabled so ignoring the error``) is no fault, printed at error level or not.
- Shutdown: a rendezvous that could not be shut down (the store's host left first), the
  heartbeat monitor's ``should dump`` check on a store already gone and a finished worker
  group are no fault alone; a store connection that dropped (``recvValue failed``, ``Failed to
  recv, got 0 bytes``) in an input that shows the worker group finished is its noise
  (EXPLAINED_BY). The first two are printed whenever the store's host goes away, mid-run too,
  so they explain nothing away; a failed run shows its cause in other lines.

Guarantees: every pattern is anchored on the producer's wording (``[c10d]``, ``[Gloo]``,
``TCP client``, ``rendezvous``), so the same words in another tool's output are not read here.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

RETRIES_BEFORE_FAULT = 3
"""Store-client retries that are still a start-up race (its delay doubles each try: the third
retry is seconds after the first attempt, longer than peers take to start together)."""

_QUIET = verdict(C.BENIGN, B.UNKNOWN, K.JOB, S.INFO, A.NONE, 0.5)
_RETRYING = verdict(C.NETWORK, B.INFRASTRUCTURE, K.NODE, S.WARNING, A.CHECK_NETWORK, 0.5)
_GAVE_UP = verdict(C.NETWORK, B.INFRASTRUCTURE, K.NODE, S.ERROR, A.CHECK_NETWORK, 0.7)
_SET_UP = verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6)


def _store_client(m: re.Match[str]) -> Verdict:
    """The store client's retry: quiet while young or refused (the host answered: its store is
    not listening yet), the network when old or given up."""
    if m["end"] == "timed out":
        return _GAVE_UP
    if int(m["try"]) < RETRIES_BEFORE_FAULT or _REFUSED.search(m.string):
        return _QUIET
    return _RETRYING


_REFUSED = re.compile(r"Connection refused|errno: 111\b")


def _barrier_overcounted(m: re.Match[str]) -> Verdict | None:
    """The set-up when more workers than the world arrived at the barrier; else no reading."""
    return _SET_UP if int(m["workers"]) > int(m["world"]) else None


STANDALONE_RULE = "dist.standalone_across_nodes"

RULES: tuple[Rule, ...] = (
    rule(
        "dist.barrier_overcounted",
        r"\bstore based barrier on rank: \d+, for key: \S+ \(world_size=(?P<world>\d+), "
        r"worker_count=(?P<workers>\d+)",
        ("store based barrier",),
        "The store-based barrier counted more workers than the world: another launch's workers "
        "or a stale rendezvous (a file store left by an earlier run) share the store; the job's "
        "launch set-up.",
        judge=_barrier_overcounted,
    ),
    rule(
        "mpi.affinity_mapping",
        # MVAPICH2's CPU binding (`smpi_setaffinity(2674): Error parsing CPU mapping string`)
        r"\bError parsing CPU mapping string\b",
        ("cpu mapping string",),
        "The MPI library could not parse the CPU binding it was given (MV2_CPU_MAPPING, or a "
        "launcher's own binding it does not understand): the job's launch set-up; MPI_Init "
        "aborts.",
        _SET_UP,
    ),
    rule(
        "mpi.tcp_connect_failed",
        # Open MPI's TCP transport (help-mpi-btl-tcp.txt: `WARNING: Open MPI failed to TCP
        # connect to a peer MPI process.`)
        r"\bOpen MPI failed to TCP connect to a peer MPI process\b",
        ("failed to tcp connect",),
        "Open MPI could not open a TCP connection to a peer process (its address unreachable or "
        "refusing): the network between the nodes, or an interface MPI should not use; the job "
        "may fail.",
        _RETRYING,
    ),
    rule(
        STANDALONE_RULE,
        # torchrun's `--standalone` (a private rendezvous on localhost) with the flags of a
        # rendezvous across nodes, either order, on the command's line
        r"\btorchrun\b[^\n]*?--standalone\b[^\n]*?--(?:nnodes[= ](?!1\b)|master[_-]addr\b"
        r"|rdzv[_-]endpoint\b)"
        r"|\btorchrun\b[^\n]*?--(?:nnodes[= ](?!1\b)|master[_-]addr\b|rdzv[_-]endpoint\b)"
        r"[^\n]*?--standalone\b",
        ("--standalone",),
        "torchrun launched with `--standalone` and the flags of a job across nodes: standalone "
        "gives each node a private rendezvous on localhost, so the nodes never meet and the "
        "rendezvous times out; the launch command, not the network.",
        _SET_UP,
    ),
    rule(
        "dist.collective_mismatch",
        r"Detected mismatch between collectives on ranks"
        r"|Mismatched collective detected, please check your collective calls"
        # Horovod's coordinator: `Mismatched MPI operations: One rank did an allreduce, ...`
        r"|Mismatched (?:MPI|allreduce|allgather|broadcast|alltoall) operations",
        ("mismatch between collectives", "mismatched collective detected", "mismatched"),
        "The ranks called different collectives, or the same ones in another order or with "
        "other shapes (torch.distributed's TORCH_DISTRIBUTED_DEBUG=DETAIL check, NCCL's own): "
        "the program's bug, not the network.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.8),
    ),
    rule(
        "dist.agent_store_bind",
        r"has failed to bind\. TORCHELASTIC_USE_AGENT_STORE is enabled so ignoring the error",
        ("torchelastic_use_agent_store",),
        "torchrun's agent already hosts the store, so the worker's own bind failure is "
        "expected and ignored (printed at error level all the same).",
        _QUIET,
    ),
    rule(
        "dist.store_client",
        r"TCP client failed to connect/validate to host \S+ - (?P<end>retrying|timed out) "
        r"\(try=(?P<try>\d+)",
        ("tcp client failed",),
        "The TCPStore client's connection attempts: a few retries are peers still starting; "
        "many, or the final 'timed out', mean the store's host cannot be reached.",
        judge=_store_client,
    ),
    rule(
        "dist.finished",
        r"worker group successfully finished",
        ("successfully finished",),
        "torchrun's agent says the worker group finished: the run ended well, and the store "
        "connections that drop after it are its shutdown.",
        _QUIET,
    ),
    rule(
        "dist.shutdown",
        r"has failed to shutdown the rendezvous|Failed to check the \"should dump\" flag on "
        r"TCPStore",
        ("failed to shutdown the rendezvous", "should dump"),
        "Shutdown order: the store's host (rank 0's agent) left first, so the others cannot "
        "close the rendezvous or poll the store; after a finished run this is no fault.",
        _QUIET,
    ),
    rule(
        "dist.port_in_use",
        r"\[c10d\] The server socket has failed to (?:bind to|listen on) .*?Address already in "
        r"use|The server socket has failed to listen on any local network address"
        r"|\bport: \d+ already in use"
        # NCCL's bootstrap (`include/socket.h:347 NCCL WARN Call to bind failed : Address already
        # in use`)
        r"|\bCall to bind failed\s*:\s*Address already in use",
        ("server socket has failed", "already in use"),
        "The store's port is taken: a process of an earlier run still holds MASTER_PORT, or two "
        "jobs share it. The job's set-up, not the network.",
        _SET_UP,
    ),
    rule(
        "dist.gloo_address",
        r"Unable to find (?:address|interface) for\b",
        ("unable to find address", "unable to find interface"),
        "gloo cannot find the interface or address to bind (GLOO_SOCKET_IFNAME names no "
        "interface here, or the host name resolves to a loopback address): the job's set-up.",
        _SET_UP,
    ),
    rule(
        "dist.gloo_unconnected",
        r"\[Gloo\] Rank \d+ is NOT connected to|failed to connect, willRetry=0\b",
        ("not connected to", "willretry=0"),
        "gloo could not connect a rank to all its peers (or gave up retrying): the network "
        "between the nodes, or a peer that is not there.",
        _GAVE_UP,
    ),
    rule(
        "dist.client_timed_out",
        r"\[c10d\] The client socket has failed to connect to \S+ \(errno: (?:110 - Connection "
        r"timed out|113 - No route to host)\)",
        ("failed to connect to",),
        "The store client's connection attempt went unanswered (errno 110) or had no route "
        "(113): unlike a refusal (the host is up, its store not yet listening), nothing answered "
        "at the master's address: a firewall, a route or the host itself.",
        _RETRYING,
    ),
    rule(
        "dist.store_peer_dropped",
        # Paddle's TCP store (tcp_utils.h) when the peer closed the connection mid-message
        r"\bTCP (?:send|recv|receive) error\. Details: (?:Broken pipe|Connection reset by peer)",
        ("tcp send error", "tcp recv error", "tcp receive error"),
        "A rank's TCP store connection broke while it sent or received (Paddle's `TCP send error. "
        "Details: Broken pipe`): the peer went away or the network between them dropped it.",
        _GAVE_UP,
    ),
    rule(
        "dist.client_unreachable",
        r"\[c10d\] The client socket has failed to connect to any network address of",
        ("failed to connect to any network address",),
        "The store client reached none of the master's addresses: MASTER_ADDR is unreachable "
        "(the network, a firewall) or its host is down.",
        _GAVE_UP,
    ),
)

EXPLAINED_BY: dict[str, frozenset[str]] = {
    **{
        rule_id: frozenset({"dist.finished"})
        for rule_id in ("dist.store_recv_failed", "nccl.connection_closed", "nccl.socket_gave_up")
    },
    **{
        rule_id: frozenset({STANDALONE_RULE})
        for rule_id in ("dist.store_timeout", "dist.client_timed_out", "dist.store_client")
    },
}
"""A store or NCCL connection that dropped, in an input that shows the run finished: its
shutdown noise. A rendezvous that timed out under a `--standalone` launch across nodes: the
launch's.
A rendezvous that could not be shut down, or the heartbeat monitor's `should dump` check, is
printed whenever the store's host goes away, mid-run too: they explain nothing."""
