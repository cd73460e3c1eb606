"""Whole families of log messages: SXid catalog, driver statuses, signals with evidence, bf16.

Every line here is a real one from the corpus (tests/fixtures/explain/corpus); the comment
names its source.
"""

from __future__ import annotations

import csv

import pytest

from diagnosis.catalog.sxid import CSV_PATH, sxid_entries, sxid_entry, sxid_verdict
from diagnosis.explain import explain
from diagnosis.explain.nv_status import BY_CODE, STATUSES, status_of
from diagnosis.explain.records import records
from diagnosis.model import Action, Category, ComponentKind, Severity

# NVSentinel health-monitors/syslog-health-monitor/pkg/sxid/sxid_handler_test.go
SXID_FATAL = (
    "[ 1108.858286] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 "
    "sourcetrack timeout error (First)"
)
SXID_NONFATAL = (
    "[73309.599396] nvidia-nvswitch0: SXid (PCI:0000:06:00.0): 20009, Non-fatal, Link 04 "
    "RX Short Error Rate"
)
# leptonai/gpud#338: a continuation line carrying only the code
SXID_DATA = (
    "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid "
    "(PCI:0000:84:00.0): 12028, Data {0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, "
    "0x00000000, 0x40008000, 0x5a001100, 0x00000000, 0x00000000}"
)


def test_sxid_catalog_rows_are_complete_and_unique() -> None:
    with CSV_PATH.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(sxid_entries()) >= 80
    assert {r["class"] for r in rows} == {"non_fatal", "fatal", "always_fatal", "notable"}
    assert all(r["name"] and r["impact"] for r in rows)


def test_fatal_sxid_points_at_the_switch_and_reboots() -> None:
    (finding,) = explain(SXID_FATAL)
    assert (finding.category, finding.component) == (Category.NETWORK, ComponentKind.SWITCH)
    assert (finding.severity, finding.action) == (Severity.CRITICAL, Action.REBOOT_NODE)
    assert finding.pci_bus_id == "00000000:C3:00.0"
    assert finding.rule == "fabric.sxid"


def test_non_fatal_sxid_is_a_warning_unless_the_guide_says_traffic_stalls() -> None:
    (finding,) = explain(SXID_NONFATAL)
    assert (finding.severity, finding.action) == (Severity.WARNING, Action.MONITOR)
    # 12028 is non-fatal in the guide but stalls NVLink traffic (gpud: reboot)
    (data,) = explain(SXID_DATA)
    assert (data.severity, data.action) == (Severity.ERROR, Action.REBOOT_NODE)


def test_the_lines_own_word_beats_the_catalog_class() -> None:
    assert sxid_entry(24007) is not None and sxid_entry(24007).klass == "fatal"  # type: ignore[union-attr]
    assert sxid_verdict(24007, "Non-fatal").severity == Severity.WARNING
    assert sxid_verdict(20009, "Fatal").severity == Severity.CRITICAL
    assert sxid_verdict(22013).category == Category.BENIGN  # "can be safely ignored"
    assert sxid_verdict(99999).action == Action.CAPTURE_DIAGNOSTICS  # not in the guide


def test_fabric_manager_reports_use_the_same_sxid_policy() -> None:
    # leptonai/gpud components/accelerator/nvidia/fabric-manager/log_matcher_test.go
    fatal = (
        "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 "
        "on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 33"
    )
    info = "[Feb 27 2025 14:10:02] [INFO] [tid 1808] multicast group 1 is allocated."
    (finding,) = explain(fatal)
    assert (finding.rule, finding.severity) == ("fabric.fm_sxid", Severity.CRITICAL)
    assert finding.pci_bus_id == "00000000:86:00.0"
    assert explain(info) == []


