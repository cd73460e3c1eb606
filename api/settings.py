"""Settings of the REST API process (`trainguard api`), read from TG_API_* variables.

trainguard/settings.py lists this class with every other role's (`settings_classes`) for the
check of unknown TG_* names; it lives here so that `api.server` reads its limits without
importing the composition root.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ApiSettings(BaseSettings):
    """The REST API process (`trainguard api`)."""

    model_config = SettingsConfigDict(env_prefix="TG_API_", extra="ignore")

    host: str = Field("127.0.0.1", description="Listen address (loopback by default).")
    port: int = Field(8700, ge=1, le=65535)
    cache_s: float = Field(5.0, ge=0, le=300, description="Age of fleet snapshots served.")
    workers: int = Field(1, ge=1, le=64, description="Server processes (each with its caches).")
    store_connections: int = Field(
        8, ge=1, le=64, description="ClickHouse connections per worker (queries at once)."
    )
    token_cache_s: float = Field(
        30.0, ge=0, le=3600, description="Longest a verified token is trusted without a re-read."
    )
    token_check_s: float = Field(
        2.0,
        ge=0.1,
        le=60,
        description="How often a running API checks the store for revocations of the tokens "
        "it trusts (the longest a revoked token keeps working).",
    )
    max_body_bytes: int = Field(
        1 << 20, ge=1024, le=1 << 30, description="Largest request body (bigger: 413)."
    )
    max_url_bytes: int = Field(
        16 << 10, ge=1024, le=1 << 20, description="Longest path and query (longer: 414)."
    )
    max_header_bytes: int = Field(
        64 << 10, ge=4096, le=1 << 20, description="Largest request head (bigger: 431)."
    )
    risk_horizon_h: int = Field(
        48, ge=1, le=720, description="Failure-risk horizon shown (`predict score` writes it)."
    )
    generation_file: Path | None = Field(
        None,
        description=(
            "File through which the workers count writes, so a write in one drops the "
            "cached lists of all (`trainguard api` picks one for its workers)."
        ),
    )
    store_generation_ms: int = Field(
        500,
        ge=0,
        le=60_000,
        description=(
            "How often (ms) an API instance reads the write count the other instances store "
            "in ClickHouse; a write through any instance is seen by all within this bound "
            "(0: instances on other hosts are not followed, only this host's workers)."
        ),
    )
    metrics_port: int | None = Field(
        None,
        ge=1,
        le=65535,
        description="Serve /metrics of all workers here (a port of its own, no token).",
    )
    metrics_host: str = Field(
        "127.0.0.1", description="Listen address of /metrics (0.0.0.0: every interface)."
    )
