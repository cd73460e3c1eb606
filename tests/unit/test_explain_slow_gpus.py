"""Message classes added in the fourth corpus round (issue 21): degraded GPUs and stragglers.

nvidia-smi clock-event reasons, NVBench's throttle warning, DCGM's thermal-violation message and
memory-health fields, and the straggler reports of dlrover, gpu_burn, xtuner's log analyser and
DCGM's diagnostic JSON. The positive lines are real ones from the corpus
(tests/fixtures/explain/corpus/fresh_12*.jsonl; the comment names the source); the negative
controls are the same tools' healthy output, real where the corpus has it and otherwise the
real line with its figures changed, which the comment says.
"""

from __future__ import annotations

import pytest

from diagnosis.explain import explain
from diagnosis.explain.rules_gpu import SBE_MANY
from diagnosis.explain.rules_straggler import SLOW_ELAPSED_RATIO
from diagnosis.model import Category, ComponentKind, Severity

# l4rz/reverse-engineering-dell-idrac-to-get-rid-of-gpu-throttling README: a power-braked V100
POWER_BRAKE = """Clocks Throttle Reasons
    Idle                              : Not Active
    Applications Clocks Setting       : Not Active
    SW Power Cap                      : Not Active
    HW Slowdown                       : Active
        HW Thermal Slowdown           : Not Active
        HW Power Brake Slowdown       : Active"""
# mlfoundations/open_clip#703: SW power cap under load is normal
POWER_CAP = """    Clocks Event Reasons
        Idle                              : Not Active
        SW Power Cap                      : Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        SW Thermal Slowdown               : Not Active"""
# NVIDIA/nvidia-docker#1090: a board that does not report the sub-reasons
NOT_REPORTED = """    Clocks Throttle Reasons
        HW Slowdown                 : Not Active
            HW Thermal Slowdown     : N/A
            HW Power Brake Slowdown : N/A"""
# NVIDIA/nvbench#231
NVBENCH = (
    "Warn: GPU throttled below threshold (827.15 MHz / 1410.00 MHz) (59% < 75%) on sample 0. "
    "Discarding previous trial and pausing for 0.050s."
)
# NVIDIA/DCGM#242 (the GPU index is an X in the quote)
THERMAL = "GPU X Thermal violations totaling 0.0 seconds started at 30.0 seconds into the test"
# NVIDIA/DCGM#313 and NVIDIA/NVSentinel#1748
SBE_TABLE = "| `DCGM_FI_DEV_ECC_SBE_AGG_TOTAL` | 54,731,746,511 |"
SBE_RATE = "| `ECC_SBE_VOL_TOTAL` rate | 4,647/s, then 17,657/s | **exactly 0** |"
HEALTHY_FIELD = "| `DCGM_FI_DEV_ROW_REMAP_FAILURE` | 0 |"
# NVIDIA/DCGM#272: nvvs skips a field it cannot read; the number before the field is no count
SKIPPED = (
    "2026-01-16 09:50:03.010 WARN  [3279516:3279516] gpuId 3 returned status 0, value "
    "9223372036854775794for DCGM_FI_DEV_RETIRED_PENDING. Skipping this check. "
    "[/builds/dcgm/dcgm/nvvs/src/Software.cpp:688] [Software::checkPageRetirement]"
)
# intelligent-machine-learning/dlrover#735
SLOW_NODES = (
    "The elapsed time of nodes are {2: 20.182805944442748, 3: 18.725976165771485, "
    "0: 181.80825593948364, 1: 143.06098918533326}"
)
HEALTHY_NODES = (
    "The elapsed time of nodes are {2: 20.16765477180481, 3: 18.725976165771485, "
    "0: 19.91257585334778, 1: 20.607787996292114}"
)
# wilicc/gpu-burn#110 (GPU 0 slow) and #48 (two healthy GPUs)
BURN_SLOW = (
    "73.6% proc'd: 289540 (20000 Gflop/s) - 298000 (31108 Gflop/s) - 288610 (30013 Gflop/s) - "
    "283860 (29498 Gflop/s) - 347284 (36298 Gflop/s) - 354349 (36677 Gflop/s) - 354349"
)
BURN_TWO = (
    "11.7%  proc'd: 2947 (7124 Gflop/s) - 2664 (6963 Gflop/s)   errors: 0 - 0   temps: 56 C - 73 C"
)
# InternLM/xtuner#1790
DATA_BOUND = "[step 173] step_time=381.06s  dt_med=0.0028s  dt_max=332.46s"
# NVIDIA/DCGM#122: the diag JSON of the slow GPU
DIAG_RATE = (
    '"info" : "GPU 5 Allocated space for 137 output matricies from 75949395148 bytes available.,'
    " GPU 5 Running with precisions: FP64 1, FP32 1, FP16 1, \n"
    'GPU 5 GPU 5 calculated at approximately 511.70 gigaflops during this test",'
)


