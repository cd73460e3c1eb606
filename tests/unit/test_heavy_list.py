"""The heavy list of tests/unit/conftest.py names tests that exist, so it cannot go stale."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.conftest import HEAVY, TWIN_PREFIXED, is_heavy

HERE = Path(__file__).resolve().parent


def functions_of(module: str) -> set[str]:
    """Return the names of the module's top-level test functions."""
    tree = ast.parse((HERE / module).read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.name.startswith("test_")
    }


def test_every_listed_test_exists() -> None:
    missing = []
    for module, names in HEAVY.items():
        assert (HERE / module).is_file(), f"tests/unit/{module} is listed but gone"
        have = functions_of(module)
        missing += [f"{module}::{name}" for name in names or () if name not in have]
    assert not missing, f"listed as heavy but not found: {missing}"


def test_twin_prefixed_modules_still_have_twin_tests() -> None:
    for module in TWIN_PREFIXED:
        assert any(n.startswith("test_twin_") for n in functions_of(module)), module


def test_only_listed_tests_are_heavy() -> None:
    assert is_heavy("test_detectors_twin.py", "test_anything")
    assert is_heavy("test_localize_hang.py", "test_twin_hang_is_localized_to_the_hung_rank")
    assert not is_heavy("test_localize_hang.py", "test_hang_names_the_rank_that_never_joined")
    assert is_heavy("test_explain.py", "test_800k_repeated_xid95_lines_collapse_into_one_finding")
    assert not is_heavy("test_explain.py", "test_xid79_is_fell_off_the_bus")
    assert not is_heavy("test_bus.py", "test_every_kind_travels")
