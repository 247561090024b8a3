"""Builds the shared auth state (sessions, login throttling, rate limit) on the database, or on Redis when
`redis_url` is set. Building connects to nothing."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from blockrepo.auth.authenticator import Authenticator
from blockrepo.auth.ratelimit import DatabaseRequestCounter, RateLimiter, RedisRequestCounter
from blockrepo.auth.sessions import DatabaseSessionStore, RedisSessionStore, SessionManager
from blockrepo.auth.throttle import DatabaseFailureStore, LoginThrottle, RedisFailureStore
from blockrepo.settings import Settings
from blockrepo.tokens.service import TokenVerifier
from blockrepo.tokens.strings import Peppers

log = logging.getLogger("blockrepo.auth")

# Failures of the shared store itself: the request gets 503 instead of a crash.
STORE_ERRORS: tuple[type[Exception], ...] = (redis.RedisError, OperationalError)


@dataclass
class AuthBackends:
    sessions: SessionManager
    throttle: LoginThrottle
    rate_limiter: RateLimiter | None
    redis_client: redis.Redis | None
    tokens: TokenVerifier
    # Whether short store reads may run on the event loop (`loop_reads` in the settings, for every store:
    # the one policy the read lane follows too). A read of SQLite is local work; one of PostgreSQL or
    # Redis on the same host or a fast network answers in well under a millisecond, less than the hop to
    # a worker thread and back costs; across a slow network the setting is turned off.
    reads_on_loop: bool = True

    @classmethod
    def build(
        cls, settings: Settings, read_engine: Engine, write_engine: Engine, authenticator: Authenticator
    ) -> AuthBackends:
        if settings.redis_url:
            client = redis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)
            prefix = settings.redis_key_prefix
            sessions = SessionManager(RedisSessionStore(client, prefix), read_engine, settings)
            return cls(
                sessions=sessions,
                throttle=LoginThrottle(authenticator, RedisFailureStore(client, prefix), settings),
                rate_limiter=(
                    RateLimiter(RedisRequestCounter(client, prefix), settings.rate_limit)
                    if settings.rate_limit > 0
                    else None
                ),
                redis_client=client,
                tokens=_token_verifier(settings, read_engine, write_engine, sessions),
                reads_on_loop=settings.loop_reads,
            )
        sessions = SessionManager(DatabaseSessionStore(read_engine, write_engine), read_engine, settings)
        return cls(
            sessions=sessions,
            throttle=LoginThrottle(authenticator, DatabaseFailureStore(read_engine, write_engine), settings),
            rate_limiter=(
                RateLimiter(DatabaseRequestCounter(write_engine), settings.rate_limit)
                if settings.rate_limit > 0
                else None
            ),
            redis_client=None,
            tokens=_token_verifier(settings, read_engine, write_engine, sessions),
            reads_on_loop=settings.loop_reads,
        )

    def redis_answers(self) -> bool | None:
        """Whether the configured Redis answers a ping (`GET /ready`); None without Redis."""
        if self.redis_client is None:
            return None
        try:
            return bool(self.redis_client.ping())
        except redis.RedisError:
            log.warning("the readiness check could not reach Redis", exc_info=True)
            return False

    def close(self) -> None:
        self.sessions.close()
        if self.redis_client is not None:
            self.redis_client.close()


def _token_verifier(
    settings: Settings, read_engine: Engine, write_engine: Engine, sessions: SessionManager
) -> TokenVerifier:
    """Tokens are hashed under the configured peppers, or one derived from the server secret (read at the
    first Bearer request: building connects to nothing)."""
    configured = settings.token_peppers.get_secret_value() if settings.token_peppers is not None else ""
    keys = [key.strip().encode() for key in configured.split(",") if key.strip()]

    def peppers() -> Peppers:
        return Peppers(keys or [sessions.signer.derived_key(b"token-pepper")])

    return TokenVerifier(read_engine, write_engine, peppers)