def first(text: str) -> tuple[Category, str, ComponentKind | None] | None:
    """Return the first finding's category, rule and component, or None without findings."""
    found = explain(text)
    return (found[0].category, found[0].rule, found[0].component) if found else None


def alarms(text: str) -> list[str]:
    """Return the rules of findings at warning or worse."""
    return [f.rule for f in explain(text) if f.severity != Severity.INFO]


def test_an_active_hardware_slowdown_is_a_degraded_gpu() -> None:
    assert first(POWER_BRAKE) == (Category.GPU_DEGRADED, "gpu.clocks_slowdown", ComponentKind.GPU)
    xml = "<clocks_throttle_reason_hw_slowdown>Active</clocks_throttle_reason_hw_slowdown>"
    assert first(xml) == (Category.GPU_DEGRADED, "gpu.clocks_slowdown", ComponentKind.GPU)
    thermal = POWER_CAP.replace(
        "SW Thermal Slowdown               : Not Active",
        "SW Thermal Slowdown               : Active",
    )
    assert first(thermal) == (Category.GPU_DEGRADED, "gpu.clocks_slowdown", ComponentKind.GPU)


@pytest.mark.parametrize("text", [POWER_CAP, NOT_REPORTED, "        HW Thermal Slowdown : 5 us"])
def test_power_cap_not_reported_and_counters_are_not_a_slowdown(text: str) -> None:
    assert alarms(text) == []


def test_nvbench_throttle_and_dcgm_thermal_violation_are_degraded() -> None:
    assert first(NVBENCH) == (
        Category.GPU_DEGRADED,
        "gpu.throttled_below_threshold",
        ComponentKind.GPU,
    )
    assert first(THERMAL) == (Category.GPU_DEGRADED, "gpu.thermal_violation", ComponentKind.GPU)


def test_dcgm_memory_fields_follow_their_nvidia_smi_counterparts() -> None:
    assert first(SBE_TABLE) == (Category.GPU_DEGRADED, "gpu.dcgm_memory_field", ComponentKind.GPU)
    assert first(SBE_RATE) == (Category.GPU_DEGRADED, "gpu.dcgm_memory_field", ComponentKind.GPU)
    pending = 'DCGM_FI_DEV_ROW_REMAP_PENDING{gpu="1",UUID="GPU-x"} 1'
    failure = 'DCGM_FI_DEV_ROW_REMAP_FAILURE{gpu="1",UUID="GPU-x"} 1'
    assert first(pending) == (Category.GPU_DEGRADED, "gpu.dcgm_memory_field", ComponentKind.GPU)
    assert first(failure) == (Category.GPU_HARDWARE, "gpu.dcgm_memory_field", ComponentKind.GPU)


@pytest.mark.parametrize(
    "text",
    [
        HEALTHY_FIELD,
        SKIPPED,
        f'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{{gpu="0"}} {SBE_MANY - 1}',
        'DCGM_FI_DEV_ROW_REMAP_PENDING{gpu="0"} 0',
    ],
)
def test_healthy_or_few_corrected_errors_are_silent(text: str) -> None:
    assert alarms(text) == []


def test_dlrover_node_check_names_a_node_twice_the_median() -> None:
    assert first(SLOW_NODES) == (Category.STRAGGLER, "straggler.node_elapsed", ComponentKind.NODE)
    assert alarms(HEALTHY_NODES) == []
    # the same line with two nodes only: too few to compare
    assert alarms("The elapsed time of nodes are {0: 20.1, 1: 181.8}") == []
    # a node just under the ratio (healthy line, node 1's time changed) stays silent
    under = HEALTHY_NODES.replace("20.607787996292114", f"{SLOW_ELAPSED_RATIO * 19.9:.3f}")
    assert alarms(under) == []


def test_gpu_burn_names_a_gpu_far_below_its_peers() -> None:
    assert first(BURN_SLOW) == (Category.STRAGGLER, "straggler.gpu_burn", ComponentKind.GPU)
    assert alarms(BURN_TWO) == []
    even = BURN_SLOW.replace("(20000 Gflop/s)", "(30500 Gflop/s)")  # GPU 0 back with its peers
    assert alarms(even) == []


def test_xtuner_data_bound_step_is_an_input_straggler() -> None:
    assert first(DATA_BOUND) == (
        Category.STRAGGLER,
        "straggler.data_bound_step",
        ComponentKind.NODE,
    )
    # the same line with the slowest rank's data time at a few percent of the step
    assert alarms(DATA_BOUND.replace("dt_max=332.46s", "dt_max=9.50s")) == []


