"""`blockrepo backup FILE` and `blockrepo restore FILE`: the whole repository (history, users, roles, tokens,
webhooks) in one portable file, taken while the server runs and restored into SQLite or PostgreSQL."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.markup import escape
from rich.table import Table
from sqlalchemy import Engine

from blockrepo.backup.service import RestoreSummary, open_backup, prepare_schema, restore_rows, write_backup
from blockrepo.cli.options import build_settings, console
from blockrepo.errors import BlockrepoError
from blockrepo.storage import migrate
from blockrepo.storage.engine import build_engine

DatabaseOption = Annotated[
    str | None, typer.Option("--database", help="the database (env BLOCKREPO_DATABASE_URL)")
]
STANDARD_STREAM = Path("-")


def _fail(error: BlockrepoError) -> typer.Exit:
    console.print(f"[red]{escape(error.detail)}[/red]")
    for item in error.errors[:20]:
        console.print(f"  {escape(item.pointer)}: {escape(item.message)}")
    return typer.Exit(1)


def _rows_table(title: str, rows: dict[str, int]) -> Table:
    table = Table(title=title)
    table.add_column("table")
    table.add_column("rows", justify="right")
    for name, count in rows.items():
        table.add_row(name, f"{count:,}")
    return table


def backup_command(
    file: Annotated[Path, typer.Argument(help="where to write the backup (- for standard output)")],
    database: DatabaseOption = None,
) -> None:
    """Back up the whole repository to FILE, from one snapshot, while the server keeps serving."""
    settings = build_settings(database_url=database)
    engine = build_engine(settings.database_url)
    try:
        if file == STANDARD_STREAM:
            summary = write_backup(engine, sys.stdout.buffer)
        else:
            # Written beside FILE and renamed over it once complete: a failed backup leaves no half file,
            # and an earlier backup of the same name survives until the new one is whole.
            descriptor, temporary = tempfile.mkstemp(dir=file.parent or Path("."), prefix=f".{file.name}.")
            try:
                with os.fdopen(descriptor, "wb") as target:
                    summary = write_backup(engine, target)
                    target.flush()
                    os.fsync(target.fileno())
                os.replace(temporary, file)
            except BaseException:
                os.unlink(temporary)
                raise
    except BlockrepoError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()
    console.print(
        _rows_table(f"backed up revision {summary.revision} (schema {summary.schema})", summary.rows)
    )
    if file != STANDARD_STREAM:
        console.print(f"written to {escape(str(file))}")


def restore_command(
    file: Annotated[
        Path, typer.Argument(help="a backup written by `blockrepo backup` (- for standard input)")
    ],
    replace: Annotated[
        bool,
        typer.Option("--replace", help="delete what the database holds first (stop every server on it)"),
    ] = False,
    database: DatabaseOption = None,
) -> None:
    """Restore a backup into an empty database (or, with --replace, instead of what it holds)."""
    settings = build_settings(database_url=database)
    engine = build_engine(settings.database_url)
    try:
        source: IO[bytes]
        with (
            sys.stdin.buffer if file == STANDARD_STREAM else file.open("rb") as source,
            console.status("restoring…") as status,
        ):

            def advance(table: str, rows: int) -> None:
                status.update(f"restoring {table}: {rows:,} rows")

            summary = restore(engine, source, replace=replace, progress=advance)
    except OSError as exc:
        console.print(f"[red]cannot read {escape(str(file))}: {escape(exc.strerror or str(exc))}[/red]")
        raise typer.Exit(1) from None
    except BlockrepoError as exc:
        raise _fail(exc) from None
    finally:
        engine.dispose()
    console.print(_rows_table(f"restored revision {summary.revision}", summary.rows))
    console.print("restored; the schema is at the newest migration")


def restore(
    engine: Engine,
    source: IO[bytes],
    *,
    replace: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> RestoreSummary:
    """Restore the backup in `source` into the database of `engine`: its schema first, its rows in one
    transaction (a damaged file changes nothing but the empty schema), then the newest migrations."""
    backup = open_backup(source)
    prepare_schema(engine, backup.schema, replace=replace)
    with engine.connect() as connection:
        summary = restore_rows(connection.execution_options(begin_immediate=True), backup, progress=progress)
        connection.commit()
    migrate.upgrade(engine)
    return summary


def register(app: typer.Typer) -> None:
    app.command("backup")(backup_command)
    app.command("restore")(restore_command)
