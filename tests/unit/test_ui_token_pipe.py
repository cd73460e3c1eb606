"""The console reads its token from the pipe `trainguard console` hands it, once."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from trainguard.console_cli import console_env
from ui.settings import ConsoleSettings, read_token_fd


@pytest.fixture(autouse=True)
def _fresh_process():
    read_token_fd.cache_clear()  # a console process reads its pipe once; each test is one
    yield
    read_token_fd.cache_clear()


def test_the_token_comes_from_the_pipe_once_and_the_pipe_is_closed(monkeypatch):
    read_end, write_end = os.pipe()
    os.write(write_end, b"tg_from_pipe\n")
    os.close(write_end)
    monkeypatch.delenv("TG_CONSOLE_TOKEN", raising=False)
    monkeypatch.setenv("TG_CONSOLE_TOKEN_FD", str(read_end))
    assert ConsoleSettings().token.get_secret_value() == "tg_from_pipe"
    assert ConsoleSettings().token.get_secret_value() == "tg_from_pipe"  # every rerun
    with pytest.raises(OSError):
        os.fstat(read_end)  # read to the end and closed: nobody else can read it there


def test_an_unreadable_token_pipe_is_a_settings_error(monkeypatch):
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)
    monkeypatch.delenv("TG_CONSOLE_TOKEN", raising=False)
    monkeypatch.setenv("TG_CONSOLE_TOKEN_FD", str(read_end))
    with pytest.raises(ValidationError, match="cannot read the token"):
        ConsoleSettings()


def test_the_console_environment_carries_no_token(monkeypatch):
    monkeypatch.setenv("TG_CONSOLE_TOKEN", "tg_secret")
    assert "tg_secret" not in console_env({"TG_CONSOLE_API_URL": "http://x"}).values()