@pytest.mark.parametrize(
    ("line", "status"),
    [
        # NVIDIA/open-gpu-kernel-modules#688
        (
            "Feb 17 08:00:34 abggdna-DGX-Station-A100 kernel: NVRM: nvAssertOkFailedNoLog: "
            "Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST] (0x0000000F) returned "
            "from rmStatus @ kernel_ce_gv100.c:106",
            "NV_ERR_GPU_IS_LOST",
        ),
        (
            "Feb 17 08:00:34 abggdna-DGX-Station-A100 kernel: NVRM: _issueRpcAndWait: "
            "rpcSendMessage failed with status 0x0000000f for fn 76!",
            "NV_ERR_GPU_IS_LOST",
        ),
        # scitix/sichek#51
        (
            "[Sun Jan 11 09:52:01 2026] NVRM: rpcRmApiAlloc_GSP: GspRmAlloc failed: "
            "hClient=0xc1d1a616; hParent=0x5c000054; hObject=0x5c00005b; hClass=0x0000c86f; "
            "paramsSize=0x00000170; paramsStatus=0x00000062; status=0x00000062 ",
            "NV_ERR_RESET_REQUIRED",
        ),
    ],
)
def test_driver_status_without_xid_gets_its_table_verdict(line: str, status: str) -> None:
    (finding,) = explain(line)
    expected = status_of(status, None)
    assert expected is not None
    assert (finding.category, finding.severity, finding.action) == (
        expected.verdict.category,
        expected.verdict.severity,
        expected.verdict.action,
    )


def test_statuses_that_only_reject_a_call_are_silent() -> None:
    # NVIDIA/nvtrust#54 and open-gpu-kernel-modules#726 (fuzzing): not a GPU fault
    assert (
        explain(
            "[   87.352832] NVRM: nvCheckOkFailedNoLog: Check failed: Call not supported "
            "[NV_ERR_NOT_SUPPORTED] (0x00000056) returned from pEntry->pCallback(pGpu, "
            "pEntry->pCallbackParam) @ kernel_fifo.c:3021"
        )
        == []
    )
    assert len({s.code for s in STATUSES}) == len(STATUSES) == len(BY_CODE)


# lzhxmu/CPPO#6 (the elastic summary) and docker/for-linux#1001 (an OOM-killer line)
SIGKILL = (
    "  exitcode  : -9 (pid: 14750)\n  error_file: <N/A>\n"
    "  traceback : Signal 9 (SIGKILL) received by PID 14750"
)
OOM = (
    "May 15 23:09:30 ubuntu-s-1vcpu-2gb-ams3-01 kernel: [  518.050606] Out of memory: Killed "
    "process 15784 (python3) total-vm:11964kB, anon-rss:4288kB, file-rss:3028kB, shmem-rss:0kB"
)


def test_sigkill_alone_is_host_memory_with_low_confidence() -> None:
    (finding,) = explain(SIGKILL)
    assert (finding.category, finding.rule) == (Category.HOST_MEMORY, "process.sigkill")
    assert finding.confidence < 0.5


def test_an_oom_killer_line_in_the_same_input_confirms_the_sigkill() -> None:
    findings = explain(OOM + "\n" + SIGKILL)
    by_rule = {f.rule: f for f in findings}
    assert by_rule["process.sigkill"].confidence >= 0.85
    assert findings[0].category == Category.HOST_MEMORY


def test_sigbus_is_confirmed_by_a_shared_memory_error_only() -> None:
    # Topdu/OpenOCR#71 (SIGBUS summary); the DataLoader's shm error is PyTorch's own message
    bus = "  exitcode  : -7 (pid: 467398)\n  traceback : Signal 7 (SIGBUS) received by PID 467398"
    alone = {f.rule: f for f in explain(bus)}["process.sigbus"].confidence
    shm = (
        "RuntimeError: unable to write to file </torch_18693_1954506560>: "
        "No space left on device (28)"
    )
    confirmed = {f.rule: f for f in explain(shm + "\n" + bus)}["process.sigbus"].confidence
    assert alone < 0.85 <= confirmed


def test_sigsegv_is_the_application_and_sigabrt_is_unknown() -> None:
    # NVIDIA/Megatron-LM#1880, podgorskiy/ALAE#61
    assert explain("  traceback : Signal 11 (SIGSEGV) received by PID 6421")[0].category == (
        Category.APPLICATION
    )
    assert explain("Exception: process 0 terminated with signal SIGABRT")[0].category == (
        Category.UNKNOWN
    )


