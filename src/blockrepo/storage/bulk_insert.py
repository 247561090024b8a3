"""Set-based INSERT of many rows of one table, below the ORM and Core executemany (their per-row
bookkeeping costs more than the insert itself): SQLite multi-row INSERT … VALUES, PostgreSQL COPY."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import lru_cache, partial
from itertools import chain
from operator import is_, itemgetter
from typing import Any

from sqlalchemy import Connection, Table
from sqlalchemy.dialects.sqlite import DATE as SQLITE_DATE
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from blockrepo.storage.engine import driver_execute
from blockrepo.storage.write_pipeline import submit_statement

# Rows converted at a time by `insert_rows`: bounds the memory of one batch of parameter tuples.
ROWS_PER_CALL = 5000
# Bind parameters per statement of a multi-row INSERT on SQLite (its limit is 32,766).
SQLITE_PARAMETERS_PER_STATEMENT = 30_000
# Rows per multi-row INSERT … VALUES of `insert_tuples` on SQLite (see there), at most as many as
# SQLITE_PARAMETERS_PER_STATEMENT allows: the same for every table, so that a write's statement count
# depends on its size only past CHUNK_SIZE-like batches.
ROWS_PER_VALUES = 7500
# PostgreSQL: up to this many rows go as one INSERT … VALUES rather than COPY. A COPY costs two round
# trips (the statement, then the data and its end) and is never prepared; a small INSERT is one round trip,
# prepared by psycopg once it recurs (a PUT of one attribute inserts one value row and one change row).
POSTGRESQL_ROWS_PER_INSERT = 20
_NOTHING = object()  # an input no processor has seen yet


def insert_rows(
    db: Session, table: Table, rows: Sequence[Mapping[str, Any]], *, verbatim: Collection[str] = ()
) -> None:
    """INSERT many rows given as mappings of column name to value (every row with the keys of the first);
    see `insert_tuples`."""
    if not rows:
        return
    names = list(rows[0])
    for start in range(0, len(rows), ROWS_PER_CALL):
        insert_tuples(
            db,
            table,
            names,
            [tuple([row[name] for name in names]) for row in rows[start : start + ROWS_PER_CALL]],
            verbatim=verbatim,
        )


def insert_tuples(
    db: Session,
    table: Table,
    names: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    verbatim: Collection[str] = (),
    any_order: bool = False,
    bucket_by: int | None = None,
) -> None:
    """INSERT many rows, each a tuple of the values of the columns `names`, on SQLite as driver-level
    multi-row INSERT … VALUES of up to ROWS_PER_VALUES rows each (PostgreSQL: one COPY).

    Values pass through each column type's own bind processor, so they are stored exactly as an ORM or
    Core insert stores them (dates as ISO text on SQLite, for instance); what is skipped is the per-row
    bookkeeping of a Core executemany, which costs more than the insert itself on large batches. The
    columns named in `verbatim` already hold what that processor would make (JSON text, say) and skip
    it. With `any_order` (rows whose ids order nothing) SQLite gets rows grouped by the columns they
    leave NULL, each group inserted without those columns: see `_without_nulls` (and `bucket_by`, the
    index of a column whose equal values mostly leave the same columns NULL)."""
    if not rows:
        return
    connection = db.connection()
    dialect = connection.dialect
    if dialect.name == "postgresql":
        convert = _converter(connection, table, names, verbatim)
        if len(rows) <= POSTGRESQL_ROWS_PER_INSERT:
            _insert_few(connection, table, names, rows, convert)
        else:
            _copy(connection, table, names, rows, convert)
        return
    # Grouped first: a group's columns are all filled, so only their own processors run, on values that
    # are never None (a number value, say, needs none at all).
    groups = _without_nulls(table, names, rows, bucket_by) if any_order else [(names, rows)]
    for filled, group in groups:
        convert = _converter(connection, table, filled, verbatim)
        if convert is not None:
            group = [convert(row) for row in group]
        _insert_values(connection, table, filled, len(group), _row_by_row(group))


def insert_columns(
    db: Session, table: Table, columns: Mapping[str, Sequence[Any]], *, verbatim: Collection[str] = ()
) -> None:
    """INSERT rows given column by column: `columns` maps each column name to its values, one a row, all
    of one length (values pass through the columns' bind processors but those `verbatim`, as in
    `insert_tuples`).

    Why columns: a caller whose rows are mostly constants and lists it already holds (a bulk write's
    values of one attribute: the element ids, the attribute id, position 0 and the values) need not
    build a tuple per row, and on SQLite each statement's parameters are laid out by one slice
    assignment per column and a bind processor runs over a column in one `map`."""
    names = list(columns)
    count = len(columns[names[0]]) if names else 0
    if not count:
        return
    connection = db.connection()
    dialect = connection.dialect
    processors = _processors(dialect, table, tuple(names), frozenset(verbatim))
    iso_dates = _iso_date_columns(dialect, table, tuple(names))
    values = [
        column
        if process is None
        else list(map(_ISO_DATE if iso_date and None not in column else process, column))
        for column, process, iso_date in zip(columns.values(), processors, iso_dates, strict=True)
    ]
    if dialect.name == "postgresql":
        rows = list(zip(*values, strict=True))
        if count <= POSTGRESQL_ROWS_PER_INSERT:
            _insert_few(connection, table, names, rows, None)
        else:
            _copy(connection, table, names, rows, None)
        return
    width = len(names)

    def parameters(start: int, rows: int) -> list[Any]:
        laid_out: list[Any] = [None] * (rows * width)
        for offset, column in enumerate(values):
            laid_out[offset::width] = column[start : start + rows]
        return laid_out

    _insert_values(connection, table, names, count, parameters)


def _row_by_row(rows: Sequence[Sequence[Any]]) -> Callable[[int, int], list[Any]]:
    """`_insert_values`'s parameters of rows given as tuples."""
    return lambda start, count: list(chain.from_iterable(rows[start : start + count]))


