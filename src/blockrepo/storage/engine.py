"""Builds the SQLAlchemy engine for SQLite (WAL, foreign keys, busy timeout) or PostgreSQL from one URL."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from sqlalchemy import (
    CompoundSelect,
    Connection,
    Dialect,
    Engine,
    Executable,
    Select,
    UpdateBase,
    create_engine,
    event,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from blockrepo.storage.prepared import PreparedStatement

_TUPLES_OK = 2  # libpq's PGRES_TUPLES_OK: a result with rows (psycopg.pq.ExecStatus.TUPLES_OK)


def normalize_url(url: str) -> str:
    """Accept plain `postgresql://` URLs and use the psycopg 3 driver for them."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    # Autocommit off at the driver level, transactions begun by SQLAlchemy's "BEGIN" below, so that
    # SQLite takes the write lock at BEGIN IMMEDIATE time instead of failing mid-transaction.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA cache_size=-65536")
    cursor.close()


def _begin_sqlite(conn: Any) -> None:
    immediate = conn.get_execution_options().get("begin_immediate", False)
    # At the driver level: every transaction runs it, and `exec_driver_sql`'s execution context cost more
    # than SQLite's BEGIN (bench/hot_path.py); listeners still see it.
    driver_execute(conn, "BEGIN IMMEDIATE" if immediate else "BEGIN")


def _json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def build_engine(url: str, *, pool_size: int = 10) -> Engine:
    """Create an engine; nothing connects until the first use."""
    url = normalize_url(url)
    if url.startswith("sqlite"):
        # A file database: SQLAlchemy's default pool keeps 5 connections and closes every one beyond them
        # on return, so under load each request opened a connection, ran the PRAGMAs and started with a
        # cold page cache. (An in-memory database has one connection per thread and takes no pool size.)
        in_memory = make_url(url).database in (None, "", ":memory:")
        pool: dict[str, Any] = {} if in_memory else {"pool_size": pool_size, "max_overflow": pool_size}
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": 30},
            json_serializer=_json_text,
            json_deserializer=orjson.loads,
            **pool,
        )
        event.listen(engine, "connect", _configure_sqlite)
        event.listen(engine, "begin", _begin_sqlite)
        return engine
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=1800,
        # psycopg prepares no statement by itself: the ones worth it are prepared as `PreparedStatement`s, and
        # psycopg, having prepared any of its own, would drop them all (DEALLOCATE ALL) at every rollback.
        connect_args={"prepare_threshold": None},
        # JSON columns (history changes) are written and read with orjson: several times faster than the
        # json module (a bulk write of 10,000 elements records 10,000 changes).
        json_serializer=_json_text,
        json_deserializer=orjson.loads,
    )
    _ping_idle_connections(engine)
    return engine


PING_AFTER_IDLE = 5.0  # seconds a pooled PostgreSQL connection may rest before its checkout pings it


def _ping_idle_connections(engine: Engine) -> None:
    """Ping a pooled connection at checkout only when it has rested PING_AFTER_IDLE seconds or more (a
    restarted or failed-over server, a proxy's idle cut), not on every checkout as `pool_pre_ping` does:
    that ping is a round trip, and every request checks out at least once (a tenth of a PUT's time on
    PostgreSQL, bench/README.md). A connection in use seconds ago is as good as the ping would say; one
    that broke meanwhile fails its statement, and SQLAlchemy invalidates it and the pool's others."""
    dialect = engine.dialect

    def note_rest(_dbapi_connection: Any, record: Any) -> None:
        record.info["rests_since"] = time.monotonic()

    def ping_if_rested(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get("rests_since")
        if since is None or time.monotonic() - since < PING_AFTER_IDLE:
            return
        try:
            alive = dialect.do_ping(dbapi_connection)
        except Exception as exc:  # whatever the driver raises for a dead connection
            raise DisconnectionError("the pooled connection is gone") from exc
        if not alive:
            raise DisconnectionError("the pooled connection is gone")

    event.listen(engine, "checkin", note_rest)
    event.listen(engine, "checkout", ping_if_rested)


def with_own_pool(engine: Engine, *, pool_size: int) -> Engine:
    """An engine on the same database with a connection pool of its own; `before_cursor_execute`
    listeners of `engine` (statement counters, logging) see its statements too. An in-memory SQLite
    database exists once per engine, so there it is `engine` itself."""
    if engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:"):
        return engine
    other = build_engine(engine.url.render_as_string(hide_password=False), pool_size=pool_size)

    def forward(*arguments: Any) -> None:
        for listener in engine.dispatch.before_cursor_execute:
            listener(*arguments)

    event.listen(other, "before_cursor_execute", forward)
    return other


class HeldConnections:
    """One connection per thread, kept open between uses: for short reads made on the event loop, where a
    pool's checkout and return (with their events and the reset) cost as much as the reads themselves.
    Only the thread that holds a connection uses it; `drop` closes a connection that failed, so the next
    use opens a fresh one."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._local = threading.local()
        self._lock = threading.Lock()
        self._every: list[Connection] = []

    def get(self) -> Connection:
        """This thread's connection, in autocommit: a lone statement needs no BEGIN and ROLLBACK (two more
        round trips to PostgreSQL); statements that must share a snapshot go in `held_snapshot`."""
        connection: Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._local.connection = connection
            with self._lock:
                self._every.append(connection)
        return connection

    def drop(self) -> None:
        connection: Connection | None = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            with self._lock:
                if connection in self._every:
                    self._every.remove(connection)
            connection.invalidate()
            connection.close()

    def close_all(self) -> None:
        with self._lock:
            every, self._every = self._every, []
        for connection in every:
            connection.close()


def follow_pool(engine: Engine, taken: Callable[[], None], given_back: Callable[[], None]) -> None:
    """Call `taken` for each connection taken from the engine's pool and `given_back` for each returned
    (the pool's events: every checkout has its checkin, an invalidated connection's too)."""
    event.listen(engine, "checkout", lambda *_: taken())
    event.listen(engine, "checkin", lambda *_: given_back())


def build_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)


def driver_rows(connection: Connection, sql: str, arguments: Any) -> list[Any]:
    """Run SQL text on the connection's DBAPI cursor and return the driver's rows: the hot path's reads.

    `Connection.exec_driver_sql` costs several times more in SQLAlchemy's execution machinery (a
    context, a result and its metadata) than SQLite takes to answer a primary-key read (bench/README.md).
    Listeners of
    `before_cursor_execute` still see every statement (the statement-count tests rely on it), and driver
    errors are raised as SQLAlchemy's (`OperationalError`, ...), as everywhere else."""
    return _on_driver(connection, sql, arguments, fetch=True)


