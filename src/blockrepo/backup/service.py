"""Backup and restore of the whole repository as one portable file: every table from one snapshot, written
back into an empty database of either kind.

The file is gzip-compressed JSON lines: a header object (format, schema migration, the source's id
counters), then per table an object naming it and its columns followed by one array per row, then an
end object with every table's row count, so that a cut-off file is refused rather than half restored.
Values are JSON but for moments (ISO 8601 in UTC), binary (base64) and decimals (text), each column's
kind named in its table object. What a backup leaves out: sessions, login failures and rate windows
(`repository.TRANSIENT_TABLES`); everyone signs in again after a restore."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import IO, Any

import orjson
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blockrepo import __version__
from blockrepo.access.actor import Actor
from blockrepo.backup import repository
from blockrepo.errors import BadRequest, Conflict, ErrorItem, Forbidden
from blockrepo.storage import migrate

FORMAT = "blockrepo-backup"
FORMAT_VERSION = 1
ROWS_PER_INSERT = 5000  # rows held at a time while restoring: bounds its memory
MEDIA_TYPE = "application/gzip"

Encode = Callable[[Any], Any]


@dataclass(frozen=True)
class BackupSummary:
    """What a backup holds: the schema migration, the newest revision and each table's row count."""

    schema: str
    revision: int
    rows: dict[str, int]


@dataclass
class RestoreSummary:
    """What a restore wrote: the backup's schema and newest revision, and each table's row count."""

    schema: str
    revision: int
    rows: dict[str, int] = field(default_factory=dict)


def require_supervisor(actor: Actor) -> None:
    """A backup holds password hashes, secrets and everything every user may not read: supervisors only
    (a token with any restriction is no supervisor, `access.actor.restricted`)."""
    if not actor.supervisor:
        raise Forbidden("only a supervisor may take a backup", code="supervisor_only")


def write_backup(engine: Engine, target: IO[bytes]) -> BackupSummary:
    """Write the whole repository, as of one snapshot, to `target` (a binary file)."""
    with repository.snapshot(engine) as connection:
        schema = migrate.schema_revision(connection)
        if schema is None:
            raise BadRequest("the database holds no repository", code="no_repository")
        tables = repository.repository_tables(connection)
        counters = repository.id_counters(connection, tables)
        rows: dict[str, int] = {}
        with gzip.GzipFile(fileobj=target, mode="wb", compresslevel=6) as archive:
            archive.write(_line(_header(schema, connection.dialect.name, counters)))
            for table in tables:
                encoders = [_ENCODERS[kind] for _, kind in table.columns]
                columns = [{"name": name, "kind": kind} for name, kind in table.columns]
                archive.write(_line({"table": table.name, "columns": columns}))
                count = 0
                for row in repository.stream_rows(connection, table):
                    archive.write(
                        _line(
                            [
                                v if e is None or v is None else e(v)
                                for e, v in zip(encoders, row, strict=True)
                            ]
                        )
                    )
                    count += 1
                rows[table.name] = count
            archive.write(_line({"end": {"rows": rows}}))
    revision = counters.get(repository.REVISION_COUNTER, 0)
    return BackupSummary(schema=schema, revision=revision, rows=rows)


@dataclass
class BackupReader:
    """A backup file being read: its header, checked, and the lines after it."""

    header: dict[str, Any]
    lines: Iterator[Any]

    @property
    def schema(self) -> str:
        """The migration the backup's schema was at."""
        return str(self.header["schema"])


def open_backup(source: IO[bytes]) -> BackupReader:
    """Start reading a backup from `source` (a binary file); refuse what is not one this code reads."""
    lines = _lines(source)
    return BackupReader(header=_read_header(next(lines, None)), lines=lines)


