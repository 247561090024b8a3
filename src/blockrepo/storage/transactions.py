"""The lock order of write transactions (the `repository_state` row first, always) and which database errors
mean "a concurrent transaction was in the way: try again".

Every write transaction begins with `begin_write`, before it reads the metamodel or touches a row. It takes
the one row of `repository_state` for update: on PostgreSQL with `SELECT … FOR UPDATE`, on SQLite the
database lock that the write session's `BEGIN IMMEDIATE` takes at this first statement. Whatever a write
locks afterwards (element rows, values, attributes, users) it locks while holding that row, so no two writes
can wait for each other in a cycle.

Why this row and why first: history hands out gap-free revision numbers, so every write already holds this
row from its flush until its commit (revisions.recorder), i.e. writes were serialized at their end already.
Taking it last, though, made a cycle possible: metamodel and access edits take it first and then update
element rows (removing an attribute's values), while element writes locked element rows first and this row
at the end; PostgreSQL broke the cycle by failing one of them (40P01, which reached clients as 500). Taking
it first also means the metamodel a write validates against is the committed one, not one a concurrent
attribute removal is about to replace. The price is that writes on PostgreSQL no longer overlap at all,
which on SQLite they never did (bench/README.md has the measurement).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, column, select, table
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

# The table as the lock statement needs it (its model belongs to the metamodel feature, above storage).
_REPOSITORY_STATE = table("repository_state", column("id"))

# PostgreSQL SQLSTATEs of a transaction that lost a race and may succeed when run again: serialization
# failure, deadlock detected, lock not available (lock_timeout).
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "55P03"})
# SQLite result codes of the same: SQLITE_BUSY and SQLITE_LOCKED (the busy timeout ran out).
_RETRYABLE_SQLITE_CODES = frozenset({5, 6})

RETRY_AFTER_SECONDS = 1  # what a client is told to wait before sending a refused write again


def begin_write(db: Session) -> None:
    """Take the write lock of the repository: the first statement of every write transaction."""
    connection = db.connection()  # begins the transaction: on SQLite a write session's BEGIN IMMEDIATE
    if connection.dialect.name == "sqlite":
        return  # that BEGIN took the database's write lock; a SELECT would take nothing more
    connection.execute(select(_REPOSITORY_STATE.c.id).where(_REPOSITORY_STATE.c.id == 1).with_for_update())


def is_retryable(error: BaseException) -> bool:
    """Whether a database error means that a concurrent transaction was in the way (a deadlock, a
    serialization failure, a lock wait that timed out) rather than a fault: the same request, sent again,
    may succeed. Nothing it wrote was kept; the transaction has to be rolled back and begun again."""
    if not isinstance(error, DBAPIError):
        return False
    cause = error.orig
    if getattr(cause, "sqlstate", None) in _RETRYABLE_SQLSTATES:
        return True
    code = getattr(cause, "sqlite_errorcode", None)
    # Extended result codes (SQLITE_BUSY_SNAPSHOT, …) keep the primary code in their low byte.
    return isinstance(code, int) and code & 0xFF in _RETRYABLE_SQLITE_CODES


class WriteQueue:
    """Where the writes of a server's processes wait their turn for a SQLite database's write lock: an
    exclusive `flock` on a file beside the database, taken before `BEGIN IMMEDIATE` and given back after
    the transaction ends.

    SQLite's own wait (the busy timeout) polls the lock with sleeps of 1, 2, 5, 10, 15 … up to 100 ms, so
    a writer that just missed the lock sleeps on while writers of the other process take it again and
    again: under concurrent PUTs, requests waited for seconds (bench/README.md). The kernel hands a
    released `flock` to a waiter at once. Each turn opens the file anew, so threads of one process queue
    as well (a lock belongs to its open file). Writers outside the queue (the command line, session
    records) still meet SQLite's busy timeout, as before. PostgreSQL queues waiters for the row lock of
    `begin_write` itself, and an in-memory database has no file: there the queue does nothing."""

    def __init__(self, engine: Engine) -> None:
        database = engine.url.database
        file_based = engine.dialect.name == "sqlite" and database not in (None, "", ":memory:")
        self.path = f"{database}-write-queue" if file_based else None
        self._holding = threading.local()  # whether this thread has its turn

    @contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for this writer's turn; the next one's comes when the block is left. A thread that has its
        turn already keeps it (a write nested in another would otherwise wait for itself)."""
        if self.path is None or getattr(self._holding, "turn", False):
            yield
            return
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            yield  # a directory the server may not write: SQLite's busy timeout alone, as before
            return
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            self._holding.turn = True
            try:
                yield
            finally:
                self._holding.turn = False
        finally:
            os.close(descriptor)  # gives the lock back
