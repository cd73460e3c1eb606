"""`trainguard console`: serve the Streamlit incident console (an API client only)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from ui.settings import ConsoleSettings

APP = Path(__file__).resolve().parents[1] / "ui" / "app.py"


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    """Register `console`."""
    p = sub.add_parser(
        "console",
        help="serve the incident console (Streamlit) over the REST API",
        description=(
            "Serve the console on TG_CONSOLE_HOST:TG_CONSOLE_PORT (default 127.0.0.1:8701); "
            "it reads the API at TG_CONSOLE_API_URL with the token TG_CONSOLE_TOKEN."
        ),
    )
    p.set_defaults(func=cmd_console)


def streamlit_argv(settings: ConsoleSettings) -> list[str]:
    """Return the command line that serves the console, headless, on the configured address."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.headless=true",
        f"--server.address={settings.host}",
        f"--server.port={settings.port}",
        "--server.runOnSave=false",
        "--server.fileWatcherType=none",
        "--browser.gatherUsageStats=false",
        "--client.showErrorDetails=none",
        "--client.toolbarMode=viewer",
        "--global.developmentMode=false",
    ]


def console_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Return the console process's environment (the checkout importable, plus `extra`)."""
    root = str(APP.parents[1])
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH")))),
        **(extra or {}),
    }


def start_console(api_url: str, token: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start the console for an API (the live demo's); return the process and its URL."""
    extra = {"TG_CONSOLE_API_URL": api_url, "TG_CONSOLE_TOKEN": token}
    env = console_env(extra)
    settings = ConsoleSettings(api_url=api_url)
    proc = subprocess.Popen(
        streamlit_argv(settings), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return proc, f"http://{settings.host}:{settings.port}"


def cmd_console(args: argparse.Namespace) -> int:
    """Serve until interrupted; return Streamlit's exit status."""
    settings = ConsoleSettings()
    env = console_env()
    print(f"TrainGuard console on http://{settings.host}:{settings.port}", file=sys.stderr)
    try:
        return subprocess.call(streamlit_argv(settings), env=env)
    except KeyboardInterrupt:
        return 0
