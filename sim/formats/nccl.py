"""NCCL_DEBUG lines and the NCCL errors PyTorch raises, copied from real logs.

- Prefix: NCCL's debug.cc, ``"%s:%d:%d [%d] NCCL INFO "`` and ``"%s:%d:%d [%d] %s:%d NCCL WARN "``
  (host:pid:tid [cudaDev]; WARN adds the source file:line). NCCL <= 2.18 starts each WARN with a
  newline, hence the blank line before the second WARN in real_logs nccl-connection-closed.
- Healthy chatter: the bigscience NCCL_DEBUG=INFO baseline (real_samples, NCCL 2.10.3).
- A NIC going down: ``NET/IB : Got completion ... with error 12, opcode 0, len 0, vendor err 129
  (Recv)`` and its ``-> 6`` unwinding (public_lines nccl-ib-error-recv; real_logs nccl-ib-error);
  NCCL 2.19+ spells ``with status=12 opcode=... len=...`` (real_logs nccl-ib-error, #1664).
- Benign start-up retry: ``Call to connect returned Connection refused, retrying``
  (public_lines nccl-connect-retry); refused and closed connections (real_logs).
- PyTorch's ``DistBackendError`` for ncclInternalError / ncclUnhandledCudaError / ncclRemoteError
  (real_logs nccl-internal-error, nccl-unhandled-cuda-error, nccl-remote-error; NCCL's
  ncclGetErrorString texts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from sim.formats.traceback import rank_prefixed

IB_WC_STATUS: Mapping[int, str] = {
    4: "IBV_WC_LOC_PROT_ERR",
    5: "IBV_WC_WR_FLUSH_ERR",
    10: "IBV_WC_REM_ACCESS_ERR",
    12: "IBV_WC_RETRY_EXC_ERR",
    13: "IBV_WC_RNR_RETRY_EXC_ERR",
}
"""ibverbs ``enum ibv_wc_status`` values seen in NCCL completion errors (12: link/peer gone)."""


@dataclass(frozen=True)
class NcclThread:
    """The process thread that prints an NCCL_DEBUG line: ``host:pid:tid [cudaDev]``."""

    host: str
    pid: int
    tid: int
    device: int

    @property
    def prefix(self) -> str:
        """Return ``host:pid:tid [dev]``."""
        return f"{self.host}:{self.pid}:{self.tid} [{self.device}]"


def nccl_info(thread: NcclThread, message: str) -> str:
    """Return an ``NCCL INFO`` line."""
    return f"{thread.prefix} NCCL INFO {message}"


def nccl_warn(thread: NcclThread, source: str, message: str) -> str:
    """Return an ``NCCL WARN`` line; `source` is NCCL's ``file.cc:line``."""
    return f"{thread.prefix} {source} NCCL WARN {message}"


def nccl_version_line(version: str, cuda: str) -> str:
    """Return rank 0's ``NCCL version 2.10.3+cuda11.3`` banner."""
    return f"NCCL version {version}+cuda{cuda}"


def nccl_bootstrap_lines(thread: NcclThread, iface: str, ip: str, hcas: Sequence[str]) -> list[str]:
    """Return the network selection lines each rank prints at init (healthy baseline)."""
    devices = " ".join(f"[{i}]{hca}:1/IB" for i, hca in enumerate(hcas))
    return [
        nccl_info(thread, f"Bootstrap : Using {iface}:{ip}<0>"),
        nccl_info(
            thread, "NET/Plugin : No plugin found (libnccl-net.so), using internal implementation"
        ),
        nccl_info(thread, f"NET/IB : Using {devices} ; OOB {iface}:{ip}<0>"),
        nccl_info(thread, "Using network IB"),
    ]


def nccl_init_complete_line(thread: NcclThread, comm: int, rank: int, nranks: int, bus: str) -> str:
    """Return the ``comm 0x... rank R nranks N ... - Init COMPLETE`` line (`bus`: NCCL form)."""
    return nccl_info(
        thread,
        f"comm 0x{comm:x} rank {rank} nranks {nranks} cudaDev {thread.device} busId {bus} "
        "- Init COMPLETE",
    )


