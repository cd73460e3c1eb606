"""The ingest-* and stacks commands on real fixtures, printing events instead of publishing."""

from __future__ import annotations

from ingest.schema import decode_event
from tests.readers_fixtures import FIXTURES, REAL_SAMPLES
from trainguard.cli import main


def _events(capsys):
    return [decode_event(line) for line in capsys.readouterr().out.splitlines()]


def test_ingest_logs_prints_steps(tmp_path, capsys):
    log = tmp_path / "rank0.log"
    log.write_text((FIXTURES / "train_log_lines.txt").read_text())
    assert main(["ingest-logs", "--print", "--job", "j1", "--node", "n1", str(log)]) == 0
    steps = _events(capsys)
    assert len(steps) == 11 and {s.kind for s in steps} == {"train_step"}
    assert {s.node for s in steps} == {"n1"}


def test_ingest_fr_and_ras_print_collective_progress(capsys):
    assert main(["ingest-fr", "--print", "--job", "j1", str(FIXTURES / "fr_gloo_hang")]) == 0
    assert {e.rank for e in _events(capsys)} == {0, 1, 2, 3}
    text = REAL_SAMPLES / "flight_recorder_fr_trace_missing_ranks_pytorch_pr140969.txt"
    assert main(["ingest-fr", "--print", "--job", "j1", str(text)]) == 0
    assert [e.rank for e in _events(capsys)] == [0, 1, 2]
    ras = REAL_SAMPLES / "nccl_ras_mismatch_nccl_issue1911.txt"
    assert main(["ingest-ras", "--print", "--job", "j1", str(ras)]) == 0
    assert [e.rank for e in _events(capsys)] == [12, 13]
    ras_json = FIXTURES / "nccl_ras_json_stall.txt"
    assert main(["ingest-ras", "--print", "--job", "j1", str(ras_json)]) == 0
    assert [(e.rank, e.state.value) for e in _events(capsys)] == [(4, "started"), (5, "completed")]


def test_ingest_ras_refuses_broken_json(tmp_path, capsys):
    bad = tmp_path / "ras.json"
    bad.write_text('{\n  "nccl_version": "2.29.7",\n')
    assert main(["ingest-ras", "--print", "--job", "j1", str(bad)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_stacks_lists_the_outlier_first(capsys):
    assert main(["stacks", str(REAL_SAMPLES / "pyspy_hang_dump_bloom176b_eval_deadlock.txt")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("OUTLIER") and "688514" in first and "_try_get_data" in first
