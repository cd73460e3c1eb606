"""sim.formats against real lines: NCCL, watchdog, Megatron, host, tracebacks, py-spy.

Each real line must match the test's regex, and so must the generated line, giving back the
values it was made from; given the real line's values, a generator reproduces it exactly."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import pytest

from sim.formats import cuda, host, kernel, nccl, pyspy, training, watchdog
from sim.formats.traceback import (
    PyFrame,
    child_failed_lines,
    elastic_failed_line,
    python_traceback,
    rank_prefixed,
    user_exception_lines,
)
from tests.sim_formats_fixtures import FIXTURES, TS, all_real_lines, real

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
