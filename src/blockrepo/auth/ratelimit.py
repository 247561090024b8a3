"""The optional per-user rate limit (`rate_limit` requests per second; 0 turns it off).

Fixed windows counted in the shared store, so the limit holds across worker processes: one window is
`ceil(1/rate)` seconds (at least 1) and allows `round(rate * window)` requests (at least 1). A refused
request learns, in `Retry-After`, when the next window opens.
"""

from __future__ import annotations

import math
import time
from typing import Protocol

import redis
from sqlalchemy import Engine, case
from sqlalchemy.dialects import postgresql, sqlite

from blockrepo.auth.models import RateWindow
from blockrepo.auth.sessions import Clock


class RequestCounter(Protocol):
    """Counts hits per key and window. Methods block (run them in a worker thread)."""

    def hit(self, key: str, window_start: int, window_seconds: int) -> int:
        """Count one request; the number counted in this window so far, this one included."""
        ...


class DatabaseRequestCounter:
    """One `rate_window` row per user, reset by an upsert when a new window starts."""

    def __init__(self, write_engine: Engine) -> None:
        self._write = write_engine
        self._insert = postgresql.insert if write_engine.dialect.name == "postgresql" else sqlite.insert

    def hit(self, key: str, window_start: int, window_seconds: int) -> int:
        insert = self._insert(RateWindow).values(key=key, window_start=window_start, hits=1)
        upsert = insert.on_conflict_do_update(
            index_elements=[RateWindow.key],
            set_={
                "hits": case(
                    (RateWindow.window_start == insert.excluded.window_start, RateWindow.hits + 1),
                    else_=1,
                ),
                "window_start": insert.excluded.window_start,
            },
        ).returning(RateWindow.hits)
        with self._write.begin() as connection:
            return int(connection.execute(upsert).scalar_one())


class RedisRequestCounter:
    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._client = client
        self._prefix = f"{prefix}rate:"

    def hit(self, key: str, window_start: int, window_seconds: int) -> int:
        name = f"{self._prefix}{key}:{window_start}"
        pipeline = self._client.pipeline(transaction=False)
        pipeline.incr(name)
        # Only for cleaning up: each window has a key of its own, so a longer life never adds counts. A minute
        # more than the window, so that a slow request (or a paused clock in tests) never loses the count.
        pipeline.expire(name, window_seconds + 60)
        hits, _ = pipeline.execute()
        return int(hits)


class RateLimiter:
    def __init__(self, counter: RequestCounter, rate: float, clock: Clock = time.time) -> None:
        if rate <= 0:
            raise ValueError("a rate limiter needs a positive rate")
        self.counter = counter
        self.clock = clock
        self.window_seconds = max(1, math.ceil(1 / rate))
        self.allowed = max(1, round(rate * self.window_seconds))

    def check(self, user_id: int) -> int | None:
        """Count a request of this user; None if allowed, else the seconds until the next window."""
        now = self.clock()
        window_start = int(now // self.window_seconds) * self.window_seconds
        hits = self.counter.hit(f"user:{user_id}", window_start, self.window_seconds)
        if hits <= self.allowed:
            return None
        return max(1, math.ceil(window_start + self.window_seconds - now))
