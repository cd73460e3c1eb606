"""Bearer-token authentication with roles; tokens are stored as SHA-256 hashes only.

Tokens are 256-bit random strings, so a plain SHA-256 is enough (no password stretching
needed) and lookups stay one indexed read.

What a running API process remembers, and how long:

- A verified token is trusted for up to `cache_s` (default 30 s) without re-reading it, but
  only while the *revocation check* is fresh: at most every `check_s` (default 2 s), one
  indexed query asks the store which of the trusted tokens were revoked since, and drops
  those. A revocation made anywhere (another worker, `trainguard api token-revoke` on
  another host) is thus seen by every process within `check_s` (twice that if it lands
  while the token is first being verified). A short TTL alone would cost one query per
  token per TTL and still leave a TTL-long window; the check is one query per `check_s` for
  all tokens together, skipped when none is trusted, and the request fast path (`known`)
  stays a dictionary read: it trusts nothing once a check is due, so the next request runs
  the check (in a worker thread) before anything is served from memory. When the store is
  down the check fails and so does authentication (503): the API fails closed.
- A token that is not even well-formed (`tg_` and 43 URL-safe characters) is refused
  without a query and without a cache entry.
- A well-formed unknown token costs one query, then is remembered as unknown for
  `unknown_s` (default 5 s) so a client retrying it does not cost a query each time; at
  most `max_unknown` such tokens are kept (least recently asked dropped first), so random
  tokens cannot grow the process.
- Trusted tokens are bounded the same way (`MAX_KNOWN`), though only real tokens get there.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections import OrderedDict
from datetime import UTC, datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from analytics.api_tables import API_TOKENS
from analytics.store import Store

TOKEN_PREFIX = "tg_"
_SHAPE = re.compile(r"tg_[A-Za-z0-9_-]{43}")  # TOKEN_PREFIX + secrets.token_urlsafe(32)
MAX_KNOWN = 10_000  # trusted tokens remembered per process
MAX_UNKNOWN = 10_000  # unknown tokens remembered per process
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


def well_formed(token: str) -> bool:
    """Say whether a token has the shape `TokenBook.create` gives (else it is never queried)."""
    return _SHAPE.fullmatch(token) is not None


class TokenBook:
    """Creates, verifies, lists and revokes API tokens in the store (module doc: caching)."""

    def __init__(
        self,
        store: Store,
        cache_s: float = 30.0,
        check_s: float = 2.0,
        unknown_s: float = 5.0,
        max_unknown: int = MAX_UNKNOWN,
    ) -> None:
        self.store = store
        self.cache_s, self.check_s, self.unknown_s = cache_s, check_s, unknown_s
        self.max_unknown = max_unknown
        self._known: OrderedDict[str, tuple[float, Principal]] = OrderedDict()
        self._unknown: OrderedDict[str, float] = OrderedDict()
        self._checked = float("-inf")  # when the last revocation check started
        self._lock = threading.Lock()
        self._check_lock = threading.Lock()

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
            self._known.clear()
        return len(live)

    def verify(self, token: str) -> Principal | None:
        """Return who a token belongs to, or None if it is malformed, unknown or revoked.

        May query the store (the revocation check, an unknown token): call it off the event
        loop.
        """
        if not well_formed(token):
            return None
        key = hash_token(token)
        self._check_revocations()
        now = time.monotonic()
        with self._lock:
            hit = self._known.get(key)
            if hit is not None and now - hit[0] < self.cache_s:
                self._known.move_to_end(key)
                return hit[1]
            seen = self._unknown.get(key)
            if seen is not None and now - seen < self.unknown_s:
                self._unknown.move_to_end(key)
                return None
        principal = self._read(key)
        with self._lock:
            if principal is None:
                self._unknown[key] = now
                self._unknown.move_to_end(key)
                while len(self._unknown) > self.max_unknown:
                    self._unknown.popitem(last=False)
            else:
                self._unknown.pop(key, None)
                self._known[key] = (now, principal)
                self._known.move_to_end(key)
                while len(self._known) > MAX_KNOWN:
                    self._known.popitem(last=False)
        return principal

    def known(self, token: str) -> Principal | None:
        """Return who a recently verified token belongs to, never asking the store (else None).

        None as well once a revocation check is due, so that `verify` runs it first.
        """
        now = time.monotonic()
        if now - self._checked >= self.check_s or not well_formed(token):
            return None
        hit = self._known.get(hash_token(token))
        if hit is None or now - hit[0] >= self.cache_s:
            return None
        return hit[1]

    def cached(self) -> tuple[int, int]:
        """Return how many tokens are remembered as (trusted, unknown)."""
        with self._lock:
            return len(self._known), len(self._unknown)

    def _check_revocations(self) -> None:
        """Drop the trusted tokens revoked since the last check, if it is `check_s` old."""
        if time.monotonic() - self._checked < self.check_s:
            return
        with self._check_lock:
            started = time.monotonic()
            if started - self._checked < self.check_s:
                return  # another thread checked while this one waited
            with self._lock:
                trusted = tuple(self._known)
            if trusted:
                frame = self.store.query_df(
                    f"SELECT DISTINCT token_hash FROM `{self.store.database}`."
                    f"`{API_TOKENS.name}` WHERE revoked = 1 AND token_hash IN %(h)s",
                    {"h": trusted},
                )
                with self._lock:
                    for token_hash in frame["token_hash"].tolist():
                        self._known.pop(str(token_hash), None)
            self._checked = started

    def _read(self, key: str) -> Principal | None:
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
        return principal

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