def prepared_rows(
    connection: Connection, statement: PreparedStatement, parameters: Mapping[str, Any]
) -> list[Any]:
    """`driver_rows` of a statement with named parameters, prepared on PostgreSQL (`PreparedStatement`)."""
    return statement.rows(connection, parameters, lambda: driver_rows(connection, statement.sql, parameters))


def driver_execute(connection: Connection, sql: str, arguments: Any = ()) -> None:
    """`driver_rows` for a statement without rows (BEGIN, a one-row INSERT), which psycopg refuses to
    fetch from."""
    _on_driver(connection, sql, arguments, fetch=False)


def _on_driver(connection: Connection, sql: str, arguments: Any, *, fetch: bool) -> list[Any]:
    cursor = connection.connection.cursor()
    try:
        for listener in connection.dispatch.before_cursor_execute:
            listener(connection, cursor, sql, arguments, None, False)
        cursor.execute(sql, arguments)
        if not fetch:
            return []
        # A statement without rows (an UPDATE, an INSERT) has none to fetch; psycopg refuses to. psycopg's
        # `description` builds a column object per column on every call (a tenth of a PostgreSQL write's
        # client CPU in a profile), its result's status says the same at once.
        result = getattr(cursor, "pgresult", None)
        if result is not None:
            return list(cursor.fetchall()) if result.status == _TUPLES_OK else []
        return list(cursor.fetchall()) if cursor.description is not None else []
    except connection.dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(sql, arguments, exc, connection.dialect.loaded_dbapi.Error) from exc
    finally:
        cursor.close()


@contextmanager
def read_snapshot(connection: Connection) -> Iterator[None]:
    """One read transaction for the `driver_rows` reads inside it, rolled back at the end: SQLite's driver
    runs in autocommit (see `_configure_sqlite`), so without it each statement would see its own state of
    the database; PostgreSQL's driver opens the transaction by itself at the first statement."""
    if connection.dialect.name == "sqlite":
        driver_rows(connection, "BEGIN", ())
    try:
        yield
    finally:
        connection.connection.rollback()


