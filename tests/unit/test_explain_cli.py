"""`trainguard explain`: file or stdin, table or JSON with the issue's fields, exit codes."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import pytest

from trainguard.explain_cli import JSON_FIELDS, add_parsers

FIXTURES = Path(__file__).parents[1] / "fixtures" / "explain"
XID79 = "[Fri Apr  5 21:29:39 2024] NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"  # noqa: E501


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Parse `argv` with the registered sub-command and run it."""
    parser = argparse.ArgumentParser(prog="trainguard")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_has_exactly_the_issue_fields_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "dmesg.log"
    log.write_text(XID79)
    code, out, _ = run(["explain", str(log), "--json", "--node", "gpu-node-07"], capsys)
    assert code == 0
    (item,) = json.loads(out)
    assert tuple(item) == JSON_FIELDS
    assert tuple(item)[:8] == (
        "category",
        "blame",
        "component",
        "xid",
        "severity",
        "action",
        "line",
        "confidence",
    )
    assert item["category"] == "gpu.hardware"
    assert item["xid"] == 79
    assert item["node"] == "gpu-node-07"
    assert item["pci_bus_id"] == "00000000:A1:00.0"


def test_table_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "dmesg.log"
    log.write_text(XID79)
    code, out, _ = run(["explain", str(log)], capsys)
    assert code == 0
    assert "critical" in out and "gpu.hardware" in out and "reboot_node" in out
    assert "GPU has fallen off the bus" in out


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("OSError: [Errno 28] No space left on device\n"))
    code, out, _ = run(["explain", "-", "--json"], capsys)
    assert code == 0
    assert [f["category"] for f in json.loads(out)] == ["host.storage"]


def test_nothing_found_still_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "quiet.log"
    log.write_text("all good\n")
    assert run(["explain", str(log), "--json"], capsys)[:2] == (0, "[]\n")
    code, out, _ = run(["explain", str(log)], capsys)
    assert (code, out.strip()) == (0, "nothing recognised")


def test_binary_file_is_read_without_crashing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = tmp_path / "core"
    blob.write_bytes(bytes(range(256)) * 64 + XID79.encode())
    code, out, _ = run(["explain", str(blob), "--json"], capsys)
    assert code == 0
    assert [f["xid"] for f in json.loads(out)] == [79]


def test_missing_file_is_a_clear_error_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.log"
    code, out, err = run(["explain", str(missing)], capsys)
    assert code == 2
    assert out == ""
    assert str(missing) in err and "No such file" in err


def test_real_sample_through_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        ["explain", str(FIXTURES / "dcgmi_diag_failures_stas00.txt"), "--json"], capsys
    )
    assert code == 0
    assert json.loads(out)[0]["gpu"] == 3
