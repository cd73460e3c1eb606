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
    assert [(f.rule, f.severity) for f in findings] == [
        ("host.mcelog_memory", Severity.CRITICAL)
    ]


def test_mcelog_summary_below_the_threshold_or_only_history_stays_silent() -> None:
    assert alarms(_summary(2654, 99, 0, 0)) == []  # a large total is history
    assert alarms(_summary(0, 0, 0, 0)) == []


def test_counts_outside_a_summary_block_are_not_read() -> None:
    text = "corrected memory errors:\n\t5 total\nreport written\n\t500 in 24h\n"
    assert alarms(text) == []
