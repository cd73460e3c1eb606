"""PyTorch distributed's lines around the network, read from their sources' catalogue (issue 21,
"whole families, not lines"): pytorch's c10d socket.cpp and TCPStore.cpp, ProcessGroupGloo and
ProcessGroupNCCL's heartbeat monitor, gloo's tcp transport and debug logger, torchelastic's
rendezvous and agent (diagnosis/explain/rules_dist.py).

The lines are the format strings with their arguments filled in; the negative controls are the
same producers' start-up, retry and shutdown lines, several printed at error level.
"""

from __future__ import annotations

import pytest

from diagnosis.explain.rules_dist import RETRIES_BEFORE_FAULT
from diagnosis.model import Category
from tests.explain_helpers import alarms, first

C = Category
_RETRY = (
    "[W1206 19:45:43.892069000 TCPStore.cpp:347] [c10d] TCP client failed to connect/validate "
    "to host 10.0.0.1:29500 - retrying (try={n}, timeout=1800000ms, delay=487ms): Connection "
    "reset by peer"
)
_RECV_FAILED = (
    "[W322 13:52:50.464204351 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=68, "
    "addr=[localhost]:49590, remote=[localhost]:29400): Failed to recv, got 0 bytes. Connection "
    "was likely closed. Did the remote server shutdown or crash?"
)
_SHUTDOWN = (
    "WARNING:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'node1_1234_0' has "
    "failed to shutdown the rendezvous 'job42' due to an error of type RendezvousConnectionError."
)

FAULTS = [
    # the caller's set-up: a port taken, an interface gloo cannot find
    (
        "[W1120 10:00:01.1 socket.cpp:436] [c10d] The server socket has failed to bind to "
        "[::]:29500 (errno: 98 - Address already in use).",
        C.APPLICATION,
        "dist.port_in_use",
    ),
    (
        "RuntimeError: The server socket has failed to listen on any local network address. The "
        "server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).",
        C.APPLICATION,
        "dist.port_in_use",
    ),
    ("RuntimeError: on 0.0.0.0, port: 29500 already in use", C.APPLICATION, "dist.port_in_use"),
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/device.cc:83] Unable to find "
        "address for: eth0",
        C.APPLICATION,
        "dist.gloo_address",
    ),
    # the network: retries given up, peers not connected, the master unreachable
    (_RETRY.format(n=RETRIES_BEFORE_FAULT), C.NETWORK, "dist.store_client"),
    (
        "[E1206 19:45:43.892069000 TCPStore.cpp:360] [c10d] TCP client failed to connect/validate "
        "to host 10.0.0.1:29500 - timed out (try=20, timeout=1800000ms): Connection reset by peer",
        C.NETWORK,
        "dist.store_client",
    ),
    (
        "[Gloo] Rank 3 is connected to 5 peer ranks. Expected number of connected peer ranks is : "
        "7\n[Gloo] Rank 3 is NOT connected to: [4, 6]",
        C.NETWORK,
        "dist.gloo_unconnected",
    ),
    (
        "[E gloo/transport/tcp/debug_logger.cc:12] failed to connect, willRetry=0, retry=3, "
        "retryLimit=3, rank=1, size=4, local=[10.0.0.2]:41234, remote=[10.0.0.1]:33211, "
        "error=SO_ERROR: Connection refused",
        C.NETWORK,
        "dist.gloo_unconnected",
    ),
    (
        "[W1120 10:00:01.1 socket.cpp:697] [c10d] The client socket has failed to connect to any "
        "network address of (node0, 29500). The client socket has failed to connect to "
        "[node0]:29500 (errno: 113 - No route to host).",
        C.NETWORK,
        "dist.client_unreachable",
    ),
    ("RuntimeError: timed out waiting for all 16 members to join", C.NETWORK, "dist.store_timeout"),
    # a store connection that dropped, with no shutdown in sight
    (_RECV_FAILED, C.NETWORK, "dist.store_recv_failed"),
]


@pytest.mark.parametrize(("line", "category", "rule"), FAULTS)
def test_each_catalogued_fault_is_read(line: str, category: Category, rule: str) -> None:
    found = first(line)
    assert found is not None, line
    assert (found[0], found[1]) == (category, rule)