def _insert_values(
    connection: Connection,
    table: Table,
    names: Sequence[str],
    count: int,
    parameters: Callable[[int, int], list[Any]],
) -> None:
    """SQLite: `count` rows of the columns `names` as multi-row INSERT … VALUES statements on the driver
    cursor; `parameters(start, rows)` gives one statement's values, row after row.

    Multi-row VALUES rather than an executemany: Python 3.11's sqlite3 steps and resets the statement once
    per row of an executemany, which cost more than SQLite's own work for the row (bench/README.md).
    Rows go in their order, so ids follow
    the rows as they did. Statements as long as the parameter limit allows: the driver keeps a compiled
    statement per text, so a long one is compiled once per connection, and each statement of a
    pipelined write (`storage.write_pipeline`) waits for the GIL once; bulk writes were faster with long
    statements than with short ones (bench/README.md). On the cursor, without the execution context of
    `exec_driver_sql`, which cost more than a single write's one-row insert (bench/hot_path.py)."""
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    head = f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) VALUES "
    one = f"({', '.join(['?' if dialect.paramstyle == 'qmark' else '%s'] * len(names))})"
    per_statement = min(ROWS_PER_VALUES, SQLITE_PARAMETERS_PER_STATEMENT // len(names))
    # The full statement's text only when there is a full statement: a single write inserts one row.
    full = head + ", ".join([one] * per_statement) if count >= per_statement else ""
    for start in range(0, count, per_statement):
        rows = min(per_statement, count - start)
        sql = full if rows == per_statement else head + ", ".join([one] * rows)
        submit_statement(connection, partial(driver_execute, connection, sql, parameters(start, rows)))


def _insert_few(
    connection: Connection,
    table: Table,
    names: Sequence[str],
    rows: Sequence[Sequence[Any]],
    convert: Callable[[Sequence[Any]], Sequence[Any]] | None,
) -> None:
    """PostgreSQL: a few rows as one INSERT … VALUES at the driver level. Text goes as psycopg's untyped
    string, which the server reads as the column's type (JSON text into `json`), as COPY does."""
    quote = connection.dialect.identifier_preparer.quote
    row = f"({', '.join(['%s'] * len(names))})"
    statement = f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) VALUES " + ", ".join(
        [row] * len(rows)
    )
    driver_execute(
        connection, statement, list(chain.from_iterable(r if convert is None else convert(r) for r in rows))
    )


def _copy(
    connection: Connection,
    table: Table,
    names: Sequence[str],
    rows: Iterable[Sequence[Any]],
    convert: Callable[[Sequence[Any]], Sequence[Any]] | None,
) -> None:
    """PostgreSQL: the rows as one COPY. PostgreSQL executes row-by-row INSERTs one by one even when
    pipelined; COPY takes the rows as one stream, several times faster for element values
    (bench/README.md)."""
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    statement = f"COPY {quote(table.name)} ({', '.join(quote(n) for n in names)}) FROM STDIN"
    driver = connection.connection.driver_connection
    try:
        with driver.cursor() as cursor, cursor.copy(statement) as copy:  # type: ignore[union-attr]
            # Listeners see the COPY as one statement, as they see the INSERT of a few rows.
            for listener in connection.dispatch.before_cursor_execute:
                listener(connection, cursor, statement, None, None, False)
            for row in rows:
                copy.write_row(row if convert is None else convert(row))
    except dialect.loaded_dbapi.Error as exc:
        # The driver's own error, wrapped as SQLAlchemy wraps every other statement's: a constraint a
        # concurrent request broke is an IntegrityError that callers turn into a 409.
        raise DBAPIError.instance(statement, None, exc, dialect.loaded_dbapi.Error) from exc