@contextmanager
def held_snapshot(connection: Connection) -> Iterator[None]:
    """One read transaction, one snapshot for every statement inside it, on a connection in autocommit
    (`HeldConnections`): on PostgreSQL REPEATABLE READ, since its default gives each statement its own."""
    sqlite = connection.dialect.name == "sqlite"
    driver_execute(connection, "BEGIN" if sqlite else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        yield
    finally:
        connection.connection.rollback()


@contextmanager
def sqlite_page_cache(connection: Connection, kib: int) -> Iterator[None]:
    """SQLite's page cache of this connection at most `kib` KiB inside the block, as it was after; nothing
    on PostgreSQL. For one long write whose pages are not read again (an import): the connection's
    usual 64 MiB (`_configure_sqlite`) would fill with them and stay resident."""
    if connection.dialect.name != "sqlite":
        yield
        return
    usual = driver_rows(connection, "PRAGMA cache_size", ())[0][0]
    driver_execute(connection, f"PRAGMA cache_size={-int(kib)}")
    try:
        yield
    finally:
        driver_execute(connection, f"PRAGMA cache_size={int(usual)}")


class DriverStatement:
    """A Core statement compiled once per dialect and run at the driver level (`driver_rows`).

    `Connection.execute` of a prebuilt select still looks the statement up in SQLAlchemy's compiled cache,
    builds a `Row` per row and runs the type processors, which costs more than SQLite needs to answer a
    primary-key read. Here the SQL text is made once and the driver's plain tuples come back. Columns come
    in the driver's form: on SQLite, time stamps are text and booleans integers."""

    def __init__(self, statement: Executable, *, prepared: bool = False) -> None:
        self._statement = statement
        # dialect name -> (SQL, parameter names in position order or None for named, fixed parameters)
        self._compiled: dict[str, tuple[str, tuple[str, ...] | None, dict[str, Any]]] = {}
        # On PostgreSQL a `PreparedStatement` (one every request makes; see there for which qualify).
        self._prepared = prepared
        self._on_server: PreparedStatement | None = None  # made at the first run, from the SQL

    def _sql(self, dialect: Dialect) -> tuple[str, tuple[str, ...] | None, dict[str, Any]]:
        compiled = self._compiled.get(dialect.name)
        if compiled is None:
            done = self._statement.compile(dialect=dialect)  # type: ignore[attr-defined]
            order = tuple(done.positiontup or ()) if done.positional else None
            fixed = {name: bind.effective_value for name, bind in done.binds.items() if not bind.required}
            compiled = self._compiled[dialect.name] = (done.string, order, fixed)
        return compiled

    def rows(self, connection: Connection, parameters: Mapping[str, Any]) -> list[Any]:
        """The driver's rows; `parameters` names the statement's `bindparam`s (literals are fixed)."""
        sql, order, fixed = self._sql(connection.dialect)
        merged = {**fixed, **parameters}
        arguments: Any = merged if order is None else tuple(merged[name] for name in order)
        if self._prepared and connection.dialect.name == "postgresql":  # named parameters: `merged`
            if self._on_server is None:
                self._on_server = PreparedStatement(sql)
            return prepared_rows(connection, self._on_server, merged)
        return driver_rows(connection, sql, arguments)

    def first(self, connection: Connection, parameters: Mapping[str, Any]) -> Any | None:
        rows = self.rows(connection, parameters)
        return rows[0] if rows else None


Processors = list[tuple[int, Callable[[Any], Any]]]


class TypedStatement:
    """A `DriverStatement` whose parameters and rows are converted as SQLAlchemy would convert them, on
    SQLite: time stamps and dates go in and come out as text, booleans as integers (psycopg converts
    these itself). For the statements of a single write, where `Session.execute` costs more than SQLite
    needs to run them (bench/hot_path.py)."""

    def __init__(
        self,
        statement: Select[*tuple[Any, ...]] | CompoundSelect[*tuple[Any, ...]] | UpdateBase,
        *,
        prepared: bool = False,
    ) -> None:
        self._statement = statement
        self._driver = DriverStatement(statement, prepared=prepared)
        # dialect name -> (parameter name -> bind processor, result column index -> result processor)
        self._converters: dict[str, tuple[dict[str, Callable[[Any], Any]], Processors]] = {}

    def _converters_for(self, dialect: Dialect) -> tuple[dict[str, Callable[[Any], Any]], Processors]:
        converters = self._converters.get(dialect.name)
        if converters is None:
            binds: dict[str, Callable[[Any], Any]] = {}
            results: Processors = []
            if dialect.name == "sqlite":
                compiled = self._statement.compile(dialect=dialect)
                for name, bind in compiled.binds.items():
                    process = bind.type.dialect_impl(dialect).bind_processor(dialect)
                    if process is not None:
                        binds[name] = process
                # A select's columns, or what an UPDATE … RETURNING returns.
                for index, column in enumerate(self._statement.exported_columns):
                    result = column.type.dialect_impl(dialect).result_processor(dialect, None)
                    if result is not None:
                        results.append((index, result))
            converters = self._converters[dialect.name] = (binds, results)
        return converters

    def rows(self, connection: Connection, parameters: Mapping[str, Any]) -> Sequence[Sequence[Any]]:
        binds, results = self._converters_for(connection.dialect)
        if binds:
            parameters = {
                name: (binds[name](value) if name in binds else value) for name, value in parameters.items()
            }
        rows = self._driver.rows(connection, parameters)
        if not results:
            return rows
        typed: list[Sequence[Any]] = []
        for row in rows:
            values = list(row)
            for index, process in results:
                values[index] = process(values[index])
            typed.append(values)
        return typed
