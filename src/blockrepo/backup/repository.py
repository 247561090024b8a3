"""SQL of backup and restore: every table of the schema read from one snapshot, and written back into a
database of either kind, with the counters that keep ids and revision numbers from being handed out twice.

The tables are read from the database itself (reflection), not from the models: a backup holds whatever
the schema at its migration has, and a restore writes into the schema of that same migration."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Column, Connection, Engine, MetaData, Table, bindparam, func, select, text, update
from sqlalchemy.orm import Session
from sqlalchemy.sql import sqltypes

from blockrepo.storage.bulk_insert import insert_tuples
from blockrepo.storage.transactions import GATE_KEY, WRITE_LOCKS

# Tables that hold the state of sign-ins, not of the repository: sessions, login failures and rate
# windows. A restore starts without them (everybody signs in again); Redis would not be backed up either.
TRANSIENT_TABLES = frozenset({"auth_session", "login_failure", "rate_window"})
# Rows a migration makes in an empty schema (the signing secret): they do not make a database hold a
# repository, and a restore replaces them with the backup's.
SEEDED_BY_MIGRATIONS = frozenset({"server_secret"})
# Alembic's own bookkeeping: a restore sets it by migrating to the backup's schema.
_MIGRATIONS_TABLE = "alembic_version"
# The counter of revision numbers, by the name a backup gives it among the id counters.
REVISION_COUNTER = "revision"
_ROWS_PER_FETCH = 2000


@dataclass(frozen=True)
class StoredTable:
    """A table of the schema as a backup sees it: its name, its columns with the kind of value each
    holds (`plain` JSON values, `json`, `datetime`, `date`, `bytes`, `decimal`), its one primary-key
    column if it has one, and the columns that refer to its own rows."""

    table: Table
    name: str
    columns: tuple[tuple[str, str], ...]
    key: str | None
    self_references: tuple[str, ...]

    @property
    def column_names(self) -> list[str]:
        return [name for name, _ in self.columns]


def repository_tables(connection: Connection) -> list[StoredTable]:
    """The schema's tables worth keeping, parents before the tables that refer to them."""
    metadata = MetaData()
    metadata.reflect(bind=connection)
    return [
        _stored(table)
        for table in metadata.sorted_tables
        if table.name != _MIGRATIONS_TABLE and table.name not in TRANSIENT_TABLES
    ]


def _stored(table: Table) -> StoredTable:
    keys = list(table.primary_key.columns)
    return StoredTable(
        table=table,
        name=str(table.name),
        columns=tuple((str(column.name), _kind(column)) for column in table.columns),
        key=str(keys[0].name) if len(keys) == 1 else None,
        self_references=tuple(
            str(key.parent.name)
            for constraint in table.foreign_key_constraints
            for key in constraint.elements
            if key.column.table.name == table.name
        ),
    )


def _kind(column: Column[Any]) -> str:
    kind = column.type
    if isinstance(kind, sqltypes.JSON):
        return "json"
    if isinstance(kind, sqltypes.DateTime):
        return "datetime"
    if isinstance(kind, sqltypes.Date):
        return "date"
    if isinstance(kind, sqltypes.LargeBinary):
        return "bytes"
    if isinstance(kind, sqltypes.Numeric) and not isinstance(kind, sqltypes.Float):
        return "decimal"
    return "plain"


def delete_everything(connection: Connection) -> None:
    """Empty every table of the schema but Alembic's (children first): what the migrations seeded, or
    the repository a replacing restore replaces."""
    metadata = MetaData()
    metadata.reflect(bind=connection)
    for table in reversed(metadata.sorted_tables):
        if table.name != _MIGRATIONS_TABLE:
            connection.execute(table.delete())


