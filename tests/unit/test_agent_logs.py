"""Kernel-line timestamps, the file tailer and the log collector, on real log lines."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from pydantic import ValidationError

from ingest.agent.kernel import KernelSource, parse_kernel_time, resolve_kernel_source
from ingest.agent.logs import LogCollector
from ingest.agent.settings import AgentSettings
from ingest.agent.stream import CommandStream
from ingest.agent.tail import FileTailer
from ingest.schema import LogSource

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agent"
BOOT = datetime(2026, 12, 1, 6, 44, 27, tzinfo=UTC)  # btime of host_root/proc/stat
NOW = datetime(2025, 4, 1, 12, 0, tzinfo=UTC)


def real_lines(label: str) -> list[str]:
    """Return the lines of one real excerpt in kernel_lines.jsonl / train_lines.jsonl."""
    for name in ("kernel_lines.jsonl", "train_lines.jsonl"):
        for row in map(json.loads, (FIXTURES / name).read_text().splitlines()):
            if row["label"] == label:
                return str(row["text"]).split("\n")
    raise KeyError(label)


def parse(line: str, now: datetime = NOW, tz: timezone = UTC) -> datetime | None:
    return parse_kernel_time(line, boot=BOOT, now=now, local_tz=tz)


# --------------------------------------------------------------------------- timestamps


def test_dmesg_t_lines_are_local_time() -> None:
    line = real_lines("xid-109")[0]  # [Fri Aug 30 11:43:14 2024] NVRM: Xid ... 109
    assert parse(line) == datetime(2024, 8, 30, 11, 43, 14, tzinfo=UTC)
    utc8 = timezone(timedelta(hours=8))
    assert parse(line, tz=utc8) == datetime(2024, 8, 30, 3, 43, 14, tzinfo=UTC)
    padded = real_lines("xid-119")[1]  # [Mon Mar  6 21:37:31 2023]: day padded with a space
    assert parse(padded) == datetime(2023, 3, 6, 21, 37, 31, tzinfo=UTC)


def test_syslog_lines_get_this_year_unless_that_is_in_the_future() -> None:
    line = real_lines("xid-120")[0]  # Mar 29 15:38:59 kernel: NVRM: Xid ... 120
    assert parse(line) == datetime(2025, 3, 29, 15, 38, 59, tzinfo=UTC)
    january = datetime(2025, 1, 2, tzinfo=UTC)
    assert parse(line, now=january) == datetime(2024, 3, 29, 15, 38, 59, tzinfo=UTC)


def test_raw_printk_time_is_seconds_since_boot() -> None:
    line = real_lines("xid-13")[0]  # [93297.027938] NVRM: Xid ... 13
    assert parse(line) == BOOT + timedelta(seconds=93297, microseconds=27938)
    assert parse_kernel_time(line, boot=None, now=NOW, local_tz=UTC) is None


def test_raw_and_iso_dmesg_of_the_same_boot_agree() -> None:
    raw = (FIXTURES / "dmesg_raw_sandbox.txt").read_text().splitlines()
    iso = (FIXTURES / "dmesg_iso_sandbox.txt").read_text().splitlines()
    assert len(raw) == len(iso) == 3
    for raw_line, iso_line in zip(raw, iso, strict=True):
        assert parse(raw_line) == parse(iso_line)
    assert parse(iso[2]) == datetime(2026, 12, 1, 6, 53, 12, 503408, tzinfo=UTC)


def test_journalctl_short_iso_lines() -> None:
    lines = (FIXTURES / "journalctl-k-short-iso_sandbox.txt").read_text().splitlines()
    assert parse(lines[0]) == datetime(2026, 12, 1, 7, 2, 6, tzinfo=UTC)  # +0000
    assert parse(lines[3]) == datetime(2026, 12, 1, 7, 2, 6, 166629, tzinfo=UTC)
    shifted = lines[0].replace("+0000", "+02:00")
    assert parse(shifted) == datetime(2026, 12, 1, 5, 2, 6, tzinfo=UTC)


def test_lines_without_a_timestamp_prefix() -> None:
    assert parse(real_lines("xid-63")[0]) is None  # NVRM: Xid (PCI:0000:10:1c): 63, ...
    assert parse(real_lines("xid-45")[0]) is None  # kernel: NVRM: Xid ...
    assert parse(real_lines("gpu-fallen-off-bus-no-xid")[1]) is None  # continuation line


# --------------------------------------------------------------------------- file tailer


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def texts(tailer: FileTailer) -> list[str]:
    return [raw.data.decode() for raw in tailer.poll()]


def test_tailer_starts_at_the_end_unless_told_otherwise(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_bytes(b"old 1\nold 2\n")
    assert texts(FileTailer([str(log)])) == []
    assert texts(FileTailer([str(log)], from_start=True)) == ["old 1", "old 2"]


def test_partial_last_line_is_held_until_its_newline(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_bytes(b"")
    tailer = FileTailer([str(log)])
    tailer.poll()
    append(log, b"first\nsec")
    assert texts(tailer) == ["first"]
    append(log, b"ond\n")
    lines = tailer.poll()
    assert [(r.offset, r.data) for r in lines] == [(6, b"second")]


def test_rotation_drains_the_old_file_then_reads_the_new_one(tmp_path: Path) -> None:
    now = [0.0]
    log = tmp_path / "kern.log"
    log.write_bytes(b"")
    tailer = FileTailer([str(log)], rotate_grace_s=5.0, clock=lambda: now[0])
    tailer.poll()
    append(log, b"before\n")
    assert texts(tailer) == ["before"]
    os.rename(log, tmp_path / "kern.log.1")  # logrotate: rename, create
    append(tmp_path / "kern.log.1", b"late write\nunfinished")  # writer has not reopened
    log.write_bytes(b"new 1\n")
    assert texts(tailer) == ["late write", "new 1"]
    append(log, b"new 2\n")
    assert texts(tailer) == ["new 2"]
    now[0] = 6.0  # grace over: the old file's partial line is flushed and the file closed
    assert texts(tailer) == ["unfinished"]
    assert tailer.paths == [str(log)]


def test_truncation_reads_again_from_the_start(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    tailer = FileTailer([str(log)])
    tailer.poll()
    append(log, b"step 1\nstep 2\n")
    assert texts(tailer) == ["step 1", "step 2"]
    with open(log, "wb") as fh:  # copytruncate
        fh.write(b"step 3\n")
    lines = tailer.poll()
    assert [(r.offset, r.data) for r in lines] == [(0, b"step 3")]


def test_glob_picks_up_files_created_later_from_their_start(tmp_path: Path) -> None:
    (tmp_path / "rank0.log").write_bytes(b"existing\n")
    tailer = FileTailer([str(tmp_path / "rank*.log")])
    assert texts(tailer) == []
    (tmp_path / "rank1.log").write_bytes(b"rank 1 up\n")
    assert texts(tailer) == ["rank 1 up"]
    assert tailer.paths == [str(tmp_path / "rank0.log"), str(tmp_path / "rank1.log")]


def test_long_lines_are_cut_at_the_cap_and_the_next_line_is_intact(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"")
    tailer = FileTailer([str(log)], max_line_bytes=16 * 1024)
    tailer.poll()
    append(log, b"x" * 40_000 + b"\nafter\n")
    long, after = tailer.poll()
    assert len(long.data) == 16 * 1024 and long.truncated
    assert (after.offset, after.data, after.truncated) == (40_001, b"after", False)


# --------------------------------------------------------------------------- collector


def collector(kernel: Path | None, train: list[str], from_start: bool = False) -> LogCollector:
    source = KernelSource(path=str(kernel)) if kernel else None
    return LogCollector(
        "gpu-node-7",
        source,
        train,
        host_root=FIXTURES / "host_root",
        from_start=from_start,
        now=lambda: NOW,
        local_tz=UTC,
    )


def test_kernel_log_file_lines_become_log_events(tmp_path: Path) -> None:
    kern = tmp_path / "kern.log"
    kern.write_text("boot noise from before the agent\n")
    logs = collector(kern, [])
    assert logs.collect() == []
    xid79 = "\n".join(real_lines("xid-79")) + "\n"
    append(kern, xid79[:200].encode())
    append(kern, xid79[200:].encode())
    events = logs.collect()
    assert [e.line for e in events] == real_lines("xid-79")
    assert {(e.node, e.source, e.path) for e in events} == {
        ("gpu-node-7", LogSource.KERNEL, str(kern))
    }
    start = len("boot noise from before the agent\n")
    assert events[0].seq == start
    assert events[1].seq == start + len(real_lines("xid-79")[0]) + 1
    assert events[0].ts == NOW  # the shell prompt line has no timestamp: read time
    assert events[3].ts == datetime(2024, 4, 5, 21, 29, 39, tzinfo=UTC)  # Xid 79
    assert events[-1].ts == events[-2].ts == events[-3].ts  # continuation lines inherit


def test_raw_kernel_lines_use_the_boot_time_under_host_root(tmp_path: Path) -> None:
    kern = tmp_path / "dmesg.txt"
    kern.write_text("\n".join(real_lines("gpu-fallen-off-bus-no-xid")) + "\n")
    events = collector(kern, [], from_start=True).collect()
    assert len(events) == 4
    assert events[0].ts == BOOT + timedelta(seconds=1843, microseconds=308145)
    assert events[1].ts == events[2].ts == events[0].ts  # indented NVRM continuation lines
    assert events[3].ts == BOOT + timedelta(seconds=1843, microseconds=439662)


def test_undecodable_bytes_are_replaced_not_fatal(tmp_path: Path) -> None:
    kern = tmp_path / "kern.log"
    kern.write_bytes(b"")
    logs = collector(kern, [])
    logs.collect()
    append(kern, b"NVRM: Xid (PCI:0000:10:1c): 63, \xff\xfe garbled\r\n")
    (event,) = logs.collect()
    assert event.line == "NVRM: Xid (PCI:0000:10:1c): 63, \ufffd\ufffd garbled"


def test_training_logs_nccl_lines_get_source_nccl() -> None:
    baseline = FIXTURES / "train_nccl_baseline_excerpt.log"
    events = collector(None, [str(baseline)], from_start=True).collect()
    sources = [e.source for e in events]
    assert len(events) == 61
    assert sources.count(LogSource.NCCL) == 41  # 40 "NCCL INFO" lines + "NCCL version 2.10.3"
    assert sources.count(LogSource.TRAIN_STDOUT) == 20  # "19 data size: 4.0 GB" lines


def test_training_log_sources_and_ranks(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    err = tmp_path / "job.err"
    out.write_text("\n".join(real_lines("nccl-connection-closed")) + "\n")
    err.write_text("\n".join(real_lines("host-fs-io-error")) + "\n")
    events = collector(None, [str(tmp_path / "job.*")], from_start=True).collect()
    by_path = {p: [e for e in events if e.path == str(p)] for p in (out, err)}
    assert [e.source for e in by_path[out]] == [
        LogSource.NCCL,
        LogSource.NCCL,
        LogSource.TRAIN_STDOUT,  # the blank line between the NCCL warnings
        LogSource.NCCL,
    ]
    assert {e.source for e in by_path[err]} == {LogSource.TRAIN_STDERR}
    assert [e.rank for e in by_path[err]] == [3, 3, 3, None]  # "[rank3]:" prefix; "[rank: 3]" not


def test_kernel_log_from_a_command_argv(tmp_path: Path) -> None:
    lines = real_lines("xid-119")
    script = "import sys; sys.stdout.write(sys.argv[1] + '\\n' + sys.argv[2]); sys.stdout.flush()"
    stream = CommandStream([sys.executable, "-c", script, *lines], restart_min_s=60.0)
    got: list[bytes] = []
    deadline = time.monotonic() + 10
    while len(got) < 2 and time.monotonic() < deadline:
        got += [raw.data for raw in stream.poll()]
        time.sleep(0.02)
    while stream.restarts == 0 and time.monotonic() < deadline:
        stream.poll()
        time.sleep(0.02)
    stream.close()
    assert got == [lines[0].encode(), lines[1].encode()]  # last line flushed at exit
    assert stream.restarts == 1


def test_a_command_that_cannot_start_is_retried_not_fatal() -> None:
    stream = CommandStream(["/nonexistent/dmesg", "--follow"], restart_min_s=0.0)
    assert stream.poll() == [] and stream.poll() == []
    stream.close()


# --------------------------------------------------------------------------- sources


def test_kernel_source_resolution() -> None:
    assert resolve_kernel_source("off") is None
    assert resolve_kernel_source("/var/log/kern.log") == KernelSource(path="/var/log/kern.log")
    dmesg = resolve_kernel_source("dmesg")
    assert dmesg is not None and dmesg.argv == ("dmesg", "--follow-new", "--time-format", "iso")
    replay = resolve_kernel_source("dmesg", from_start=True)
    assert replay is not None and replay.argv[1] == "--follow"
    journal = resolve_kernel_source("journal")
    assert journal is not None and journal.argv[:2] == ("journalctl", "-k")
    assert journal.label == "journalctl"
    auto = resolve_kernel_source("auto")
    assert auto is not None and (auto.path or auto.argv)


def test_settings_reject_a_relative_kernel_log_path() -> None:
    with pytest.raises(ValidationError, match="TG_AGENT_KERNEL_LOG"):
        AgentSettings(kernel_log="kern.log")