BENIGN = [
    # start-up: the master not listening yet, an address family, the agent's store
    "[I1206 19:45:40.892069000 socket.cpp:920] [c10d] No socket on (node0, 29500) is listening "
    "yet, will retry.",
    "[W304 19:44:40.795037897 socket.cpp:767] [c10d] The client socket cannot be initialized to "
    "connect to [localhost]:29500 (errno: 97 - Address family not supported by protocol).",
    "[E1120 10:00:01.123456789 TCPStore.cpp:277] [c10d] The server socket on 29500 has failed to "
    "bind. TORCHELASTIC_USE_AGENT_STORE is enabled so ignoring the error.",
    "[W1120 10:00:01.1 socket.cpp:697] [c10d] The IPv6 network addresses of (node0, 29500) cannot "
    "be retrieved (gai error: -3 - Temporary failure in name resolution).",
    "[W1120 10:00:01.1 socket.cpp:464] [c10d] The hostname of the client socket cannot be "
    "retrieved. err=-3",
    "[W1120 10:00:01.1 TCPStore.cpp:310] [c10d] Starting store with 1024 workers but somaxconn is "
    "128.This might cause instability during bootstrap, consider increasing it.",
    "[I1120 10:00:01.1 socket.cpp:486] [c10d] The server socket has started to listen on "
    "[::]:29500.",
    "INFO:torch.distributed.elastic.rendezvous.c10d_rendezvous_backend:Process 4321 hosts the TCP "
    "store for the C10d rendezvous backend.",
    "[W1120 10:00:01.1 ProcessGroupGloo.cpp:715] Warning: Unable to resolve hostname to a (local) "
    "address. Using the loopback address as fallback. Manually set the network interface to bind "
    "to with GLOO_SOCKET_IFNAME. (function operator())",
    # retries while peers start
    _RETRY.format(n=0),
    _RETRY.format(n=RETRIES_BEFORE_FAULT - 1),
    "[E gloo/transport/tcp/debug_logger.cc:12] failed to connect, willRetry=1, retry=0, "
    "retryLimit=3, rank=1, size=4, local=[10.0.0.2]:41234, remote=[10.0.0.1]:33211, "
    "error=SO_ERROR: Connection refused",
    "[Gloo] Rank 3 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7",
    # the agent restarting, rounds joined, a finished run and its shutdown
    "[2024-07-25 06:36:18,293] torch.distributed.elastic.agent.server.api: [INFO] [default] "
    "Worker group FAILED. 3/3 attempts left; will restart worker group",
    "INFO:torch.distributed.elastic.rendezvous.dynamic_rendezvous:The node 'node1_1234_0' has "
    "joined round 1 of the rendezvous 'job42' as rank 3 in a world of size 4.",
    "[2024-07-25 06:36:18,293] torch.distributed.elastic.agent.server.api: [INFO] [default] "
    "worker group successfully finished. Waiting 300 seconds for other agents to finish.",
    _SHUTDOWN,
    "[rank0]:[W1120 10:00:01.1 ProcessGroupNCCL.cpp:1802] [PG ID 0 PG GUID 0 Rank 0] Failed to "
    'check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), '
    "with error: Connection reset by peer",
    "[W1120 10:00:01.1 ProcessGroupNCCL.cpp:1250] Warning: WARNING: destroy_process_group() was "
    "not called before program exit, which can leak resources. (function operator())",
]


@pytest.mark.parametrize("line", BENIGN)
def test_benign_lines_of_the_same_producers_stay_silent(line: str) -> None:
    assert alarms(line) == [], line


_FINISHED = (
    "[2024-07-25 06:36:18,293] torch.distributed.elastic.agent.server.api: [INFO] [default] "
    "worker group successfully finished. Waiting 300 seconds for other agents to finish."
)


def test_a_dropped_store_connection_after_a_finished_run_is_its_noise() -> None:
    finished = "\n".join([_FINISHED, _RECV_FAILED, _SHUTDOWN])
    assert alarms(finished) == []


def test_a_store_lost_mid_run_is_not_explained_away_by_the_shutdown_lines() -> None:
    """The rendezvous shutdown and the heartbeat's `should dump` check are printed whenever the
    store's host goes away, mid-run too (review 17b)."""
    lost = "\n".join([_RECV_FAILED, _SHUTDOWN])
    assert alarms(lost) == ["dist.store_recv_failed"]


def test_a_failed_run_keeps_its_cause_through_the_shutdown_noise() -> None:
    failed = "\n".join(
        [
            "[rank3]:[E1003 18:37:01.838048403 ProcessGroupNCCL.cpp:1515] [PG 0 (default_pg) "
            "Rank 3] Process group watchdog thread terminated with exception: NCCL error: remote "
            "process exited or there was a network error, NCCL version 2.21.5",
            _RECV_FAILED,
            _SHUTDOWN,
        ]
    )
    found = first(failed)
    assert found is not None and found[0] == C.NETWORK and found[1] != "dist.store_recv_failed"


def test_retries_turn_into_a_fault_only_when_they_pile_up() -> None:
    young = "\n".join(_RETRY.format(n=n) for n in range(RETRIES_BEFORE_FAULT))
    assert alarms(young) == []
    old = young + "\n" + _RETRY.format(n=RETRIES_BEFORE_FAULT + 3)
    assert alarms(old) == ["dist.store_client"]