def prepare_schema(engine: Engine, schema: str, *, replace: bool) -> None:
    """Bring the target database to the backup's schema (`schema`), refusing one that holds a repository
    unless `replace` (then it must be at the backup's schema already). An empty database without the
    schema, or with an older one, is migrated to it: an older backup restores into a newer blockrepo
    (and is migrated to the newest afterwards, `migrate.upgrade`)."""
    with engine.connect() as connection:
        current = migrate.schema_revision(connection)
        rows = repository.count_rows(connection, repository.repository_tables(connection)) if current else {}
    holding = sorted(
        name for name, count in rows.items() if count and name not in repository.SEEDED_BY_MIGRATIONS
    )
    if holding and not replace:
        raise Conflict(
            "the database already holds a repository: restore into an empty database, or replace what it "
            "holds with --replace",
            code="restore_target_not_empty",
            errors=[ErrorItem(name, "not_empty", "holds rows") for name in holding],
        )
    if current == schema:
        return
    if holding or (current is not None and not migrate.is_ancestor(current, schema)):
        raise Conflict(
            f"the database's schema is at migration {current}, the backup's at {schema}: restore into a "
            "database without the schema",
            code="restore_schema_mismatch",
        )
    migrate.upgrade(engine, schema)


def restore_rows(
    connection: Connection,
    backup: BackupReader,
    *,
    progress: Callable[[str, int], None] | None = None,
) -> RestoreSummary:
    """Write the backup's rows into the database of `connection` (at the backup's schema,
    `prepare_schema`) in the connection's transaction, after deleting what it held; the caller commits.
    A damaged file raises before anything is committed. `progress(table, rows)` is told of every batch."""
    summary = RestoreSummary(schema=backup.schema, revision=0)
    with Session(bind=connection, autoflush=False) as db:
        repository.lock_for_restore(connection)
        # What the migrations seeded, or (with `replace`) the repository the database held.
        repository.delete_everything(connection)
        tables = {table.name: table for table in repository.repository_tables(connection)}
        try:
            end = _restore_tables(db, connection, tables, backup.lines, summary, progress)
        except IntegrityError as exc:
            raise _unreadable(
                "rows of the backup break the schema's constraints: the file is damaged"
            ) from exc
        if end != summary.rows:
            raise _unreadable("the end of the file does not match its rows: the file is damaged")
        counters = backup.header["counters"]
        summary.revision = repository.restore_counters(connection, list(tables.values()), counters)
    return summary


def _restore_tables(
    db: Session,
    connection: Connection,
    tables: dict[str, repository.StoredTable],
    lines: Iterator[Any],
    summary: RestoreSummary,
    progress: Callable[[str, int], None] | None,
) -> dict[str, int]:
    """Write each table section of the file; the end object's row counts."""
    current = next(lines, None)
    while True:
        if not isinstance(current, dict):
            raise _unreadable("the file ends before its end object: it was cut off")
        if "end" in current:
            rows = current["end"].get("rows") if isinstance(current["end"], dict) else None
            if not isinstance(rows, dict):
                raise _unreadable("the end object has no row counts")
            if next(lines, None) is not None:
                raise _unreadable("the file goes on after its end object")
            return rows
        table, names, decoders = _section(tables, current)
        deferred = list(table.self_references) if table.key is not None else []
        deferred_at = [names.index(name) for name in deferred]
        key_at = names.index(table.key) if table.key is not None else -1
        references: list[list[tuple[Any, Any]]] = [[] for _ in deferred]
        batch: list[Sequence[Any]] = []
        count = 0
        current = next(lines, None)
        while isinstance(current, list):
            if len(current) != len(names):
                raise _unreadable(f"a row of {table.name} has {len(current)} values for {len(names)} columns")
            try:
                row = [v if d is None or v is None else d(v) for d, v in zip(decoders, current, strict=True)]
            except (ValueError, TypeError) as exc:  # binascii.Error is a ValueError
                raise _unreadable(f"a row of {table.name} holds a damaged value") from exc
            for slot, at in enumerate(deferred_at):
                if row[at] is not None:
                    references[slot].append((row[key_at], row[at]))
                    row[at] = None
            batch.append(row)
            count += 1
            if len(batch) == ROWS_PER_INSERT:
                repository.insert_batch(db, table, names, batch)
                batch = []
                if progress:
                    progress(table.name, count)
            current = next(lines, None)
        repository.insert_batch(db, table, names, batch)
        for name, pairs in zip(deferred, references, strict=True):
            if pairs:
                repository.set_references(connection, table, name, pairs)
        summary.rows[table.name] = count
        if progress:
            progress(table.name, count)


