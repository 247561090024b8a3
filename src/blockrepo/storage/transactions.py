"""The lock order of write transactions (the write gate first, always) and which database errors mean "a
concurrent transaction was in the way: try again".

Every write transaction begins with `begin_write`, before it reads the metamodel or touches a row. On SQLite
that is the database lock the write session's `BEGIN IMMEDIATE` takes: one writer at a time. On PostgreSQL
it is the write gate, a transaction-level advisory lock, in one of two modes. Element writes take it
shared: they run side by side, and a write that changes the structure between elements (relations, the
hierarchy, names, deletions) takes the structure lock (`lock_structure`) next, before any row, so that the
cardinality and cycle checks see no concurrent structural change. Everything else (metamodel, access and
administration edits, imports, the command line) takes the gate exclusively and runs alone: the metamodel
an element write validates against cannot change under it, and an attribute removal meets no writer that
is about to store a value of it. Whatever a write locks afterwards (element rows, values, attributes,
users) it locks while holding the gate, and the locks of one mode come in one order (gate, structure,
element rows in ascending id, its own revision claim last), so no two writes wait for each other in a
cycle. PostgreSQL's lock manager queues a shared request behind a waiting exclusive one, so a metamodel
edit is not starved by a stream of element writes.

Revision numbers on PostgreSQL come from a sequence at flush time (`revisions.repository`), so writers
overlap their commits instead of queueing behind one row; readers of history see revisions only up to the
committed horizon (`revisions.repository.visible_revision`).
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from blockrepo.storage.engine import driver_execute
from blockrepo.storage.prepared import begun_with

# PostgreSQL advisory lock keys (two-int form: namespace, key). The write gate and the structure lock share
# one namespace; revision claims have their own, keyed by the revision number (revisions.repository).
WRITE_LOCKS = 7403
GATE_KEY, STRUCTURE_KEY = 0, 1
REVISION_CLAIMS = 7404
_GATE_SHARED = f"SELECT pg_advisory_xact_lock_shared({WRITE_LOCKS}, {GATE_KEY})"
_GATE_EXCLUSIVE = f"SELECT pg_advisory_xact_lock({WRITE_LOCKS}, {GATE_KEY})"
_STRUCTURE = f"SELECT pg_advisory_xact_lock({WRITE_LOCKS}, {STRUCTURE_KEY})"

# PostgreSQL SQLSTATEs of a transaction that lost a race and may succeed when run again: serialization
# failure, deadlock detected, lock not available (lock_timeout).
_RETRYABLE_SQLSTATES = frozenset({"40001", "40P01", "55P03"})
# SQLite result codes of the same: SQLITE_BUSY and SQLITE_LOCKED (the busy timeout ran out).
_RETRYABLE_SQLITE_CODES = frozenset({5, 6})

RETRY_AFTER_SECONDS = 1  # what a client is told to wait before sending a refused write again


# Session.info key: set (True) on the session of a write that changes elements only (`begin_write`).
ELEMENTS_ONLY = "blockrepo.write.elements_only"


def begin_write(db: Session) -> None:
    """Take the write gate: the first statement of every write transaction. Shared when the session is
    marked `ELEMENTS_ONLY` (it runs beside other element writes; PostgreSQL only, SQLite has one writer
    anyway), else exclusive."""
    connection = db.connection()  # begins the transaction: on SQLite a write session's BEGIN IMMEDIATE
    if connection.dialect.name == "sqlite":
        return  # that BEGIN took the database's write lock; a SELECT would take nothing more
    gate = _GATE_SHARED if db.info.get(ELEMENTS_ONLY) else _GATE_EXCLUSIVE
    if not begun_with(connection, gate):  # PostgreSQL's BEGIN and the gate in one round trip
        driver_execute(connection, gate)


def lock_structure(db: Session) -> None:
    """Serialise this element write with every other one that changes relations, the hierarchy, names
    or deletes: call after `begin_write` and before locking any row. Nothing on SQLite (one writer)."""
    connection = db.connection()
    if connection.dialect.name != "sqlite":
        driver_execute(connection, _STRUCTURE)


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
