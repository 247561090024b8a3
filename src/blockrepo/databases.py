"""The databases of one process and how a request uses them: the engines and pools, a session to read or
to write (the write lock first), short reads on the event loop, and what a concurrent write answers.

The HTTP layer reaches storage through this module only (`tests/unit/test_layering.py`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from blockrepo import metrics
from blockrepo.errors import ConcurrentWrite
from blockrepo.settings import Settings
from blockrepo.storage.engine import (
    HeldConnections,
    build_engine,
    build_session_factory,
    follow_pool,
    held_snapshot,
    read_snapshot,
    with_own_pool,
)
from blockrepo.storage.migrate import schema_at_head
from blockrepo.storage.transactions import (
    ELEMENTS_ONLY,
    RETRY_AFTER_SECONDS,
    WriteQueue,
    begin_write,
    is_retryable,
)

log = logging.getLogger("blockrepo.storage")


class Databases:
    """The engines of one process. Building them connects to nothing."""

    def __init__(self, settings: Settings) -> None:
        self.engine: Engine = build_engine(settings.database_url, pool_size=settings.db_pool_size)
        # Writes on SQLite begin with BEGIN IMMEDIATE so that two writers queue instead of deadlocking.
        self.write_engine: Engine = self.engine.execution_options(begin_immediate=True)
        self.read_sessions: sessionmaker[Session] = build_session_factory(self.engine)
        self.write_sessions: sessionmaker[Session] = build_session_factory(self.write_engine)
        self.write_queue = WriteQueue(self.engine)
        # Whether each statement is a round trip to a server (PostgreSQL), not a call within the process.
        self.round_trips = self.engine.dialect.name != "sqlite"
        # Connections taken and given back within one synchronous call, never held across an await: the
        # reads made on the event loop (sessions, cached credentials, GET by id) take theirs here. Had they
        # shared the pool with request sessions, which routes hold across awaits, a burst of writes could
        # hold every connection while waiting for the event loop, and the loop would wait for one of them
        # (PUTs stalled at 32 connections for the pool's 30 s timeout).
        self.short_engine: Engine = with_own_pool(self.engine, pool_size=settings.db_pool_size)
        for engine, pool in ((self.engine, "requests"), (self.short_engine, "short")):
            in_use = metrics.CONNECTIONS_IN_USE.labels(pool)
            follow_pool(engine, in_use.inc, in_use.dec)
        # The read lane's connections on the event loop (api/lanes/read.py).
        self.loop_connections = HeldConnections(self.short_engine)
        # Reads of one statement (a session, a user's credentials status), in autocommit on PostgreSQL:
        # psycopg would wrap each in BEGIN and ROLLBACK, two more round trips than the read itself, made
        # by every request with a cookie (bench/README.md). SQLite's driver runs in autocommit already.
        self.lone_reads: Engine = (
            self.short_engine
            if self.engine.dialect.name == "sqlite"
            else self.short_engine.execution_options(isolation_level="AUTOCOMMIT")
        )

    @contextmanager
    def session(self, *, writing: bool, elements_only: bool = False) -> Iterator[Session]:
        """A request's session; a writing one waits its turn and takes the write gate first, shared when
        it writes elements only (`begin_write`). Rolled back and closed at the end: the caller commits
        what it means to keep."""
        waiting = _WaitingWrite() if writing else None
        try:
            with self.write_queue.turn() if writing else nullcontext():
                db = (self.write_sessions if writing else self.read_sessions)()
                try:
                    if writing:
                        db.info[ELEMENTS_ONLY] = elements_only
                        begin_write(db)
                    if waiting is not None:
                        waiting.done()
                    yield db
                finally:
                    db.rollback()
                    db.close()
        finally:
            if waiting is not None:
                waiting.done()

    def readiness(self) -> dict[str, bool]:
        """Whether the database answers and its schema is at the newest migration (`GET /ready`)."""
        try:
            with self.short_engine.connect() as connection:
                return {"database": True, "migrations": schema_at_head(connection)}
        except DBAPIError:
            log.warning("the readiness check could not reach the database", exc_info=True)
            return {"database": False, "migrations": False}

    @contextmanager
    def short_read(self) -> Iterator[Connection]:
        """A connection of the short reads' pool in one read transaction (`read_snapshot`)."""
        with self.short_engine.connect() as connection, read_snapshot(connection):
            yield connection

    @staticmethod
    def snapshot(connection: Connection) -> AbstractContextManager[None]:
        """One snapshot for the statements inside, on a held connection (`held_snapshot`)."""
        return held_snapshot(connection)

    def dispose(self) -> None:
        self.loop_connections.close_all()
        self.engine.dispose()
        self.short_engine.dispose()


class _WaitingWrite:
    """A write counted as waiting (`blockrepo_writes_waiting`) from its arrival until it holds the write
    gate or gives up; the wait is observed once (`blockrepo_write_wait_seconds`)."""

    def __init__(self) -> None:
        self._since: float | None = time.perf_counter()
        metrics.WRITES_WAITING.inc()

    def done(self) -> None:
        if self._since is not None:
            metrics.WRITES_WAITING.dec()
            metrics.WRITE_WAIT_SECONDS.observe(time.perf_counter() - self._since)
            self._since = None


def concurrent_write_refusal(exc: DBAPIError) -> ConcurrentWrite | None:
    """What a client gets when a database error means a concurrent transaction was in the way
    (`is_retryable`): 409 with Retry-After; None for any other database error (a fault)."""
    if not is_retryable(exc):
        return None
    return ConcurrentWrite(
        "a concurrent change was in the way and nothing was written; send the request again",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )
