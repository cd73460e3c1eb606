"""sim.formats against real lines: Xid, PCI ids, kernel prefixes, driver lines, CUDA.

Each real line must match the test's regex, and so must the generated line, giving back the
values it was made from; given the real line's values, a generator reproduces it exactly."""

from __future__ import annotations

import csv
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ingest.agent.kernel import parse_kernel_time
from sim.formats import cuda, gpu_events, kernel, xid
from tests.sim_formats_fixtures import FIXTURES, TS, all_real_lines, body, real

# ----------------------------------------------------------------------------------- Xid lines

XID_RE = re.compile(
    r"NVRM: Xid \(PCI:(?P<pci>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2})(?: GPU-I:\d\d)?\): "
    r"(?P<xid>\d+), (?:pid=(?P<pid>\d+|'<unknown>'), (?:name=(?P<name>[^,]+), )?)?"
    r"(?P<detail>.+)$"
)
"""Written from real_logs xid-* lines: pid and name optional, name absent on old drivers."""

REQUIRED_XIDS = (13, 31, 43, 45, 48, 61, 62, 63, 64, 74, 79, 92, 94, 95, 109, 119, 120, 154)

# Xid code -> (real excerpt label, line index) whose values the table's defaults carry.
XID_SAMPLES = {
    13: ("xid-13", 0),
    31: ("xid-31", 0),
    43: ("xid-43", 0),
    48: ("xid-48", 0),
    61: ("xid-61", 0),
    62: ("xid-62", 0),
    63: ("xid-63", 0),
    74: ("xid-74", 0),
    79: ("xid-79", 3),
    94: ("xid-94", 2),
    95: ("xid-95", 0),
    109: ("xid-109", 0),
    119: ("xid-119-modern", 0),
    120: ("xid-120", 0),
    145: ("xid-145", 0),
    149: ("xid-149", 0),
    154: ("xid-120", 1),
}


def xid_catalog() -> dict[int, dict[str, str]]:
    with (FIXTURES / "xid_catalog.csv").open() as f:
        return {int(row["xid"]): row for row in csv.DictReader(f)}


def test_every_real_xid_line_matches_the_regex() -> None:
    lines = [line for line in all_real_lines() if "NVRM: Xid" in line]
    assert len(lines) >= 30
    for line in lines:
        assert XID_RE.search(line), line


def test_detail_table_covers_the_required_codes_and_only_catalog_codes() -> None:
    catalog = xid_catalog()
    assert set(REQUIRED_XIDS) <= set(xid.XID_DETAILS)
    for code in xid.XID_DETAILS:
        assert code in catalog, code
    assert "FALLEN_OFF_THE_BUS" in catalog[79]["mnemonic"]
    assert catalog[154]["nvidia_description"].lower() in xid.xid_detail(154).lower()


@pytest.mark.parametrize("code", sorted(XID_SAMPLES))
def test_xid_event_reproduces_the_real_line(code: int) -> None:
    label, index = XID_SAMPLES[code]
    want = body(real(label)[index])
    m = XID_RE.search(want)
    assert m
    pid = None if m["pid"] in (None, "'<unknown>'") else int(m["pid"])
    assert xid.xid_event(m["pci"], code, pid=pid, process=m["name"]) == want


@pytest.mark.parametrize("code", sorted(xid.XID_DETAILS))
def test_generated_xid_lines_round_trip(code: int) -> None:
    address = xid.pci_bus_id(5)
    line = xid.xid_line(address.nvml, code, 977823, "python", xid.xid_detail(code))
    m = XID_RE.fullmatch(line)
    assert m, line
    assert (m["pci"], int(m["xid"]), m["pid"], m["name"]) == (
        "0000:ab:00",
        code,
        "977823",
        "python",
    )
    assert m["detail"] == xid.xid_detail(code)


def test_xid_attribution_forms() -> None:
    pci = "0000:61:00"
    assert xid.xid_line(pci, 79, None, xid.UNKNOWN, "x").startswith(
        "NVRM: Xid (PCI:0000:61:00): 79, pid='<unknown>', name=<unknown>, x"
    )
    assert xid.xid_line(pci, 63, 1896, None, "x") == "NVRM: Xid (PCI:0000:61:00): 63, pid=1896, x"
    assert xid.xid_line(pci, 62, None, None, "x") == "NVRM: Xid (PCI:0000:61:00): 62, x"
    assert "(PCI:0000:61:00 GPU-I:05): 94" in xid.xid_line(pci, 94, 7, "p", "x", gpu_instance=5)


