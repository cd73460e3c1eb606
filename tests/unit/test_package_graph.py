"""The import graph between top-level packages follows trainguard/layers.py, with no cycle.

Every import of every module counts: module-level, inside functions, under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from trainguard.layers import LAYERS, describe, may_import

REPO = Path(__file__).resolve().parents[2]
NOT_LAYERED = {"tests"}  # tests import every layer; nothing imports them


@dataclass(frozen=True)
class Import:
    """One import statement of one module that names another top-level package."""

    importer: str
    imported: str
    where: str  # file:line


def packages(root: Path) -> list[str]:
    """Return the top-level packages under `root` (directories with an __init__.py)."""
    found = (p.parent.name for p in root.glob("*/__init__.py"))
    return sorted(p for p in found if p not in NOT_LAYERED)


def _names(node: ast.AST) -> Iterable[str]:
    """Return the absolute module names an import node names (relative ones stay inside)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def cross_imports(root: Path, known: Iterable[str]) -> list[Import]:
    """Return every import, at any depth of any module, from one known package to another."""
    known = set(known)
    out = []
    for package in sorted(known):
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_bytes(), filename=str(path))
            for node in ast.walk(tree):
                for name in _names(node):
                    top = name.partition(".")[0]
                    if top in known and top != package:
                        where = f"{path.relative_to(root)}:{node.lineno}"
                        out.append(Import(package, top, where))
    return out


def cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one package (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def report(imports: Iterable[Import], allowed: Mapping[tuple[str, str], bool]) -> str:
    """Return the imports against the layering, one per line with file:line ('' if none)."""
    bad = [i for i in imports if not allowed[(i.importer, i.imported)]]
    return "\n".join(f"  {i.where}: {i.importer} -> {i.imported}" for i in bad)


def check(root: Path) -> str:
    """Return what is wrong with the package graph under `root` ('' when nothing is)."""
    known = packages(root)
    declared = {p for layer in LAYERS for p in layer}
    problems = []
    if undeclared := sorted(set(known) - declared):
        problems.append(f"packages missing from trainguard/layers.py: {undeclared}")
    imports = cross_imports(root, set(known) & declared)
    edges = {(i.importer, i.imported) for i in imports}
    if against := report(imports, {e: may_import(*e) for e in edges}):
        problems.append("imports against the layering (importer -> imported):\n" + against)
    for component in cycles(edges):
        inside = [i for i in imports if {i.importer, i.imported} <= set(component)]
        breaking = [i for i in inside if not may_import(i.importer, i.imported)] or inside
        lines = "\n".join(f"  {i.where}: {i.importer} -> {i.imported}" for i in breaking)
        problems.append(f"cycle between {component} (the imports closing it):\n{lines}")
    if problems:
        problems.append("layers, highest first (each may import only the layers below):")
        problems.append(describe())
    return "\n".join(problems)


def test_the_repository_follows_the_layering() -> None:
    problems = check(REPO)
    assert problems == "", "\n" + problems


def test_every_layer_names_a_package_of_the_repository() -> None:
    declared = [p for layer in LAYERS for p in layer]
    assert len(declared) == len(set(declared)), "a package is in two layers"
    assert sorted(declared) == packages(REPO)


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for package in {name.partition("/")[0] for name in files}:
        (root / package / "__init__.py").touch()
    return root


def test_a_function_level_upward_import_is_reported_with_its_line(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "ingest/schema.py": "x = 1\n",
            "analytics/store.py": "from ingest.schema import x\n",
            "ingest/bad.py": "def f():\n    from analytics.store import x\n    return x\n",
        },
    )
    problems = check(root)
    assert "ingest/bad.py:2: ingest -> analytics" in problems
    assert "cycle between ['analytics', 'ingest']" in problems
    assert "analytics/store.py:1" not in problems  # the downward edge is not to blame
    assert "layers, highest first" in problems


def test_a_type_checking_import_counts(tmp_path: Path) -> None:
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import trainguard.settings\n"
    root = _tree(tmp_path, {"actions/engine.py": source, "trainguard/settings.py": ""})
    assert "actions/engine.py:3: actions -> trainguard" in check(root)


def test_a_sideways_import_within_one_layer_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"scheduler/a.py": "import prediction.risk\n", "prediction/risk.py": ""})
    assert "scheduler/a.py:1: scheduler -> prediction" in check(root)


def test_downward_imports_pass(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "trainguard/cli.py": "import api.app\nfrom ingest import schema\n",
            "api/app.py": "from . import models\nimport actions.engine\n",
            "api/models.py": "",
            "actions/engine.py": "from diagnosis.incidents import Incident\n",
            "diagnosis/incidents.py": "from ingest.schema import Xid\n",
            "ingest/schema.py": "",
        },
    )
    assert check(root) == ""


def test_an_undeclared_package_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"newpkg/mod.py": "import ingest\n", "ingest/x.py": ""})
    assert "packages missing from trainguard/layers.py: ['newpkg']" in check(root)
