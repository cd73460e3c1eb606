"""Classes of the thirty-fourth round (the dev misses it left and its own development records).

mcelog's memory summary (`mcelog --client`, memdb.c's dump_errtype): a `corrected memory
errors:` or `uncorrected memory errors:` header, then `N total` and `N in 24h`. Any uncorrected
error is a failed DIMM; corrected errors in one window at mcelog's default threshold (100 / 24h)
are one to replace; totals since mcelog started and counts below the threshold stay silent.
"""

from __future__ import annotations

from diagnosis.explain import explain
from diagnosis.model import Category, Severity
from tests.explain_helpers import alarms, corpus_text, first


def _summary(ce_total: int, ce_window: int, uc_total: int, uc_window: int) -> str:
    return (
        "Memory errors\n"
        "SOCKET 0 CHANNEL 1 DIMM 2\n"
        'DMI_NAME "DIMM_B2" DMI_LOCATION "NODE 0 CHANNEL 1 DIMM 2"\n'
        "corrected memory errors:\n"
        f"\t{ce_total} total\n"
        f"\t{ce_window} in 24h\n"
        "uncorrected memory errors:\n"
        f"\t{uc_total} total\n"
        f"\t{uc_window} in 24h\n"
    )


def test_mcelog_summary_at_the_corrected_threshold_is_a_dimm_to_replace() -> None:
    found = first(corpus_text("fresh_42e", "0014"))
    assert found is not None and found[:2] == (Category.HOST_HARDWARE, "host.mcelog_memory")
    assert alarms(_summary(2654, 150, 0, 0)) == ["host.mcelog_memory"]


def test_mcelog_summary_with_an_uncorrected_error_is_critical() -> None:
    findings = explain(_summary(3, 1, 2, 0))
    assert [(f.rule, f.severity) for f in findings] == [("host.mcelog_memory", Severity.CRITICAL)]


def test_mcelog_summary_below_the_threshold_or_only_history_stays_silent() -> None:
    assert alarms(_summary(2654, 99, 0, 0)) == []  # a large total is history
    assert alarms(_summary(0, 0, 0, 0)) == []


def test_counts_outside_a_summary_block_are_not_read() -> None:
    text = "corrected memory errors:\n\t5 total\nreport written\n\t500 in 24h\n"
    assert alarms(text) == []


def test_nvlink_inactive_on_pcie_cards_is_no_fault() -> None:
    """HPE's note on the A100 PCIe: nvidia-smi nvlink -s on cards without NVLink."""
    assert alarms(corpus_text("fresh_44", "0029")) == []
    sxm = corpus_text("fresh_44", "0029").replace("A100-PCIE-40GB", "A100-SXM4-40GB")
    assert alarms(sxm) == ["nvlink.links_down"]


def test_a_slowdown_normal_only_after_a_restart_is_not_explained() -> None:
    assert alarms(corpus_text("fresh_44c", "0007")) == ["slowdown.time_said_to_grow"]
    explained = "Training time keeps increasing after 200 steps. This is normal: the batches grow."
    assert alarms(explained) == []


def test_a_run_ever_slower_in_words_but_not_a_loss_that_converges_slowly() -> None:
    assert alarms(corpus_text("fresh_44c", "0014")) == ["straggler.slowness_in_words"]
    for learning in (
        "My model converges more and more slowly after epoch 10.",
        "The loss decreases very slowly after the warm-up.",
        "We see slow convergence after epoch 3.",
    ):
        assert alarms(learning) == [], learning


def test_nvml_that_finds_no_gpu_or_loses_one() -> None:
    assert first(corpus_text("fresh_44", "0014"))[:2] == (Category.GPU_HARDWARE, "nvml.gpu_lost")
    assert first(corpus_text("fresh_44", "0016"))[:2] == (
        Category.GPU_HARDWARE,
        "nvml.field_unknown_error",
    )
    for text in (corpus_text("fresh_44", "0017"), corpus_text("fresh_44", "0018")):
        assert first(text)[:2] == (Category.GPU_HARDWARE, "nvml.no_gpu"), text
    # an install half-upgraded is the node's software, and fields a GPU lacks no fault: neither
    # is the GPU's
    mismatch = first("Failed to initialize NVML: Driver/library version mismatch")
    assert mismatch is not None
    assert mismatch[:2] == (Category.APPLICATION, "nvml.version_mismatch")
    assert alarms("    Product Brand                         : NVIDIA") == []
    assert alarms("    Max Customer Boost Clocks             : N/A") == []


def test_a_stale_nfs_handle_in_any_case_is_the_storage() -> None:
    found = first(corpus_text("fresh_44b", "0013"))
    assert found is not None and found[0] == Category.HOST_STORAGE


def test_verbs_calls_that_fail_for_memory_are_the_rdma_stack() -> None:
    for number in ("0003", "0004"):
        found = first(corpus_text("fresh_44b", number))
        assert found is not None and found[:2] == (Category.NETWORK, "rdma.verbs_failed")
    assert first("MemoryError: Cannot allocate memory")[0] == Category.HOST_MEMORY


def test_a_rate_quoted_that_keeps_falling_but_not_a_loss_after_it() -> None:
    assert alarms(corpus_text("fresh_44c", "0019")) == ["straggler.slowness_in_words"]
    assert alarms("the training runs at 1200 tokens/s and the loss keeps decreasing") == []
    assert alarms("we train at 3000 samples/s and the error rate keeps dropping") == []


def test_mcelog_headers_nvme_status_register_and_libfabric_without_a_provider() -> None:
    assert first(corpus_text("fresh_45", "0005"))[:2] == (Category.HOST_HARDWARE, "host.mce")
    assert first(corpus_text("fresh_45", "0010"))[:2] == (Category.HOST_STORAGE, "storage.nvme")
    assert first(corpus_text("fresh_45", "0012"))[:2] == (Category.NETWORK, "rdma.no_provider")
    # the core's per-provider probe at <warn> is printed on healthy nodes too
    probe = "fi_getinfo_():889<warn> fi_getinfo: provider tcp returned -61 (No data available)"
    assert alarms(probe) == []
    assert alarms("nvme nvme0: pci function 0000:5e:00.0") == []


def test_round35_speed_reports_read_as_classes() -> None:
    # a rate quoted, then the bare figure it fell to, in its unit; not a loss after a rate
    assert alarms(corpus_text("fresh_45b", "0012")) == ["slowdown.rate_fell"]
    assert alarms("at 3000 samples/s the loss drops to 0.5") == []
    assert alarms("we get 150 MH/s and the fan speed drops to 40 percent") == []
    # a time per item of the work, told over a day
    assert alarms(corpus_text("fresh_45b", "0017")) == ["slowdown.step_time_rose"]
    # a command's option values are settings, not readings (a benchmark sweep over DAG sizes)
    assert alarms(corpus_text("fresh_45b", "0014")) == []
    assert alarms("throughput went from 3900 -> 2700 tokens/s") == ["figures.speed_changed"]
