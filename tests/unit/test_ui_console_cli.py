"""`trainguard console`: the Streamlit command line and the settings it comes from."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from trainguard.cli import build_parser
from trainguard.console_cli import APP, cmd_console, streamlit_argv
from ui.settings import ConsoleSettings


def test_streamlit_runs_headless_on_loopback_at_the_configured_port(monkeypatch):
    monkeypatch.setenv("TG_CONSOLE_PORT", "9123")
    argv = streamlit_argv(ConsoleSettings())
    assert argv[1:5] == ["-m", "streamlit", "run", str(APP)] and APP.name == "app.py"
    assert {"--server.headless=true", "--server.address=127.0.0.1", "--server.port=9123"} <= set(
        argv
    )
    assert "--client.showErrorDetails=none" in argv  # never a traceback on screen


def test_console_is_a_subcommand():
    args = build_parser().parse_args(["console"])
    assert args.func is cmd_console


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TG_CONSOLE_API_URL", "127.0.0.1:8700"),
        ("TG_CONSOLE_PORT", "0"),
        ("TG_CONSOLE_REFRESH_S", "-1"),
    ],
)
def test_bad_settings_are_refused(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        ConsoleSettings()


def test_the_token_is_never_shown(monkeypatch):
    monkeypatch.setenv("TG_CONSOLE_TOKEN", "tg_secret")
    settings = ConsoleSettings()
    assert settings.token.get_secret_value() == "tg_secret" and "tg_secret" not in repr(settings)
