"""`blockrepo export FILE` and `blockrepo import FILE`: the massdata export and import against the database
directly, acting as a user (default `system`), with a progress bar."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from blockrepo.access import repository as access_repository
from blockrepo.access.actor import SYSTEM_LOGIN, Actor, load_actor
from blockrepo.auth.passwords import Passwords
from blockrepo.cli.options import build_settings, console
from blockrepo.cli.repository import initialize_repository
from blockrepo.errors import BadRequest, BlockrepoError
from blockrepo.interpreter import collector_paused
from blockrepo.massdata.asof import past_revision
from blockrepo.massdata.listing import begin_snapshot
from blockrepo.massdata.transfer.archimate.csv_files import read_archi_csv_zip
from blockrepo.massdata.transfer.archimate.export import write_archi_csv, write_archimate
from blockrepo.massdata.transfer.archimate.importer import MappingReport, import_model
from blockrepo.massdata.transfer.archimate.mapping import load_mapping
from blockrepo.massdata.transfer.archimate.model import ArchimateModel
from blockrepo.massdata.transfer.archimate.reader import read_exchange
from blockrepo.massdata.transfer.document import Document, parse_json_document
from blockrepo.massdata.transfer.export import json_chunks
from blockrepo.massdata.transfer.importer import import_document, parse_mode
from blockrepo.massdata.transfer.plan import plan_export
from blockrepo.massdata.transfer.xlsx import read_workbook, write_workbook
from blockrepo.massdata.transfer.xlsx_limits import XlsxLimits
from blockrepo.metamodel.repository import load_metamodel, read_repository_state
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.storage.engine import build_engine, build_session_factory
from blockrepo.storage.transactions import begin_write, is_retryable

DatabaseOption = Annotated[
    str | None, typer.Option("--database", help="the database (env BLOCKREPO_DATABASE_URL)")
]
UserOption = Annotated[str, typer.Option("--user", help="act as this user (their permissions apply)")]


# Formats by name, and by the suffix that implies them: ArchiMate's exchange file and Archi's CSV files
# (zipped) besides the export's own JSON and workbook.
FORMATS = {
    "json": "json",
    "xlsx": "xlsx",
    "archimate": "archimate",
    "xml": "archimate",
    "archi-csv": "archi-csv",
}
FORMATS_BY_SUFFIX = {".json": "json", ".xlsx": "xlsx", ".xml": "archimate", ".zip": "archi-csv"}


def _format(path: Path, given: str | None) -> str:
    fmt = FORMATS.get((given or "").lower()) if given else FORMATS_BY_SUFFIX.get(path.suffix.lower(), "json")
    if fmt is None:
        console.print(f"[red]unknown format {given!r}: use json, xlsx, archimate or archi-csv[/red]")
        raise typer.Exit(2)
    return fmt


def _context(db: Session, login: str) -> tuple[Metamodel, Actor]:
    state = read_repository_state(db)
    user = access_repository.user_named(db, login)
    if user is None or not user.enabled:
        console.print(f"[red]there is no enabled user {login!r}[/red]")
        raise typer.Exit(1)
    return load_metamodel(db, state.metamodel_revision), load_actor(db, user)


def _fail(error: BlockrepoError) -> typer.Exit:
    console.print(f"[red]{error.title}:[/red] {error.detail}")
    for item in error.errors[:20]:
        cell = item.cell
        where = (
            f"sheet {cell['sheet']!r}, row {cell['row']}"
            + (f", column {cell['column']} ({cell['header']})" if "column" in cell else "")
            if cell
            else item.pointer
        )
        console.print(f"  {escape(where)}: {escape(item.message)}")
    if len(error.errors) > 20:
        console.print(f"  … and {len(error.errors) - 20} more")
    return typer.Exit(1)


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )


def export_command(
    file: Annotated[
        Path, typer.Argument(help="where to write: .json, .xlsx, .xml (ArchiMate) or .zip (Archi's CSV)")
    ],
    format: Annotated[
        str | None,
        typer.Option("--format", help="json, xlsx, archimate or archi-csv (default: from the suffix)"),
    ] = None,
    types: Annotated[
        str | None, typer.Option("--types", help="comma-separated type names (default: all)")
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="ArchiMate: the state at this revision number or ISO-8601 time"),
    ] = None,
    user: UserOption = SYSTEM_LOGIN,
    database: DatabaseOption = None,
) -> None:
    """Export the repository (metamodel, elements, relations) to FILE."""
    settings = build_settings(database_url=database)
    fmt = _format(file, format)
    engine = build_engine(settings.database_url)
    try:
        with build_session_factory(engine)() as db:
            begin_snapshot(db)
            metamodel, actor = _context(db, user)
            if fmt in ("archimate", "archi-csv"):
                _export_archimate(db, metamodel, actor, file, fmt, types, as_of, settings.archimate_mapping)
                console.print(f"exported to {file}")
                return
            try:
                plan = plan_export(
                    metamodel,
                    actor,
                    [t.strip() for t in types.split(",")] if types else None,
                    mirrors=fmt == "xlsx",
                )
            except BlockrepoError as exc:
                raise _fail(exc) from None
            with _progress() as progress:
                tasks = {p.type_def.name: progress.add_task(p.type_def.name, total=None) for p in plan.types}

                def advance(type_name: str, done: int) -> None:
                    progress.update(tasks[type_name], completed=done)

                with file.open("wb") as target:
                    if fmt == "json":
                        for chunk in json_chunks(db, plan, advance):
                            target.write(chunk)
                    else:
                        write_workbook(db, plan, target, advance)
                for task in tasks.values():
                    progress.update(task, total=progress.tasks[task].completed)
    finally:
        engine.dispose()
    console.print(f"exported to {file}")


def _export_archimate(
    db: Session,
    metamodel: Metamodel,
    actor: Actor,
    file: Path,
    fmt: str,
    types: str | None,
    as_of: str | None,
    mapping_file: str | None,
) -> None:
    try:
        plan = plan_export(metamodel, actor, [t.strip() for t in types.split(",")] if types else None)
        revision = past_revision(db, actor, as_of, "--as-of") if as_of else None
        mapping = load_mapping(mapping_file)
        with file.open("wb") as target:
            if fmt == "archi-csv":
                write_archi_csv(db, plan, mapping, actor, target, as_of=revision)
                return
            for chunk in write_archimate(db, plan, mapping, actor, as_of=revision):
                target.write(chunk)
    except BlockrepoError as exc:
        raise _fail(exc) from None


def import_command(
    file: Annotated[
        Path,
        typer.Argument(help="an export (.json, .xlsx), an ArchiMate file (.xml) or Archi's CSV files (.zip)"),
    ],
    mode: Annotated[
        str, typer.Option("--mode", help="additive or cud (also delete what the file lacks)")
    ] = "additive",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="validate and report, write nothing")] = False,
    user: UserOption = SYSTEM_LOGIN,
    database: DatabaseOption = None,
) -> None:
    """Import an export FILE into the repository, all or nothing."""
    settings = build_settings(database_url=database)
    initialize_repository(settings)
    fmt = _format(file, None)
    model: ArchimateModel | None = None
    try:
        if fmt == "xlsx":
            with file.open("rb") as source:
                document: Document = read_workbook(source, XlsxLimits.from_settings(settings))
        elif fmt == "archimate":
            # Parsed as it is read: the file's bytes are never all in memory.
            model = read_exchange(file, settings.import_archimate_max_concepts)
        elif fmt == "archi-csv":
            model = read_archi_csv_zip(file.read_bytes(), settings.import_archimate_max_concepts)
        else:
            document = parse_json_document(file.read_bytes())
        mode = parse_mode(mode)
        if model is not None and mode != "additive":
            raise BadRequest("an ArchiMate model is imported additively (--mode additive)")
    except BlockrepoError as exc:
        raise _fail(exc) from None
    mapped: MappingReport | None = None
    engine = build_engine(settings.database_url)
    write_engine = engine.execution_options(begin_immediate=True)
    passwords = Passwords(settings)
    try:
        with build_session_factory(write_engine)() as db, _progress() as progress, collector_paused():
            begin_write(db)
            metamodel, actor = _context(db, user)
            tasks: dict[str, TaskID] = {}

            def advance(phase: str, done: int, total: int) -> None:
                if phase not in tasks:
                    tasks[phase] = progress.add_task(phase, total=total)
                progress.update(tasks[phase], completed=done, total=total)

            changes = ChangeLog(user_login=actor.login, request_id=f"cli-import-{uuid.uuid4().hex[:12]}")
            try:
                if model is not None:
                    report, mapped = import_model(
                        db,
                        metamodel,
                        actor,
                        changes,
                        load_mapping(settings.archimate_mapping),
                        model,
                        hash_password=passwords.hash,
                        list_rows=dry_run,
                    )
                else:
                    report = import_document(
                        db,
                        metamodel,
                        actor,
                        changes,
                        document,
                        mode=mode,
                        hash_password=passwords.hash,
                        progress=advance,
                        list_rows=dry_run,
                    )
            except BlockrepoError as exc:
                db.rollback()
                raise _fail(exc) from None
            if dry_run:
                db.rollback()
            else:
                changes.flush(db)
                db.commit()
    except DBAPIError as exc:
        if not is_retryable(exc):
            raise
        # The import parsed the file into records it consumes as it writes, so it is not run again here.
        console.print(
            "[red]a concurrent write was in the way; nothing was imported: run the import again[/red]"
        )
        raise typer.Exit(1) from None
    finally:
        engine.dispose()
    table = Table(title="dry run: nothing was written" if dry_run else "imported")
    for column in ("created", "updated", "deleted", "failed"):
        table.add_column(column, justify="right")
    table.add_row(str(report.created), str(report.updated), str(report.deleted), str(report.failed))
    console.print(table)
    if mapped is not None:
        _print_mapping(mapped)
    if report.rows:
        rows = Table(title="what the import would do")
        for column in ("action", "type", "name", "where"):
            rows.add_column(column)
        for row in report.rows:
            cell = row.get("cell")
            where = f"{cell['sheet']} row {cell['row']}" if cell else f"record {row.get('record', '')}"
            if row["action"] == "delete":
                where = f"id {row['id']}"
            rows.add_row(row["action"], row["type"], escape(row["name"]), escape(where))
        console.print(rows)
        if report.rows_left_out:
            console.print(f"… and {report.rows_left_out:,} more rows")


def _print_mapping(mapped: MappingReport) -> None:
    summary = Table(
        title=f"ArchiMate {mapped.format}: {mapped.elements_read} elements, "
        f"{mapped.relationships_read} relationships read"
    )
    summary.add_column("became")
    summary.add_column("count", justify="right")
    for name, count in {**mapped.mapped, **mapped.relations}.items():
        summary.add_row(name, str(count))
    console.print(summary)
    if mapped.not_mapped_count:
        console.print(f"[yellow]{mapped.not_mapped_count} not mapped:[/yellow]")
        for entry in mapped.not_mapped[:20]:
            console.print(
                f"  {escape(entry['identifier'])} ({entry['type']} {escape(entry['name'])!r}): "
                f"{escape(entry['reason'])}"
            )
    if mapped.properties_not_mapped_count:
        console.print(f"[yellow]{mapped.properties_not_mapped_count} properties not mapped[/yellow]")


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
    app.command("import")(import_command)