# bigscience-workshop/Megatron-DeepSpeed#396 (bf16: loss scale 1.0, grad norm nan, no loss)
BF16_NAN = (
    " iteration     5426/  250000 | consumed samples:        43408 | consumed tokens:     "
    "88899584 | elapsed time per iteration (ms): 4247.9 | learning rate: 2.999E-04 | global batch "
    "size:     8 | loss scale: 1.0 | grad norm: nan | actual seqlen:  2048 | number of skipped "
    "iterations:   0 | number of nan iterations:   0 | samples per second: 1.883 | TFLOPs: 78.36 |"
)
# deepspeedai/Megatron-DeepSpeed#434: the only sign of the NaN is the missing lm loss
BF16_NO_LOSS = (
    " iteration        9/      10 | consumed samples:          108 | consumed tokens:       "
    "442368 | elapsed time per iteration (ms): 1979.2 | learning rate: 4.219E-07 | global batch "
    "size:    12 | loss scale: 1.0 | actual seqlen:  4096 | number of skipped iterations:   0 | "
    "number of nan iterations:   0 | samples per second: 6.063 | tokens per gpu per second "
    "(tgs): 2069.506 | TFLOPs: 127.00 |"
)
# NVIDIA/nccl#743: fp16 warm-up, the loss scaler skipping steps (no loss printed, normal)
FP16_SKIP = (
    " iteration       10/ 1000000 | consumed samples:           40 | elapsed time per "
    "iteration (ms): 356.2 | learning rate: 0.000E+00 | global batch size:     4 | loss scale: "
    "8388608.0 | number of skipped iterations:  10 | number of nan iterations:   0 |"
)


def test_bf16_nan_grad_norm_and_missing_loss_are_numerical() -> None:
    assert explain(BF16_NAN)[0].category == Category.NUMERICAL
    assert explain(BF16_NO_LOSS)[0].category == Category.NUMERICAL


def test_fp16_loss_scaling_skips_are_not_alarms() -> None:
    assert explain(FP16_SKIP)[0].category == Category.BENIGN
    overflow = FP16_SKIP.replace("number of skipped", "grad norm: nan | number of skipped")
    assert explain(overflow)[0].category == Category.BENIGN


def test_a_terminal_hard_wrap_is_joined_back_mid_word() -> None:
    line = (
        "[rank2]:[E704 13:48:58.260494728 ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID "
        "0(default_pg) Rank 2] ProcessGroupNCCL's watchdog got stuck for 480 seconds without "
        "making progress in monitoring enqueued collectives."
    )
    wrapped = "\n".join(line[i : i + 100] for i in range(0, len(line), 100))
    (rec,) = list(records(wrapped))
    assert "watchdog got stuck for 480 seconds" in rec.body
    assert explain(wrapped)[0].category == Category.HANG


@pytest.mark.parametrize(
    "prefix",
    ["Mar 29 15:38:59 <host> kernel: ", "2024-03-29T15:38:59+0000 <redacted> kernel: "],
)
def test_a_redacted_host_is_stripped_and_names_no_node(prefix: str) -> None:
    (rec,) = list(records(prefix + "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."))
    assert rec.body.startswith("NVRM: Xid") and rec.host is None
    (named,) = list(records(prefix.replace("<host>", "gpu-7") + "NVRM: Xid 79"))
    assert named.host == ("gpu-7" if "<host>" in prefix else None)


def test_ansi_colours_are_removed() -> None:
    coloured = "\x1b[31m[  265.311275] nvme nvme1: I/O 775 QID 2 timeout, aborting\x1b[0m"
    (finding,) = explain(coloured)
    assert (finding.category, finding.rule) == (Category.HOST_STORAGE, "storage.nvme")
    assert "\x1b" not in finding.line


def test_redacted_xid_pci_address_still_explains() -> None:
    # NVIDIA/open-gpu-kernel-modules#776 with the address redacted
    line = (
        "NVRM: Xid (PCI:<redacted>): 79, pid='<unknown>', name=<unknown>, "
        "GPU has fallen off the bus."
    )
    (finding,) = explain(line)
    assert (finding.xid, finding.pci_bus_id, finding.category) == (79, None, Category.GPU_HARDWARE)


@pytest.mark.parametrize(
    ("line", "category"),
    [
        # NVIDIA/open-gpu-kernel-modules#265
        (
            "[  463.505392] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x63:0x56:1689)",
            Category.GPU_HARDWARE,
        ),
        (
            "[  463.506574] BUG: kernel NULL pointer dereference, address: 0000000000000040",
            Category.HOST_HARDWARE,
        ),
        # hardkernel/linux#346 (arm64)
        ("[ 2227.029027] Internal error: Oops: 96000005 [#1] SMP", Category.HOST_HARDWARE),
        # uccl-project/uccl#641
        ("Failed to modify QP to RTR: Connection timed out\nerrno: 110", Category.NETWORK),
    ],
)
def test_post_freeze_dev_misses_are_explained(line: str, category: Category) -> None:
    findings = explain(line)
    assert findings
    assert findings[0].category == category
    assert findings[0].severity in {Severity.ERROR, Severity.CRITICAL}