def test_legacy_gsp_timeout_and_recovery_actions_reproduce_real_lines() -> None:
    for line in real("xid-119"):
        m = XID_RE.search(line)
        assert m
        data = re.search(r"\((0x[0-9a-f]+) (0x[0-9a-f]+)\)\.$", line)
        assert data
        detail = xid.GSP_TIMEOUT_LEGACY.format(
            function=76,
            function_name="GSP_RM_CONTROL",
            data0=int(data[1], 16),
            data1=int(data[2], 16),
        )
        assert xid.xid_line(m["pci"], 119, int(m["pid"]), m["name"], detail) == body(line)
    node_reboot = body(real("xid-154-node-reboot")[0])
    assert (
        xid.xid_line("0000:02:00", 154, None, None, xid.recovery_action_detail(0, 2)) == node_reboot
    )


def test_older_xid_wordings_reproduce_real_lines() -> None:
    real45 = body(real("xid-45")[0])
    assert real45.endswith(gpu_events.preemptive_cleanup_detail(1, previous_xid=149))
    assert real("xid-62")[3].endswith(gpu_events.preemptive_cleanup_detail(2, hex_channel=True))
    esr = dict(esr0=0x57C730, val0=0xC04000B, esr1=0x57C734, val1=0x24)
    esr |= dict(esr2=0x57C728, val2=0x1F81FB60, esr3=0x57C72C, val3=0x1174)
    assert body(real("xid-13-sm")[2]).endswith(xid.xid_detail(13, **esr))


# --------------------------------------------------------------------------------- PCI bus ids


def test_pci_bus_ids_are_the_recorded_h100_hgx_ones() -> None:
    recorded = [re.search(r"\b(0{8}:[0-9A-F]{2}:00\.0)\b", line) for line in real("h100-bus-ids")]
    want = [m[1] for m in recorded if m]
    assert [xid.pci_bus_id(i).nvml for i in range(8)] == want
    assert xid.pci_bus_id(1).xid == "0000:2a:00"
    assert xid.pci_bus_id(1).kernel == "0000:2a:00.0"
    with pytest.raises(ValueError):
        xid.pci_bus_id(8)


def test_pci_forms_parse_back_and_match_nccl_bus_ids() -> None:
    for form in ("00000000:9A:00.0", "0000:9a:00", "0000:9a:00.0"):
        assert xid.parse_pci(form) == xid.pci_bus_id(4)
    busids = re.findall(
        r"busId (\w+) - Init COMPLETE",
        (FIXTURES / "nccl_debug_info_healthy_excerpt.txt").read_text(),
    )
    assert busids == ["88000", "8b000", "b000"]
    assert [xid.PciAddress(0, bus).nccl for bus in (0x88, 0x8B, 0x0B)] == busids


# ----------------------------------------------------------------------------- kernel prefixes

DMESG_T_RE = re.compile(
    r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\] "
)
RAW_RE = re.compile(r"^\[[ \d]{5,}\.\d{6}\] ")
SYSLOG_RE = re.compile(
    r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (?:[\w.-]+ )?kernel: (?:\[[ \d]+\.\d{6}\] )?"
)
ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:\d\d ")
JOURNAL_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} [\w.-]+ kernel: ")
# Recorded on the development sandbox (tests/fixtures/agent/dmesg_iso_sandbox.txt and
# journalctl-k-short-iso_sandbox.txt): util-linux 2.38.1 and systemd 252.
RECORDED_ISO = "2026-12-01T06:53:12,503408+00:00 capability: warning"
RECORDED_JOURNAL = "2026-12-01T07:02:06+0000 vm kernel: EXT4-fs (vda): mounted"
STYLE_RE = {"dmesg_T": DMESG_T_RE, "raw": RAW_RE, "syslog": SYSLOG_RE, "iso": ISO_RE}
STYLE_RE["journal_iso"] = JOURNAL_RE


