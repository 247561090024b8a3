"""Server-side sessions: ids with an idle timeout and an absolute lifetime, kept in a store that every
worker process shares (the database by default, Redis when configured).

A cookie holds 256 bits; stores only ever see its SHA-256 (`key`), so a leaked table or dump holds no
usable session id. A lookup is one read: the idle time stamp is written back at most every
`touch_interval` seconds (capped at a tenth of the idle timeout), so a session may expire up to that much
early, never late. Every lookup also checks the user's current state: a disabled account or a changed
password (a new credentials version) ends the session.

Logins (form, the Basic login paths) store their session at once, under a random id. A Basic request
elsewhere that brings no session gets a *signed* one instead (`start(..., deferred=True)`), which costs
no write: its cookie carries a random nonce, the user, the credentials version and the creation second,
authenticated by an HMAC under the server secret of the database (`server_secret`), so any worker or host
can check it. Its stored record is made the first time the cookie comes back; a client that never sends
it back leaves nothing behind. Ending a signed session that could still come back (logout, fixation)
leaves a tombstone until it could no longer be made, so an ended cookie never comes back to life.
"""

from __future__ import annotations

import base64
import datetime as dt
import enum
import hashlib
import hmac
import logging
import math
import os
import secrets
import struct
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Protocol

import orjson
import redis
from sqlalchemy import Connection, Engine, String, any_, bindparam, delete, insert, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.exc import IntegrityError

from blockrepo import metrics
from blockrepo.access.models import User
from blockrepo.access.repository import Revisions, acting_users
from blockrepo.auth.basic import Principal
from blockrepo.auth.models import AuthSession, ServerSecret
from blockrepo.revisions.models import CommittedState, RepositoryState
from blockrepo.settings import Settings
from blockrepo.storage.engine import DriverStatement

log = logging.getLogger("blockrepo.auth")

TOKEN_BYTES = 32
PURGE_INTERVAL_SECONDS = 60.0
# The credentials version of an ended session's tombstone: no account ever has it.
ENDED = -1
SIGNING_SECRET = "session_signing"
# A signed cookie is TOKEN_BYTES like a random one: nonce, user id, credentials version, creation second
# (big-endian), then the first MAC_BYTES of the HMAC of those.
_SIGNED_FIELDS = (8, 4, 4, 4)
MAC_BYTES = TOKEN_BYTES - sum(_SIGNED_FIELDS)
_CLAIMS = struct.Struct(">III")  # the user id, credentials version and creation second after the nonce

Clock = Callable[[], float]


