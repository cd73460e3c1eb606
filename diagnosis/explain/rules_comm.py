"""Communication rules: NCCL errors and warnings, PyTorch distributed errors, hangs.

Patterns come from real lines: real_logs nccl-* (IB completion errors in both NCCL spellings,
refused/closed connections, ncclInternalError/ncclRemoteError/ncclUnhandledCudaError),
host-gloo-timeout, host-socket-timeout, the ProcessGroupNCCL watchdog lines of nccl-timeout
and nccl-watchdog-heartbeat-stuck, public_lines nccl-connect-retry and watchdog-*, the Flight
Recorder analyzer and NCCL RAS outputs in real_samples.
"""

from __future__ import annotations

import re

from diagnosis.catalog import Verdict
from diagnosis.explain.rules import Rule, gpu_hardware, rule, verdict
from diagnosis.model import Action as A
from diagnosis.model import Blame as B
from diagnosis.model import Category as C
from diagnosis.model import ComponentKind as K
from diagnosis.model import Severity as S

INFRA, APP, UNSURE = B.INFRASTRUCTURE, B.APPLICATION, B.UNKNOWN


def _net(component: K, severity: S, confidence: float) -> Verdict:
    """Return a network verdict (check the fabric)."""
    return verdict(C.NETWORK, INFRA, component, severity, A.CHECK_NETWORK, confidence)


def _hang(severity: S, confidence: float) -> Verdict:
    """Return a hang verdict: capture stacks and flight records, then restart."""
    return verdict(C.HANG, UNSURE, K.JOB, severity, A.CAPTURE_DIAGNOSTICS, confidence)


SOCKET_CONNECTED = "nccl.socket_connected"
EXPLAINED_BY: dict[str, frozenset[str]] = {"nccl.socket_retry": frozenset({SOCKET_CONNECTED})}
"""A socket transport's retries in an input that shows it connected after them."""
ONLY_TO_RECOVER = frozenset({SOCKET_CONNECTED})
"""Rules that only say an event ended: no finding of their own."""