@contextmanager
def snapshot(engine: Engine) -> Iterator[Connection]:
    """A connection whose reads all come from one snapshot in which every write has either committed or
    not begun.

    SQLite: one read transaction (WAL): its one writer commits in revision order, so a snapshot never has
    a later revision without an earlier one. PostgreSQL: writers overlap their commits, so a snapshot
    taken at any moment could hold revision 11 while 10 is still committing (and restore a gap). The
    write gate, taken exclusively on a second connection, waits until the writes in flight have ended and
    holds new ones back just until the snapshot is taken: a pause of one commit's length."""
    with engine.connect() as connection:
        if connection.dialect.name != "postgresql":
            connection.exec_driver_sql("SELECT count(*) FROM sqlite_master")  # the read snapshot begins
            yield connection
            connection.rollback()
            return
        with engine.connect() as gate:
            # A transaction-level lock: ended with the gate's transaction, however this block is left
            # (a session-level lock left behind on a pooled connection would stop every writer).
            gate.execute(
                text("SELECT pg_advisory_xact_lock(:space, :key)"), {"space": WRITE_LOCKS, "key": GATE_KEY}
            )
            try:
                connection = connection.execution_options(isolation_level="REPEATABLE READ")
                # REPEATABLE READ takes its snapshot at the first statement.
                connection.execute(text("SELECT 1"))
            finally:
                gate.rollback()
        yield connection
        connection.rollback()


def stream_rows(connection: Connection, stored: StoredTable) -> Iterator[Sequence[Any]]:
    """Every row of the table in primary-key order, fetched a batch at a time (a server-side cursor on
    PostgreSQL: flat memory however large the table)."""
    table = stored.table
    statement = select(table).order_by(*(table.primary_key.columns or table.columns))
    result = connection.execution_options(stream_results=True, yield_per=_ROWS_PER_FETCH).execute(statement)
    for row in result:
        yield tuple(row)


def id_counters(connection: Connection, stored_tables: Sequence[StoredTable]) -> dict[str, int]:
    """The highest number each id counter has handed out, deleted rows included, by table name; and the
    revision counter under `REVISION_COUNTER`. A restore sets its counters at least this high, so an id
    a deleted user or element had (which signed cookies and history name) is never handed out again."""
    counters: dict[str, int] = {}
    if connection.dialect.name == "postgresql":
        for table, _, sequence in _serial_sequences(connection, stored_tables):
            counters[str(table.name)] = _sequence_used(connection, sequence)
        counters[REVISION_COUNTER] = _sequence_used(connection, "revision_id_seq")
        return counters
    has_sequences = connection.exec_driver_sql(
        "SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'"
    ).scalar_one()
    if has_sequences:
        for name, used in connection.exec_driver_sql("SELECT name, seq FROM sqlite_sequence"):
            counters[str(name)] = int(used)
    counters[REVISION_COUNTER] = int(
        connection.exec_driver_sql("SELECT coalesce(max(revision), 0) FROM repository_state").scalar_one()
    )
    return counters


def count_rows(connection: Connection, stored_tables: Sequence[StoredTable]) -> dict[str, int]:
    """How many rows each table holds."""
    return {
        stored.name: int(connection.execute(select(func.count()).select_from(stored.table)).scalar_one())
        for stored in stored_tables
    }