def new_token() -> str:
    """A URL- and cookie-safe random token of 256 bits."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def session_key(cookie_value: str) -> str:
    """What the stores keep instead of the cookie value."""
    return hashlib.sha256(cookie_value.encode()).hexdigest()


class WriteNeeded(enum.Enum):
    """What `SessionManager.resume(..., may_write=False)` returns where it would have to write to the store
    (a touch, removing an expired record, the first return of a signed cookie): the caller asks again
    where blocking is allowed (a worker thread)."""

    WRITE_NEEDED = "write needed"


WRITE_NEEDED = WriteNeeded.WRITE_NEEDED


@dataclass(frozen=True)
class SignedClaims:
    """What a signed cookie says about its session."""

    user_id: int
    credentials_version: int
    created_at: float


class CookieSigner:
    """Makes and checks signed session cookies and derives their CSRF tokens.

    The MAC is HMAC-SHA256 keyed once: a copy of the keyed object per MAC costs two thirds of
    `hmac.digest`, which sets the key up again on every call (every Basic request without a session signs
    a cookie and derives its CSRF token)."""

    def __init__(self, secret: bytes) -> None:
        self._keyed = hmac.new(secret, digestmod=hashlib.sha256)

    def _mac(self, label: bytes, payload: bytes) -> bytes:
        mac = self._keyed.copy()
        mac.update(label + payload)
        return mac.digest()

    def sign(self, user_id: int, credentials_version: int, created_at: float) -> str:
        payload = os.urandom(_SIGNED_FIELDS[0]) + _CLAIMS.pack(
            user_id, credentials_version & 0xFFFFFFFF, int(created_at)
        )
        token = payload + self._mac(b"session", payload)[:MAC_BYTES]
        return base64.urlsafe_b64encode(token).rstrip(b"=").decode()

    def claims(self, cookie_value: str) -> SignedClaims | None:
        """What the cookie says, if it is one this secret signed; None for any other value."""
        try:
            token = base64.urlsafe_b64decode(cookie_value + "=" * (-len(cookie_value) % 4))
        except ValueError:
            return None
        if len(token) != TOKEN_BYTES:
            return None
        payload, mac = token[:-MAC_BYTES], token[-MAC_BYTES:]
        if not hmac.compare_digest(mac, self._mac(b"session", payload)[:MAC_BYTES]):
            return None
        return SignedClaims(
            user_id=int.from_bytes(payload[8:12], "big"),
            credentials_version=int.from_bytes(payload[12:16], "big"),
            created_at=float(int.from_bytes(payload[16:20], "big")),
        )

    def csrf_token(self, cookie_value: str) -> str:
        """The CSRF token of a signed session: fixed by its cookie, so the record made later holds the
        token the client was given with it."""
        mac = self._mac(b"csrf", cookie_value.encode())
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    def derived_key(self, purpose: bytes) -> bytes:
        """A key for another use of the server secret (the API's cursors): its MACs can never pass for a
        session's or a CSRF token's, and it never exposes the secret itself."""
        return self._mac(b"key:", purpose)


@dataclass(frozen=True)
class UserStatus:
    login: str
    enabled: bool
    credentials_version: int


@dataclass(frozen=True)
class StoredSession:
    """A session as a store holds it; times are seconds since the epoch."""

    key: str
    user_id: int
    credentials_version: int
    csrf_token: str
    created_at: float
    last_seen_at: float
    # The user's current state, when the store could read it in the same query (saves a lookup).
    user: UserStatus | None = None


@dataclass(frozen=True)
class LiveSession:
    """A valid session, as the request that carries its cookie sees it."""

    key: str
    user_id: int
    login: str
    credentials_version: int
    csrf_token: str
    # A signed session's cookie can be turned into a record until then (None: a random id, never).
    revivable_until: float | None = None

    def principal(self) -> Principal:
        return Principal(
            user_id=self.user_id,
            login=self.login,
            credentials_version=self.credentials_version,
            via="session",
        )


@dataclass(frozen=True)
class IssuedSession:
    """A session just started: the cookie value goes to the client exactly once."""

    cookie_value: str
    session: LiveSession


class SessionStore(Protocol):
    """Where sessions live. Methods block (run them in a worker thread)."""

    def add(self, session: StoredSession, expires_at: float) -> None: ...

    def add_new(self, session: StoredSession, expires_at: float) -> bool:
        """Add unless the key exists (a signed cookie that came back twice at once); False if it did."""
        ...

    def end(self, session: StoredSession, until: float) -> None:
        """Replace the session by a tombstone (credentials version ENDED) that lasts until `until`."""
        ...

    def get(self, key: str) -> StoredSession | None: ...

    def with_revisions(
        self, connection: Connection, keys: Sequence[str]
    ) -> dict[str, tuple[StoredSession, Revisions]]:
        """The sessions of these keys that exist, each with its user's state (`user` set) and the
        repository's revisions, read through `connection` where the store is the database (one statement
        for all keys on PostgreSQL); never writes."""
        ...

    def touch(self, session: StoredSession, last_seen_at: float, expires_at: float) -> None:
        """Move the idle time stamp of a session read before; never bring back one deleted or ended since
        (the GET lane touches in the background, a while after it read the session)."""
        ...

    def delete(self, key: str) -> None: ...

    def purge_expired(self, now: float) -> None: ...


# Built once: a statement object reused with parameters skips SQLAlchemy's per-call construction and
# cache-key work, which costs several times the query itself on this hot path.
_SESSION_WITH_USER_COLUMNS = (
    AuthSession.user_id,
    AuthSession.credentials_version,
    AuthSession.csrf_token,
    AuthSession.created_at,
    AuthSession.last_seen_at,
    User.login,
    User.enabled,
    User.credentials_version.label("current_version"),
)
_SESSION_WITH_USER_SELECT = (
    select(*_SESSION_WITH_USER_COLUMNS)
    .join(User, User.id == AuthSession.user_id)
    .where(AuthSession.id == bindparam("key"))
)
_SESSION_WITH_USER = DriverStatement(_SESSION_WITH_USER_SELECT, prepared=True)
_REVISION_COLUMNS = (CommittedState(), RepositoryState.metamodel_revision, RepositoryState.access_revision)
# The GET lane's one statement: the session, its user's state and the revisions the caches are keyed by.
_SESSION_USER_AND_REVISIONS = DriverStatement(
    _SESSION_WITH_USER_SELECT.add_columns(*_REVISION_COLUMNS).join(RepositoryState, RepositoryState.id == 1),
    prepared=True,
)
# The same for the cookies of several requests at once, each row with its key (PostgreSQL: an array).
_SESSIONS_USERS_AND_REVISIONS = DriverStatement(
    select(*_SESSION_WITH_USER_COLUMNS, *_REVISION_COLUMNS, AuthSession.id)
    .join(User, User.id == AuthSession.user_id)
    .join(RepositoryState, RepositoryState.id == 1)
    .where(AuthSession.id == any_(bindparam("keys", type_=postgresql.ARRAY(String)))),
    prepared=True,
)
_USER_STATUS = DriverStatement(
    select(User.login, User.enabled, User.credentials_version).where(User.id == bindparam("user_id")),
    prepared=True,
)
_TOUCH = (
    update(AuthSession)
    .where(AuthSession.id == bindparam("key"))
    .values(last_seen_at=bindparam("last_seen_at"), expires_at=bindparam("expires_at"))
)
_DELETE = delete(AuthSession).where(AuthSession.id == bindparam("key"))


def _as_datetime(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)


def _driver_timestamp(value: dt.datetime | str) -> float:
    """A stored time stamp as the driver gives it: SQLite's is SQLAlchemy's text form (UTC)."""
    return _as_timestamp(dt.datetime.fromisoformat(value) if isinstance(value, str) else value)


def _as_timestamp(value: dt.datetime) -> float:
    # SQLite hands back naive datetimes; everything is stored in UTC.
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()


class DatabaseSessionStore:
    """Sessions in the `auth_session` table. `expires_at` holds the earlier of the idle deadline and the
    absolute one, so purging expired rows is one indexed delete."""

    def __init__(self, read_engine: Engine, write_engine: Engine) -> None:
        self._read = read_engine
        self._write = write_engine

    def add(self, session: StoredSession, expires_at: float) -> None:
        with self._write.begin() as connection:
            connection.execute(
                insert(AuthSession).values(
                    id=session.key,
                    user_id=session.user_id,
                    credentials_version=session.credentials_version,
                    csrf_token=session.csrf_token,
                    created_at=_as_datetime(session.created_at),
                    last_seen_at=_as_datetime(session.last_seen_at),
                    expires_at=_as_datetime(expires_at),
                )
            )

    def add_new(self, session: StoredSession, expires_at: float) -> bool:
        try:
            self.add(session, expires_at)
        except IntegrityError:
            return False
        return True

    def end(self, session: StoredSession, until: float) -> None:
        with self._write.begin() as connection:
            connection.execute(_DELETE, {"key": session.key})
            connection.execute(
                insert(AuthSession).values(
                    id=session.key,
                    user_id=session.user_id,
                    credentials_version=ENDED,
                    csrf_token="",
                    created_at=_as_datetime(session.created_at),
                    last_seen_at=_as_datetime(session.last_seen_at),
                    expires_at=_as_datetime(until),
                )
            )

    def get(self, key: str) -> StoredSession | None:
        # At the driver level: every request with a cookie runs this (see storage.engine.DriverStatement).
        with self._read.connect() as connection:
            row = _SESSION_WITH_USER.first(connection, {"key": key})
        return None if row is None else _stored_with_user(key, row)

    def with_revisions(
        self, connection: Connection, keys: Sequence[str]
    ) -> dict[str, tuple[StoredSession, Revisions]]:
        if len(keys) == 1 or connection.dialect.name != "postgresql":
            found = {}
            for key in keys:
                row = _SESSION_USER_AND_REVISIONS.first(connection, {"key": key})
                if row is not None:
                    found[key] = _stored_with_user(key, row), Revisions(row[8], row[9], row[10])
            return found
        rows = _SESSIONS_USERS_AND_REVISIONS.rows(connection, {"keys": list(keys)})
        return {
            row[11]: (_stored_with_user(row[11], row), Revisions(row[8], row[9], row[10])) for row in rows
        }

    def touch(self, session: StoredSession, last_seen_at: float, expires_at: float) -> None:
        parameters = {
            "key": session.key,
            "last_seen_at": _as_datetime(last_seen_at),
            "expires_at": _as_datetime(expires_at),
        }
        with self._write.begin() as connection:
            connection.execute(_TOUCH, parameters)

    def delete(self, key: str) -> None:
        with self._write.begin() as connection:
            connection.execute(_DELETE, {"key": key})

    def purge_expired(self, now: float) -> None:
        with self._write.begin() as connection:
            connection.execute(delete(AuthSession).where(AuthSession.expires_at < _as_datetime(now)))


def _stored_with_user(key: str, row: Any) -> StoredSession:
    """A session row that starts with (user id, credentials version, CSRF token, created, last seen, login,
    enabled, the user's current credentials version)."""
    user_id, version, csrf_token, created_at, last_seen_at, login, enabled, current_version = row[:8]
    return StoredSession(
        key=key,
        user_id=user_id,
        credentials_version=version,
        csrf_token=csrf_token,
        created_at=_driver_timestamp(created_at),
        last_seen_at=_driver_timestamp(last_seen_at),
        user=UserStatus(login=login, enabled=bool(enabled), credentials_version=current_version),
    )


# A touch, atomic in Redis: rewrite the session only if it still exists and is not an ended session's
# tombstone, so that neither a delete nor a logout made since it was read is undone.
_TOUCH_SCRIPT = """
local stored = redis.call('GET', KEYS[1])
if not stored or cjson.decode(stored)['version'] == tonumber(ARGV[3]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2])
return 1
"""


class RedisSessionStore:
    """Sessions as Redis strings that expire by themselves (`PXAT`); a touch rewrites the value only if
    the session still exists and has not ended (a script), so it can never resurrect a session that a
    logout just deleted or ended."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._client = client
        self._prefix = f"{prefix}session:"
        self._touch = client.register_script(_TOUCH_SCRIPT)

    @staticmethod
    def _encode(session: StoredSession) -> bytes:
        return orjson.dumps(
            {
                "user": session.user_id,
                "version": session.credentials_version,
                "csrf": session.csrf_token,
                "created": session.created_at,
                "seen": session.last_seen_at,
            }
        )

    def add(self, session: StoredSession, expires_at: float) -> None:
        self._client.set(self._prefix + session.key, self._encode(session), pxat=math.ceil(expires_at * 1000))

    def add_new(self, session: StoredSession, expires_at: float) -> bool:
        added = self._client.set(
            self._prefix + session.key, self._encode(session), pxat=math.ceil(expires_at * 1000), nx=True
        )
        return bool(added)

    def end(self, session: StoredSession, until: float) -> None:
        tombstone = StoredSession(
            key=session.key,
            user_id=session.user_id,
            credentials_version=ENDED,
            csrf_token="",
            created_at=session.created_at,
            last_seen_at=session.last_seen_at,
        )
        self._client.set(self._prefix + session.key, self._encode(tombstone), pxat=math.ceil(until * 1000))

    def get(self, key: str) -> StoredSession | None:
        raw = self._client.get(self._prefix + key)
        if raw is None:
            return None
        data = orjson.loads(raw)
        return StoredSession(
            key=key,
            user_id=int(data["user"]),
            credentials_version=int(data["version"]),
            csrf_token=str(data["csrf"]),
            created_at=float(data["created"]),
            last_seen_at=float(data["seen"]),
        )

    def with_revisions(
        self, connection: Connection, keys: Sequence[str]
    ) -> dict[str, tuple[StoredSession, Revisions]]:
        sessions = {key: stored for key in keys if (stored := self.get(key)) is not None}
        # Redis holds the sessions, the database their users and the revisions: one statement for all the
        # users on PostgreSQL (`acting_users`).
        rows = acting_users(connection, sorted({stored.user_id for stored in sessions.values()}))
        found = {}
        for key, stored in sessions.items():
            row = rows.get(stored.user_id)
            if row is None:
                continue
            login, enabled, current_version, revision, metamodel_revision, access_revision = row
            user = UserStatus(login=login, enabled=bool(enabled), credentials_version=current_version)
            found[key] = replace(stored, user=user), Revisions(revision, metamodel_revision, access_revision)
        return found

    def touch(self, session: StoredSession, last_seen_at: float, expires_at: float) -> None:
        touched = StoredSession(
            key=session.key,
            user_id=session.user_id,
            credentials_version=session.credentials_version,
            csrf_token=session.csrf_token,
            created_at=session.created_at,
            last_seen_at=last_seen_at,
        )
        self._touch(
            keys=[self._prefix + session.key],
            args=[self._encode(touched), math.ceil(expires_at * 1000), ENDED],
        )

    def delete(self, key: str) -> None:
        self._client.delete(self._prefix + key)

    def purge_expired(self, now: float) -> None:
        """Nothing to do: Redis expires the keys."""


_SIGNING_SECRET = select(ServerSecret.value).where(ServerSecret.name == SIGNING_SECRET)


class SessionManager:
    """Starts, resumes and ends sessions under the configured timeouts. Methods block (run them in a
    worker thread, or pass `may_write=False` to `resume` to stay off writes); `clock` is wall-clock time,
    shared by every process."""

    def __init__(
        self, store: SessionStore, read_engine: Engine, settings: Settings, clock: Clock = time.time
    ):
        self.store = store
        self.clock = clock
        self._read = read_engine
        self._idle = float(settings.session_idle_timeout)
        self._max_age = float(settings.session_max_age)
        self._touch_after = min(float(settings.session_touch_interval), self._idle / 10)
        self._last_purge = 0.0
        self._signer: CookieSigner | None = None
        # Sessions whose idle time stamp a background thread is writing (`peek`), and that thread.
        self._touching: set[str] = set()
        self._touch_lock = threading.Lock()
        self._toucher: ThreadPoolExecutor | None = None

    @property
    def signer(self) -> CookieSigner:
        """The signer under the database's secret, read once per process (the secret never changes)."""
        if self._signer is None:
            with self._read.connect() as connection:
                secret = connection.execute(_SIGNING_SECRET).scalar_one()
            self._signer = CookieSigner(secret.encode())
        return self._signer

    def start(self, principal: Principal, *, deferred: bool = False) -> IssuedSession | None:
        """A new session with a new id and a new CSRF token (every login calls this: no fixation).

        `deferred`: a signed session, stored only when its cookie first comes back; this writes and reads
        nothing, for a principal verified against the database in this request. Otherwise None if the
        account was disabled or its password changed since the principal was verified (a cached Basic
        credential may be that old)."""
        now = self._now()
        if deferred:
            created = math.floor(now)
            cookie_value = self.signer.sign(principal.user_id, principal.credentials_version, created)
            live = LiveSession(
                key=session_key(cookie_value),
                user_id=principal.user_id,
                login=principal.login,
                credentials_version=principal.credentials_version,
                csrf_token=self.signer.csrf_token(cookie_value),
                revivable_until=self._revivable_until(created),
            )
            metrics.SESSIONS_STARTED.inc()
            return IssuedSession(cookie_value=cookie_value, session=live)
        user = self._user_status(principal.user_id)
        if user is None or not user.enabled or user.credentials_version != principal.credentials_version:
            return None
        if now - self._last_purge >= PURGE_INTERVAL_SECONDS:
            self._last_purge = now
            self.store.purge_expired(now)
        cookie_value = new_token()
        stored = StoredSession(
            key=session_key(cookie_value),
            user_id=principal.user_id,
            credentials_version=principal.credentials_version,
            csrf_token=new_token(),
            created_at=now,
            last_seen_at=now,
        )
        self.store.add(stored, self._expires_at(stored, now))
        live = LiveSession(
            key=stored.key,
            user_id=stored.user_id,
            login=user.login,
            credentials_version=stored.credentials_version,
            csrf_token=stored.csrf_token,
        )
        metrics.SESSIONS_STARTED.inc()
        return IssuedSession(cookie_value=cookie_value, session=live)

    def signed_cookie(self, principal: Principal) -> str:
        """The cookie value of a new signed session, exactly as `start(..., deferred=True)` issues it, without
        the `LiveSession` around it: for a caller that only hands the cookie out (the GET lane)."""
        return self.signer.sign(principal.user_id, principal.credentials_version, math.floor(self._now()))

    def resume(self, cookie_value: str, *, may_write: bool = True) -> LiveSession | WriteNeeded | None:
        """The session this cookie names, if it is still valid; None for unknown, ended or expired ones.

        With `may_write` False, returns `WRITE_NEEDED` where the store would have to be written (a touch,
        removing an expired record, the first return of a signed cookie) instead of writing."""
        key = session_key(cookie_value)
        stored = self.store.get(key)
        if stored is None:
            return self._revive(cookie_value, key, may_write)
        if stored.credentials_version == ENDED:
            return None
        now = self._now()
        user = stored.user or self._user_status(stored.user_id)
        if (
            now >= self._expires_at(stored, stored.last_seen_at)
            or user is None
            or not user.enabled
            or user.credentials_version != stored.credentials_version
        ):
            if not may_write:
                return WRITE_NEEDED
            self.store.delete(key)
            return None
        if now - stored.last_seen_at >= self._touch_after:
            if not may_write:
                return WRITE_NEEDED
            self.store.touch(stored, now, self._expires_at(stored, now))
        return LiveSession(
            key=key,
            user_id=stored.user_id,
            login=user.login,
            credentials_version=stored.credentials_version,
            csrf_token=stored.csrf_token,
            revivable_until=self._revivable_until_of(cookie_value, stored),
        )

    def peek(
        self, cookie_values: Sequence[str], connection: Connection
    ) -> dict[str, tuple[Principal, Revisions]]:
        """Who each of these cookies' sessions acts as and the repository's revisions, read in one statement
        (with Redis: a lookup and a statement per cookie) through `connection`, for the cookies whose session
        is valid and needs no write first. A cookie left out is for `resume` to decide: no record (unknown,
        or a signed cookie's first return), ended, expired, or a changed or disabled account; `resume` then
        answers exactly as before. An idle time stamp due for its write is written in the background, once
        at a time."""
        keys = {session_key(cookie_value): cookie_value for cookie_value in cookie_values}
        found = self.store.with_revisions(connection, list(keys))
        now = self._now()
        valid = {}
        for key, (stored, revisions) in found.items():
            user = stored.user
            if (
                user is None
                or stored.credentials_version == ENDED
                or not user.enabled
                or user.credentials_version != stored.credentials_version
                or now >= self._expires_at(stored, stored.last_seen_at)
            ):
                continue
            if now - stored.last_seen_at >= self._touch_after:
                self._touch_in_background(stored, now)
            principal = Principal(
                user_id=stored.user_id,
                login=user.login,
                credentials_version=stored.credentials_version,
                via="session",
            )
            valid[keys[key]] = principal, revisions
        return valid

    def _touch_in_background(self, stored: StoredSession, now: float) -> None:
        """Write the idle time stamp of a valid session in a thread of this manager, once at a time per
        session: the requests that arrive meanwhile are answered as before instead of each writing it (under
        load, every request of a client would, and on PostgreSQL they queue for the row's lock). The session
        is valid until its idle deadline, a touch interval or more away, whenever the write lands."""
        with self._touch_lock:
            if stored.key in self._touching:
                return
            self._touching.add(stored.key)
            if self._toucher is None:
                self._toucher = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="blockrepo-session-touch"
                )
            toucher = self._toucher
        toucher.submit(self._touch_now, stored, now)

    def _touch_now(self, stored: StoredSession, now: float) -> None:
        try:
            self.store.touch(stored, now, self._expires_at(stored, now))
        except Exception:
            # The session expires up to a touch interval early (never late); the next GET tries again.
            log.warning("the idle time stamp of a session could not be written", exc_info=True)
        finally:
            with self._touch_lock:
                self._touching.discard(stored.key)

    def close(self) -> None:
        """Wait for a background touch in flight (before the engines are disposed)."""
        with self._touch_lock:
            toucher, self._toucher = self._toucher, None
        if toucher is not None:
            toucher.shutdown(wait=True)

    def _revive(self, cookie_value: str, key: str, may_write: bool) -> LiveSession | WriteNeeded | None:
        """The first return of a signed cookie: its record is made now, if the session is still valid."""
        claims = self.signer.claims(cookie_value)
        if claims is None:
            return None
        now = self._now()
        if now >= self._revivable_until(claims.created_at):
            return None
        user = self._user_status(claims.user_id)
        if (
            user is None
            or not user.enabled
            or (user.credentials_version & 0xFFFFFFFF) != claims.credentials_version
        ):
            return None
        if not may_write:
            return WRITE_NEEDED
        stored = StoredSession(
            key=key,
            user_id=claims.user_id,
            credentials_version=user.credentials_version,
            csrf_token=self.signer.csrf_token(cookie_value),
            created_at=claims.created_at,
            last_seen_at=now,
        )
        if not self.store.add_new(stored, self._expires_at(stored, now)):
            # It came back twice at once and the other request made the record (or ended it).
            return self.resume(cookie_value, may_write=may_write)
        return LiveSession(
            key=key,
            user_id=stored.user_id,
            login=user.login,
            credentials_version=stored.credentials_version,
            csrf_token=stored.csrf_token,
            revivable_until=self._revivable_until(claims.created_at),
        )

    def end(self, cookie_value: str) -> None:
        """End the session this cookie names (whatever its state)."""
        key = session_key(cookie_value)
        claims = self.signer.claims(cookie_value)
        if claims is None:
            self.store.delete(key)
            return
        self._end_signed(key, claims.user_id, claims.created_at, self._revivable_until(claims.created_at))

    def end_session(self, session: LiveSession) -> None:
        """End a session the request resumed or started."""
        if session.revivable_until is None:
            self.store.delete(session.key)
            return
        self._end_signed(session.key, session.user_id, self._now(), session.revivable_until)

    def _end_signed(self, key: str, user_id: int, created_at: float, revivable_until: float) -> None:
        now = self._now()
        if now >= revivable_until:
            self.store.delete(key)
            return
        # Its cookie could still be turned into a record: a tombstone stops that until it no longer could.
        tombstone = StoredSession(
            key=key,
            user_id=user_id,
            credentials_version=ENDED,
            csrf_token="",
            created_at=min(created_at, now),
            last_seen_at=now,
        )
        self.store.end(tombstone, revivable_until)

    def _revivable_until_of(self, cookie_value: str, stored: StoredSession) -> float | None:
        # Only a signed cookie can come back after its record is gone; a random id's record is all it has.
        if self.signer.claims(cookie_value) is None:
            return None
        return self._revivable_until(stored.created_at)

    def _revivable_until(self, created_at: float) -> float:
        """Until when a signed cookie made at `created_at` and never seen since may be turned into a record:
        idle since it was made, it expires like any session."""
        return created_at + min(self._idle, self._max_age)

    def _now(self) -> float:
        # Whole microseconds, which the database keeps exactly: a time stamp read back compares equal to
        # the one written, so a deadline holds to the microsecond on every store.
        return math.floor(self.clock() * 1_000_000) / 1_000_000

    def _expires_at(self, session: StoredSession, last_seen_at: float) -> float:
        return min(last_seen_at + self._idle, session.created_at + self._max_age)

    def _user_status(self, user_id: int) -> UserStatus | None:
        with self._read.connect() as connection:
            row = _USER_STATUS.first(connection, {"user_id": user_id})
        if row is None:
            return None
        login, enabled, credentials_version = row
        return UserStatus(login=login, enabled=bool(enabled), credentials_version=credentials_version)
