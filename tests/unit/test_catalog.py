"""The Xid catalog: every code 1-173 has TrainGuard's documented policy, generated files agree
with the CSV, and the choices the diagnosis issue calls out are the documented ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagnosis.catalog import all_xid_entries, xid_entry
from diagnosis.catalog.build import (
    CATALOG_MD,
    CSV_PATH,
    SOURCE_PATH,
    read_csv,
    render_catalog_md,
    render_source_module,
)
from diagnosis.catalog.xid_policy import xid_policies
from diagnosis.explain import explain
from diagnosis.model import Action, Blame, Category, ComponentKind, Severity
from sim.formats.xid import xid_line

SHARED_CSV = Path(__file__).parents[3] / "shared" / "data" / "xid_catalog.csv"

BLAME_OF = {
    Category.GPU_HARDWARE: Blame.INFRASTRUCTURE,
    Category.GPU_DEGRADED: Blame.INFRASTRUCTURE,
    Category.GPU_APPLICATION: Blame.APPLICATION,
    Category.BENIGN: Blame.UNKNOWN,
    Category.UNKNOWN: Blame.UNKNOWN,
}


def test_every_code_from_1_to_173_has_an_entry_with_a_reason() -> None:
    codes = [e.xid for e in all_xid_entries()]
    assert codes == list(range(1, 174))
    for code in range(1, 174):
        entry = xid_entry(code)
        assert entry.xid == code
        assert entry.policy.why.strip(), code
        assert 0 < entry.policy.verdict.confidence <= 1
        assert entry.policy.verdict.component is ComponentKind.GPU


def test_policies_cover_exactly_the_csv_codes() -> None:
    sources = read_csv(CSV_PATH.read_text(encoding="utf-8"))
    assert sorted(xid_policies()) == sorted(s.xid for s in sources)


@pytest.mark.skipif(not SHARED_CSV.exists(), reason="../shared not checked out")
def test_packaged_csv_is_a_verbatim_copy_of_the_shared_one() -> None:
    assert CSV_PATH.read_bytes() == SHARED_CSV.read_bytes()


def test_generated_source_table_matches_the_csv() -> None:
    expected = render_source_module(read_csv(CSV_PATH.read_text(encoding="utf-8")))
    assert SOURCE_PATH.read_text(encoding="utf-8") == expected


def test_catalog_md_tables_are_up_to_date() -> None:
    current = CATALOG_MD.read_text(encoding="utf-8")
    assert render_catalog_md(current) == current, "run python -m diagnosis.catalog.build"


def test_catalog_md_has_one_row_per_code() -> None:
    text = CATALOG_MD.read_text(encoding="utf-8")
    for code in range(1, 174):
        assert f"\n| {code} | " in text, code


@pytest.mark.parametrize("entry", all_xid_entries(), ids=lambda e: str(e.xid))
def test_blame_follows_the_category_convention(entry: object) -> None:
    v = entry.policy.verdict  # type: ignore[attr-defined]
    assert v.blame is BLAME_OF[v.category]
    if v.category is Category.BENIGN:
        assert v.severity is Severity.INFO
    if v.category is Category.GPU_DEGRADED:
        assert v.severity is Severity.WARNING


@pytest.mark.parametrize(
    ("code", "category", "severity", "action"),
    [
        (13, Category.GPU_APPLICATION, Severity.ERROR, Action.FIX_APPLICATION),
        (31, Category.GPU_APPLICATION, Severity.ERROR, Action.FIX_APPLICATION),
        (43, Category.GPU_APPLICATION, Severity.WARNING, Action.FIX_APPLICATION),
        (45, Category.BENIGN, Severity.INFO, Action.NONE),
        (48, Category.GPU_HARDWARE, Severity.CRITICAL, Action.RESET_GPU),
        (63, Category.GPU_DEGRADED, Severity.WARNING, Action.RESET_GPU),
        (64, Category.GPU_HARDWARE, Severity.CRITICAL, Action.ISOLATE_GPU),
        (74, Category.GPU_HARDWARE, Severity.CRITICAL, Action.REBOOT_NODE),
        (79, Category.GPU_HARDWARE, Severity.CRITICAL, Action.REBOOT_NODE),
        (92, Category.GPU_DEGRADED, Severity.WARNING, Action.MONITOR),
        (94, Category.GPU_HARDWARE, Severity.ERROR, Action.RESTART_JOB),
        (95, Category.GPU_HARDWARE, Severity.CRITICAL, Action.RESET_GPU),
        (109, Category.GPU_HARDWARE, Severity.ERROR, Action.RESET_GPU),
        (119, Category.GPU_HARDWARE, Severity.CRITICAL, Action.REBOOT_NODE),
        (120, Category.GPU_HARDWARE, Severity.CRITICAL, Action.REBOOT_NODE),
        (154, Category.GPU_HARDWARE, Severity.ERROR, Action.RESET_GPU),
    ],
)
def test_documented_choices(
    code: int, category: Category, severity: Severity, action: Action
) -> None:
    v = xid_entry(code).policy.verdict
    assert (v.category, v.severity, v.action) == (category, severity, action)


def test_sources_disagree_where_the_issue_says_and_the_row_keeps_both() -> None:
    s = xid_entry(63).source
    assert s.nvidia_immediate_action == "IGNORE"
    assert s.gpud_repair_actions == "RebootSystem+HardwareInspection"


def test_unknown_code_falls_back_to_collecting_diagnostics() -> None:
    entry = xid_entry(999)
    assert entry.policy.verdict.category is Category.UNKNOWN
    assert entry.policy.verdict.action is Action.CAPTURE_DIAGNOSTICS
    (finding,) = explain("NVRM: Xid (PCI:0000:2a:00): 999, pid=1, name=python, something new")
    assert finding.xid == 999
    assert finding.category is Category.UNKNOWN


@pytest.mark.parametrize("code", range(1, 174))
def test_every_code_explains_to_its_catalog_verdict(code: int) -> None:
    line = xid_line("0000:2a:00", code, 4242, "python", "detail text from the driver")
    (finding,) = explain(f"[ 1234.567890] {line}")
    v = xid_entry(code).policy.verdict
    assert finding.xid == code
    assert finding.pci_bus_id == "00000000:2A:00.0"
    assert (finding.category, finding.blame, finding.severity, finding.action) == (
        v.category,
        v.blame,
        v.severity,
        v.action,
    )
