"""The explainer on the twin's real-format generators (sim/formats, each copied from real lines):
every kernel prefix style, Xid companions, CUDA/NCCL/watchdog errors, host faults, training
lines and tracebacks give the finding a real machine's log would."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from diagnosis.explain import explain
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity
from sim.formats import cuda, gpu_events, host, kernel, nccl, pyspy, training, watchdog, xid
from sim.formats.traceback import (
    PyFrame,
    child_failed_lines,
    elastic_failed_line,
    python_traceback,
    user_exception_lines,
)

TS = datetime(2024, 8, 30, 11, 43, 14, 250_000, tzinfo=UTC)
BOOT = datetime(2024, 8, 30, 9, 0, 0, tzinfo=UTC)
PCI = "0000:2a:00"
THREAD = nccl.NcclThread("gpu-node-07", 19989, 20082, 3)


def text_of(lines: list[str]) -> str:
    return "\n".join(lines)


def kernel_text(bodies: list[str], style: kernel.KernelStyle) -> str:
    return text_of(
        kernel.kernel_log_lines(TS, style, bodies, boot_time=BOOT, hostname="gpu-node-07")
    )


def categories(text: str) -> list[Category]:
    return [f.category for f in explain(text)]


# ----------------------------------------------------------------------------- kernel / GPU


@pytest.mark.parametrize("style", kernel.KERNEL_STYLES)
def test_xid_lines_in_every_kernel_style(style: kernel.KernelStyle) -> None:
    (finding,) = explain(kernel_text([xid.xid_event(PCI, 48)], style))
    assert (finding.xid, finding.pci_bus_id, finding.severity) == (
        48,
        "00000000:2A:00.0",
        Severity.CRITICAL,
    )
    if style in ("journal_iso", "syslog"):
        assert finding.node == "gpu-node-07"


@pytest.mark.parametrize("style", ["dmesg_T", "raw", "iso", "journal_iso"])
def test_fallen_off_bus_at_probe_is_joined_and_keeps_the_bus_id(style: kernel.KernelStyle) -> None:
    text = kernel_text(gpu_events.fallen_off_bus_at_probe_lines("0000:9a:00.0"), style)
    top = explain(text)[0]
    assert (top.rule, top.pci_bus_id, top.xid) == ("gpu.fell_off_bus", "00000000:9A:00.0", None)


def test_fallen_off_bus_at_probe_in_syslog_still_found_without_the_bus_id() -> None:
    text = kernel_text(gpu_events.fallen_off_bus_at_probe_lines("0000:9a:00.0"), "syslog")
    assert explain(text)[0].category is Category.GPU_HARDWARE


def test_xid79_with_companions() -> None:
    lines = gpu_events.fallen_off_bus_lines(PCI, "GPU-979426f2-893a-7cbb-c4cf-81472f89a462")
    findings = explain(kernel_text(lines, "dmesg_T"))
    assert [(f.rule, f.xid) for f in findings] == [("gpu.xid", 79), ("gpu.fell_off_bus", None)]
    assert {f.pci_bus_id for f in findings} == {"00000000:2A:00.0"}


@pytest.mark.parametrize(
    ("new", "action"), [(0, Action.NONE), (1, Action.RESET_GPU), (2, Action.REBOOT_NODE)]
)
def test_xid154_action_follows_the_recovery_action(new: int, action: Action) -> None:
    line = xid.xid_line(PCI, 154, None, None, xid.recovery_action_detail(0, new))
    (finding,) = explain(line)
    assert finding.action is action
    assert (finding.category is Category.BENIGN) == (new == 0)


def test_nvlink5_nonfatal_is_a_warning_and_fatal_an_error() -> None:
    nonfatal = explain(xid.xid_event("0018:01:00", 145))[0]
    fatal = explain(xid.xid_event("0000:00:00", 149))[0]
    assert (nonfatal.severity, nonfatal.action) == (Severity.WARNING, Action.MONITOR)
    assert (fatal.severity, fatal.action) == (Severity.ERROR, Action.REBOOT_NODE)
    assert nonfatal.category is fatal.category is Category.GPU_HARDWARE


def test_pmu_halt_sequence_is_hardware_with_benign_cleanup_last() -> None:
    findings = explain(
        kernel_text(gpu_events.pmu_halt_lines(PCI, 0, 12542, "VLLM::Worker", 2), "syslog")
    )
    assert findings[0].xid == 62
    assert findings[-1].xid == 45 and findings[-1].category is Category.BENIGN


def test_gsp_timeout_sequence_without_an_xid_line() -> None:
    findings = explain(
        kernel_text(gpu_events.gsp_timeout_lines(6, 812751949, 1899482, 24105122), "raw")
    )
    assert findings[0].rule == "gpu.gsp_timeout" and findings[0].gpu == 6
    assert {f.category for f in findings} == {Category.GPU_HARDWARE}


def test_gsp_exception_then_recovery_action() -> None:
    findings = explain(text_of(gpu_events.gsp_exception_lines(PCI)))
    assert [f.xid for f in findings] == [120, 154]


def test_graphics_exception_burst_blames_the_application() -> None:
    (finding,) = explain(text_of(gpu_events.graphics_exception_lines(PCI, 7, 7, 0)))
    assert (finding.category, finding.blame, finding.xid) == (
        Category.GPU_APPLICATION,
        Blame.APPLICATION,
        13,
    )


# ------------------------------------------------------------------------------------ CUDA


@pytest.mark.parametrize(
    ("kind", "category"),
    [
        ("ecc", Category.GPU_HARDWARE),
        ("nvlink", Category.GPU_HARDWARE),
        ("illegal_address", Category.GPU_APPLICATION),
        ("device_assert", Category.GPU_APPLICATION),
        ("launch_failure", Category.GPU_APPLICATION),
    ],
)
@pytest.mark.parametrize("style", ["torch2", "torch1"])
def test_cuda_errors(kind: str, category: Category, style: str) -> None:
    lines = cuda.cuda_error_lines(kind, exc_type="torch.AcceleratorError", style=style)  # type: ignore[arg-type]
    assert categories(text_of(lines)) == [category]


def test_device_asserts_from_many_threads_are_one_finding_kind() -> None:
    findings = explain(text_of(cuda.device_assert_lines([0, 1, 2, 5])))
    assert {f.rule for f in findings} == {"cuda.device_assert"}


def test_cuda_oom_names_the_gpu() -> None:
    line = cuda.cuda_oom_line(2**30, 3, 80 * 2**30, 2**20, 79 * 2**30, 78 * 2**30, 2**20)
    (finding,) = explain(f"[rank11]: {line}")
    assert (finding.category, finding.gpu, finding.rank) == (Category.GPU_OOM, 3, 11)


# ---------------------------------------------------------------------------- NCCL / dist


@pytest.mark.parametrize("style", ["error", "status"])
def test_ib_completion_error_with_its_unwinding_is_one_nic_finding(style: str) -> None:
    lines = nccl.ib_completion_error_lines(THREAD, "10.2.0.5", 33092, style=style)  # type: ignore[arg-type]
    (finding,) = explain(text_of(lines))
    assert (finding.category, finding.component, finding.node, finding.gpu) == (
        Category.NETWORK,
        ComponentKind.NIC,
        "gpu-node-07",
        3,
    )


def test_connect_retry_is_benign_but_refused_connect_is_not() -> None:
    assert categories(nccl.connect_retry_line(THREAD)) == [Category.BENIGN]
    assert categories(nccl.connect_failed_line(THREAD, "10.148.3.247", 56821)) == [Category.NETWORK]


def test_connection_closed() -> None:
    lines = nccl.connection_closed_lines(THREAD, "gpu004", 55693, 0x7F4774CC9620)
    assert set(categories(text_of(lines))) == {Category.NETWORK}


def test_healthy_nccl_init_lines_give_nothing() -> None:
    thread = nccl.NcclThread("jean-zay-iam37", 261379, 261379, 0)
    lines = [
        *nccl.nccl_bootstrap_lines(thread, "ib0", "10.148.8.203", ["hfi1_1", "hfi1_0"]),
        nccl.nccl_init_complete_line(thread, 0x55D4, 0, 32, "7000"),
        nccl.nccl_net_channel_line(thread, 0, (31, "cb000"), (0, "7000"), "receive", 1),
        nccl.nccl_version_line("2.10.3", "11.3"),
    ]
    assert explain(text_of(lines)) == []


IB_LAST_ERROR = (
    "NET/IB : Got completion from peer 11.214.147.122<39138> with error 12, opcode 0, len 0, "
    "vendor err 129"
)


@pytest.mark.parametrize(
    ("kind", "last_error", "category"),
    [
        ("internal", "Net : Connection closed by remote peer user<50260>", Category.NETWORK),
        ("remote", IB_LAST_ERROR, Category.NETWORK),
        ("system", "Connect to 10.148.3.247<56821> failed : Connection refused", Category.NETWORK),
        ("unhandled_cuda", "Cuda failure 999 'unknown error'", Category.GPU_HARDWARE),
        ("unhandled_cuda", "Failed to CUDA calloc async 4 bytes", Category.GPU_HARDWARE),
    ],
)
def test_dist_backend_errors_are_decided_by_their_last_error(
    kind: str, last_error: str, category: Category
) -> None:
    lines = nccl.dist_backend_error_lines(kind, "2.20.5", last_error, rank=5)
    top = explain(text_of(lines))[0]
    assert (top.category, top.rank) == (category, 5)


def test_watchdog_timeout_sequence_is_a_hang_of_that_rank() -> None:
    work = watchdog.WorkNccl(9141, "_ALLGATHER_BASE", 19008, 152064)
    lines = watchdog.watchdog_timeout_lines(
        TS, 4, work, 600071, 9141, 9140, watchdog.ProcessGroup(3)
    )
    abort = watchdog.watchdog_abort_lines(4, work, 600071, random.Random(1))
    findings = explain(text_of(lines + abort))
    assert findings[0].category is Category.HANG
    assert {f.category for f in findings} == {Category.HANG}
    assert {f.rank for f in findings} == {4}


def test_watchdog_dying_on_a_cuda_error_is_that_error() -> None:
    lines = watchdog.watchdog_cuda_error_lines(TS, 2, "ecc")
    assert explain(text_of(lines))[0].category is Category.GPU_HARDWARE


def test_heartbeat_stuck_and_legacy_timeout_are_hangs() -> None:
    assert categories(watchdog.heartbeat_stuck_line(TS, 7, 480)) == [Category.HANG]
    legacy = watchdog.legacy_watchdog_timeout_line(0, 96120, "ALLREDUCE", 1_800_000, 25_624_887)
    assert explain(legacy)[0].rank == 0


def test_legacy_abort_on_remote_error_is_network() -> None:
    last = (
        "NET/IB : Got completion from peer 10.0.0.9<39138> with error 12, opcode 0, len 0, "
        "vendor err 129"
    )
    findings = explain(text_of(watchdog.legacy_nccl_abort_lines("2.14.3", last)))
    assert findings[0].category is Category.NETWORK


# ------------------------------------------------------------------------------------ host


def test_oom_killer_lines_are_one_host_memory_finding() -> None:
    victim = host.OomVictim(698405, "python", 1000, 49978204, 12918388, 68668, 53352, 49772)
    lines = host.oom_kill_lines(victim)
    (finding,) = explain(kernel_text(lines, "raw"))
    assert (finding.category, finding.blame) == (Category.HOST_MEMORY, Blame.APPLICATION)


@pytest.mark.parametrize(
    ("line", "category"),
    [
        (host.shell_killed_line(), Category.HOST_MEMORY),
        (host.os_error_line(28, "/ckpt/step_1000/model.pt"), Category.HOST_STORAGE),
        (host.os_error_line(5, "/app/naifu555"), Category.HOST_STORAGE),
        (host.os_error_line(14), Category.HOST_STORAGE),
        (host.dataloader_bus_error_line(30882), Category.HOST_MEMORY),
    ],
)
def test_host_process_errors(line: str, category: Category) -> None:
    assert categories(line) == [category]


def test_torch_save_on_a_full_disk() -> None:
    lines = host.torch_save_disk_full_lines(7, 226497792, 226497680)
    findings = explain(text_of(lines))
    assert {f.category for f in findings} == {Category.HOST_STORAGE}
    assert findings[0].action is Action.FREE_DISK


# -------------------------------------------------------------------------------- training


def _step(i: int, loss: float, ms: float, nan: int = 0) -> training.MegatronIteration:
    return training.MegatronIteration(
        i, 8000, i * 64, ms, 6.2e-6, 64, {"lm loss": loss}, grad_norm=0.8, nan=nan
    )


def test_healthy_megatron_lines_are_benign() -> None:
    lines = [
        training.megatron_iteration_line(_step(i, 2.2 - i * 0.001, 7000 + (i % 3) * 30), TS)
        for i in range(20)
    ]
    assert categories(text_of(lines)) == [Category.BENIGN]


def test_megatron_nan_loss_is_numerical() -> None:
    lines = [
        training.megatron_iteration_line(_step(1, 2.2, 7000)),
        training.megatron_iteration_line(_step(2, float("nan"), 7000, nan=1)),
    ]
    findings = explain(text_of(lines))
    assert (findings[0].category, findings[0].severity) == (Category.NUMERICAL, Severity.ERROR)


def test_megatron_loss_spike_and_slowdown_from_the_sequence() -> None:
    losses = [2.2, 2.21, 2.19, 2.2, 5.4]
    spike = [training.megatron_iteration_line(_step(i, x, 7000)) for i, x in enumerate(losses)]
    assert explain(text_of(spike))[0].rule == "training.loss_spike"
    times = [7000, 7010, 6990, 7005, 7800, 7790]
    slow = [training.megatron_iteration_line(_step(i, 2.2, ms)) for i, ms in enumerate(times)]
    assert explain(text_of(slow))[0].category is Category.STRAGGLER


def test_deepspeed_overflow_then_loss_scale_collapse() -> None:
    lines = [training.deepspeed_overflow_line(TS, 0, 2**k, 2 ** (k - 1)) for k in (4, 3, 2)]
    assert categories(text_of(lines)) == [Category.BENIGN]
    lines.append(training.loss_scale_at_minimum_line())
    assert explain(text_of(lines))[0].category is Category.NUMERICAL


def test_bad_grad_norm_and_nan_grad_assertion() -> None:
    assert categories(training.bad_grad_norm_warning()) == [Category.NUMERICAL]
    (finding,) = explain(text_of(training.nan_grad_norm_lines(13, 5, "node-15-11")))
    assert (finding.category, finding.rank, finding.gpu, finding.node) == (
        Category.NUMERICAL,
        13,
        5,
        "node-15-11",
    )
    assert finding.line.startswith("AssertionError: Rank 13")


# ------------------------------------------------------------------------------ tracebacks

FRAMES = (
    PyFrame("/workspace/train.py", 88, "main", 'raise RuntimeError("CUDA out of memory")'),
    PyFrame("/workspace/data.py", 41, "collate", "batch = samples['input_ids']"),
)


def test_user_traceback_is_one_application_finding_on_the_exception_line() -> None:
    lines = user_exception_lines(3, FRAMES, "KeyError", "'input_ids'")
    (finding,) = explain(text_of(lines))
    assert (finding.category, finding.rank) == (Category.APPLICATION, 3)
    assert finding.line == "[rank3]: KeyError: 'input_ids'"
    assert finding.confidence > explain("KeyError: 'input_ids'")[0].confidence


def test_source_lines_inside_a_traceback_are_not_matched() -> None:
    lines = python_traceback(FRAMES, "ValueError: too many values to unpack (expected 2)")
    assert categories(text_of(lines)) == [Category.APPLICATION]


def test_torchrun_summary_is_not_blamed_on_anyone() -> None:
    lines = child_failed_lines("train.py", TS, "n20.cluster", 4, 4, 1, 24321)
    lines.append(elastic_failed_line(TS, 6, 1246013, -6, "/usr/bin/python3", 1245483))
    findings = explain(text_of(lines))
    assert {(f.category, f.blame) for f in findings} == {(Category.UNKNOWN, Blame.UNKNOWN)}


def test_pyspy_dumps_give_nothing() -> None:
    threads = [
        pyspy.rank_main_thread(688510, pyspy.BROADCAST_WAIT_STACK, "active"),
        pyspy.rank_main_thread(688514, pyspy.DATALOADER_STACK, "idle"),
    ]
    dump = pyspy.pyspy_dump(
        688510, "python pretrain_gpt.py", "3.8.12", "/usr/bin/python3.8", threads
    )
    assert explain(dump) == []


def test_interleaved_rank_tracebacks_are_one_finding_each() -> None:
    a = user_exception_lines(0, FRAMES, "KeyError", "'input_ids'")
    b = user_exception_lines(1, FRAMES, "ValueError", "bad shape")
    interleaved = [line for pair in zip(a, b, strict=True) for line in pair]
    findings = explain(text_of(interleaved))
    assert sorted((f.rank, f.line.split(": ", 1)[1]) for f in findings) == [
        (0, "KeyError: 'input_ids'"),
        (1, "ValueError: bad shape"),
    ]
    assert {f.confidence for f in findings} == {explain(text_of(a))[0].confidence}
