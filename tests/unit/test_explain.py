"""The explainer on real logs: every real_logs excerpt gets its expected category and blame as
the top finding, the real samples explain sensibly, garbage gives nothing, and 800,000 repeated
Xid lines collapse quickly."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagnosis.explain import explain
from diagnosis.model import Blame, Category, ComponentKind, Finding, Severity
from sim.formats import kernel, xid

FIXTURES = Path(__file__).parents[1] / "fixtures" / "explain"

EXPECTED_BLAME = {
    Category.GPU_HARDWARE: Blame.INFRASTRUCTURE,
    Category.GPU_DEGRADED: Blame.INFRASTRUCTURE,
    Category.NETWORK: Blame.INFRASTRUCTURE,
    Category.HOST_STORAGE: Blame.INFRASTRUCTURE,
    Category.HOST_HARDWARE: Blame.INFRASTRUCTURE,
    Category.HOST_MEMORY: Blame.APPLICATION,
    Category.APPLICATION: Blame.APPLICATION,
    Category.GPU_APPLICATION: Blame.APPLICATION,
    Category.GPU_OOM: Blame.APPLICATION,
    Category.NUMERICAL: Blame.APPLICATION,
    Category.HANG: Blame.UNKNOWN,
    Category.STRAGGLER: Blame.UNKNOWN,
    Category.BENIGN: Blame.UNKNOWN,
    Category.UNKNOWN: Blame.UNKNOWN,
}
"""Who must act, per category (documented in diagnosis/CATALOG.md). host.memory is the job's
(the OOM victim is its largest consumer); hang and straggler stay unknown until localization."""

_SEVERITY_RANK = {Severity.CRITICAL: 0, Severity.ERROR: 1, Severity.WARNING: 2, Severity.INFO: 3}


def _jsonl(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


REAL_LOGS = _jsonl("real_logs.jsonl")
PUBLIC_HOST = _jsonl("public_host_lines.jsonl")


def sample(name: str) -> str:
    """Return a real sample without its ``# Source:`` provenance header lines."""
    lines = (FIXTURES / name).read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("# "))


def assert_well_formed(findings: list[Finding]) -> None:
    """Check the invariants every explanation keeps: order, blame convention, evidence."""
    ranks = [(_SEVERITY_RANK[f.severity], -f.confidence) for f in findings]
    assert ranks == sorted(ranks)
    for f in findings:
        assert f.blame is EXPECTED_BLAME[f.category], f
        assert f.line.strip()
        assert 0 <= f.confidence <= 1


@pytest.mark.parametrize(
    "row",
    REAL_LOGS + PUBLIC_HOST,
    ids=[f"{i}-{r['label']}" for i, r in enumerate(REAL_LOGS + PUBLIC_HOST)],
)
def test_real_excerpt_top_finding_has_expected_category_and_blame(row: dict[str, str]) -> None:
    findings = explain(row["text"])
    assert findings, row["label"]
    expected = Category(row["category"])
    assert findings[0].category is expected, [(f.rule, f.category.value) for f in findings]
    assert findings[0].blame is EXPECTED_BLAME[expected]
    assert_well_formed(findings)


def test_all_real_logs_are_covered() -> None:
    assert len(REAL_LOGS) == 41
    assert {Category(r["category"]) for r in REAL_LOGS} >= {
        Category.GPU_HARDWARE,
        Category.GPU_APPLICATION,
        Category.NETWORK,
        Category.HANG,
        Category.STRAGGLER,
        Category.NUMERICAL,
        Category.BENIGN,
    }


def _by_label(label: str, index: int = 0) -> str:
    return [r["text"] for r in REAL_LOGS if r["label"] == label][index]


def test_xid_evidence_is_extracted() -> None:
    (finding,) = explain(_by_label("xid-63"))
    assert (finding.xid, finding.pci_bus_id) == (63, "00000000:10:1C.0")
    assert finding.component is ComponentKind.GPU
    top = explain(_by_label("xid-31"))[0]
    assert top.pci_bus_id == "0000A67F:00:00.0"


