"""`trainguard predict`: bad input ends with one clear line and exit status 2."""

from __future__ import annotations

import pytest

from trainguard.cli import main


@pytest.mark.parametrize(
    "argv,message",
    [
        (["predict", "evaluate", "--days", "3"], "--days must be in 8..30"),
        (["predict", "evaluate", "--target-precision", "1.5"], "--target-precision must be"),
        (["predict", "score", "--model", "/nonexistent/model.pkl"], "cannot read model"),
        (["predict", "score", "--model", "m.pkl", "--every-min", "0"], "--every-min must be"),
        (["predict", "score", "--model", "m.pkl", "--min-risk", "2"], "--min-risk must be in"),
        (
            ["predict", "score", "--model", "m.pkl", "--every-min", "5", "--end", "2026-09-02"],
            "scores at the current time",
        ),
        (
            [
                "predict",
                "train",
                "--start",
                "yesterday",
                "--end",
                "2026-09-02",
                "--truth",
                "t.json",
                "--model",
                "m.pkl",
            ],
            "not an ISO 8601 time",
        ),
        (
            [
                "predict",
                "train",
                "--start",
                "2026-09-01",
                "--end",
                "2026-09-02",
                "--truth",
                "/nonexistent/truth.json",
                "--model",
                "m.pkl",
            ],
            "no such file",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_model_file_that_is_not_a_predictor_is_refused(tmp_path, capsys):
    bogus = tmp_path / "model.pkl"
    bogus.write_bytes(b"not a pickle")
    assert main(["predict", "score", "--model", str(bogus)]) == 2
    assert "cannot read model" in capsys.readouterr().err


def test_an_unreachable_store_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("TG_CLICKHOUSE_MODE", "server")
    monkeypatch.setenv("TG_CLICKHOUSE_HOST", "127.0.0.1")
    monkeypatch.setenv("TG_CLICKHOUSE_PORT", "1")  # nothing listens there
    argv = ["predict", "train", "--start", "2026-09-01", "--end", "2026-09-02", "--model", "m.pkl"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "unreachable" in err and len(err.splitlines()) == 1