_NETWORK_RULES: tuple[Rule, ...] = (
    rule(
        "nccl.ib_completion_error",
        r"NET/IBP?\s*:\s*Got completion (?:from peer .*?)?(?:with error |status=)(?P<status>\d+)",
        ("got completion",),
        "An InfiniBand work completion failed (12 = retry exceeded: link or peer gone; 4 = "
        "local protection, often GPUDirect/peermem): the NIC or fabric, not the job.",
        _net(K.NIC, S.ERROR, 0.85),
    ),
    rule(
        "rdma.completion_error",
        r"\b(?:transport|RNR) retry count(?:er)? exceeded\b|\bIBV_WC_(?:RETRY_EXC|RNR_RETRY_EXC|"
        r"REM_ACCESS|REM_OP|LOC_PROT|LOC_QP_OP|FATAL)_ERR\b|\b(?:remote access|remote operation|"
        r"local protection|local QP operation) error\b"
        # the NIC's own code of a failed completion, however the library words the rest (`Work
        # Request Flushed Error, vendor_err 0x1`, `status 5 and vendor err 249`)
        # (a non-zero code: a successful completion prints `vendor_err=0x0`; not the mlx5 driver's
        # own dump, `syndrome 0x5, vendor syndrome 0xf9`, which rules_rdma reads whole)
        r"|(?<!syndrome 0x[0-9a-f], )(?<!syndrome 0x[0-9a-f]{2}, )"
        r"\bvendor[ _](?:err(?:or)?|syndrome)\s*(?:[:=]\s*)?(?:0x0*[1-9a-f][0-9a-f]*|0*[1-9]\d*)\b"
        # mlx5's completion syndromes by name (`CQE syndrome 0x15 (TRANSPORT_RETRY_EXC_ERR`)
        r"|\b(?:TRANSPORT|RNR)_RETRY_EXC_ERR\b",
        (
            "retry count",
            *("vendor err", "vendor_err", "vendor syndrome", "vendor_syndrome", "retry_exc_err"),
            "ibv_wc_",
            "remote access error",
            "remote operation error",
            "local protection error",
            "local qp operation error",
        ),
        "A verbs work completion failed with a status of the NIC or the fabric (retry counter "
        "exceeded: the peer or the link is gone; protection or access errors: GPUDirect "
        "registration): any RDMA library prints them the same way (ibv_wc_status_str).",
        _net(K.NIC, S.ERROR, 0.8),
        flags=re.IGNORECASE,
    ),
    rule(
        "nccl.nvls_bind_failed",
        r"Failed to (?:bind|map|allocate) NVLink SHARP \(NVLS\) Multicast memory",
        ("nvlink sharp",),
        "NCCL could not bind NVLink SHARP (multicast) memory: NCCL's own message blames the "
        "Fabric Manager or the NVSwitches (Fabric Manager not running, a switch not ready); "
        "collectives fail at communicator init.",
        _net(K.SWITCH, S.ERROR, 0.75),
    ),
    rule(
        "nccl.ib_fatal",
        r"NET/IB ?: ?\S+ async fatal event\b|\bcommunicator encountered a fatal error \(detected in"
        r"|NET/IB ?: (?:\S+ )?Got async event ?: (?:local catastrophic error|QP fatal error|"
        r"CQ error|device fatal|local work queue catastrophic error)",
        ("async fatal event", "communicator encountered a fatal error", "async event"),
        "NCCL's InfiniBand transport saw the HCA fail (an async fatal event on the device, a "
        "CQ or a QP, in the newer and the older wording): the NIC or its driver, on this node.",
        _net(K.NIC, S.ERROR, 0.75),
    ),
    rule(
        "nccl.ib_device_skipped",
        r"NET/IB ?: ?Unable to (?:open|query) (?:device|port)\b",
        ("unable to open device", "unable to query"),
        "NCCL could not open or query one HCA and goes on without it (the next lines show the "
        "devices it uses): a NIC to check, not yet a failure of the job.",
        _net(K.NIC, S.WARNING, 0.4),
    ),
    rule(
        "nccl.socket_gave_up",
        r"\bexceeded error retry count\b|\bCall to (?:recv from|send to) \S+ failed\b",
        ("exceeded error retry count", "call to recv from", "call to send to"),
        "NCCL's sockets gave up on a peer (a connect retried to its limit, a recv or send that "
        "failed): the network between the nodes, or a peer that is not there.",
        _net(K.NODE, S.ERROR, 0.65),
    ),
    rule(
        "nccl.no_interface",
        r"Bootstrap ?: no socket interface found|NET/Socket ?: (?:No usable listening interface "
        r"found|no interface found)|NET/IB ?: No IP interface found|Failed to initialize any NET "
        r"plugin",
        (
            "no socket interface",
            "no usable listening interface",
            "no interface found",
            "no ip interface",
            "failed to initialize any net plugin",
        ),
        "NCCL found no network interface to use (NCCL_SOCKET_IFNAME names none that is up, or "
        "no transport initialised): the node's network configuration, or the job's setting.",
        _net(K.NODE, S.ERROR, 0.6),
    ),
    rule(
        "nccl.size_mismatch",
        r"NET/IB ?: req \S+ tag \S+ peer \S+ collective mismatch error"
        r"|NET/Socket ?: message truncated : receiving \d+ bytes instead of \d+",
        ("collective mismatch error", "message truncated"),
        "Two ranks called collectives that do not match (another size or order): the job's "
        "code, not the network.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
    rule(
        "nccl.benign_warn",
        r"Could not find real path of|send side and recv side have different number of sockets"
        r"|\bis greater than the maximum allowed, setting\b|Got (?:non-fatal )?async event ?: "
        r"(?:port active|SM change|client reregistration|LID change|P_?Key change|GID table change)"
        r"|NET/IB ?: ?\S+ GID table changed"
        # no verbs library on the host: NCCL uses its sockets, as a host without RDMA must
        r"|\bFailed to open libibverbs\.so\b",
        (
            "libibverbs",
            "could not find real path",
            "different number of sockets",
            "maximum allowed",
            "async event",
            "gid table changed",
        ),
        "NCCL's warnings that are no fault: a sysfs path it cannot resolve in a container, a "
        "socket count it evens out, a setting it clamps, a port that came up, a subnet manager "
        "that changed, no verbs library on a host without RDMA (it uses sockets) (NVIDIA/nccl "
        "net_ib, net_socket, ibvwrap).",
        verdict(C.BENIGN, B.UNKNOWN, K.NODE, S.INFO, A.NONE, 0.5),
    ),
    rule(
        "nccl.connect_retry",
        r"Call to connect returned .*, retrying",
        ("call to connect returned",),
        "Bootstrap retry while peers are still starting: NCCL's documented benign noise.",
        verdict(C.BENIGN, UNSURE, K.NODE, S.INFO, A.NONE, 0.8),
    ),
    rule(
        "nccl.connection_refused",
        r"Connect to \S+ failed : Connection refused|connect.*failed.*Connection refused",
        ("connection refused",),
        "A peer refused NCCL's connection: that peer's node or network is bad (real_logs: the "
        "fix was excluding the node).",
        _net(K.NODE, S.ERROR, 0.75),
    ),
    rule(
        "net.no_route_to_host",
        # EHOSTUNREACH (errno 113) wherever a program prints it (`RuntimeError: No route to
        # host`, `connect: No route to host`): no path to the peer's address
        r"\bNo route to host\b|\bEHOSTUNREACH\b",
        ("no route to host", "ehostunreach"),
        "A connection found no route to its peer's host (EHOSTUNREACH): the peer is down or the "
        "network between them (a firewall, a wrong interface or address) drops it.",
        _net(K.NODE, S.ERROR, 0.55),
    ),
    rule(
        "nccl.connection_closed",
        r"Connection closed by (?:remote )?peer|Socket recv failed|socketProgress|"
        r"Connection reset by peer"
        # an error said in lower case, as people quote it (`the problem "Runtime error:
        # connection reset by peer"`)
        r"|\b[Ee]rror:\s*connection reset by peer\b",
        ("connection closed", "socket recv failed", "socketprogress", "connection reset"),
        "A peer closed its socket mid-collective: it died or its network did.",
        _net(K.NODE, S.ERROR, 0.7),
    ),
    rule(
        "nccl.remote_error",
        r"ncclRemoteError|remote process exited or there was a network error",
        ("ncclremoteerror", "remote process exited"),
        "NCCL's remote error: a network failure or a peer that exited first; look at the "
        "'Last error' line and the peer.",
        _net(K.NODE, S.ERROR, 0.6),
    ),
    rule(
        "nccl.unhandled_cuda_error",
        r"ncclUnhandledCudaError|unhandled cuda error",
        ("unhandledcudaerror", "unhandled cuda error"),
        "NCCL hit a CUDA failure; the 'Cuda failure' line after it decides (999: GPU state).",
        gpu_hardware(S.ERROR, A.RESET_GPU, 0.4),
    ),
    rule(
        "nccl.no_algorithm",
        # NCCL's enqueue with no algorithm and protocol left for a collective (an NCCL_ALGO or
        # NCCL_PROTO forced that the fabric cannot run, CollNet without its plugin)
        r"\bNCCL WARN Error : no algorithm/protocol available\b",
        ("no algorithm/protocol",),
        "NCCL found no algorithm and protocol it may use for a collective: NCCL_ALGO or "
        "NCCL_PROTO forces one the system cannot run (CollNet without its SHARP plugin); the "
        "job's setting.",
        verdict(C.APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.65),
    ),
    rule(
        "nccl.invalid_usage",
        r"ncclInvalidUsage|invalid usage \(run with NCCL_DEBUG"
        # a communicator used after it was freed, or by another copy of NCCL in the process
        r"|\bcorrupted comm object detected\b",
        ("ncclinvalidusage", "invalid usage", "corrupted comm"),
        "The job called NCCL wrongly (mismatched collectives, bad arguments).",
        verdict(C.APPLICATION, APP, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.7),
    ),
    rule(
        "nccl.system_error",
        r"ncclSystemError|unhandled system error",
        ("ncclsystemerror", "unhandled system error"),
        "A system or library call inside NCCL failed (sockets, IB verbs, shm): usually the host "
        "or network.",
        _net(K.NODE, S.ERROR, 0.5),
    ),
    rule(
        "nccl.no_socket_address",
        # NCCL's bootstrap with no address to use (NCCL_SOCKET_IFNAME naming an interface the
        # node does not have): `connecting to address  with family 59936 is neither AF_INET(2)
        # nor AF_INET6(10)`
        r"\bwith family \d+ is neither AF_INET\(2\) nor AF_INET6\(10\)",
        ("neither af_inet",),
        "NCCL found no usable address for its sockets (the interface NCCL_SOCKET_IFNAME names "
        "does not exist, or has no address), so it connects to garbage: the job's setting.",
        verdict(C.APPLICATION, B.APPLICATION, K.JOB, S.ERROR, A.FIX_APPLICATION, 0.6),
    ),
    rule(
        "nccl.internal_error",
        r"ncclInternalError|NCCL error.*internal error",
        ("ncclinternalerror", "internal error"),
        "NCCL's internal check failed; in practice mostly a broken connection (real_logs "
        "nccl-internal-error); the 'Last error' line refines it.",
        _net(K.NODE, S.ERROR, 0.5),
    ),
    rule(
        "dist.gloo_timeout",
        r"gloo.*Timed out waiting \d+ms for (?:recv|send) operation|Timed out waiting \d+ms "
        r"for (?:recv|send) operation",
        ("timed out waiting",),
        "A gloo (CPU) collective timed out waiting for a peer, e.g. a barrier at checkpoint "
        "(real_logs host-gloo-timeout): labelled network, the peer may also be stuck.",
        _net(K.NODE, S.ERROR, 0.6),
    ),
    rule(
        "dist.gloo_transport",
        r"gloo/transport/tcp/(?:pair|device|listener)\.cc:\d+\]|Gloo connectFullMesh failed"
        r"|\bgloo::(?:IoException|EnforceNotMet)\b",
        ("gloo",),
        "gloo's TCP transport failed to reach or lost a peer (a connection refused, closed or "
        "timed out, a full mesh that did not connect): the network between the nodes, a wrong "
        "interface or address, or a peer that died.",
        _net(K.NODE, S.ERROR, 0.6),
    ),
    rule(
        "dist.store_timeout",
        r"DistNetworkError|DistStoreError|client socket has timed out|Socket Timeout"
        r"|Timed out after \d+ seconds waiting for clients|\bRendezvousTimeoutError\b"
        r"|timed out waiting for all \d+ members to join",
        (
            "distnetworkerror",
            "diststoreerror",
            "socket has timed out",
            "socket timeout",
            "waiting for clients",
            "rendezvoustimeouterror",
            "members to join",
        ),
        "The rendezvous/TCPStore could not be reached, or torch elastic's rendezvous timed out "
        "waiting for the other nodes: the master node or the network (real_logs "
        "host-socket-timeout).",
        _net(K.NODE, S.ERROR, 0.7),
    ),  # fmt: skip
    rule(
        "dist.store_recv_failed",
        r"RendezvousConnectionError|\[c10d\] recvValue\w* failed on SocketImpl"
        r"|[Ff]ailed to recv, got 0 bytes",
        ("rendezvousconnectionerror", "recvvalue", "failed to recv"),
        "A TCPStore / rendezvous connection dropped (the store's host exited or the network "
        "between them failed): the ranks cannot coordinate.",
        _net(K.NODE, S.ERROR, 0.6),
    ),
    rule(
        "nccl.socket_retry",
        # a socket net plugin's retries (Google's FastSocket: `NCCL WARN Maximum retry reached
        # for accept 3.`, `NCCL WARN Cannot get incoming CPU.`), ended by its `Connected after
        # 1000 retries` (RECOVERED_BY)
        r"\bNCCL WARN (?:Maximum retry reached for (?:accept|connect) \d+|Cannot get incoming CPU)",
        ("maximum retry reached", "incoming cpu"),
        "A socket transport's connection retried (and placed its thread without a CPU): a "
        "slow or refused peer; no fault when the same input says it connected after the "
        "retries (EXPLAINED_BY).",
        _net(K.NODE, S.WARNING, 0.3),
    ),
    rule(
        SOCKET_CONNECTED,
        r"\bNCCL INFO NET/\w+ ?: Connected after \d+ retries\b",
        ("connected after",),
        "A socket transport connected after retrying: it ends the retries said before it; no "
        "finding of its own.",
        _net(K.NODE, S.INFO, 0.3),
    ),
    rule(
        "nccl.warn",
        r"\bNCCL WARN\b",
        ("nccl warn",),
        "Any other NCCL warning: weak evidence of a network/transport problem.",
        _net(K.NODE, S.WARNING, 0.3),
    ),
    rule(
        "dist.backend_error",
        r"^(?!terminate called after throwing).*?(?<!\bno )(?<!\bzero )(?<!\bwithout )"
        r"(?:DistBackendError|NCCL error)",
        ("distbackenderror", "nccl error"),
        "Any other NCCL/backend error raised to Python (not the C++ 'terminate called' line: "
        "its what() line says why).",
        _net(K.NODE, S.ERROR, 0.4),
    ),
)

_HANG_RULES: tuple[Rule, ...] = (
    rule(
        "hang.watchdog_timeout",
        r"(?:\[Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout"
        r"|Timeout at NCCL work|\bWorkNCCL\(.*?\) timed out in blocking wait",
        ("watchdog caught collective", "timeout at nccl work", "timed out in blocking wait"),
        "The ProcessGroupNCCL watchdog saw a collective exceed its timeout: a hang. Blame is "
        "unknown until localization finds the rank that stopped (app desync or a bad part).",
        _hang(S.ERROR, 0.8),
    ),
    rule(
        "hang.horovod_stall",
        r"One or more tensors were submitted to be reduced, gathered or broadcasted by subset of "
        r"ranks and are waiting for remainder of ranks",
        ("submitted to be reduced",),
        "Horovod's stall inspector: some ranks wait in a collective for the rest (its `Missing "
        "ranks:` line names them): a hang, or ranks that submit different tensors.",
        _hang(S.ERROR, 0.7),
    ),
    rule(
        "hang.watchdog_stuck",
        r"watchdog got stuck for \d+ seconds|Heartbeat monitor timed out",
        ("watchdog got stuck", "heartbeat monitor timed out"),
        "The heartbeat monitor found the watchdog itself stuck in a CUDA/NCCL call: a hang.",
        _hang(S.ERROR, 0.8),
    ),
    rule(
        "hang.watchdog_terminating",
        r"Terminating the process after attempting to dump debug info"
        r"|watchdog thread terminated with exception|Exception raised from ncclCommWatchdog"
        r"|preparing to dump debug info|taking the entire process down",
        (
            "terminating the process",
            "terminated with exception",
            "ncclcommwatchdog",
            "dump debug info",
            "entire process down",
        ),
        "ProcessGroupNCCL's watchdog or heartbeat monitor is taking the process down after a "
        "timeout or a stuck watchdog (PyTorch's own messages): a hang, the cause is earlier.",
        _hang(S.ERROR, 0.6),
    ),  # fmt: skip
    rule(
        "hang.collective_not_joined",
        r"finished collective #\d+, but didn't join collective #\d+",
        ("didn't join collective",),
        "Flight Recorder: a rank finished one collective and never joined the next: that rank "
        "is where the hang starts.",
        _hang(S.ERROR, 0.75),
    ),
    rule(
        "hang.ranks_missing",
        r"Not all ranks joining collective",
        ("not all ranks joining",),
        "Flight Recorder: some ranks never joined a collective; the missing ranks are the lead.",
        _hang(S.ERROR, 0.75),
    ),
    rule(
        "hang.op_count_mismatch",
        r"ranks have different \w+ operation counts|^\s*#\d+-\d+ \([0-9a-f]+\) MISMATCH",
        ("operation counts", "mismatch"),
        "NCCL RAS: ranks of one communicator launched different numbers of operations.",
        _hang(S.ERROR, 0.7),
    ),
    rule(
        "hang.ops_failed",
        r"(?:\[Rank (?P<rank>\d+)\] )?Some NCCL operations have failed or timed out"
        r"|Exception \(either an error or timeout\) detected by watchdog"
        r"|\bfailure detected by watchdog at work sequence id\b",
        ("some nccl operations have failed", "detected by watchdog"),
        "PyTorch tears the process down after a failed or timed-out collective: a consequence, "
        "weaker than the line that says why.",
        _hang(S.WARNING, 0.4),
    ),
)

RULES: tuple[Rule, ...] = _NETWORK_RULES + _HANG_RULES
