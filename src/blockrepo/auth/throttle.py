"""Login throttling without lock-outs (API.md rule 1.4): failed logins are counted per (account, client
address) and per address over a sliding window. At `login_max_failures` for one account from one address,
that address is refused (429) for that account; at `login_max_failures_per_address` from one address, that
address is refused for every account; either way whatever the password, until enough failures have left
the window. Nothing else is refused: failures from one address never touch another address, failures for
one account never touch another account (below the address limit), and credentials this process verified
recently from the same address pass without being counted or refused.

Refused attempts are not counted, so `Retry-After` is exact: once it has passed, the next attempt is
verified again. Counters live in the shared store (database or Redis), so every worker sees them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import math
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import redis
from sqlalchemy import Engine, bindparam, delete, insert, select

from blockrepo import metrics
from blockrepo.auth.authenticator import Authenticator
from blockrepo.auth.basic import CredentialCache, Principal
from blockrepo.auth.models import LoginFailure
from blockrepo.auth.sessions import Clock
from blockrepo.settings import Settings

log = logging.getLogger("blockrepo.auth")

PURGE_INTERVAL_SECONDS = 60.0


def _digest(*parts: str) -> str:
    """Length-prefixed parts hashed: unambiguous, fixed length, and free of characters (NUL) a store
    cannot hold, whatever the client sent."""
    digest = hashlib.sha256()
    for part in parts:
        encoded = part.encode()
        digest.update(len(encoded).to_bytes(8, "big") + encoded)
    return digest.hexdigest()


def pair_key(login: str, address: str) -> str:
    return f"pair:{_digest(login, address)}"


def address_key(address: str) -> str:
    return f"address:{_digest(address)}"


class FailureStore(Protocol):
    """Time stamps of failed logins per key. Methods block (run them in a worker thread)."""

    def recent(self, keys: Sequence[str], since: float) -> dict[str, list[float]]: ...

    def record(self, keys: Sequence[str], at: float, window: float) -> None: ...


# Built once (hot path: every password check reads it).
_RECENT_FAILURES = select(LoginFailure.key, LoginFailure.at).where(
    LoginFailure.key.in_(bindparam("keys", expanding=True)), LoginFailure.at > bindparam("since")
)


def _as_datetime(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)


def _as_timestamp(value: dt.datetime) -> float:
    return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).timestamp()


class DatabaseFailureStore:
    """One `login_failure` row per key and failure; rows older than the window are purged now and then."""

    def __init__(self, read_engine: Engine, write_engine: Engine) -> None:
        self._read = read_engine
        self._write = write_engine
        self._last_purge = 0.0

    def recent(self, keys: Sequence[str], since: float) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {key: [] for key in keys}
        with self._read.connect() as connection:
            for key, at in connection.execute(
                _RECENT_FAILURES, {"keys": list(keys), "since": _as_datetime(since)}
            ):
                found[key].append(_as_timestamp(at))
        return found

    def record(self, keys: Sequence[str], at: float, window: float) -> None:
        with self._write.begin() as connection:
            connection.execute(insert(LoginFailure), [{"key": key, "at": _as_datetime(at)} for key in keys])
            if at - self._last_purge >= PURGE_INTERVAL_SECONDS:
                self._last_purge = at
                connection.execute(delete(LoginFailure).where(LoginFailure.at < _as_datetime(at - window)))


class RedisFailureStore:
    """A sorted set per key (score = time of the failure) that expires with the window."""

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._client = client
        self._prefix = f"{prefix}login-failures:"

    def recent(self, keys: Sequence[str], since: float) -> dict[str, list[float]]:
        pipeline = self._client.pipeline(transaction=False)
        for key in keys:
            pipeline.zrangebyscore(self._prefix + key, f"({since}", "+inf", withscores=True)
        results = pipeline.execute()
        return {key: [score for _, score in members] for key, members in zip(keys, results, strict=True)}

    def record(self, keys: Sequence[str], at: float, window: float) -> None:
        pipeline = self._client.pipeline(transaction=False)
        for key in keys:
            name = self._prefix + key
            pipeline.zadd(name, {f"{at}:{secrets.token_hex(4)}": at})
            pipeline.zremrangebyscore(name, "-inf", at - window)
            pipeline.expire(name, math.ceil(window) + 1)
        pipeline.execute()


@dataclass(frozen=True)
class LoginOutcome:
    """The principal on success; `retry_after` (seconds) when the attempt was refused unverified."""

    principal: Principal | None
    retry_after: int | None = None


class LoginThrottle:
    """Verifies a login and password unless this account from this address, or this address, is cooling
    down; counts failures.

    Used for every credential check: form login and HTTP Basic alike. Methods block."""

    def __init__(
        self, authenticator: Authenticator, store: FailureStore, settings: Settings, clock: Clock = time.time
    ) -> None:
        self.authenticator = authenticator
        self.store = store
        self.clock = clock
        self._max_failures = settings.login_max_failures
        self._max_failures_per_address = settings.login_max_failures_per_address
        self._window = float(settings.login_window)
        # Which credentials passed from which address (keyed by an HMAC, like the credential cache).
        self._verified = CredentialCache(settings.credential_cache_size, settings.credential_cache_ttl)

    def attempt(self, login: str, password: str, address: str, channel: str) -> LoginOutcome:
        # Credentials verified recently from this address keep working during an attack on their account
        # or address. Bound to the address: an attacker elsewhere, refused, cannot use 429-or-200 as a
        # free oracle for a password its owner has just used.
        verified_here = self._verified.digest(_digest(address, login), password)
        if self._verified.get(verified_here) is not None:
            principal = self.authenticator.cached(login, password)
            if principal is not None:
                return LoginOutcome(principal=principal)
            # Its account is gone, disabled or has new credentials (in any process): the entry is dead.
            self._verified.forget(verified_here)
        limits = self._limits(login, address)
        retry_after = self.retry_after(limits)
        if retry_after is not None:
            log.warning(
                "login refused for %r from %s (%s): too many failures, retry after %d s",
                login,
                address,
                channel,
                retry_after,
            )
            metrics.LOGINS.labels("throttled").inc()
            return LoginOutcome(principal=None, retry_after=retry_after)
        principal = self.authenticator.verify_password(login, password)
        if principal is None:
            self.store.record(list(limits), self.clock(), self._window)
            log.warning("login failed for %r from %s (%s)", login, address, channel)
            metrics.LOGINS.labels("failed").inc()
        else:
            self._verified.put(verified_here, principal)
            metrics.LOGINS.labels("succeeded").inc()
        return LoginOutcome(principal=principal)

    def cached(self, login: str, password: str, address: str) -> Principal | None:
        """The principal `attempt` would return without hashing a password or counting a failure (credentials
        this process verified before, still valid, and not refused here); None when only `attempt` can tell.
        Reads the stores but never writes them."""
        verified_here = self._verified.digest(_digest(address, login), password)
        if (
            self._verified.get(verified_here) is None
            and self.retry_after(self._limits(login, address)) is not None
        ):
            return None
        principal = self.authenticator.cached(login, password)
        if principal is None:
            self._verified.forget(verified_here)
        else:
            self._verified.put(verified_here, principal)
        return principal

    def forget_user(self, user_id: int) -> None:
        """Drop the credentials of this user verified here (deleted, disabled or given new credentials by
        this process; other processes drop theirs at their next use, which reads the account)."""
        self._verified.forget_user(user_id)

    def verified_here(self, login: str, password: str, address: str) -> Principal | None:
        """The principal of credentials this process verified from this address before, as it was then,
        without reading any store: the caller must check that the account still exists, is enabled and
        has the same credentials version (a new password, login or disabling changes it), else `attempt`
        decides and verifies again. An entry lasts no longer than the authenticator's (the same TTL)."""
        return self.verified_by_key(self.verified_key(login, password, address))

    def verified_key(self, login: str, password: str, address: str) -> bytes:
        """What `verified_here` looks these credentials up by: fixed per process, so a caller may keep it
        instead of computing it again for the same credentials and address."""
        return self._verified.digest(_digest(address, login), password)

    def verified_by_key(self, key: bytes) -> Principal | None:
        """`verified_here` by a `verified_key`: the entry's time to live and `forget` apply as there."""
        return self._verified.get(key)

    def _limits(self, login: str, address: str) -> dict[str, int]:
        return {
            pair_key(login, address): self._max_failures,
            address_key(address): self._max_failures_per_address,
        }

    def retry_after(self, limits: Mapping[str, int]) -> int | None:
        """Seconds until every key is below its limit again; None if none is at it."""
        now = self.clock()
        waits: list[float] = []
        for key, stamps in self.store.recent(list(limits), now - self._window).items():
            limit = limits[key]
            if len(stamps) >= limit:
                stamps.sort()
                # The count drops below the limit when this failure leaves the window.
                waits.append(stamps[len(stamps) - limit] + self._window - now)
        if not waits:
            return None
        # Rounded to milliseconds first: stored time stamps carry microseconds, so float noise would
        # otherwise turn an exact 60 s into "61".
        return max(1, math.ceil(round(max(waits), 3)))
