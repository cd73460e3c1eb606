"""Bearer-token authentication with roles; tokens are stored as SHA-256 hashes only.

Tokens are 256-bit random strings, so a plain SHA-256 is enough (no password stretching
needed) and lookups stay one indexed read. Verified tokens are cached for `cache_s` so the
request path rarely touches ClickHouse; a revocation takes effect within that time.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from analytics.api_tables import API_TOKENS
from analytics.store import Store

TOKEN_PREFIX = "tg_"
_TYPES = {c.name: c.type for c in API_TOKENS.columns}


class Role(StrEnum):
    """What a caller may do: viewers read, operators act on incidents, admins configure."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def level(self) -> int:
        """Return the role's rank (higher includes lower)."""
        return _LEVELS[self]


_LEVELS = {Role.VIEWER: 0, Role.OPERATOR: 1, Role.ADMIN: 2}


class Principal(BaseModel):
    """The authenticated caller."""

    name: str = Field(description="Token name (a person or a tool).")
    role: Role


class TokenInfo(BaseModel):
    """A token as listed (never the secret)."""

    name: str
    role: Role
    created: datetime
    revoked: bool


def hash_token(token: str) -> str:
    """Return the stored form of a token."""
    return hashlib.sha256(token.encode()).hexdigest()


def bearer_token(header: str) -> str | None:
    """Return the token of an `Authorization: Bearer <token>` header value, else None."""
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class TokenBook:
    """Creates, verifies, lists and revokes API tokens in the store."""

    def __init__(self, store: Store, cache_s: float = 30.0) -> None:
        self.store = store
        self.cache_s = cache_s
        self._cache: dict[str, tuple[float, Principal | None]] = {}
        self._lock = threading.Lock()

    def create(self, name: str, role: Role) -> str:
        """Create a token and return it; it is shown once and stored hashed."""
        if not name or len(name) > 200:
            raise ValueError("a token name is 1-200 characters")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._write(hash_token(token), name, role, revoked=False, version=1)
        return token

    def revoke(self, name: str) -> int:
        """Revoke every live token with this name; return how many."""
        live = [t for t in self._rows() if t[1] == name and not t[4]]
        for token_hash, _name, role, _created, _revoked, version in live:
            self._write(token_hash, name, Role(role), revoked=True, version=version + 1)
        with self._lock:
            self._cache.clear()
        return len(live)

    def verify(self, token: str) -> Principal | None:
        """Return who a token belongs to, or None if it is unknown or revoked."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        key = hash_token(token)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[0] < self.cache_s:
            return hit[1]
        frame = self.store.query_df(
            f"SELECT argMax(name, version) AS n, argMax(role, version) AS r, "
            f"argMax(revoked, version) AS x FROM `{self.store.database}`.`{API_TOKENS.name}` "
            f"WHERE token_hash = %(h)s GROUP BY token_hash",
            {"h": key},
        )
        principal = None
        for name, role, revoked in frame.itertuples(index=False):
            if not int(revoked):
                principal = Principal(name=str(name), role=Role(str(role)))
        with self._lock:
            self._cache[key] = (now, principal)
        return principal

    def known(self, token: str) -> Principal | None:
        """Return who a recently verified token belongs to, never asking the store (else None)."""
        hit = self._cache.get(hash_token(token)) if token.startswith(TOKEN_PREFIX) else None
        if hit is None or time.monotonic() - hit[0] >= self.cache_s:
            return None
        return hit[1]

    def tokens(self) -> list[TokenInfo]:
        """Return every token's name, role and state."""
        return [
            TokenInfo(
                name=str(n),
                role=Role(str(r)),
                created=datetime.fromtimestamp(c, UTC),
                revoked=bool(x),
            )
            for _h, n, r, c, x, _v in self._rows()
        ]

    def _rows(self) -> list[tuple[str, str, str, int, int, int]]:
        frame = self.store.query_df(
            f"SELECT token_hash, argMax(name, version) AS n, argMax(role, version) AS r, "
            f"toUInt32(min(created)) AS c, argMax(revoked, version) AS x, max(version) AS v "
            f"FROM `{self.store.database}`.`{API_TOKENS.name}` GROUP BY token_hash ORDER BY c, n"
        )
        return [
            (str(h), str(n), str(r), int(c), int(x), int(v))
            for h, n, r, c, x, v in frame.itertuples(index=False)
        ]

    def _write(self, token_hash: str, name: str, role: Role, revoked: bool, version: int) -> None:
        self.store.insert(
            API_TOKENS.name,
            {
                "token_hash": [token_hash],
                "name": [name],
                "role": [role.value],
                "created": [int(time.time())],
                "revoked": [int(revoked)],
                "version": [version],
            },
            _TYPES,
        )
