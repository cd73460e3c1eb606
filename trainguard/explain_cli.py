"""`trainguard explain [FILE|-] [--json] [--node NAME]`: explain a log file or stdin."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from diagnosis.explain import explain
from diagnosis.model import Finding

JSON_FIELDS: tuple[str, ...] = (
    "category",
    "blame",
    "component",
    "xid",
    "severity",
    "action",
    "line",
    "confidence",
    "rule",
    "node",
    "gpu",
    "pci_bus_id",
    "rank",
)
"""The issue's fields first (category ... confidence), then where the evidence points."""

_TABLE_COLUMNS: tuple[tuple[str, int], ...] = (
    ("severity", 8),
    ("category", 15),
    ("blame", 14),
    ("action", 19),
    ("where", 24),
    ("conf", 4),
)


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `explain`."""
    p = sub.add_parser(
        "explain",
        help="explain a log: Xids, CUDA/NCCL errors, hangs, host faults",
        description="Explain a log file (or stdin): what broke, who must act, what to do next.",
    )
    p.add_argument("file", nargs="?", default="-", help="log file, or - for stdin (default)")
    p.add_argument("--json", action="store_true", help="print a JSON list of findings")
    p.add_argument("--node", help="node the log came from")
    p.add_argument(
        "--hint",
        action="store_true",
        help="where no rule reads the text, add the learned hint: one info finding naming the "
        "category its words share with labelled texts (right about half the time)",
    )
    p.set_defaults(func=cmd_explain)


def read_log(source: str, stdin: TextIO) -> str:
    """Return the text of `source` (a path, or - for `stdin`); undecodable bytes are replaced."""
    if source == "-":
        return stdin.read()
    return Path(source).read_bytes().decode("utf-8", errors="replace")


def finding_json(finding: Finding) -> dict[str, object]:
    """Return one finding as the CLI's JSON object, fields in the documented order."""
    data = finding.model_dump(mode="json")
    return {name: data[name] for name in JSON_FIELDS}


def _where(finding: Finding) -> str:
    """Return where a finding points, compactly."""
    parts = []
    if finding.node:
        parts.append(finding.node)
    if finding.xid is not None:
        parts.append(f"xid {finding.xid}")
    if finding.pci_bus_id:
        parts.append(finding.pci_bus_id)
    elif finding.gpu is not None:
        parts.append(f"gpu {finding.gpu}")
    if finding.rank is not None:
        parts.append(f"rank {finding.rank}")
    return " ".join(parts) or "-"


def render_table(findings: Sequence[Finding]) -> str:
    """Return the human-readable table: one row per finding, then its evidence line."""
    if not findings:
        return "nothing recognised"
    header = "  ".join(name.ljust(width) for name, width in _TABLE_COLUMNS)
    rows = [header, "-" * len(header)]
    for f in findings:
        cells = (
            f.severity.value,
            f.category.value,
            f.blame.value,
            f.action.value,
            _where(f),
            f"{f.confidence:.2f}",
        )
        rows.append("  ".join(c.ljust(w) for c, (_, w) in zip(cells, _TABLE_COLUMNS, strict=True)))
        rows.append(f"    {f.rule}: {f.line[:160]}")
    return "\n".join(rows)


def cmd_explain(args: argparse.Namespace) -> int:
    """Explain a log file or stdin; exit 0 even when nothing is found, 2 when unreadable."""
    try:
        text = read_log(args.file, sys.stdin)
    except OSError as exc:
        print(
            f"trainguard explain: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    findings = explain(text, node=args.node, hint=args.hint)
    if args.json:
        print(json.dumps([finding_json(f) for f in findings], indent=2))
    else:
        print(render_table(findings))
    return 0
