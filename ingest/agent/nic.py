"""NIC ports from sysfs: InfiniBand/RoCE HCA ports and Ethernet interfaces.

File formats are the kernel's (drivers/infiniband/core/sysfs.c): `state` is "4: ACTIVE",
`phys_state` "5: LinkUp", `rate` "400 Gb/sec (4X NDR)" (or "2.5 Gb/sec (1X SDR)"), and the
`counters/port_{rcv,xmit}_data` counters count 4-byte words (IBA PortRcvData/PortXmitData).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path

from ingest.schema import NicSample

IB_DATA_WORD_BYTES = 4
"""port_rcv_data / port_xmit_data are in units of 4 octets."""

_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec")

_IB_COUNTERS: dict[str, str] = {
    "symbol_errors": "symbol_error",
    "link_error_recovery": "link_error_recovery",
    "link_downed": "link_downed",
    "rcv_errors": "port_rcv_errors",
    "xmit_discards": "port_xmit_discards",
}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        # A counter a driver does not expose, or `speed` of a link that is down (EINVAL).
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _state_name(text: str | None) -> str | None:
    """Return "ACTIVE" from "4: ACTIVE" (and the text itself when it has no number)."""
    if text is None:
        return None
    _, sep, name = text.partition(":")
    return name.strip() if sep else text


def parse_ib_rate(text: str | None) -> float | None:
    """Return the link rate in Gb/s from a sysfs `rate` value such as "200 Gb/sec (4X HDR)"."""
    match = _RATE.match(text or "")
    return float(match.group(1)) if match else None


def infiniband_ports(sys_root: Path) -> list[NicSample]:
    """Return one sample per port of every device under /sys/class/infiniband."""
    base = sys_root / "class" / "infiniband"
    if not base.is_dir():
        return []
    out = []
    for device in sorted(base.iterdir()):
        ports = device / "ports"
        if not ports.is_dir():
            continue
        numbered = [p for p in ports.iterdir() if p.name.isdigit()]
        for port in sorted(numbered, key=lambda p: int(p.name)):
            out.append(_ib_port(device.name, port))
    return out


def _ib_port(device: str, port: Path) -> NicSample:
    counters = port / "counters"
    rx = _read_int(counters / "port_rcv_data")
    tx = _read_int(counters / "port_xmit_data")
    return NicSample(
        nic=device,
        port=int(port.name),
        state=_state_name(_read(port / "state")) or "UNKNOWN",
        phys_state=_state_name(_read(port / "phys_state")),
        rate_gbps=parse_ib_rate(_read(port / "rate")),
        rx_bytes=None if rx is None else rx * IB_DATA_WORD_BYTES,
        tx_bytes=None if tx is None else tx * IB_DATA_WORD_BYTES,
        **{field: _read_int(counters / name) for field, name in _IB_COUNTERS.items()},
    )


def ethernet_ports(sys_root: Path, patterns: Sequence[str] = ()) -> list[NicSample]:
    """Return Ethernet interfaces matching `patterns`, or (none given) those backed by a device."""
    base = sys_root / "class" / "net"
    if not base.is_dir():
        return []
    out = []
    for iface in sorted(base.iterdir(), key=lambda p: p.name):
        if patterns:
            if not any(fnmatch(iface.name, p) for p in patterns):
                continue
        elif iface.name == "lo" or not (iface / "device").exists():
            continue  # virtual (veth, bridges, docker0): noise on a container host
        out.append(_net_port(iface))
    return out


def _net_port(iface: Path) -> NicSample:
    stats = iface / "statistics"
    speed_mbps = _read_int(iface / "speed")
    return NicSample(
        nic=iface.name,
        port=1,
        state=(_read(iface / "operstate") or "unknown").upper(),
        rate_gbps=speed_mbps / 1000.0 if speed_mbps and speed_mbps > 0 else None,
        rx_bytes=_read_int(stats / "rx_bytes"),
        tx_bytes=_read_int(stats / "tx_bytes"),
        rcv_errors=_read_int(stats / "rx_errors"),
        xmit_discards=_read_int(stats / "tx_dropped"),
    )