def _without_nulls(
    table: Table, names: Sequence[str], rows: Sequence[Sequence[Any]], bucket_by: int | None
) -> list[tuple[Sequence[str], Sequence[Sequence[Any]]]]:
    """The rows grouped by which nullable columns they leave NULL, each group with only the columns it
    fills (a NULL column is left out of its INSERT, which stores NULL all the same).

    Why: Python 3.11's sqlite3 binds an int, float or str as it is, but sends every other parameter, None
    included, through its adapter lookup (a registry probe and two attribute lookups); a value row holds
    one typed column and five NULLs, and binding them took most of the driver's time for the row
    (bench/README.md). The groups are as many
    as the kinds of values, not rows, so the statements stay few whatever the size of the request."""
    nullable = [index for index, name in enumerate(names) if table.c[name].nullable]
    if not nullable:
        return [(names, rows)]
    groups: dict[tuple[bool, ...], list[Sequence[Any]]] = {}
    # First by the column `bucket_by` (rows alike in it are mostly alike in their NULLs: the values of
    # one attribute), each bucket then checked column by column with C-level scans; only a bucket that
    # mixes NULLs and values in a column is sorted row by row.
    buckets: Iterable[list[Sequence[Any]]] = [list(rows)]
    if bucket_by is not None:
        by_key: dict[Any, list[Sequence[Any]]] = {}
        key = itemgetter(bucket_by)
        for row in rows:
            bucket = by_key.get(key(row))
            if bucket is None:
                by_key[key(row)] = [row]
            else:
                bucket.append(row)
        buckets = by_key.values()
    columns = [itemgetter(index) for index in nullable]
    pick_nullable = itemgetter(*nullable) if len(nullable) > 1 else (lambda row: (row[nullable[0]],))
    nones = (None,) * len(nullable)
    for bucket in buckets:
        counts = [list(map(column, bucket)).count(None) for column in columns]
        if all(count in (0, len(bucket)) for count in counts):
            groups.setdefault(tuple(count > 0 for count in counts), []).extend(bucket)
            continue
        for row in bucket:
            groups.setdefault(tuple(map(is_, pick_nullable(row), nones)), []).append(row)
    result: list[tuple[Sequence[str], Sequence[Sequence[Any]]]] = []
    for nulls, group in groups.items():
        left_out = {index for index, null in zip(nullable, nulls, strict=True) if null}
        if not left_out:
            result.append((names, group))
            continue
        kept = [index for index in range(len(names)) if index not in left_out]
        if len(kept) == 1:
            result.append(([names[kept[0]]], [(row[kept[0]],) for row in group]))
            continue
        pick = itemgetter(*kept)
        result.append(([names[index] for index in kept], list(map(pick, group))))
    return result


def _converter(
    connection: Connection, table: Table, names: Sequence[str], verbatim: Collection[str]
) -> Callable[[Sequence[Any]], Sequence[Any]] | None:
    """row -> the row with each value passed through its column's bind processor (the same row when
    nothing needed converting); None when no column of `names` has a processor."""
    processors = _processors(connection.dialect, table, tuple(names), frozenset(verbatim))
    # Each processor with its last input and output: a bulk write's rows share their time stamps (three
    # per element row), and the same object converts to the same value. Most of a value row's typed
    # columns are None, which stays None where the processor says so (not JSON's, which writes 'null').
    converting = [
        (index, process, process(None) is None, [_NOTHING, None])
        for index, process in enumerate(processors)
        if process is not None
    ]
    if not converting:
        return None

    def convert(row: Sequence[Any]) -> Sequence[Any]:
        values: list[Any] | None = None
        for index, process, keeps_none, memo in converting:
            value = row[index]
            if value is None and keeps_none:
                continue
            if values is None:
                values = list(row)
            if value is memo[0]:
                values[index] = memo[1]
            else:
                memo[0] = value
                values[index] = memo[1] = process(value)
        return row if values is None else tuple(values)

    return convert


_ISO_DATE = dt.date.isoformat  # the date part of a date or datetime; TypeError for anything else
_SQLITE_DATE_FORMAT = "%(year)04d-%(month)02d-%(day)02d"


@lru_cache(maxsize=1024)
def _iso_date_columns(dialect: Dialect, table: Table, names: tuple[str, ...]) -> tuple[bool, ...]:
    """For each column of `names`: whether its bind processor stores a date as `date.isoformat` does
    (SQLite's DATE in its default format: the same text for every year from 1 to 9999, dates and
    datetimes alike, and a TypeError for anything else but None). `insert_columns` then converts a column
    without None with the C method: a bulk write's dates went through the processor's Python function
    and its string formatting one by one."""
    return tuple(
        isinstance(impl := table.c[name].type.dialect_impl(dialect), SQLITE_DATE)
        and getattr(impl, "_storage_format", None) == _SQLITE_DATE_FORMAT
        and getattr(impl, "_reg", None) is None
        for name in names
    )


@lru_cache(maxsize=1024)
def _processors(
    dialect: Dialect, table: Table, names: tuple[str, ...], verbatim: frozenset[str]
) -> tuple[Callable[[Any], Any] | None, ...]:
    """The bind processor of each column of `names` (None where it has none or is `verbatim`), made once
    per dialect, table and column set: a one-row insert (a single write's revision and change rows) paid
    more for looking them up than for the insert. The dialect's own implementation of each type: the
    generic DateTime has no bind processor, and the sqlite3 driver's default adapter would store another
    text format than every other write path."""
    return tuple(
        None if name in verbatim else table.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        for name in names
    )