def _header(schema: str, dialect: str, counters: dict[str, int]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "blockrepo": __version__,
        "schema": schema,
        "database": dialect,
        "takenAt": dt.datetime.now(dt.UTC).isoformat(),
        "counters": counters,
    }


def _read_header(line: Any) -> dict[str, Any]:
    if not isinstance(line, dict) or line.get("format") != FORMAT:
        raise _unreadable("this is not a blockrepo backup")
    if line.get("version") != FORMAT_VERSION:
        raise _unreadable(f"backup format version {line.get('version')!r} is not one this blockrepo reads")
    schema = line.get("schema")
    if not isinstance(schema, str) or not migrate.known_revision(schema):
        raise _unreadable(f"the backup's schema {schema!r} is newer than this blockrepo: upgrade it first")
    counters = line.get("counters")
    if not isinstance(counters, dict) or not all(
        isinstance(k, str) and isinstance(v, int) for k, v in counters.items()
    ):
        raise _unreadable("the header's counters are damaged")
    return line


def _section(
    tables: dict[str, repository.StoredTable], line: dict[str, Any]
) -> tuple[repository.StoredTable, list[str], list[Encode | None]]:
    """The table a section header names, its column names and each column's decoder, checked against
    the schema the database has."""
    name = line.get("table")
    columns = line.get("columns")
    if not isinstance(name, str) or name not in tables:
        raise _unreadable(f"the backup names a table {name!r} this schema does not have")
    if not isinstance(columns, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) and c.get("kind") in _DECODERS for c in columns
    ):
        raise _unreadable(f"the columns of {name} are damaged")
    table = tables[name]
    names = [c["name"] for c in columns]
    if set(names) != set(table.column_names) or len(names) != len(set(names)):
        raise _unreadable(f"the columns of {name} in the backup differ from the schema's")
    return table, names, [_DECODERS[c["kind"]] for c in columns]


def _utc_text(moment: dt.datetime) -> str:
    # SQLite keeps moments without an offset, always written in UTC.
    aware = moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)
    return aware.isoformat()


def _moment(text: Any) -> dt.datetime:
    return dt.datetime.fromisoformat(text).astimezone(dt.UTC)


_ENCODERS: dict[str, Encode | None] = {
    "plain": None,
    "json": None,
    "datetime": _utc_text,
    "date": lambda day: day.isoformat(),
    "bytes": lambda data: base64.b64encode(bytes(data)).decode("ascii"),
    "decimal": str,
}
_DECODERS: dict[str, Encode | None] = {
    "plain": None,
    "json": None,
    "datetime": _moment,
    "date": dt.date.fromisoformat,
    "bytes": base64.b64decode,
    "decimal": Decimal,
}


def _line(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


def _lines(source: IO[bytes]) -> Iterator[Any]:
    """The file's JSON lines, parsed; a damaged file is refused with what is wrong."""
    try:
        with gzip.GzipFile(fileobj=source, mode="rb") as archive:
            for number, line in enumerate(archive, start=1):
                try:
                    yield orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise _unreadable(f"line {number} is not JSON: the file is damaged") from exc
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise _unreadable("the file is not a gzip file, or it was cut off") from exc


def _unreadable(message: str) -> BadRequest:
    return BadRequest(
        message, code="backup_unreadable", errors=[ErrorItem("file", "backup_unreadable", message)]
    )
