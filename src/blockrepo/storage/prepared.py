"""Statements run as libpq prepared statements on PostgreSQL (`psycopg.pq`), below psycopg's cursors: for
the few every request makes (a session, the acting user, the element a write locks, the write itself)."""

from __future__ import annotations

import itertools
import re
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg import abc, errors, pq
from psycopg.adapt import PyFormat, Transformer
from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

_NUMBERS = itertools.count(1)  # next() is atomic: two statements never share a name
# `%(name)s` as SQLAlchemy's psycopg dialect writes a named parameter, and `%%` for a percent sign.
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


class PreparedStatement:
    """One statement, prepared once on each connection that runs it and then executed by name with its
    parameters in text form: psycopg's cursor spends about 50 µs of Python on a statement (a cursor
    and its adapters, the query's conversion, the prepared-statement bookkeeping, a generator-driven
    wait), more than the round trip costs the worker; libpq's `PQexecPrepared` does the same in C
    (bench/README.md). Rows come back as tuples loaded by psycopg's own loaders, as a cursor would (none
    for a statement without rows).

    Only for a statement whose every parameter is compared to a column or cast, so the server infers
    its type (a parameter in the select list would come back as text). A connection in a transaction
    that psycopg has not begun yet (outside autocommit) takes the cursor's way: psycopg begins it. The
    engine keeps psycopg from preparing statements of its own (`storage.engine.build_engine`): it
    deallocates all of a connection's prepared statements, these too, when a transaction rolls back."""

    def __init__(self, sql: str) -> None:
        order: list[str] = []

        def numbered(match: re.Match[str]) -> str:
            name = match.group(1)
            if name is None:
                return "%"
            if name not in order:
                order.append(name)
            return f"${order.index(name) + 1}"

        self.sql = sql
        self._text = _PLACEHOLDER.sub(numbered, sql).encode()
        self._order = tuple(order)
        self._name = f"blockrepo_{next(_NUMBERS)}".encode()  # unique in the process
        self._formats = [PyFormat.TEXT] * len(order)

    def rows(
        self, connection: Connection, parameters: Mapping[str, Any], fallback: Callable[[], list[Any]]
    ) -> list[Any]:
        driver = connection.connection.dbapi_connection
        if not isinstance(driver, psycopg.Connection):
            return fallback()
        pgconn = driver.pgconn
        if not driver.autocommit and pgconn.transaction_status == pq.TransactionStatus.IDLE:
            return fallback()
        for listener in connection.dispatch.before_cursor_execute:
            listener(connection, None, self.sql, parameters, None, False)
        state = _connections.get(driver)
        if state is None:
            state = _connections[driver] = _ConnectionState(Transformer(driver))
        try:
            if self._name not in state.prepared:
                _checked(pgconn.prepare(self._name, self._text))
                state.prepared.add(self._name)
            loader = state.transformer
            values = loader.dump_sequence([parameters[name] for name in self._order], self._formats)
            result = _checked(pgconn.exec_prepared(self._name, values))
            if result.status == pq.ExecStatus.COMMAND_OK:
                return []
            loader.set_pgresult(result)
            return loader.load_rows(0, result.ntuples, tuple)
        except psycopg.Error as exc:
            raise DBAPIError.instance(self.sql, parameters, exc, psycopg.Error) from exc


def begun_with(connection: Connection, sql: str) -> bool:
    """Begin the connection's transaction and run `sql` (a statement without parameters whose rows are not
    wanted) in one round trip, as one simple query `BEGIN; ...`; psycopg would send its BEGIN on its own
    first. False, and nothing sent, where psycopg has to begin: not psycopg, in autocommit, a transaction
    already open, or a BEGIN with options (isolation level, read only, deferrable). psycopg reads whether a
    transaction is open from libpq, so its commit and rollback end this one as their own."""
    driver = connection.connection.dbapi_connection
    if not isinstance(driver, psycopg.Connection) or driver.autocommit:
        return False
    if driver.pgconn.transaction_status != pq.TransactionStatus.IDLE or (
        driver.isolation_level is not None or driver.read_only is not None or driver.deferrable is not None
    ):
        return False
    begin_and_run = f"BEGIN; {sql}"
    for listener in connection.dispatch.before_cursor_execute:
        listener(connection, None, begin_and_run, {}, None, False)
    try:
        _checked(driver.pgconn.exec_(begin_and_run.encode()))
    except psycopg.Error as exc:
        raise DBAPIError.instance(begin_and_run, {}, exc, psycopg.Error) from exc
    return True


class _ConnectionState:
    __slots__ = ("prepared", "transformer")

    def __init__(self, transformer: abc.Transformer) -> None:
        self.transformer = transformer
        self.prepared: set[bytes] = set()  # the names prepared on this connection's server session


# A driver connection -> what was prepared on it; gone with the connection (a new one prepares anew).
_connections: weakref.WeakKeyDictionary[psycopg.Connection[Any], _ConnectionState] = (
    weakref.WeakKeyDictionary()
)


_SUCCEEDED = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)


def _checked(result: pq.abc.PGresult) -> pq.abc.PGresult:
    """The result if the command succeeded (with rows or without), else the server's error as psycopg
    raises it."""
    if result.status in _SUCCEEDED:
        return result
    sqlstate = result.error_field(pq.DiagnosticField.SQLSTATE)
    kind = errors.lookup(sqlstate.decode()) if sqlstate else psycopg.OperationalError
    message = result.error_message.decode("utf-8", "replace").strip()
    raise kind(message or "the statement failed", info=result)
