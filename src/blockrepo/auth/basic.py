"""HTTP Basic (RFC 7617) parsing and a bounded cache of recently verified credentials.

The cache is keyed by an HMAC of the login and the password under a per-process random key, so it never
holds a password. The HMAC's input is the login's length, the login, then the password, so that no two
(login, password) pairs share a key (with `login:password`, `a:b` + `c` and `a` + `b:c` would). Each entry
remembers the user's credentials version: a password change or disabling bumps the version in the
database; the authenticator compares it on every hit and verifies the password again when it moved.
Entries expire `ttl_seconds` after the password was verified (a hit does not extend that); the least
recently used entry goes when the cache is full. Requests that bring the same credentials while they are
being verified wait for that verification (`verifying`), so an expired entry costs one hash, not one per
connection of the client; wrong credentials verified meanwhile fail them all without a hash of their own,
and past `MAX_WAITING_FOR_ONE_CHECK` waiting requests a further one gets `PasswordHashingBusy` at once (a
waiting request holds a worker thread).
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from blockrepo.access.actor import Restriction
from blockrepo.errors import PasswordHashingBusy

# Requests that may wait for one verification of the same credentials (each holds a worker thread).
MAX_WAITING_FOR_ONE_CHECK = 8


@dataclass(frozen=True)
class Principal:
    """Who a request is authenticated as, before rights are loaded."""

    user_id: int
    login: str
    credentials_version: int
    via: str  # "basic", "session" or "token"
    # With a token: its public id, and how it narrows the owner's rights (None: it does not).
    token: str | None = None
    restriction: Restriction | None = None

    @property
    def credential(self) -> str:
        """What authenticated the request, as history records it: basic, session or token:<public id>."""
        return self.via if self.token is None else f"token:{self.token}"


def parse_basic(header: str) -> tuple[str, str] | None:
    """`Basic base64(user:password)` → (user, password); None if the header is not well-formed Basic."""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token:
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    login, sep, password = decoded.partition(":")
    if not sep:
        return None
    return login, password


def credential_message(login: str, password: str) -> bytes:
    """The HMAC input for a login and password: unambiguous, whatever characters either contains."""
    login_bytes = login.encode()
    return len(login_bytes).to_bytes(8, "big") + login_bytes + password.encode()


@dataclass
class _Flight:
    """The verification of one set of credentials: its turn, how many requests hold or await it, and
    whether a request that held it found the credentials wrong (the others then need no hash of their
    own: they sent the same credentials while that one was being checked)."""

    turn: threading.Lock = field(default_factory=threading.Lock)
    waiting: int = 0
    failed: bool = False


class CredentialCache:
    """LRU with a time-to-live; thread-safe. `clock` (monotonic seconds) is replaceable for tests."""

    def __init__(
        self, max_entries: int, ttl_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._key = secrets.token_bytes(32)
        self._max = max_entries
        self._ttl = ttl_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, tuple[float, Principal]] = OrderedDict()
        self._flights: dict[bytes, _Flight] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def digest(self, login: str, password: str) -> bytes:
        # The one-shot C function: `hmac.new(...).digest()` costs several times more (every Basic request).
        return hmac.digest(self._key, credential_message(login, password), "sha256")

    def get(self, digest: bytes) -> Principal | None:
        if self._max == 0:
            return None
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None:
                return None
            stored_at, principal = entry
            if self.clock() - stored_at > self._ttl:
                del self._entries[digest]
                return None
            self._entries.move_to_end(digest)
            return principal

    def put(self, digest: bytes, principal: Principal) -> None:
        if self._max == 0:
            return
        with self._lock:
            self._entries[digest] = (self.clock(), principal)
            self._entries.move_to_end(digest)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    @contextmanager
    def verifying(self, digest: bytes) -> Iterator[_Flight]:
        """Held while one request verifies these credentials: others with the same ones wait for it, up to
        `MAX_WAITING_FOR_ONE_CHECK` (then `PasswordHashingBusy`)."""
        with self._lock:
            flight = self._flights.get(digest)
            if flight is None:
                flight = self._flights[digest] = _Flight()
            elif flight.waiting >= MAX_WAITING_FOR_ONE_CHECK:
                raise PasswordHashingBusy(
                    "too many checks of the same credentials at once; retry shortly",
                    headers={"Retry-After": "1"},
                )
            flight.waiting += 1
        try:
            with flight.turn:
                yield flight
        finally:
            with self._lock:
                flight.waiting -= 1
                if flight.waiting == 0:
                    del self._flights[digest]

    def forget(self, digest: bytes) -> None:
        with self._lock:
            self._entries.pop(digest, None)

    def forget_user(self, user_id: int) -> None:
        with self._lock:
            for digest in [d for d, (_, p) in self._entries.items() if p.user_id == user_id]:
                del self._entries[digest]
