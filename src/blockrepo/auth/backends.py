"""Builds the shared auth state (sessions, login throttling, rate limit) on the database, or on Redis when
`redis_url` is set. Building connects to nothing."""

from __future__ import annotations

from dataclasses import dataclass

import redis
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from blockrepo.auth.authenticator import Authenticator
from blockrepo.auth.ratelimit import DatabaseRequestCounter, RateLimiter, RedisRequestCounter
from blockrepo.auth.sessions import DatabaseSessionStore, RedisSessionStore, SessionManager
from blockrepo.auth.throttle import DatabaseFailureStore, LoginThrottle, RedisFailureStore
from blockrepo.settings import Settings

# Failures of the shared store itself: the request gets 503 instead of a crash.
STORE_ERRORS: tuple[type[Exception], ...] = (redis.RedisError, OperationalError)


@dataclass
class AuthBackends:
    sessions: SessionManager
    throttle: LoginThrottle
    rate_limiter: RateLimiter | None
    redis_client: redis.Redis | None
    # Whether store reads may run on the event loop: only SQLite's, which are local work with no wait;
    # a wait for PostgreSQL or Redis on the loop would hold up every other request of the process.
    reads_on_loop: bool = False

    @classmethod
    def build(
        cls, settings: Settings, read_engine: Engine, write_engine: Engine, authenticator: Authenticator
    ) -> AuthBackends:
        if settings.redis_url:
            client = redis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)
            prefix = settings.redis_key_prefix
            return cls(
                sessions=SessionManager(RedisSessionStore(client, prefix), read_engine, settings),
                throttle=LoginThrottle(authenticator, RedisFailureStore(client, prefix), settings),
                rate_limiter=(
                    RateLimiter(RedisRequestCounter(client, prefix), settings.rate_limit)
                    if settings.rate_limit > 0
                    else None
                ),
                redis_client=client,
            )
        return cls(
            sessions=SessionManager(DatabaseSessionStore(read_engine, write_engine), read_engine, settings),
            throttle=LoginThrottle(authenticator, DatabaseFailureStore(read_engine, write_engine), settings),
            rate_limiter=(
                RateLimiter(DatabaseRequestCounter(write_engine), settings.rate_limit)
                if settings.rate_limit > 0
                else None
            ),
            redis_client=None,
            reads_on_loop=read_engine.dialect.name == "sqlite",
        )

    def close(self) -> None:
        self.sessions.close()
        if self.redis_client is not None:
            self.redis_client.close()
