"""Console settings, read from TG_CONSOLE_* environment variables."""

from __future__ import annotations

import functools
import os

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ConsoleSettings(BaseSettings):
    """The Streamlit console (`trainguard console`) and the API it reads."""

    model_config = SettingsConfigDict(env_prefix="TG_CONSOLE_", extra="ignore")

    api_url: str = Field(
        "http://127.0.0.1:8700",
        pattern=r"^https?://[^\s]+$",
        description="Base URL of the TrainGuard REST API.",
    )
    token: SecretStr = Field(
        SecretStr(""), description="Bearer token; empty: ask in the sidebar. Never logged."
    )
    token_fd: int | None = Field(
        None,
        ge=3,
        description=(
            "Pipe to read the token from instead (`trainguard console` passes it so, not in "
            "the console's environment); read once per process."
        ),
    )
    timeout_s: float = Field(10.0, gt=0, le=120, description="Per-request timeout.")
    refresh_s: int = Field(30, ge=0, le=3600, description="Auto-refresh interval; 0 turns it off.")
    host: str = Field("127.0.0.1", description="Listen address of the console (loopback).")
    port: int = Field(8701, ge=1, le=65535, description="Listen port of the console.")

    @model_validator(mode="after")
    def _token_from_pipe(self) -> ConsoleSettings:
        if self.token_fd is not None and not self.token.get_secret_value():
            self.token = SecretStr(read_token_fd(self.token_fd))
        return self


@functools.cache
def read_token_fd(fd: int) -> str:
    """Return the token written into a pipe, reading it to the end and closing it (once).

    After this no other process can read it there: it lives only in this one's memory.
    """
    try:
        with os.fdopen(fd, "rb") as pipe:
            return pipe.read(65_536).decode().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the token from file descriptor {fd}: {exc}") from exc
