"""How webhook secrets and URLs are sealed at rest, read from TG_WEBHOOK_* variables.

trainguard/settings.py lists this class with every other role's (`settings_classes`) for the
check of unknown TG_* names; it lives here so that `sealing.default_sealer` reads it without
importing the composition root.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class WebhookSettings(BaseSettings):
    """How webhook secrets and URLs are sealed at rest (every process that reads them)."""

    model_config = SettingsConfigDict(env_prefix="TG_WEBHOOK_", extra="ignore")

    key: SecretStr | None = Field(
        None, description="Fernet key sealing stored webhook URLs and secrets. Never logged."
    )
    key_file: Path = Field(
        Path(".tg/webhook.key"),
        description="Where the key is read from when TG_WEBHOOK_KEY is unset (created, 0600, "
        "on first use: give the API and the action engine the same file).",
    )
