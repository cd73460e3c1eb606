"""Host sampler over a fake /proc + /sys tree in the kernel's real file formats."""

from __future__ import annotations

import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.agent.host import HostSampler, boot_time, read_cpu_times
from ingest.agent.nic import parse_ib_rate
from ingest.schema import HostMetrics, NicSample, decode_event, encode_event

HOST_ROOT = Path(__file__).parents[1] / "fixtures" / "agent" / "host_root"
KIB = 1024


@pytest.fixture
def root(tmp_path: Path) -> Path:
    tree = tmp_path / "host"
    shutil.copytree(HOST_ROOT, tree)
    return tree


def nic(metrics: HostMetrics, name: str) -> NicSample:
    return next(n for n in metrics.nics if n.nic == name)


def test_cpu_times_count_iowait_as_idle(root: Path) -> None:
    # cpu  43418 0 5667 153400 510 0 140 17 0 0 (user nice system idle iowait irq softirq steal)
    assert read_cpu_times(root / "proc") == (43418 + 5667 + 140 + 17, 203152)


def test_cpu_busy_is_the_delta_between_two_proc_stat_snapshots(root: Path) -> None:
    sampler = HostSampler("n1", root)
    assert sampler.sample().cpu_util is None  # one snapshot: no interval yet
    (root / "proc" / "stat.later").replace(root / "proc" / "stat")
    # Recorded 1 s apart: user +106, system +2, idle +92 -> busy 108 of 200 jiffies.
    assert sampler.sample().cpu_util == pytest.approx(54.0)


def test_load_memory_and_swap_come_from_proc(root: Path) -> None:
    m = HostSampler("n1", root).sample()
    assert m.load1 == pytest.approx(1.09)
    assert m.mem_total_bytes == 24684084 * KIB
    assert m.mem_used_bytes == (24684084 - 23758660) * KIB  # MemTotal - MemAvailable
    assert m.swap_used_bytes == 0


def test_infiniband_ports_use_sysfs_formats_and_4_byte_data_words(root: Path) -> None:
    m = HostSampler("n1", root).sample()
    up = nic(m, "mlx5_0")
    assert (up.port, up.state, up.phys_state, up.rate_gbps) == (1, "ACTIVE", "LinkUp", 400.0)
    assert (up.rx_bytes, up.tx_bytes) == (123456789012 * 4, 98765432109 * 4)
    assert (up.link_downed, up.link_error_recovery, up.xmit_discards) == (1, 2, 17)
    down = nic(m, "mlx5_1")
    assert (down.state, down.phys_state, down.rate_gbps) == ("DOWN", "Disabled", 10.0)
    assert (down.symbol_errors, down.rcv_errors) == (4821, 37)
    assert down.xmit_discards is None  # counter file absent


def test_ethernet_interfaces_backed_by_a_device_by_default(root: Path) -> None:
    m = HostSampler("n1", root).sample()
    names = [n.nic for n in m.nics]
    assert names == ["mlx5_0", "mlx5_1", "eth0"]  # lo and the veth are skipped
    eth = nic(m, "eth0")
    assert eth.state == "UP"
    assert eth.rate_gbps is None  # virtio reports speed -1
    assert eth.rx_bytes == 568854541


def test_configured_interface_globs_override_the_default(root: Path) -> None:
    m = HostSampler("n1", root, net_interfaces=["veth*"]).sample()
    veth = nic(m, "veth3f2a1b0")
    assert (veth.state, veth.rate_gbps, veth.rx_bytes, veth.tx_bytes) == ("UP", 10.0, 0, None)
    assert "eth0" not in [n.nic for n in m.nics]


def test_disks_use_statvfs_and_a_missing_mount_warns_once(
    root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sampler = HostSampler("n1", root, mounts=["/", "/nonexistent"])
    with caplog.at_level(logging.WARNING, logger="ingest.agent.host"):
        first, second = sampler.sample(), sampler.sample()
    st = os.statvfs(root)
    assert [d.mount for d in first.disks] == ["/"]
    assert first.disks[0].total_bytes == st.f_blocks * st.f_frsize
    assert 0 < first.disks[0].used_bytes <= first.disks[0].total_bytes
    assert len(second.disks) == 1
    assert len([r for r in caplog.records if "/nonexistent" in r.getMessage()]) == 1


def test_an_unreadable_part_leaves_only_its_fields_empty(root: Path) -> None:
    (root / "proc" / "meminfo").unlink()
    shutil.rmtree(root / "sys" / "class" / "infiniband")
    m = HostSampler("n1", root).sample()
    assert m.mem_total_bytes is None and m.mem_used_bytes is None
    assert m.load1 == pytest.approx(1.09)
    assert [n.nic for n in m.nics] == ["eth0"]


def test_rate_parser_handles_half_rates_and_garbage() -> None:
    assert parse_ib_rate("2.5 Gb/sec (1X SDR)") == 2.5
    assert parse_ib_rate("200 Gb/sec (4X HDR)") == 200.0
    assert parse_ib_rate("invalid") is None
    assert parse_ib_rate(None) is None


def test_boot_time_is_btime_from_proc_stat(root: Path, tmp_path: Path) -> None:
    assert boot_time(root) == datetime(2026, 12, 1, 6, 44, 27, tzinfo=UTC)
    assert boot_time(tmp_path / "empty") is None


def test_host_metrics_round_trip_through_the_wire_schema(root: Path) -> None:
    m = HostSampler("n1", root, now=lambda: datetime(2026, 1, 1, tzinfo=UTC)).sample()
    decoded = decode_event(encode_event(m))
    assert decoded == m
    assert decoded.id == m.id != ""
