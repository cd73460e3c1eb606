"""Webhook URLs and secrets sealed at rest, and the masked form shown instead of a URL.

A Slack or Teams incoming-webhook URL is itself the credential (whoever has it can post),
so the stored URL and the stored secret are both sealed with Fernet (AES-128-CBC with an
HMAC-SHA256 tag, from `cryptography`): the column holds `fernet:` and the token. The key
comes from TG_WEBHOOK_KEY, else from TG_WEBHOOK_KEY_FILE (default `.tg/webhook.key`),
created with mode 0600 on first use; every process that reads subscriptions (the API,
`trainguard act`) needs the same key.

Rows stored before sealing hold plaintext: a value without the prefix is read as it is, so
an upgrade changes nothing for them, and `reseal_subscriptions` (run by `trainguard api` at
start) rewrites them sealed and deletes the plaintext rows. A sealed value that the key
cannot open (another key) raises `SealError`, never yields garbage.

Outside the store a URL is shown only as `mask_url` (scheme, host, port and at most a
first path word) with its `fingerprint`; the API, the audit and the logs use those.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.fernet import Fernet, InvalidToken

from actions.webhooks.settings import WebhookSettings

log = logging.getLogger(__name__)
PREFIX = "fernet:"
_WORD = re.compile(r"[a-z]{1,16}")  # a first path segment shown as is (services, api, hook)


class SealError(ValueError):
    """A sealed value this key cannot open (sealed with another key, or altered)."""


class Sealer:
    """Seals and opens stored webhook values with one Fernet key."""

    def __init__(self, key: bytes | str) -> None:
        try:
            self._fernet = Fernet(key)
        except ValueError as exc:
            raise ValueError("the webhook key is not a Fernet key (base64 of 32 bytes)") from exc

    def seal(self, plain: str) -> str:
        """Return the stored form of a value."""
        return PREFIX + self._fernet.encrypt(plain.encode()).decode()

    def open(self, stored: str) -> str:
        """Return the value a stored form holds (plaintext from before sealing as it is)."""
        if not is_sealed(stored):
            return stored
        try:
            return self._fernet.decrypt(stored.removeprefix(PREFIX).encode()).decode()
        except InvalidToken as exc:
            raise SealError("sealed with another webhook key (TG_WEBHOOK_KEY[_FILE])") from exc


def is_sealed(stored: str) -> bool:
    """Say whether a stored value is sealed (else it is plaintext from before sealing)."""
    return stored.startswith(PREFIX)


_cache: dict[tuple[str, Path], Sealer] = {}
_lock = threading.Lock()


def default_sealer() -> Sealer:
    """Return the sealer of this process's TG_WEBHOOK_* settings (the key file made if none)."""
    settings = WebhookSettings()
    secret = settings.key.get_secret_value() if settings.key else ""
    with _lock:
        sealer = _cache.get((secret, settings.key_file))
        if sealer is None:
            sealer = Sealer(secret or _key_file(settings.key_file))
            _cache[(secret, settings.key_file)] = sealer
    return sealer


def _key_file(path: Path) -> bytes:
    """Return the key in `path`, creating the file (0600, exclusively) if there is none."""
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as out:
        out.write(key + b"\n")
    log.warning(
        "created the webhook key %s: give every process that reads webhooks the same key", path
    )
    return key


def mask_url(url: str) -> str:
    """Return a URL with everything that may be a credential replaced by an ellipsis.

    Kept: scheme, host, port and a first path segment of at most 16 lowercase letters:
    `https://hooks.slack.com/services/T0/B0/XX` -> `https://hooks.slack.com/services/…`.
    """
    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port
    except ValueError:
        port = None
    shown = f"{parts.scheme}://{host}" + (f":{port}" if port else "")
    segments = parts.path.split("/")[1:]
    if segments and _WORD.fullmatch(segments[0]):
        shown += "/" + segments[0]
        segments = segments[1:]
    if any(segments):
        shown += "/…"
    if parts.query or parts.fragment:
        shown += "?…"
    return shown


def fingerprint(value: str) -> str:
    """Return a short, one-way tag of a value: equal tags, same value (for telling URLs apart)."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]
