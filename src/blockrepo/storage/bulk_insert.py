"""Set-based INSERT of many rows of one table, below the ORM and Core executemany (their per-row
bookkeeping costs more than the insert itself): sqlite3 executemany, PostgreSQL COPY."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import Dialect, Table
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

# Rows per executemany call: bounds the memory of one batch of parameter tuples.
ROWS_PER_CALL = 5000
_NOTHING = object()  # an input no processor has seen yet


Converters = list[tuple[int, Callable[[Any], Any]]]
# (dialect, table, columns, verbatim columns) -> the INSERT and the bind processors of its columns: made
# once, since a single write's few one-row inserts spent more on making them than on the inserts.
_PREPARED: dict[tuple[str, str, tuple[str, ...], frozenset[str]], tuple[str, Converters]] = {}


def _prepared(
    dialect: Dialect, table: Table, names: tuple[str, ...], verbatim: frozenset[str]
) -> tuple[str, Converters]:
    key = (dialect.name, table.name, names, verbatim)
    prepared = _PREPARED.get(key)
    if prepared is not None:
        return prepared
    # The dialect's own implementation of each type: the generic DateTime has no bind processor, and the
    # sqlite3 driver's default adapter would store another text format than every other write path.
    processors = [
        None if name in verbatim else table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        for name in names
    ]
    quote = dialect.identifier_preparer.quote
    placeholder = "?" if dialect.paramstyle == "qmark" else "%s"
    sql = (
        f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
        f"VALUES ({', '.join([placeholder] * len(names))})"
    )
    converting: Converters = [(index, p) for index, p in enumerate(processors) if p is not None]
    _PREPARED[key] = (sql, converting)
    return sql, converting


def insert_rows(
    db: Session, table: Table, rows: Sequence[Mapping[str, Any]], *, verbatim: Collection[str] = ()
) -> None:
    """INSERT many rows with one driver-level executemany per ROWS_PER_CALL rows (PostgreSQL: one COPY).

    Values pass through each column type's own bind processor, so they are stored exactly as an ORM or
    Core insert stores them (dates as ISO text on SQLite, for instance); what is skipped is the per-row
    bookkeeping of a Core executemany, which costs more than the insert itself on large batches. The
    columns named in `verbatim` already hold what that processor would make (JSON text, say) and skip
    it."""
    if not rows:
        return
    connection = db.connection()
    dialect = connection.dialect
    names = list(rows[0])
    sql, converting = _prepared(dialect, table, tuple(names), frozenset(verbatim))
    quote = dialect.identifier_preparer.quote
    # The last input and output of each processor: a bulk write's rows share their time stamps (three per
    # element row), and the same object converts to the same value.
    last: list[list[Any]] = [[_NOTHING, None] for _ in converting]

    def convert(values: list[Any]) -> None:
        for (index, process), memo in zip(converting, last, strict=True):
            value = values[index]
            if value is memo[0]:
                values[index] = memo[1]
            else:
                memo[0] = value
                values[index] = memo[1] = process(value)

    if dialect.name == "postgresql":
        # COPY: PostgreSQL executes row-by-row INSERTs one by one even when pipelined; COPY takes the rows
        # as one stream, about three times faster for element values (bench/massdata_scale.py).
        columns = ", ".join(quote(n) for n in names)
        statement = f"COPY {quote(table.name)} ({columns}) FROM STDIN"
        driver = connection.connection.driver_connection
        try:
            with driver.cursor() as cursor, cursor.copy(statement) as copy:  # type: ignore[union-attr]
                for row in rows:
                    values = [row[name] for name in names]
                    convert(values)
                    copy.write_row(values)
        except dialect.loaded_dbapi.Error as exc:
            # The driver's own error, wrapped as SQLAlchemy wraps every other statement's: a constraint a
            # concurrent request broke is an IntegrityError that callers turn into a 409.
            raise DBAPIError.instance(statement, None, exc, dialect.loaded_dbapi.Error) from exc
        return
    for start in range(0, len(rows), ROWS_PER_CALL):
        batch = []
        for row in rows[start : start + ROWS_PER_CALL]:
            values = [row[name] for name in names]
            convert(values)
            batch.append(tuple(values))
        connection.exec_driver_sql(sql, batch)