def test_prefix_regexes_match_the_real_lines() -> None:
    assert DMESG_T_RE.match(real("xid-109")[0]) and DMESG_T_RE.match(real("xid-119")[0])
    assert RAW_RE.match(real("xid-13")[0]) and RAW_RE.match(real("gsp-timeout")[0])
    assert SYSLOG_RE.match(real("xid-120")[0]) and SYSLOG_RE.match(real("xid-48")[0])
    assert ISO_RE.match(RECORDED_ISO) and JOURNAL_RE.match(RECORDED_JOURNAL)


@pytest.mark.parametrize("style", kernel.KERNEL_STYLES)
def test_kernel_prefix_matches_its_style_and_parses_back(style: kernel.KernelStyle) -> None:
    tz = timezone(timedelta(hours=-7))
    ts = datetime(2025, 3, 6, 21, 36, 46, 120500, tzinfo=tz)
    boot = ts - timedelta(seconds=93297.027938)
    line = kernel.kernel_log(ts, style, "NVRM: Xid (PCI:0000:61:00): 79, x", boot, "node-7")
    assert STYLE_RE[style].match(line), line
    parsed = parse_kernel_time(line, boot=boot, now=ts, local_tz=tz)
    keeps_micros = style in ("raw", "iso")
    assert parsed == (ts if keeps_micros else ts.replace(microsecond=0))


def test_kernel_prefix_reproduces_real_stamps() -> None:
    assert kernel.kernel_prefix(TS, "dmesg_T") == "[Fri Aug 30 11:43:14 2024] "
    assert (
        kernel.kernel_prefix(datetime(2023, 3, 6, 21, 36, 46), "dmesg_T")
        == "[Mon Mar  6 21:36:46 2023] "
    )
    boot = datetime(2024, 1, 1, tzinfo=UTC)
    assert (
        kernel.kernel_prefix(boot + timedelta(seconds=24.302465), "raw", boot) == "[   24.302465] "
    )
    seen = datetime(2024, 12, 2, 11, 38, 47, tzinfo=UTC)
    boot = seen - timedelta(seconds=219.470994)
    assert real("xid-48")[0].startswith(kernel.kernel_prefix(seen, "syslog", boot, "worker4"))
    assert (
        kernel.kernel_prefix(datetime(2024, 3, 29, 15, 38, 59), "syslog")
        == "Mar 29 15:38:59 kernel: "
    )
    iso = datetime(2026, 12, 1, 6, 53, 12, 503408, tzinfo=UTC)
    assert RECORDED_ISO.startswith(kernel.kernel_prefix(iso, "iso"))
    journal = datetime(2026, 12, 1, 7, 2, 6, tzinfo=UTC)
    assert RECORDED_JOURNAL.startswith(kernel.kernel_prefix(journal, "journal_iso", hostname="vm"))
    with pytest.raises(ValueError):
        kernel.kernel_prefix(datetime(2024, 1, 1), "iso")


# ------------------------------------------------------------------- driver companion lines


def test_fallen_off_bus_sequence_reproduces_the_real_dmesg() -> None:
    want = real("xid-79")[2:]
    ts = datetime(2024, 4, 5, 21, 29, 39, tzinfo=UTC)
    uuid = "GPU-979426f2-893a-7cbb-c4cf-81472f89a462"
    got = kernel.kernel_log_lines(
        ts, "dmesg_T", gpu_events.fallen_off_bus_lines("0000:a1:00", uuid)
    )
    assert got == want


def test_identity_lines_and_xid94_reproduce_the_real_dmesg() -> None:
    want = real("xid-94")
    ts = datetime(2024, 8, 9, 13, 32, 56, tzinfo=UTC)
    bodies = gpu_events.gpu_identity_lines(
        "0000:00:08", "GPU-c24840ec-8de1-83d5-b126-08000173ae32", "1652923018111"
    )
    bodies.append(xid.xid_event("0000:00:08", 94))
    assert kernel.kernel_log_lines(ts, "dmesg_T", bodies) == want


def test_probe_time_fallen_off_bus_reproduces_the_real_dmesg() -> None:
    boot = datetime(2025, 1, 1, tzinfo=UTC)
    notice, failed = gpu_events.fallen_off_bus_at_probe_lines("0000:b3:00.0", pci_id="10de:26b5")
    got = kernel.kernel_log(boot + timedelta(seconds=1843.308145), "raw", notice, boot).split("\n")
    got.append(kernel.kernel_log(boot + timedelta(seconds=1843.439662), "raw", failed, boot))
    assert got == real("gpu-fallen-off-bus-no-xid")


