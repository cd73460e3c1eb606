"""`trainguard console`: serve the Streamlit incident console (an API client only).

The launcher supervises Streamlit: the child runs in its own process group, SIGTERM and
SIGINT to the launcher stop that whole group (SIGTERM, then SIGKILL after a grace period)
before the launcher exits, and on Linux the child also gets SIGTERM if the launcher dies
without that (SIGKILL). The API token reaches the child through a pipe it reads once,
never through its environment or command line.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import IO

from ui.settings import ConsoleSettings

APP = Path(str(resources.files("ui") / "app.py"))
STOP_GRACE_S = 10.0
_PR_SET_PDEATHSIG = 1


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
    """Return the console process's environment (the checkout importable, plus `extra`).

    The token is left out: `spawn_console` hands it over through a pipe.
    """
    root = str(APP.parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH")))),
        **(extra or {}),
    }
    env.pop("TG_CONSOLE_TOKEN", None)
    env.pop("TG_CONSOLE_TOKEN_FD", None)
    return env


def _die_with_parent(parent: int) -> Callable[[], None]:
    """Return a preexec_fn that makes the child get SIGTERM when `parent` dies (Linux)."""

    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # died before prctl: nobody would tell us
            os._exit(1)

    return preexec


def spawn_console(
    settings: ConsoleSettings,
    token: str,
    extra_env: dict[str, str] | None = None,
    stdout: IO[bytes] | int | None = None,
    die_with_parent: bool = False,
) -> subprocess.Popen[bytes]:
    """Start Streamlit in a new session (its own process group), the token through a pipe.

    `die_with_parent` must only be used by a single-threaded caller (it needs a preexec_fn).
    """
    env = console_env(extra_env)
    token_bytes = token.encode()
    if len(token_bytes) > 4096:  # a pipe holds 64 KiB; tokens are far shorter
        raise ValueError("TG_CONSOLE_TOKEN is longer than 4096 bytes")
    read_end, write_end = os.pipe() if token_bytes else (-1, -1)
    if token_bytes:
        env["TG_CONSOLE_TOKEN_FD"] = str(read_end)
    try:
        proc = subprocess.Popen(
            streamlit_argv(settings),
            env=env,
            stdout=stdout,
            stderr=subprocess.STDOUT if stdout is not None else None,
            pass_fds=(read_end,) if token_bytes else (),
            start_new_session=True,
            preexec_fn=(  # noqa: PLW1509 (single-threaded callers only, see the docstring)
                _die_with_parent(os.getpid())
                if die_with_parent and sys.platform == "linux"
                else None
            ),
        )
    finally:
        if token_bytes:
            os.close(read_end)
    if token_bytes:
        try:
            os.write(write_end, token_bytes)
        finally:
            os.close(write_end)
    return proc


def stop_console(proc: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> int:
    """Stop the console's process group: SIGTERM, then SIGKILL after grace_s; return its status."""
    if proc.poll() is None:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
    _signal_group(proc.pid, signal.SIGKILL)  # anything Streamlit started and left behind
    return proc.returncode


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except ProcessLookupError:
        return  # the group is gone: nothing left to stop


def start_console(api_url: str, token: str) -> tuple[subprocess.Popen[bytes], str]:
    """Start the console for an API (the live demo's); return the process and its URL."""
    settings = ConsoleSettings(api_url=api_url)
    proc = spawn_console(
        settings, token, {"TG_CONSOLE_API_URL": api_url}, stdout=subprocess.DEVNULL
    )
    return proc, f"http://{settings.host}:{settings.port}"


def cmd_console(args: argparse.Namespace) -> int:
    """Serve until SIGTERM or SIGINT (then stop Streamlit first); return its exit status."""
    settings = ConsoleSettings()
    stop = threading.Event()

    def on_signal(_signum: int, _frame: object) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        proc = spawn_console(settings, settings.token.get_secret_value(), die_with_parent=True)
        print(f"TrainGuard console on http://{settings.host}:{settings.port}", file=sys.stderr)
        try:
            while not stop.is_set():
                try:
                    proc.wait(0.2)
                    break
                except subprocess.TimeoutExpired:
                    continue
        finally:
            code = stop_console(proc)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0 if stop.is_set() else code