def lock_for_restore(connection: Connection) -> None:
    """Keep every writer out of the restoring transaction's way: the database write lock on SQLite (its
    BEGIN IMMEDIATE), the write gate exclusively on PostgreSQL."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            text("SELECT pg_advisory_xact_lock(:space, :key)"), {"space": WRITE_LOCKS, "key": GATE_KEY}
        )
    else:
        connection.exec_driver_sql("SELECT count(*) FROM sqlite_master")


def insert_batch(
    db: Session, stored: StoredTable, names: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """INSERT rows of the table, each a tuple of the columns `names` (a COPY on PostgreSQL)."""
    insert_tuples(db, stored.table, names, rows)


def set_references(
    connection: Connection, stored: StoredTable, column: str, pairs: Sequence[tuple[Any, Any]]
) -> None:
    """Write `column` of the rows named by primary key: `pairs` are (key, value)."""
    table = stored.table
    (key,) = table.primary_key.columns
    statement = (
        update(table)
        .where(key == bindparam("row_key"))
        .values({column: bindparam("row_value")})
        .execution_options(synchronize_session=False)
    )
    connection.execute(statement, [{"row_key": k, "row_value": v} for k, v in pairs])


def restore_counters(
    connection: Connection, stored_tables: Sequence[StoredTable], counters: dict[str, int]
) -> int:
    """Set each id counter to at least what the backup's source had handed out and what the restored rows
    hold, and the revision counter to the newest revision; that revision."""
    newest_revision = max(
        counters.get(REVISION_COUNTER, 0),
        int(connection.exec_driver_sql("SELECT coalesce(max(id), 0) FROM revision").scalar_one()),
    )
    tables = [stored.table for stored in stored_tables]
    if connection.dialect.name == "postgresql":
        for table, column, sequence in _serial_sequences(connection, stored_tables):
            highest = connection.execute(select(func.coalesce(func.max(table.c[column]), 0))).scalar_one()
            _set_sequence(connection, sequence, max(int(highest), counters.get(table.name, 0)))
        _set_sequence(connection, "revision_id_seq", newest_revision)
        return newest_revision
    connection.execute(text("UPDATE repository_state SET revision = :newest"), {"newest": newest_revision})
    autoincrement = {
        str(name)
        for (name,) in connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%AUTOINCREMENT%'"
        )
    }
    for table in tables:
        serial = _serial_column(table)
        if table.name not in autoincrement or serial is None:
            continue
        highest = connection.execute(select(func.coalesce(func.max(table.c[serial]), 0))).scalar_one()
        used = max(int(highest), counters.get(table.name, 0))
        # sqlite_sequence has no key: one row a table, made by the first insert (absent for an empty table).
        changed = connection.execute(
            text("UPDATE sqlite_sequence SET seq = :used WHERE name = :table"),
            {"used": used, "table": table.name},
        ).rowcount
        if not changed and used:
            connection.execute(
                text("INSERT INTO sqlite_sequence (name, seq) VALUES (:table, :used)"),
                {"used": used, "table": table.name},
            )
    return newest_revision


def _serial_sequences(
    connection: Connection, stored_tables: Sequence[StoredTable]
) -> Iterator[tuple[Table, str, str]]:
    """PostgreSQL: each table whose id column a sequence fills, with that column and sequence."""
    for table in (stored.table for stored in stored_tables):
        column = _serial_column(table)
        if column is None:
            continue
        sequence = connection.execute(
            text("SELECT pg_get_serial_sequence(:table, :column)"),
            {"table": _quoted(connection, table.name), "column": column},
        ).scalar_one()
        if sequence is not None:
            yield table, column, str(sequence)


def _serial_column(table: Table) -> str | None:
    """The one integer primary-key column whose values a counter hands out, if the table has one."""
    columns = list(table.primary_key.columns)
    if len(columns) != 1 or columns[0].autoincrement is False:
        return None
    try:
        python_type = columns[0].type.python_type
    except NotImplementedError:
        return None
    return columns[0].name if python_type is int else None


def _sequence_used(connection: Connection, sequence: str) -> int:
    # A sequence statement cannot take its name as a parameter: `sequence` comes from the catalogue.
    last_value, called = connection.exec_driver_sql(f"SELECT last_value, is_called FROM {sequence}").one()
    return int(last_value) if called else int(last_value) - 1


def _set_sequence(connection: Connection, sequence: str, used: int) -> None:
    # setval(s, n, true): the next value is n + 1; with nothing used, (1, false): the next is 1.
    connection.execute(
        text("SELECT setval(CAST(:sequence AS regclass), :value, :called)"),
        {"sequence": sequence, "value": max(used, 1), "called": used >= 1},
    )


def _quoted(connection: Connection, name: str) -> str:
    return connection.dialect.identifier_preparer.quote(name)