def nccl_net_channel_line(
    thread: NcclThread,
    channel: int,
    peer: tuple[int, str],
    me: tuple[int, str],
    direction: Literal["send", "receive"],
    net_device: int,
) -> str:
    """Return ``Channel 00 : 31[cb000] -> 0[7000] [receive] via NET/IB/1`` ((rank, busId) pairs)."""
    src, dst = (peer, me) if direction == "receive" else (me, peer)
    return nccl_info(
        thread,
        f"Channel {channel:02d} : {src[0]}[{src[1]}] -> {dst[0]}[{dst[1]}] [{direction}] "
        f"via NET/IB/{net_device}",
    )


def ib_completion_error_lines(
    thread: NcclThread,
    peer: str,
    port: int,
    status: int = 12,
    vendor_err: int = 129,
    direction: Literal["Send", "Recv"] = "Recv",
    opcode: int = 0,
    length: int = 0,
    style: Literal["error", "status"] = "error",
) -> list[str]:
    """Return the proxy thread's completion error and its ``-> 6`` unwinding (NIC or link down)."""
    if style == "error":
        fields = f"with error {status}, opcode {opcode}, len {length}, vendor err {vendor_err}"
    else:
        fields = f"with status={status} opcode={opcode} len={length} vendor err {vendor_err}"
    return [
        nccl_warn(
            thread,
            "transport/net_ib.cc:1296",
            f"NET/IB : Got completion from peer {peer}<{port}> {fields} ({direction})",
        ),
        nccl_info(thread, "transport/net.cc:1134 -> 6"),
        nccl_info(thread, "proxy.cc:679 -> 6"),
        nccl_info(thread, "proxy.cc:858 -> 6 [Proxy Thread]"),
    ]


def connect_retry_line(thread: NcclThread, error: str = "Connection refused") -> str:
    """Return the benign bootstrap retry NCCL logs while a peer is not listening yet."""
    return nccl_info(thread, f"Call to connect returned {error}, retrying")


def connect_failed_line(thread: NcclThread, ip: str, port: int) -> str:
    """Return the WARN when a peer refuses the connection (real_logs nccl-connection-refused)."""
    return nccl_warn(
        thread, "include/socket.h:403", f"Connect to {ip}<{port}> failed : Connection refused"
    )


def connection_closed_lines(
    thread: NcclThread, peer_host: str, port: int, op_id: int, blank_before_warn: bool = True
) -> list[str]:
    """Return the lines when a peer closes its socket (real_logs nccl-connection-closed)."""
    lines = [
        nccl_warn(
            thread,
            "misc/socket.cc:49",
            f"socketProgress: Connection closed by remote peer {peer_host}<{port}>",
        ),
        nccl_info(thread, "misc/socket.cc:749 -> 6"),
    ]
    if blank_before_warn:
        lines.append("")
    lines.append(
        nccl_warn(thread, "proxy.cc:1143", f"Socket recv failed while polling for opId=0x{op_id:x}")
    )
    return lines


NCCL_ERRORS: Mapping[str, tuple[str, str, str]] = {
    "internal": (
        "internal error - please report this issue to the NCCL developers",
        "ncclInternalError",
        "Internal check failed.",
    ),
    "unhandled_cuda": (
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        "ncclUnhandledCudaError",
        "Call to CUDA function failed.",
    ),
    "system": (
        "unhandled system error (run with NCCL_DEBUG=INFO for details)",
        "ncclSystemError",
        "System call (e.g. socket, malloc) or external library call failed or device error.",
    ),
    "remote": (
        "remote process exited or there was a network error",
        "ncclRemoteError",
        "A call failed possibly due to a network error or a remote process exiting prematurely.",
    ),
}
"""(ncclGetErrorString, result name, PyTorch's description) per kind. NCCL 2.14 printed the
internal error as plain ``internal error`` (real_logs nccl-internal-error): pass `error_text`."""


def dist_backend_error_lines(
    kind: str,
    nccl_version: str,
    last_error: str,
    source: str = "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275",
    rank: int | None = None,
    error_text: str | None = None,
) -> list[str]:
    """Return PyTorch's ``DistBackendError`` for an NCCL failure, rank-prefixed if `rank` is set."""
    text, name, description = NCCL_ERRORS[kind]
    lines = [
        f"torch.distributed.DistBackendError: NCCL error in: {source}, {error_text or text}, "
        f"NCCL version {nccl_version}",
        f"{name}: {description}",
        "Last error:",
        last_error,
    ]
    return lines if rank is None else rank_prefixed(lines, rank)