def test_nccl_prefix_gives_node_and_device_unless_the_caller_names_the_node() -> None:
    text = _by_label("nccl-ib-error")
    (finding,) = explain(text)
    assert (finding.node, finding.gpu, finding.component) == ("H100-2", 1, ComponentKind.NIC)
    assert explain(text, node="n17")[0].node == "n17"


def test_rank_prefixes_set_the_rank() -> None:
    (finding,) = explain(_by_label("host-fs-io-error"))
    assert finding.rank == 3
    assert finding.line.endswith("Input/output error: '/app/naifu555'")
    ranks = {
        f.rank for f in explain(_by_label("nccl-timeout")) if f.rule == "hang.watchdog_timeout"
    }
    assert ranks == {0, 7}


def test_one_line_yields_one_finding_by_precedence() -> None:
    (finding,) = explain(_by_label("nccl-remote-error"))
    assert finding.rule == "nccl.ib_completion_error"


def test_dmesg_continuation_is_joined_into_the_evidence() -> None:
    top = explain(_by_label("gpu-fallen-off-bus-no-xid"))[0]
    assert top.rule == "gpu.fell_off_bus"
    assert top.pci_bus_id == "00000000:B3:00.0"
    assert "fallen off the bus" in top.line


def test_wrapped_iteration_lines_are_joined_for_the_slowdown_check() -> None:
    rules = [f.rule for f in explain(_by_label("perf-degradation-slow-gpu"))]
    assert rules == ["training.step_slowdown", "training.iteration"]


def test_healthy_iterations_with_normal_jitter_are_benign_only() -> None:
    healthy = "\n".join(_by_label("loss-spike").splitlines()[:2])
    assert [f.category for f in explain(healthy)] == [Category.BENIGN]


def test_overflow_skips_alone_are_benign() -> None:
    skips = "\n".join(_by_label("nan-loss", 1).splitlines()[:3])
    (finding,) = explain(skips)
    assert (finding.category, finding.rank) == (Category.BENIGN, 0)


# ------------------------------------------------------------------------------ real samples


def test_dcgmi_failures_point_at_the_gpus() -> None:
    findings = explain(sample("dcgmi_diag_failures_stas00.txt"))
    # GPU 3: uncorrectable memory errors; GPU 0: its failed memory test (the "Fail - GPU: 0"
    # row wrapped under "GPU Memory") and, separately, its thermal violations.
    assert [(f.category, f.gpu) for f in findings] == [
        (Category.GPU_HARDWARE, 3),
        (Category.GPU_HARDWARE, 0),
        (Category.GPU_DEGRADED, 0),
    ]


def test_nvidia_smi_remap_pending_is_degraded_with_the_header_bus_id() -> None:
    (finding,) = explain(sample("nvidia-smi-q_A100_xid63_remapped_rows_pending.txt"))
    assert finding.category is Category.GPU_DEGRADED
    assert finding.pci_bus_id == "00000000:10:1C.0"


def test_nvidia_smi_remap_counters_are_degraded() -> None:
    findings = explain(sample("nvidia-smi-q_remapped_rows_pending_gpud_pr80.txt"))
    assert findings
    assert {f.category for f in findings} == {Category.GPU_DEGRADED}


def test_sram_uncorrectable_past_the_rma_count_is_hardware() -> None:
    """Volatile 1 is history (degraded); aggregate 5 is past the SRAM RMA count (4)."""
    findings = explain(sample("nvidia-smi-q_sram_uncorrectable_ecc.txt"))
    assert findings[0].category is Category.GPU_HARDWARE
    assert findings[0].line.strip().endswith(": 5")
    assert {f.category for f in findings} == {Category.GPU_HARDWARE, Category.GPU_DEGRADED}


def test_flight_recorder_missing_ranks_is_a_hang() -> None:
    (finding,) = explain(sample("flight_recorder_fr_trace_missing_ranks_pytorch_pr140969.txt"))
    assert finding.category is Category.HANG
    assert finding.line.startswith("Not all ranks joining collective")


def test_nccl_ras_mismatch_is_one_hang_finding() -> None:
    (finding,) = explain(sample("nccl_ras_mismatch_nccl_issue1911.txt"))
    assert finding.category is Category.HANG


