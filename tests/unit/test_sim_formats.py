"""sim.formats against real lines: each regex is written from a real sample, the real sample must
match it, and the generated line must match it too and give back the values it was made from.
Where a generator was given the real line's values, it must reproduce the real line exactly."""

from __future__ import annotations

import csv
import json
import random
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from ingest.agent.kernel import parse_kernel_time
from sim.formats import cuda, gpu_events, host, kernel, nccl, pyspy, training, watchdog, xid
from sim.formats.traceback import (
    PyFrame,
    child_failed_lines,
    elastic_failed_line,
    python_traceback,
    rank_prefixed,
    user_exception_lines,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sim_formats"


def _rows(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def real(label: str, index: int = 0) -> list[str]:
    """Return the lines of the `index`-th real excerpt labelled `label` (shared or public)."""
    rows = [
        r for r in _rows("real_logs.jsonl") + _rows("public_lines.jsonl") if r["label"] == label
    ]
    return rows[index]["text"].split("\n")


def all_real_lines() -> list[str]:
    """Return every line of every real excerpt."""
    rows = _rows("real_logs.jsonl") + _rows("public_lines.jsonl")
    return [line for r in rows for line in r["text"].split("\n")]


def body(line: str) -> str:
    """Return a kernel line without its prefix (everything before ``NVRM:`` / the message)."""
    at = line.find("NVRM:")
    return line[at:] if at >= 0 else line


TS = datetime(2024, 8, 30, 11, 43, 14, tzinfo=UTC)

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


# ------------------------------------------------------------------------------------ NCCL

NCCL_RE = re.compile(
    r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:(?P<src>[\w/.]+:\d+) )?"
    r"NCCL (?P<level>INFO|WARN) (?P<msg>.*)$"
)
IB_RE = re.compile(
    r"NET/IB ?: ?Got completion from peer (?P<peer>[^<]+)<(?P<port>\d+)> with "
    r"(?:error (?P<e>\d+), opcode (?P<op>\d+), len (?P<len>\d+)"
    r"|status=(?P<s>\d+) opcode=(?P<op2>\d+) len=(?P<len2>\d+)),? "
    r"vendor err (?P<vendor>\d+)(?: \((?P<dir>Send|Recv)\))?"
)
THREAD = nccl.NcclThread("gpu004", 2200689, 2200706, 3)


def test_nccl_regexes_match_real_lines() -> None:
    text = (FIXTURES / "nccl_debug_info_healthy_excerpt.txt").read_text().splitlines()
    nccl_lines = [
        line for line in text + all_real_lines() if " NCCL INFO " in line or " NCCL WARN " in line
    ]
    assert len(nccl_lines) >= 20
    for line in nccl_lines:
        assert NCCL_RE.match(line), line
    for label in ("nccl-ib-error", "nccl-ib-error-recv", "nccl-remote-error"):
        assert IB_RE.search(real(label)[0]), label
    assert IB_RE.search(real("nccl-ib-error", 1)[0].replace("NET/IBP:", "NET/IB : "))


def test_healthy_nccl_lines_reproduce_the_baseline() -> None:
    text = (FIXTURES / "nccl_debug_info_healthy_excerpt.txt").read_text().splitlines()
    t = nccl.NcclThread("jean-zay-iam37", 261379, 261379, 0)
    hcas = ["hfi1_1", "hfi1_0", "hfi1_2", "hfi1_3"]
    assert nccl.nccl_bootstrap_lines(t, "ib0", "10.148.8.203", hcas) == text[3:7]
    assert nccl.nccl_version_line("2.10.3", "11.3") == text[7]
    t = nccl.NcclThread("jean-zay-iam52", 263019, 263136, 4)
    assert nccl.nccl_init_complete_line(t, 0x14B1A8002FB0, 28, 32, "88000") in text
    t = nccl.NcclThread("jean-zay-iam37", 261379, 261471, 0)
    assert nccl.nccl_net_channel_line(t, 0, (31, "cb000"), (0, "7000"), "receive", 1) in text


def test_ib_completion_error_reproduces_the_real_lines_and_round_trips() -> None:
    t = nccl.NcclThread("node-2", 5776, 5902, 0)
    assert nccl.ib_completion_error_lines(t, "10.2.0.5", 33092) == real("nccl-ib-error-recv")
    for style in ("error", "status"):
        lines = nccl.ib_completion_error_lines(
            THREAD, "fe80::966d:ae03:8b:df78%ib0", 53249, 4, 81, "Send", 32564, 32564, style
        )
        m, p = IB_RE.search(lines[0]), NCCL_RE.match(lines[0])
        assert m and p and p["level"] == "WARN" and (p["pid"], p["tid"]) == ("2200689", "2200706")
        assert (m["peer"], m["port"], m["e"] or m["s"], m["vendor"], m["dir"]) == (
            "fe80::966d:ae03:8b:df78%ib0",
            "53249",
            "4",
            "81",
            "Send",
        )
        assert all(NCCL_RE.match(line) for line in lines)


def test_socket_lines_reproduce_the_real_ones() -> None:
    closed = nccl.connection_closed_lines(THREAD, "gpu004.ds-a4-r02.abc.com", 55693, 0x7F4774CC9620)
    assert closed == real("nccl-connection-closed")
    refused = nccl.connect_failed_line(
        nccl.NcclThread("r11i6n2", 486514, 486651, 1), "10.148.3.247", 56821
    )
    assert refused == real("nccl-connection-refused")[0]
    retry = nccl.connect_retry_line(nccl.NcclThread("h04e04357", 542, 1085, 0))
    assert retry == real("nccl-connect-retry")[0]


def test_dist_backend_errors_reproduce_the_real_ones() -> None:
    internal = nccl.dist_backend_error_lines(
        "internal",
        "2.14.3",
        "Net : Connection closed by remote peer user<50260>",
        error_text="internal error",
    )
    assert internal == real("nccl-internal-error")
    source = (
        "/soft/applications/conda/2024-04-29/pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1970"
    )
    cuda_err = nccl.dist_backend_error_lines(
        "unhandled_cuda", "2.20.5", "Failed to CUDA calloc async 4 bytes", source, rank=0
    )
    assert cuda_err == real("nccl-unhandled-cuda-error-torch")
    last = nccl.dist_backend_error_lines(
        "unhandled_cuda", "2.20.5", "Cuda failure 999 'unknown error'", rank=0
    )
    assert last[1:] == real("nccl-unhandled-cuda-error")


def test_legacy_remote_error_abort_matches_the_flattened_real_text() -> None:
    last = (
        "NET/IB : Got completion from peer 11.214.147.122<39138> with error 12, opcode 0, len 0, "
        "vendor err 129"
    )
    got = watchdog.legacy_nccl_abort_lines("2.14.3", last)
    assert " ".join(got).split() == real("nccl-remote-error")[0].split()


# -------------------------------------------------------------------------------- watchdog

GLOG_RE = re.compile(
    r"^\[rank(?P<rank>\d+)\]:\[E(?P<mmdd>\d{3,4}) (?P<hms>\d\d:\d\d:\d\d)\.(?P<ns>\d{9}) "
    r"ProcessGroupNCCL\.cpp:(?P<line>\d+)\] (?P<msg>.*)$"
)
TIMEOUT_RE = re.compile(
    r"\[Rank (?P<rank>\d+)\] Watchdog caught collective operation timeout: "
    r"WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)"
    r"(?:, NumelIn=(?P<nin>\d+), NumelOut=(?P<nout>\d+))?, Timeout\(ms\)=(?P<timeout>\d+)\) "
    r"ran for (?P<ran>\d+) milliseconds before timing out\."
)


def test_watchdog_regexes_match_every_real_watchdog_line() -> None:
    caught = [line for line in all_real_lines() if "Watchdog caught" in line]
    assert len(caught) >= 7
    for line in caught:
        assert TIMEOUT_RE.search(line), line
    for line in real("watchdog-timeout-torch25") + real("nccl-watchdog-heartbeat-stuck"):
        assert GLOG_RE.match(line), line


def test_watchdog_timeout_lines_reproduce_torch25_messages() -> None:
    want = [GLOG_RE.match(line) for line in real("watchdog-timeout-torch25")]
    work = watchdog.WorkNccl(9141, "_ALLGATHER_BASE", 19008, 152064, 600000)
    ts = datetime(2024, 10, 16, 3, 31, 38, 928463, tzinfo=UTC)
    got = [
        GLOG_RE.match(line)
        for line in watchdog.watchdog_timeout_lines(
            ts, 4, work, 600071, 9141, 9140, watchdog.ProcessGroup(3)
        )
    ]
    assert all(got) and all(want)
    for g, w in zip(got, want, strict=False):
        assert (
            g
            and w
            and (g["rank"], g["mmdd"], g["hms"], g["line"], g["msg"])
            == (
                w["rank"],
                w["mmdd"],
                w["hms"],
                w["line"],
                w["msg"],
            )
        )
    last = got[-1]
    assert last and last["msg"].startswith("[PG 3 Rank 4] Process group watchdog thread terminated")
    m = TIMEOUT_RE.search(last["msg"])
    assert m and (m["seq"], m["op"], m["nin"], m["timeout"], m["ran"]) == (
        "9141",
        "_ALLGATHER_BASE",
        "19008",
        "600000",
        "600071",
    )


def test_watchdog_labels_and_old_forms_reproduce_real_lines() -> None:
    vllm = real("nccl-timeout", 1)[3].split("ProcessGroupNCCL.cpp:1414] ", 1)[1]
    work = watchdog.WorkNccl(158046, "GATHER", 2867200, 0, 600000)
    ts = datetime(2024, 6, 1, tzinfo=UTC)
    lines = watchdog.watchdog_timeout_lines(
        ts, 1, work, 600027, 158046, 158045, watchdog.ProcessGroup(1)
    )
    assert lines[-1].endswith(vllm) and lines[2].endswith(
        real("nccl-timeout", 1)[0].split("] ", 2)[2]
    )
    guid = watchdog.watchdog_timeout_lines(
        ts,
        1,
        watchdog.WorkNccl(808, "ALLREDUCE", 9801523, 9801523),
        600020,
        811,
        807,
        watchdog.ProcessGroup(0, 0),
    )
    assert guid[1].split("] ", 1)[1] == real("watchdog-pg-guid")[1].split("] ", 1)[1]
    for line in real("nccl-timeout"):
        m = TIMEOUT_RE.search(line)
        assert m
        got = watchdog.legacy_watchdog_timeout_line(
            int(m["rank"]), int(m["seq"]), m["op"], int(m["timeout"]), int(m["ran"])
        )
        assert got == line


def test_watchdog_abort_matches_the_real_abort() -> None:
    want = real("watchdog-terminate-torch25")
    work = watchdog.WorkNccl(9141, "_ALLGATHER_BASE", 19008, 152064, 600000)
    got = watchdog.watchdog_abort_lines(5, work, 600020, random.Random(3), watchdog.ProcessGroup(3))
    assert got[:3] == want[:3]
    frame = re.compile(r"^frame #(\d+): (.+) \+ 0x([0-9a-f]+) \(0x([0-9a-f]{12}) in (\S+)\)$")
    for g, w in zip(got[3:5], want[3:5], strict=True):
        gm, wm = frame.match(g), frame.match(w)
        assert gm and wm and gm.group(1, 2, 3, 5) == wm.group(1, 2, 3, 5)
    assert all(frame.match(line) for line in got[3:])
    assert watchdog.watchdog_abort_lines(
        5, work, 1, random.Random(3)
    ) != watchdog.watchdog_abort_lines(5, work, 1, random.Random(4))


def test_heartbeat_and_cuda_error_watchdog_lines() -> None:
    want = GLOG_RE.match(real("nccl-watchdog-heartbeat-stuck")[0])
    ts = datetime(2025, 6, 26, 5, 14, 36, 393067, tzinfo=UTC)
    got = GLOG_RE.match(watchdog.heartbeat_stuck_line(ts, 7, 480))
    assert (
        want
        and got
        and got.group("rank", "mmdd", "hms", "line", "msg")
        == want.group("rank", "mmdd", "hms", "line", "msg")
    )
    lines = watchdog.watchdog_cuda_error_lines(
        ts, 1, "illegal_address", group=watchdog.ProcessGroup(2, 3)
    )
    assert lines[0].endswith(
        "[PG ID 2 PG GUID 3(default_pg) Rank 1] Process group watchdog thread terminated with "
        "exception: CUDA error: an illegal memory access was encountered"
    )
    assert lines[1:4] == cuda.cuda_error_lines("illegal_address")[1:]


# -------------------------------------------------------------------------------- Megatron

MEGATRON_RE = re.compile(
    r"^(?: \[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\])? iteration +(?P<it>\d+)/ *(?P<total>\d+) \|"
    r"(?P<fields>(?: [^|:]+: [^|]+ \|)+)$"
)


def megatron_fields(line: str) -> dict[str, str]:
    m = MEGATRON_RE.match(line)
    assert m, line
    pairs = [f.strip().split(": ", 1) for f in m["fields"].strip(" |").split(" | ")]
    return {k: v.strip() for k, v in pairs} | {
        "it": m["it"],
        "total": m["total"],
        "ts": m["ts"] or "",
    }


def test_megatron_regex_matches_the_real_iteration_lines() -> None:
    lines = [real("nan-loss")[0], real("nan-loss")[2]]
    lines += [line.removeprefix("[default7]:") for line in real("loss-spike")]
    for line in lines:
        megatron_fields(line)
    assert (
        megatron_fields(real("loss-spike")[2].removeprefix("[default7]:"))["lm loss"]
        == "5.098124E+00"
    )


def test_megatron_line_reproduces_the_real_line_and_round_trips() -> None:
    step = training.MegatronIteration(3633, 8000, 232512, 6956.6, 6.245e-6, 64, grad_norm=0.794)
    assert training.megatron_iteration_line(step) == real("nan-loss")[0]
    step = training.MegatronIteration(
        100, 500000, 204800, 1234.5, 3e-4, 2048, {"lm loss": 2.241558}, 65536.0, 15.886, 2, 1, 412.3
    )
    f = megatron_fields(training.megatron_iteration_line(step, TS))
    assert (f["ts"], f["it"], f["total"], f["consumed samples"]) == (
        "2024-08-30 11:43:14",
        "100",
        "500000",
        "204800",
    )
    assert float(f["lm loss"]) == pytest.approx(2.241558) and f["learning rate"] == "3.000000E-04"
    assert (
        f["grad norm"],
        f["loss scale"],
        f["number of skipped iterations"],
        f["number of nan iterations"],
    ) == ("15.886", "65536.0", "2", "1")
    assert f["throughput per GPU (TFLOP/s/GPU)"] == "412.3"


def test_overflow_and_nan_lines_reproduce_the_real_ones() -> None:
    want = real("nan-loss", 1)
    starts = [
        datetime(2023, 6, 7, 22, 20, 23, 340000),
        datetime(2023, 6, 7, 22, 22, 34, 914000),
        datetime(2023, 6, 7, 22, 24, 46, 260000),
    ]
    got = [
        training.deepspeed_overflow_line(ts, 0, 2 ** (4 - i), 2 ** (3 - i))
        for i, ts in enumerate(starts)
    ]
    assert got == want[:3]
    assert training.loss_scale_at_minimum_line() == want[3]
    assert training.bad_grad_norm_warning() == real("nan-loss")[1]
    assert (
        training.nan_grad_norm_lines(13, 5, "node-15-11")[-1] == real("megatron-nan-grad-norm")[0]
    )


# ------------------------------------------------------------------------------------ host


def test_oom_killer_lines_reproduce_the_real_dmesg() -> None:
    want = real("host-oom-killer")
    victim = host.OomVictim(698405, "python", 1000, 49978204, 12918388, 68668, 53352, 49772)
    memcg = "/user.slice/user-1000.slice/user@1000.service"
    got = host.oom_kill_lines(victim, memcg, reaped_file_rss_kb=68664, reaped_shmem_rss_kb=53172)
    boot = datetime(2024, 1, 1, tzinfo=UTC)
    assert got[0] == want[0]
    assert (
        kernel.kernel_log(boot + timedelta(seconds=441280.839852), "raw", got[1], boot) == want[1]
    )
    assert (
        kernel.kernel_log(boot + timedelta(seconds=441281.626336), "raw", got[2], boot) == want[2]
    )


def test_storage_and_memory_errors_reproduce_the_real_stderr() -> None:
    assert host.os_error_line(28) == real("host-disk-full")[0]
    assert (
        rank_prefixed([host.os_error_line(5, "/app/naifu555")], 3)[0] == real("host-fs-io-error")[2]
    )
    assert host.os_error_line(14) == real("host-fs-nfs-error")[2]
    assert host.torch_save_disk_full_lines(7, 226497792, 226497680) == real("torch-save-disk-full")
    assert host.dataloader_bus_error_line(30882) == real("host-bus-error-shm")[0]
    assert host.shell_killed_line() == real("host-cpu-oom")[2]


# ------------------------------------------------------------------------------ tracebacks

FRAME_RE = re.compile(
    r'^\[rank(?P<rank>\d+)\]:   File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)$'
)


def test_rank_prefixed_traceback_reproduces_the_real_one() -> None:
    frame = PyFrame("/usr/lib/python3.10/os.py", 225, "makedirs", "mkdir(name, mode)")
    lines = rank_prefixed(python_traceback([frame], host.os_error_line(5, "/app/naifu555")), 3)
    assert lines[1:] == real("host-fs-io-error")[:3]
    assert FRAME_RE.match(real("host-fs-io-error")[0])


def test_user_exception_lines_round_trip() -> None:
    frames = [
        PyFrame("/workspace/pretrain_gpt.py", 249, "<module>", "main()"),
        PyFrame("/workspace/data/sft_dataset.py", 88, "__getitem__", "ids = sample['input_ids']"),
    ]
    lines = user_exception_lines(5, frames, "KeyError", "'input_ids'")
    assert lines[0] == "[rank5]: Traceback (most recent call last):"
    assert lines[-1] == "[rank5]: KeyError: 'input_ids'"
    m = FRAME_RE.match(lines[3])
    assert m and (m["rank"], m["file"], m["line"], m["fn"]) == (
        "5",
        "/workspace/data/sft_dataset.py",
        "88",
        "__getitem__",
    )
    assert lines[4] == "[rank5]:     ids = sample['input_ids']"


def test_torchrun_summary_and_agent_lines_reproduce_real_ones() -> None:
    ts = datetime(2022, 7, 11, 9, 56, 3)
    assert child_failed_lines("train.py", ts, "n20.cluster", 4, 4, 1, 24321) == real(
        "torchrun-child-failed"
    )
    glog = real("elastic-failed-glog")
    aborted = child_failed_lines(
        "x.py", datetime(2026, 8, 13, 8, 21, 19), "zkrh-58", 6, 6, -6, 1246013
    )
    assert aborted[8:15] == glog[3:]
    ts = datetime(2026, 8, 13, 8, 21, 22, 980000)
    assert (
        elastic_failed_line(
            ts, 6, 1246013, -6, "/home/hychen/min_fa3_demo/.venv/bin/python3", 1245483
        )
        == glog[0]
    )
    ts = datetime(2026, 6, 30, 12, 0, 30, 229000)
    bracket = elastic_failed_line(
        ts, 0, 22234, 1, "/root/autodl-tmp/envs/gaiic2024/bin/python", 0, "bracket"
    )
    assert bracket == real("elastic-failed-bracket")[0]


# --------------------------------------------------------------------------------- py-spy

THREAD_RE = re.compile(
    r"^Thread (?P<id>\d+|0x[0-9A-F]+) \((?P<status>active|idle|active\+gil)\)"
    r'(?:: "(?P<name>[^"]*)")?$'
)
PYSPY_FRAME_RE = re.compile(r"^    (?P<fn>\S+) \((?P<file>[^:()]+)(?::(?P<line>\d+))?\)$")


def pyspy_blocks(text: str) -> list[tuple[list[str], list[pyspy.PyspyFrame]]]:
    """Return (thread header lines, frames) per stack in a dump text."""
    blocks: list[tuple[list[str], list[pyspy.PyspyFrame]]] = []
    for line in text.splitlines():
        if THREAD_RE.match(line):
            if not blocks or blocks[-1][1]:
                blocks.append(([], []))
            blocks[-1][0].append(line)
        elif m := PYSPY_FRAME_RE.match(line):
            blocks[-1][1].append((m["fn"], m["file"], int(m["line"] or 0)))
    return blocks


def test_canonical_stacks_are_the_real_dumps() -> None:
    bloom = pyspy_blocks((FIXTURES / "pyspy_hang_dump_bloom176b_eval_deadlock.txt").read_text())
    stacks = [tuple(frames) for _, frames in bloom]
    assert stacks == [
        pyspy.BROADCAST_WAIT_STACK,
        pyspy.DATALOADER_STACK,
        pyspy.BROADCAST_DATA_WAIT_STACK,
        pyspy.ALL_REDUCE_WAIT_STACK,
        pyspy.RECV_WAIT_STACK,
    ]
    accelerate = pyspy_blocks("\n".join(real("pyspy-backward")))
    assert tuple(accelerate[0][1]) == pyspy.COMPUTE_STACK
    assert THREAD_RE.match(real("pyspy-backward")[-1])


def test_pyspy_dump_reproduces_the_culprit_block_and_round_trips() -> None:
    threads = [pyspy.rank_main_thread(688514, pyspy.DATALOADER_STACK, "idle")]
    threads.append(pyspy.PyspyThread((), None, "idle", None, 0x7F1C2A3B4740))
    text = pyspy.pyspy_dump(
        688514,
        "python -u pretrain_gpt.py --tensor-model-parallel-size 4",
        "3.8.12",
        "/opt/conda/bin/python3.8",
        threads,
    )
    lines = text.splitlines()
    assert re.fullmatch(r"Process (\d+): (.+)", lines[0]) and lines[0].startswith(
        "Process 688514: python"
    )
    assert re.fullmatch(r"Python v(\d+\.\d+\.\d+) \((.+)\)", lines[1]) and lines[2] == ""
    sample = (FIXTURES / "pyspy_hang_dump_bloom176b_eval_deadlock.txt").read_text().splitlines()
    start = sample.index('Thread 688514 (idle): "MainThread"')
    assert lines[3 : 3 + 18] == sample[start : start + 18]
    m = THREAD_RE.match(lines[-1])
    assert m and (m["id"], m["status"], m["name"]) == ("0x7F1C2A3B4740", "idle", None)
    blocks = pyspy_blocks(text)
    assert tuple(blocks[0][1]) == pyspy.DATALOADER_STACK