def test_dcgm_diag_rate_with_a_failed_status_is_a_slow_gpu() -> None:
    slow = explain(DIAG_RATE + '\n"status" : "Fail",')
    assert slow[0].category is Category.STRAGGLER and slow[0].rule == "gpu.diag_slow"
    assert slow[0].gpu == 5
    assert alarms(DIAG_RATE + '\n"status" : "Pass",') == []
    assert alarms('"status" : "Fail",') == []


# Fifth round (fresh_13, development part only): the tools' own straggler judgements.
# NVIDIA-NeMo/Megatron-Bridge docs/training/resiliency.md: NVRx's two warnings
NVRX_RELATIVE = (
    "STRAGGLER DETECTION WARNING: Some GPUs have worse relative performance. "
    "Affected ranks: [76, 13, 45]"
)
NVRX_INDIVIDUAL = (
    "STRAGGLER DETECTION WARNING: Some GPUs performance dropped. Affected ranks: [162, 79, 357]"
)
# the same guide's healthy score report (real)
NVRX_HEALTHY = """GPU relative performance:
 Worst performing 5/512 ranks:
  Rank=76 Node=h100-001-253-012 Score=0.94
 Best performing 5/512 ranks:
  Rank=432 Node=h100-004-141-026 Score=0.99"""
# traceopt-ai/traceml docs/user_guide/quickstart.md: the end-of-run verdict box
TRACEML = """|  TraceML Verdict: INPUT STRAGGLER / CRITICAL                               |
|  Why: Rank r0 dataloader was 254.5ms vs median rank r1 at 3.8ms.           |"""


@pytest.mark.parametrize("text", [NVRX_RELATIVE, NVRX_INDIVIDUAL])
def test_nvrx_straggler_warning_names_slow_gpus(text: str) -> None:
    assert first(text) == (Category.STRAGGLER, "straggler.nvrx_warning", ComponentKind.GPU)


def test_nvrx_score_report_and_empty_warning_are_silent() -> None:
    assert alarms(NVRX_HEALTHY) == []
    # the warning format with no rank listed (changed from the real line)
    assert alarms(NVRX_RELATIVE.replace("[76, 13, 45]", "[]")) == []


def test_traceml_straggler_verdict_is_a_straggler() -> None:
    assert first(TRACEML)[:2] == (Category.STRAGGLER, "straggler.traceml_verdict")
    # its other verdicts are not (changed from the real lines)
    compute_bound = TRACEML.replace("INPUT STRAGGLER", "COMPUTE-BOUND  ").replace(
        "Rank r0 dataloader was 254.5ms vs median rank r1 at 3.8ms.",
        "Rank r0 compute was 254.5ms vs median rank r1 at 251.8ms.",
    )
    assert alarms(compute_bound) == []
    # the reason line alone names a rank far off its peers' median: a straggler in words
    why = TRACEML.splitlines()[1]
    assert first(why)[:2] == (Category.STRAGGLER, "straggler.member_against_the_median")


# Sixth corpus round (tests/fixtures/explain/corpus/fresh_14.jsonl): a sentence that names one
# member as much (or N times) slower than its peers.
# nicehash/NiceHashMiner-Archived#800: one of six RX470s far slower than the other five
NAMED_SLOW_GPU = "Nicehashminer is always showing GPU 2 much slower, then the other 5 GPUs."


def test_a_member_named_much_slower_than_its_peers_is_a_straggler() -> None:
    (finding,) = explain(NAMED_SLOW_GPU)
    assert finding.rule == "straggler.named_slower_than_peers"
    assert (finding.category, finding.component) == (Category.STRAGGLER, ComponentKind.GPU)
    assert finding.severity == Severity.WARNING


@pytest.mark.parametrize(
    ("text", "component"),
    [
        # the real sentence with the member and the degree changed
        ("Nicehashminer is always showing node 2 3x slower than the other 5 nodes.", "node"),
        ("Nicehashminer is always showing rank 2 far slower than the rest.", "job"),
    ],
)
def test_the_named_member_sets_the_component(text: str, component: str) -> None:
    (finding,) = explain(text)
    assert finding.category == Category.STRAGGLER
    assert finding.component == ComponentKind(component)


@pytest.mark.parametrize(
    "text",
    [
        # no member named
        "Nicehashminer is always much slower than the other miners.",
        # a small degree is not one of the words for a large gap
        "Nicehashminer is always showing GPU 2 slightly slower than the other 5 GPUs.",
    ],
)
def test_a_comparison_without_a_named_member_and_a_large_gap_stays_silent(text: str) -> None:
    # (a named member plainly slower than the others, or than before, is read by the general
    # rule: tests/unit/test_explain_slowness.py)
    assert all(f.category != Category.STRAGGLER for f in explain(text))