@pytest.mark.parametrize(
    "name",
    [
        "nccl_debug_info_healthy_baseline_a100_4node_bigscience.txt",
        "pyspy_hang_dump_bloom176b_eval_deadlock.txt",
    ],
)
def test_healthy_nccl_log_and_pyspy_dump_give_nothing(name: str) -> None:
    assert explain(sample(name)) == []


# ------------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n\n",
        "\x00" * 4096,
        "lorem ipsum dolor sit amet\n" * 1000,
        "x" * 2_000_000,
        "[rank0]:\n[default1]:\n(Foo pid=1) \nkernel:\n",
        "/usr/lib/python3.8/site-packages/torch/distributed/launch.py:178: FutureWarning: The "
        "module torch.distributed.launch is deprecated",
    ],
    ids=["empty", "blank", "nul", "lorem", "huge-line", "bare-prefixes", "future-warning"],
)
def test_unrecognisable_text_gives_nothing(text: str) -> None:
    assert explain(text) == []


def test_binary_garbage_gives_nothing() -> None:
    rnd = random.Random(7)
    blob = bytes(rnd.randrange(256) for _ in range(300_000)).decode("utf-8", errors="replace")
    assert explain(blob) == []


def test_800k_repeated_xid95_lines_collapse_into_one_finding() -> None:
    boot = datetime(2024, 8, 30, tzinfo=UTC)
    body = xid.xid_event("0000:2a:00", 95, pid=5171)
    text = "\n".join(
        kernel.kernel_log(boot + timedelta(seconds=60 + i / 1000), "raw", body, boot_time=boot)
        for i in range(800_000)
    )
    findings = explain(text)  # its speed is measured in bench.explain, not asserted here
    assert len(findings) == 1
    (finding,) = findings
    assert (finding.xid, finding.severity, finding.pci_bus_id) == (
        95,
        Severity.CRITICAL,
        "00000000:2A:00.0",
    )
    assert finding.line == text.split("\n", 1)[0]


def test_identical_findings_collapse_but_distinct_gpus_do_not() -> None:
    one = xid.xid_event("0000:2a:00", 79)
    two = xid.xid_event("0000:3a:00", 79)
    findings = explain("\n".join([f"[ 1.0] {one}", f"[ 2.0] {one}", f"[ 3.0] {two}"]))
    assert [f.pci_bus_id for f in findings] == ["00000000:2A:00.0", "00000000:3A:00.0"]
    assert findings[0].line.startswith("[ 1.0]")


def test_a_collapsed_finding_keeps_the_first_line_and_the_best_confidence() -> None:
    lone = "KeyError: 'input_ids'"
    traceback = [
        "Traceback (most recent call last):",
        '  File "/workspace/data.py", line 41, in collate',
        "    batch = samples['input_ids']",
        lone,
    ]
    (finding,) = explain("\n".join([lone, *traceback]))
    assert finding.confidence == explain("\n".join(traceback))[0].confidence
    assert finding.confidence > explain(lone)[0].confidence


REAL_LINES = sorted({line for r in REAL_LOGS + PUBLIC_HOST for line in r["text"].splitlines()})
_PREFIXES = ["", "[rank3]: ", "[default0]:", "[  12.345678] ", "kernel: ", "h1:1:2 [0] ", "    "]


@st.composite
def mangled_logs(draw: st.DrawFn) -> str:
    """Return real lines, cut, prefixed, shuffled and mixed with arbitrary text."""
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        line = draw(st.sampled_from(REAL_LINES))
        start = draw(st.integers(0, len(line)))
        end = draw(st.integers(start, len(line)))
        piece = draw(st.sampled_from([line, line[start:end], line[:end]]))
        lines.append(draw(st.sampled_from(_PREFIXES)) + piece + draw(st.text(max_size=5)))
    lines.extend(draw(st.lists(st.text(max_size=40), max_size=3)))
    return "\n".join(draw(st.permutations(lines)))


@settings(max_examples=300, deadline=None)
@given(mangled_logs())
def test_mangled_real_lines_never_crash_and_stay_well_formed(text: str) -> None:
    assert_well_formed(explain(text))
