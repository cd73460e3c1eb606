"""Unknown TG_* variables stop `trainguard` (trainguard.settings.check_environment)."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from api.settings import ApiSettings
from trainguard import cli
from trainguard.settings import (
    TOOLING_VARIABLES,
    check_environment,
    env_names,
    known_env_names,
    settings_classes,
    unknown_env_names,
)
from ui.settings import ConsoleSettings

REPO = Path(__file__).resolve().parents[2]
TG_NAME = re.compile(r"(?<![A-Za-z0-9_])TG_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
PRODUCTION = "deploy/production/"


def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("TG_"):
            monkeypatch.delenv(name)


def test_a_misspelt_name_stops_the_cli_with_a_suggestion_and_the_valid_names(monkeypatch, capsys):
    _clean_env(monkeypatch)
    monkeypatch.setenv("TG_API_PROT", "8800")
    assert cli.main(["explain", "--help"]) == 2  # refused before any argument is parsed
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("trainguard: unknown environment variable TG_API_PROT")
    assert "did you mean TG_API_PORT" in first
    assert "TG_AGENT_KERNEL_LOG" in err and "TG_CONSOLE_API_URL" in err  # every role listed
    assert "TG_ACT_POLICY" in err and "TG_SINK_METRICS_HOST" in err


def test_every_unknown_name_is_reported_at_once(monkeypatch):
    _clean_env(monkeypatch)
    for name in ("TG_API_URL", "TG_ACT_DRY_RUN", "TG_NOTHING_LIKE_IT"):
        monkeypatch.setenv(name, "1")
    message = check_environment()
    assert message is not None
    lines = message.splitlines()
    assert lines[0].endswith(
        "TG_ACT_DRY_RUN (did you mean TG_ACT_GROUP or TG_ACT_MODE or TG_ACT_OPERATOR_URL?)"
    )
    assert "TG_API_URL (did you mean" in lines[1] and "TG_CONSOLE_API_URL" in lines[1]
    assert lines[2] == "trainguard: unknown environment variable TG_NOTHING_LIKE_IT"


def test_the_process_exits_2(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "TG_CLICKHOUSE_PROT": "9000", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "trainguard", "explain", "-"],
        input="",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "did you mean TG_CLICKHOUSE_PORT" in proc.stderr


def test_known_names_and_other_variables_pass(monkeypatch):
    _clean_env(monkeypatch)
    monkeypatch.setenv("TG_API_PORT", "8800")
    monkeypatch.setenv("tg_console_port", "8801")  # the settings read names case-insensitively
    monkeypatch.setenv("TG_KAFKA_PORT", "19092")  # deploy/kafka.sh's, exported by services.sh
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm.conf")
    monkeypatch.setenv("TGX_NOT_OURS", "1")
    assert check_environment() is None
    assert unknown_env_names({"tg_api_prot": "1"}) == ["tg_api_prot"]


def test_the_names_come_from_every_settings_class():
    names = known_env_names()
    for cls in settings_classes():
        fields = env_names(cls)
        assert len(fields) == len(cls.model_fields)
        assert all(n.startswith("TG_") for n in fields), cls
    assert {"TG_AGENT_TRAIN_LOGS", "TG_CONSOLE_TOKEN_FD", "TG_EVENT_MAX_AGE_S"} <= names
    assert ConsoleSettings in settings_classes()
    assert set(TOOLING_VARIABLES) <= names


def test_every_service_bind_address_is_a_setting():
    names = known_env_names()
    assert ApiSettings().host == "127.0.0.1"
    assert {
        "TG_API_HOST",
        "TG_CONSOLE_HOST",
        "TG_SINK_METRICS_HOST",
        "TG_DIAGNOSE_METRICS_HOST",
    } <= names


QUOTED = ("tests/fixtures/explain/", "tests/fixtures/explain_review/")
"""Texts quoted from others (the real-log corpus, reviewers' breakers): the variables they name
are other projects' (a pull request's `TG_NCCL_INIT_RETRIES` in review41), not ours."""


def _names_in_repository(only: str | None = None) -> dict[str, set[str]]:
    """Return every TG_* name written in the checkout's files (tracked or not ignored)."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    found: dict[str, set[str]] = {}
    for name in files:
        if name == "tests/unit/test_env_check.py" or name.startswith(QUOTED):
            continue
        if (only is None) == name.startswith(PRODUCTION):
            continue
        try:
            text = (REPO / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # binary, or deleted in the working tree
            continue
        for match in TG_NAME.finditer(text):
            found.setdefault(match.group(), set()).add(name)
    return found


def test_every_name_used_in_the_repository_is_accepted():
    found = _names_in_repository()
    assert len(found) > 50  # the scan reads the scripts, tests and docs
    unknown = {
        name: sorted(files) for name, files in found.items() if name not in known_env_names()
    }
    assert unknown == {}, "add them to a settings class or TOOLING_VARIABLES"


def test_deploy_production_uses_only_known_names():
    found = _names_in_repository(only=PRODUCTION)
    assert {name for name in found if name not in known_env_names()} == set()


def test_subcommand_table_names_what_each_module_registers():
    for module_name, register, names in cli.SUBCOMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        getattr(importlib.import_module(module_name), register)(sub)
        assert tuple(sub.choices) == names, module_name


def test_a_command_whose_extra_is_missing_names_it(monkeypatch, capsys):
    real = importlib.import_module

    def without_fastapi(name: str, package: str | None = None) -> object:
        if name == "trainguard.api_cli":
            raise ModuleNotFoundError("No module named 'fastapi'", name="fastapi")
        return real(name, package)

    monkeypatch.setattr(cli.importlib, "import_module", without_fastapi)
    _clean_env(monkeypatch)
    assert cli.main(["api", "token-list"]) == 2
    assert capsys.readouterr().err.strip() == (
        "trainguard api needs the server extra (module fastapi is not installed): "
        "pip install 'trainguard[server]'"
    )


def test_a_missing_module_of_our_own_is_a_broken_install(monkeypatch):
    real = importlib.import_module

    def broken(name: str, package: str | None = None) -> object:
        if name == "trainguard.act_cli":
            raise ModuleNotFoundError("No module named 'actions.engine'", name="actions.engine")
        return real(name, package)

    monkeypatch.setattr(cli.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError):
        cli.build_parser()
