"""Console settings, read from TG_CONSOLE_* environment variables."""

from __future__ import annotations

from pydantic import Field, SecretStr
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
    timeout_s: float = Field(10.0, gt=0, le=120, description="Per-request timeout.")
    refresh_s: int = Field(30, ge=0, le=3600, description="Auto-refresh interval; 0 turns it off.")
    host: str = Field("127.0.0.1", description="Listen address of the console (loopback).")
    port: int = Field(8701, ge=1, le=65535, description="Listen port of the console.")
