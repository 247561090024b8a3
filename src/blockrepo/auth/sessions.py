"""Server-side sessions: opaque random ids with an idle timeout and an absolute lifetime, kept in a store
that every worker process shares (the database by default, Redis when configured).

The cookie holds 256 random bits; stores only ever see its SHA-256 (`key`), so a leaked table or dump
holds no usable session id. A lookup is one read: the idle time stamp is written back at most every
`touch_interval` seconds (capped at a tenth of the idle timeout), so a session may expire up to that much
early, never late. Every lookup also checks the user's current state: a disabled account or a changed
password (a new credentials version) ends the session.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import orjson
import redis
from sqlalchemy import Engine, bindparam, delete, insert, select, update

from blockrepo.access.models import User
from blockrepo.auth.basic import Principal
from blockrepo.auth.models import AuthSession
from blockrepo.settings import Settings

TOKEN_BYTES = 32
PURGE_INTERVAL_SECONDS = 60.0

Clock = Callable[[], float]


def new_token() -> str:
    """A URL- and cookie-safe random token of 256 bits."""
    return secrets.token_urlsafe(TOKEN_BYTES)


def session_key(cookie_value: str) -> str:
    """What the stores keep instead of the cookie value."""
    return hashlib.sha256(cookie_value.encode()).hexdigest()


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

    def get(self, key: str) -> StoredSession | None: ...

    def touch(self, session: StoredSession, last_seen_at: float, expires_at: float) -> None: ...

    def delete(self, key: str) -> None: ...

    def purge_expired(self, now: float) -> None: ...


# Built once: a statement object reused with parameters skips SQLAlchemy's per-call construction and
# cache-key work, which costs several times the query itself on this hot path.
_SESSION_WITH_USER = (
    select(
        AuthSession.user_id,
        AuthSession.credentials_version,
        AuthSession.csrf_token,
        AuthSession.created_at,
        AuthSession.last_seen_at,
        User.login,
        User.enabled,
        User.credentials_version.label("current_version"),
    )
    .join(User, User.id == AuthSession.user_id)
    .where(AuthSession.id == bindparam("key"))
)
_USER_STATUS = select(User.login, User.enabled, User.credentials_version).where(
    User.id == bindparam("user_id")
)
_TOUCH = (
    update(AuthSession)
    .where(AuthSession.id == bindparam("key"))
    .values(last_seen_at=bindparam("last_seen_at"), expires_at=bindparam("expires_at"))
)
_DELETE = delete(AuthSession).where(AuthSession.id == bindparam("key"))


def _as_datetime(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)


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

    def get(self, key: str) -> StoredSession | None:
        with self._read.connect() as connection:
            row = connection.execute(_SESSION_WITH_USER, {"key": key}).first()
        if row is None:
            return None
        return StoredSession(
            key=key,
            user_id=row.user_id,
            credentials_version=row.credentials_version,
            csrf_token=row.csrf_token,
            created_at=_as_timestamp(row.created_at),
            last_seen_at=_as_timestamp(row.last_seen_at),
            user=UserStatus(login=row.login, enabled=row.enabled, credentials_version=row.current_version),
        )

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


class RedisSessionStore:
    """Sessions as Redis strings that expire by themselves (`PXAT`); a touch rewrites the value only if
    the key still exists (`XX`), so it can never resurrect a session that a logout just deleted."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._client = client
        self._prefix = f"{prefix}session:"

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

    def touch(self, session: StoredSession, last_seen_at: float, expires_at: float) -> None:
        touched = StoredSession(
            key=session.key,
            user_id=session.user_id,
            credentials_version=session.credentials_version,
            csrf_token=session.csrf_token,
            created_at=session.created_at,
            last_seen_at=last_seen_at,
        )
        self._client.set(
            self._prefix + session.key, self._encode(touched), pxat=math.ceil(expires_at * 1000), xx=True
        )

    def delete(self, key: str) -> None:
        self._client.delete(self._prefix + key)

    def purge_expired(self, now: float) -> None:
        """Nothing to do: Redis expires the keys."""


class SessionManager:
    """Starts, resumes and ends sessions under the configured timeouts. Methods block (run them in a
    worker thread); `clock` is wall-clock time, shared by every process."""

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

    def start(self, principal: Principal) -> IssuedSession | None:
        """A new session with a new id and a new CSRF token (every login calls this: no fixation).

        None if the account was disabled or its password changed since the principal was verified (a
        cached Basic credential may be that old)."""
        user = self._user_status(principal.user_id)
        if user is None or not user.enabled or user.credentials_version != principal.credentials_version:
            return None
        now = self._now()
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
        return IssuedSession(cookie_value=cookie_value, session=live)

    def resume(self, cookie_value: str) -> LiveSession | None:
        """The session this cookie names, if it is still valid; None for unknown or expired ones."""
        key = session_key(cookie_value)
        stored = self.store.get(key)
        if stored is None:
            return None
        now = self._now()
        user = stored.user or self._user_status(stored.user_id)
        if (
            now >= self._expires_at(stored, stored.last_seen_at)
            or user is None
            or not user.enabled
            or user.credentials_version != stored.credentials_version
        ):
            self.store.delete(key)
            return None
        if now - stored.last_seen_at >= self._touch_after:
            self.store.touch(stored, now, self._expires_at(stored, now))
        return LiveSession(
            key=key,
            user_id=stored.user_id,
            login=user.login,
            credentials_version=stored.credentials_version,
            csrf_token=stored.csrf_token,
        )

    def end(self, cookie_value: str) -> None:
        """Delete the session this cookie names (whatever its state)."""
        self.store.delete(session_key(cookie_value))

    def end_key(self, key: str) -> None:
        self.store.delete(key)

    def _now(self) -> float:
        # Whole microseconds, which the database keeps exactly: a time stamp read back compares equal to
        # the one written, so a deadline holds to the microsecond on every store.
        return math.floor(self.clock() * 1_000_000) / 1_000_000

    def _expires_at(self, session: StoredSession, last_seen_at: float) -> float:
        return min(last_seen_at + self._idle, session.created_at + self._max_age)

    def _user_status(self, user_id: int) -> UserStatus | None:
        with self._read.connect() as connection:
            row = connection.execute(_USER_STATUS, {"user_id": user_id}).first()
        if row is None:
            return None
        return UserStatus(login=row.login, enabled=row.enabled, credentials_version=row.credentials_version)