def test_pmu_halt_and_gsp_exception_sequences_reproduce_real_syslog() -> None:
    ts = datetime(2025, 3, 27, 17, 40, 36, tzinfo=UTC)
    bodies = gpu_events.pmu_halt_lines("0000:01:00", 0, 12542, "VLLM::Worker", 2)
    assert kernel.kernel_log_lines(ts, "syslog", bodies) == real("xid-62")
    ts = datetime(2025, 3, 29, 15, 38, 59, tzinfo=UTC)
    bodies = gpu_events.gsp_exception_lines("0000:01:00")
    assert kernel.kernel_log_lines(ts, "syslog", bodies) == real("xid-120")


def test_gsp_timeout_sequence_matches_the_real_bodies() -> None:
    want = [line.split("] ", 1)[1] for line in real("gsp-timeout")]
    assert gpu_events.gsp_timeout_lines(6, 812751949, 1899482, 24105122) == want


def test_graphics_exception_burst_matches_the_real_lines() -> None:
    got = gpu_events.graphics_exception_lines("0000:cb:00", gpc=7, tpc=7, sm=0)
    assert got[:2] == [body(line) for line in real("xid-13-sm")[:2]]
    assert all(XID_RE.fullmatch(line) for line in got)


# ---------------------------------------------------------------------------- CUDA / PyTorch


def test_cuda_error_text_matches_real_stderr() -> None:
    assert cuda.cuda_error_lines("ecc")[0].endswith(real("cuda-ecc")[0])
    assert cuda.cuda_error_lines("illegal_address") == real("cuda-illegal-address-torch2")
    old = real("cuda-illegal-address")
    assert cuda.cuda_error_lines("illegal_address", style="torch1")[1:] == old[1:]
    assert old[0].endswith(cuda.cuda_error_lines("illegal_address")[0].split(": ", 1)[1])
    assert cuda.cuda_error_lines("launch_failure", "torch.AcceleratorError")[0] == (
        "torch.AcceleratorError: CUDA error: unspecified launch failure"
    )


def test_device_assert_matches_the_real_line() -> None:
    lines = cuda.device_assert_lines([5])
    assert lines[0] == real("cuda-device-assert-torch2")[0]
    assert lines[1] == "RuntimeError: CUDA error: device-side assert triggered"
    assert real("cuda-device-assert")[2].startswith(
        "RuntimeError: cuda runtime error (59) : device-side"
    )


OOM_RE = re.compile(
    r"^(?P<exc>[\w.]+): CUDA out of memory\. Tried to allocate (?P<req>[\d.]+ \w+)\. "
    r"GPU (?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+ \w+) of which "
    r"(?P<free>[\d.]+ \w+) is free\. "
    r"(?:Process \d+ has [\d.]+ \w+ memory in use\. )*Including non-PyTorch memory, this process "
    r"has (?P<proc>[\d.]+ \w+) memory in use\. Of the allocated memory (?P<alloc>[\d.]+ \w+) is "
    r"allocated by PyTorch, and (?P<res>[\d.]+ \w+) is reserved by PyTorch but unallocated\."
)


def test_cuda_oom_matches_the_real_messages_and_round_trips() -> None:
    assert OOM_RE.match(real("cuda-oom")[0]) and OOM_RE.match(real("cuda-oom-full")[0])
    gib, mib = 2**30, 2**20
    got = cuda.cuda_oom_line(
        round(576 * mib),
        0,
        round(31.36 * gib),
        round(370.69 * mib),
        round(5.55 * gib),
        round(4.89 * gib),
        round(77.08 * mib),
        other_processes=[(16335, round(25.34 * gib))],
    )
    assert got == real("cuda-oom-full")[0]
    line = cuda.cuda_oom_line(round(55.88 * gib), 3, round(178.35 * gib), 10 * gib, 1, 2, 3)
    m = OOM_RE.match(line)
    assert m and (m["req"], m["gpu"], m["total"], m["free"]) == (
        "55.88 GiB",
        "3",
        "178.35 GiB",
        "10.00 GiB",
    )
    assert (cuda.format_size(1024), cuda.format_size(1025)) == ("1024 bytes", "1.00 KiB")
