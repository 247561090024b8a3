"""Imports an export document into the repository, all or nothing, as one revision, through the element
write core (`elements.write`), the same code that writes single elements and bulk writes.

1. The metamodel the file needs is created where missing (`metamodel_sync`), and so are the accounts its
   responsibility values name (disabled, without roles).
2. Records are matched by name within their type: a known name updates that element, the others are
   created; in `cud` mode the stored elements of the file's types that the file lacks are deleted. A
   record is its element's whole state: the writable attributes and the description it leaves out are
   emptied, without a parent it is a root, and each relation end it lists replaces what the end held
   (an end it leaves out or lists empty keeps its relations; listed empty, it is emptied where the
   document says so, `Document.empty_ends_empty`: an ArchiMate model's).
3. Records are read IMPORT_CHUNK of one type at a time, types after the types their source ends list
   (`_ImportRun`): each becomes an element body (`parent` and relation entries as references by name),
   the core validates the chunk (references to elements the chunk creates included) and writes it
   set-based with its history (`persist_types`), so an import holds one chunk's drafts, not the file's.
   A reference to an element a later chunk creates is written by an update once every chunk is. One
   400 lists every problem, with pointers into the file like `/elements/InformationSystem/3/Costs/0`;
   writing what the caller may not is 403; the caller rolls back what earlier chunks wrote. Later chunks
   name what earlier ones wrote without a query (`Writer.known_names`); on SQLite one write pipeline
   serves every chunk, so a chunk's rows go in while the next one is parsed.
4. History: created, updated and deleted elements, one mirrored changeset per element at the other end;
   the request's ChangeLog folds an element's records of several chunks into one. A relation list's
   order is no change (`order_counts=False`), so importing an unchanged export writes no revision and
   reports `updated: 0`.

Within a type elements are created in file order (hierarchy order in an export): children get positions
in file order and source ends keep the order of their lists, so exporting again gives the same file but
for ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import orjson
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.administration import users as user_admin
from blockrepo.elements import repository
from blockrepo.elements.values import ValueProblem, check_name, json_type
from blockrepo.elements.write import persistence, validation
from blockrepo.elements.write.items import TypeItems, WriteItem, Writer
from blockrepo.errors import ErrorItem, Forbidden, UnknownType, ValidationFailed
from blockrepo.massdata.listing import require_massdata
from blockrepo.massdata.transfer.document import UNREAD, CellMap, Document, record_of
from blockrepo.massdata.transfer.metamodel_sync import apply_metamodel
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel, RelationEnd
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.revisions.repository import revision_mark
from blockrepo.storage.engine import sqlite_page_cache
from blockrepo.storage.write_pipeline import pipelined

MODES = ("additive", "cud")
# Records of one type validated and written together: an import holds one chunk's drafts at a time.
IMPORT_CHUNK = 2000
MAX_REPORTED_ERRORS = 1000
# SQLite's page cache of the import's connection while it writes, instead of the usual 64 MiB: the peak
# RSS of 100,000 elements from a workbook was over 300 MB with it (bench/README.md).
IMPORT_PAGE_CACHE_KIB = 8192
MAX_LISTED_ROWS = 10_000  # rows a report lists (a dry run's): the counts cover them all
Progress = Callable[[str, int, int], None]  # (phase, done, total)
# Keys of an element body whose one value a record gives bare: the core's pointer to that value
# (`/name/0`) is the record's pointer to the key.
_BARE_KEYS = ("/name/0", "/description/0", "/parent/0")


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    deleted: int = 0
    failed: int = 0
    errors: list[ErrorItem] = field(default_factory=list)
    dry_run: bool = False
    # Asked for (a dry run): each record the import created, updated or deleted, at most MAX_LISTED_ROWS
    rows: list[dict[str, Any]] | None = None
    rows_left_out: int = 0

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "failed": self.failed,
            "errors": [e.as_dict() for e in self.errors],
        }
        if self.dry_run:
            body["dryRun"] = True
        if self.rows is not None:
            body["rows"] = self.rows
            if self.rows_left_out:
                body["rowsLeftOut"] = self.rows_left_out
        return body


class _Problems:
    """The problems of a file, in the order found, at most MAX_REPORTED_ERRORS of them."""

    def __init__(self) -> None:
        self.errors: list[ErrorItem] = []
        self.forbidden: list[ErrorItem] = []
        # pointer -> the value a problem is about, where a record held one (a workbook's cell shows it)
        self.values: dict[str, Any] = {}

    def add(self, pointer_: str, code: str, message: str, value: Any = None) -> None:
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(ErrorItem(pointer_, code, message))
            if value is not None:
                self.values[pointer_] = value
        else:
            self.errors[-1] = ErrorItem("", "too_many_errors", f"more than {MAX_REPORTED_ERRORS} problems")


@dataclass
class _TypeImport:
    """The records of one type (a JSON import: their text, each let go once its chunk has read it), the
    file's names of the type (name -> the index of the record that has it), the stored element each
    record describes (record index -> id: by its id where the file is this repository's own export, else
    by name), the old names of the elements the file renames (id -> name) and, in cud mode, the stored
    elements the file lacks."""

    type_def: BlockTypeDef
    records: list[Any] = field(default_factory=list)
    builder: _BodyBuilder | None = None
    names: dict[str, int] = field(default_factory=dict)
    owners: dict[int, int] = field(default_factory=dict)
    renamed: dict[int, str] = field(default_factory=dict)
    doomed: list[int] = field(default_factory=list)
    doomed_names: dict[int, str] = field(default_factory=dict)
    keep_unlisted: bool = False  # `Document.keep_unlisted`
    # The records' names as the document's reader read them (`Document.names`), or None: a chunk takes
    # the reader's copy of a name, which `names` holds, so that the names its elements are known by
    # (`Writer.known_names`) are not a second copy of every name in the file.
    read_names: list[Any] | None = None

    @property
    def where(self) -> str:
        return f"/elements/{self.type_def.name}"

    def items(self, start: int, stop: int, problems: _Problems) -> list[WriteItem]:
        """The write items of records `start` to `stop`: each record's element body, by name the stored
        element it updates. A record `_survey` found wrong (reported there) is left out."""
        builder, type_def, records, where = self.builder, self.type_def, self.records, self.where
        assert builder is not None
        items = []
        for index in range(start, stop):
            record = records[index]
            records[index] = None  # parsed here and let go once it is a body
            try:
                raw = record_of(record)
            except orjson.JSONDecodeError as exc:
                # Only where `_survey` took the reader's name: the reader's scanner is the standard
                # library's, which takes what orjson does not (a lone surrogate).
                problems.add(f"{where}/{index}", "malformed_json", f"malformed JSON: {exc}")
                continue
            del record
            if not isinstance(raw, dict):
                continue
            read = UNREAD if self.read_names is None else self.read_names[index]
            try:
                name = check_name(raw.get("name") if read is UNREAD else read)
            except ValueProblem:
                continue
            if self.names.get(name) != index:
                continue  # a duplicate name
            body = builder.body(raw, partial(_record_where, where, index))
            if body is None:
                continue
            body["name"] = [name]  # normalised, as it is matched against the stored names
            item = WriteItem(index, body, self.owners.get(index))
            items.append(item)
            if item.element_id is None:
                continue
            # What the record of a stored element leaves out is emptied: the description and parent
            # here, its attributes once it is a draft (`_empty_the_rest`; parsing an empty list per
            # attribute and record would cost a tenth of an import). A created element has none.
            if self.keep_unlisted:
                continue
            body.setdefault("description", [""])
            if type_def.hierarchical:
                body.setdefault("parent", [])
            # The core demands mandatory values of what a body names.
            for attribute in builder.writable:
                if attribute.mandatory and attribute.name not in body:
                    problems.add(
                        f"{where}/{index}/{attribute.name}", "mandatory", f"{attribute.name} is mandatory"
                    )
        return items


class _BodyBuilder:
    """Turns the records of one type into element bodies of the whole state they describe."""

    def __init__(self, actor: Actor, type_def: BlockTypeDef, problems: _Problems) -> None:
        self.type_def = type_def
        self.problems = problems
        self.empty_ends_empty = False  # `Document.empty_ends_empty`
        self.writable = [p for p in type_def.properties if p.builtin or actor.can_write_group(p.group_id)]
        # Relation attributes a listed relation without them has emptied (those the caller may write).
        self.relation_attributes: dict[str, dict[str, list[Any]]] = {
            name: {a.name: [] for a in end.relation_type.attributes if actor.can_write_group(a.group_id)}
            for name, end in type_def.ends.items()
        }

    def body(self, raw: dict[str, Any], where: Callable[[], str]) -> dict[str, Any] | None:
        """The element body of a record; `where` gives the record's pointer (made only for a problem:
        an import turns every record into a body)."""
        type_def = self.type_def
        body: dict[str, Any] = {}
        ok = True
        for key, value in raw.items():
            if key == "id":
                continue  # the id in the repository the file came from
            if key in ("name", "description"):
                body[key] = [value]
            elif key == "parent" and type_def.hierarchical:
                if isinstance(value, str) and value:
                    body["parent"] = [{"name": value}]
                else:
                    self.problems.add(
                        f"{where()}/parent", "wrong_type", "parent is the name of an element of the same type"
                    )
                    ok = False
            elif (end := type_def.ends.get(key)) is not None and isinstance(value, list):
                entries = self.entries(end, value, partial(_member_where, where, key))
                if entries is None:
                    ok = False
                elif entries or self.empty_ends_empty:  # else an end listed empty keeps its relations
                    body[key] = entries
            else:
                body[key] = value
        return body if ok else None

    def entries(
        self, end: RelationEnd, raw: list[Any], where: Callable[[], str]
    ) -> list[dict[str, Any]] | None:
        emptied = self.relation_attributes[end.name]
        entries: list[dict[str, Any]] = []
        for position, item in enumerate(raw):
            name, attributes = (
                (item.get("name"), item.get("attributes")) if isinstance(item, dict) else (item, None)
            )
            if not isinstance(name, str) or not name:
                self.problems.add(
                    f"{where()}/{position}",
                    "wrong_type",
                    'a relation entry is a name or {"name": …, "attributes": {…}}',
                )
                return None
            entry: dict[str, Any] = {"name": name}
            if attributes is None:
                attributes = {}
            if emptied or attributes:
                entry["attributes"] = (
                    {**emptied, **attributes} if isinstance(attributes, dict) else attributes
                )
            entries.append(entry)
        return entries


def parse_mode(mode: str | None) -> str:
    mode = mode or "additive"
    if mode not in MODES:
        raise ValidationFailed(
            f"mode is one of {', '.join(MODES)}",
            errors=[ErrorItem("query:mode", "wrong_value", "additive or cud")],
        )
    return mode


def import_document(
    db: Session,
    metamodel: Metamodel,
    actor: Actor,
    changes: ChangeLog,
    document: Document,
    *,
    mode: str = "additive",
    hash_password: Callable[[str], str],
    progress: Progress | None = None,
    list_rows: bool = False,
) -> ImportReport:
    """Validate the whole document and write it, IMPORT_CHUNK records at a time; raises (400 with every
    problem, 403, 409) when anything is wrong, and the caller rolls back what earlier chunks wrote: the
    file is imported all or nothing. The caller commits; the document's elements are consumed.
    `hash_password` hashes the random passwords of accounts the file names and the repository lacks
    (they are created disabled). With `list_rows` (a dry run) the report lists each record it created,
    updated or deleted. Needs IMPORT, whoever calls (the API or `blockrepo import`)."""
    require_massdata(actor, "IMPORT")
    notify = progress or (lambda _phase, _done, _total: None)
    metamodel = apply_metamodel(db, actor, metamodel, changes, document.metamodel)
    user_admin.create_missing_users(db, actor, changes, document.users, hash_password)
    writer = Writer(db, metamodel, actor, changes)
    run = _ImportRun(writer, mode)
    run.keep_values = document.cells is not None
    if list_rows:
        run.written = []
    total = sum(len(records) for records in document.elements.values())
    own_ids = document.ids_trusted or (
        document.revision is not None
        and document.revision_mark is not None
        and revision_mark(db, document.revision) == document.revision_mark
    )
    imports = [
        _survey(
            writer,
            type_name,
            records,
            document.names.get(type_name),
            document.ids.get(type_name) if own_ids else None,
            mode,
            run.problems,
            own_ids=own_ids,
        )
        for type_name, records in document.elements.items()
    ]
    # The survey took what it needs of the ids the reader read: they go before the chunks.
    document.ids.clear()
    for type_import in imports:
        type_import.keep_unlisted = document.keep_unlisted
        if type_import.builder is not None:
            type_import.builder.empty_ends_empty = document.empty_ends_empty
        type_id = type_import.type_def.id
        run.unwritten[type_id] = {
            name for name, index in type_import.names.items() if index not in type_import.owners
        }
        run.doomed.update(type_import.doomed)
        # A reference by an element's old name (the file's other rows still name it so after a rename in
        # a spreadsheet) is to the renamed element, unless the file gives the name to another record.
        for element_id, old_name in type_import.renamed.items():
            if old_name not in type_import.names:
                writer.known_names[(type_id, old_name)] = element_id
        # A reference by the new name (an ArchiMate file names each end by its identifier, so by the
        # element's new name) is to the renamed element, before the rename is written.
        if type_import.renamed:
            owners, renamed = type_import.owners, type_import.renamed
            for name, index in type_import.names.items():
                if owners.get(index) in renamed:
                    writer.known_names[(type_id, name)] = owners[index]
    done = 0
    # One pipeline for every chunk (SQLite): a chunk's rows and history go in while the next chunk is
    # parsed; a read of the next chunk's validation (the names already taken) waits for them, so no more
    # than one chunk's statements queue. The pages the import writes are not read again: a small page
    # cache keeps them from staying resident (bench/README.md).
    with sqlite_page_cache(db.connection(), IMPORT_PAGE_CACHE_KIB):
        with pipelined(db):
            for type_import in _targets_first(imports):
                for start in range(0, len(type_import.records), IMPORT_CHUNK):
                    run.chunk(type_import, start, min(start + IMPORT_CHUNK, len(type_import.records)))
                    done += min(IMPORT_CHUNK, len(type_import.records) - start)
                    notify("import", done, total)
        run.complete([(t.type_def, t.doomed) for t in imports if t.doomed])
    problems = run.problems
    if document.cells is not None:
        located = partial(_cell_with_value, document.cells, problems.values)
        problems.errors = [replace(e, cell=located(e.pointer)) for e in problems.errors]
        problems.forbidden = [replace(e, cell=located(e.pointer)) for e in problems.forbidden]
    if problems.forbidden:
        raise Forbidden(
            "; ".join(f"{e.pointer}: {e.message}" for e in problems.forbidden[:5]),
            errors=problems.forbidden,
        )
    if problems.errors:
        failed = {"/".join(e.pointer.split("/")[:4]) for e in problems.errors}
        report = ImportReport(failed=len(failed), errors=problems.errors)
        raise ValidationFailed(
            f"{len(problems.errors)} problem(s) in the file; nothing was imported: "
            + "; ".join(f"{e.pointer}: {e.message}" for e in problems.errors[:3]),
            errors=problems.errors,
            extra={"report": report.as_json()},
        )
    report = ImportReport(
        created=run.created,
        updated=len(run.updated & run.touched),
        deleted=sum(len(t.doomed) for t in imports),
    )
    if run.written is not None:
        report.rows, report.rows_left_out = _listed_rows(run, imports, document)
    if changes.records_changes:  # an import that changed nothing makes no revision
        changes.import_completed(
            [
                {"property": "created", "old": None, "new": report.created},
                {"property": "updated", "old": None, "new": report.updated},
                {"property": "deleted", "old": None, "new": report.deleted},
                {"property": "mode", "old": None, "new": mode},
            ]
        )
    return report


class _ImportRun:
    """One import, chunk by chunk: each chunk's records become items that are validated and written
    together, so that only one chunk's drafts exist at a time. A reference to an element that a later
    chunk creates is deferred: the record is written without it, and once every chunk is written the
    deferred ends and parents are written as an update of their elements (`complete`). The request's
    ChangeLog folds an element's records of several chunks into one changeset, and the recorder gives
    it one new revision. After the first problem nothing more is written; the rest is still validated,
    so that one 400 lists every problem."""

    def __init__(self, writer: Writer, mode: str) -> None:
        self.writer = writer
        self.mode = mode
        self.problems = _Problems()
        self.unwritten: dict[int, set[str]] = {}  # type id -> names the file creates not written yet
        self.doomed: set[int] = set()  # cud: the stored elements the file lacks
        self.deferred: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # type id -> (record index, body)
        self.created = 0
        self.updated: set[int] = set()  # stored elements the file's records update
        self.touched: set[int] = set()  # elements that changed, directly or as a neighbour
        # Kept where the report lists its rows: (type, record index, name, element id, created) each.
        self.written: list[tuple[str, int, str, int | None, bool]] | None = None
        # A workbook's problems show the value in their cell: a chunk's bodies are kept through their
        # validation (which lets each go once parsed) to find it.
        self.keep_values = False

    @property
    def writing(self) -> bool:
        return not self.problems.errors and not self.problems.forbidden

    def chunk(self, type_import: _TypeImport, start: int, stop: int) -> None:
        """Validate records `start` to `stop` of a type and, while the file has no problem, write them."""
        type_def = type_import.type_def
        items = type_import.items(start, stop, self.problems)
        # Taken now: the core lets go of an item's body once it is a draft.
        names = [item.body["name"][0] if item.body is not None else "" for item in items]
        here = {name for item, name in zip(items, names, strict=True) if item.element_id is None}
        # The ends (and the parent) that may name an unwritten element: mostly none, or a few of them.
        ends = [(key, end) for key, end in type_def.ends.items() if self.unwritten.get(end.other_type_id)]
        parents = type_def.hierarchical and bool(self.unwritten.get(type_def.id))
        if ends or parents:
            for item in items:
                assert item.body is not None
                aside = self._defer(type_def, ends, parents, item.body, here)
                if aside:
                    self.deferred.setdefault(type_def.id, []).append((item.index, aside))
        if not self._validate(type_import, items):
            return
        written = persistence.persist_types(self.writer, [TypeItems(type_def, items)], order_counts=False)
        self.touched |= written.changed | written.mirrored
        # A new set, sized to the names left: a set's table does not shrink as it empties (`-=`), and the
        # file's names were all in it.
        self.unwritten[type_def.id] = self.unwritten[type_def.id] - here
        # The chunk's history goes to the database now: an import holds one chunk's, not the file's.
        self.writer.changes.write_ahead(self.writer.db)
        known = self.writer.known_names
        for item, name in zip(items, names, strict=True):
            if item.creating:
                self.created += 1
            elif item.element_id is not None:
                self.updated.add(item.element_id)
            if self.written is not None:
                self.written.append((type_def.name, item.index, name, item.written_id, item.creating))
            # The chunks after this one name its elements without a query (`resolve_references`).
            if item.written_id is not None:
                known[(type_def.id, name)] = item.written_id

    def complete(self, deletions: Sequence[tuple[BlockTypeDef, Sequence[int]]]) -> None:
        """Write the deferred references of every chunk (each element once, as an update of what its
        record's chunk wrote) and, in cud mode, delete the stored elements the file lacks."""
        if not self.writing:
            return  # a deferred reference names what an unwritten chunk creates: nothing to check
        metamodel = self.writer.metamodel
        for type_id, deferred in self.deferred.items():
            type_import = _TypeImport(metamodel.type_by_id(type_id))
            ids = repository.ids_by_name(self.writer.db, type_id, [body["name"][0] for _, body in deferred])
            for start in range(0, len(deferred), IMPORT_CHUNK):
                items = [
                    WriteItem(index, body, ids[body["name"][0]])
                    for index, body in deferred[start : start + IMPORT_CHUNK]
                ]
                if self._validate(type_import, items):
                    written = persistence.persist_types(
                        self.writer, [TypeItems(type_import.type_def, items)], order_counts=False
                    )
                    self.touched |= written.changed | written.mirrored
        self.deferred = {}
        if deletions and self.writing:
            written = persistence.persist_types(self.writer, [], deletions=deletions, order_counts=False)
            self.touched |= written.mirrored

    def _defer(
        self,
        type_def: BlockTypeDef,
        ends: list[tuple[str, RelationEnd]],
        parents: bool,
        body: dict[str, Any],
        here: set[str],
    ) -> dict[str, Any]:
        """Take out of `body` the relation ends (of `ends`, those whose other type has unwritten names)
        and, where `parents`, the parent that name an element a later chunk creates (`here`: the names
        this chunk creates of the type, which the core resolves itself); returns them as the body of the
        update that writes them once every chunk is written."""
        aside: dict[str, Any] = {}
        for key, end in ends:
            value = body.get(key)
            if not isinstance(value, list):
                continue
            unwritten = self.unwritten[end.other_type_id]
            same_type = end.other_type_id == type_def.id
            kept = [
                entry
                for entry in value
                if not _names_unwritten(entry.get("name"), unwritten, here if same_type else None)
            ]
            if len(kept) != len(value):
                aside[key] = value
                body[key] = kept
        for key in aside:
            if not body[key]:
                del body[key]  # an end listed empty keeps its relations until the update writes them
        parent = body.get("parent") if parents else None
        if parent and isinstance(parent[0], dict):
            unwritten = self.unwritten[type_def.id]
            if _names_unwritten(parent[0].get("name"), unwritten, here):
                aside["parent"] = body.pop("parent")
        if aside:
            aside["name"] = body["name"]
        return aside

    def _validate(self, type_import: _TypeImport, items: list[WriteItem]) -> bool:
        """Validate `items` as one write, add their problems; whether they may be written."""
        bodies = [item.body for item in items] if self.keep_values else None
        validation.validate_types(self.writer, [TypeItems(type_import.type_def, items)], forward=True)
        if self.mode == "cud" and self.doomed:
            _refuse_references_to_doomed(
                self.writer.metamodel, type_import, items, self.doomed, self.problems
            )
        where = type_import.where
        for position, item in enumerate(items):
            for error in item.errors:
                pointer = f"{where}/{item.index}{_record_pointer(error.pointer)}"
                if isinstance(item.error, Forbidden):
                    self.problems.forbidden.append(ErrorItem(pointer, error.code, error.message))
                elif error.code != "failed_dependency":  # the record it depends on is reported
                    value = _value_at(bodies[position], error.pointer) if bodies is not None else None
                    self.problems.add(pointer, error.code, error.message, value)
        if not self.writing:
            return False
        _empty_the_rest(type_import, items)
        return True


def _value_at(body: dict[str, Any] | None, pointer: str) -> Any:
    """The value of an element body at a core pointer (`/Criticality/0`, `/businessProcesses/1/name`):
    a scalar, or a relation entry's name; None where there is none."""
    parts = pointer.split("/")[1:]
    if body is None or len(parts) < 2 or not parts[1].isdigit():
        return None
    values = body.get(parts[0])
    index = int(parts[1])
    if not isinstance(values, list) or index >= len(values):
        return None
    value = values[index]
    if isinstance(value, dict):
        value = value.get("name")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)  # a date the reader typed, an interval


def _cell_with_value(cells: CellMap, values: dict[str, Any], pointer: str) -> dict[str, Any] | None:
    cell = cells.locate(pointer)
    if cell is not None and "column" in cell and pointer in values:
        cell["value"] = values[pointer]
    return cell


def _listed_rows(
    run: _ImportRun, imports: Sequence[_TypeImport], document: Document
) -> tuple[list[dict[str, Any]], int]:
    """What the import did, a row each: the records it created or changed (with the cell of their row in
    a workbook) and the stored elements it deleted; at most MAX_LISTED_ROWS, and how many were left out."""
    rows: list[dict[str, Any]] = []
    locate = document.cells.locate if document.cells is not None else None
    left_out = 0
    for type_name, index, name, element_id, created in run.written or []:
        if not created and element_id not in run.touched:
            continue  # matched, but unchanged
        if len(rows) == MAX_LISTED_ROWS:
            left_out += 1
            continue
        row: dict[str, Any] = {"action": "create" if created else "update", "type": type_name, "name": name}
        if not created:
            row["id"] = element_id
        row["record"] = index
        if locate is not None and (cell := locate(f"/elements/{type_name}/{index}")) is not None:
            row["cell"] = cell
        rows.append(row)
    for type_import in imports:
        for element_id in type_import.doomed:
            if len(rows) == MAX_LISTED_ROWS:
                left_out += 1
                continue
            name = type_import.doomed_names.get(element_id, "")
            rows.append(
                {"action": "delete", "type": type_import.type_def.name, "name": name, "id": element_id}
            )
    return rows, left_out


def _names_unwritten(name: Any, unwritten: set[str], here: set[str] | None) -> bool:
    """Whether a reference by `name` names an element that a later chunk creates (not one of `here`)."""
    if not isinstance(name, str):
        return False
    if name not in unwritten:
        try:
            name = check_name(name)
        except ValueProblem:
            return False
        if name not in unwritten:
            return False
    return here is None or name not in here


def _targets_first(imports: Sequence[_TypeImport]) -> list[_TypeImport]:
    """The file's types in the order they are written: a type after the types its records list on their
    source ends (an export lists only those), so that those references name written elements and need
    not wait for the deferred update; in file order otherwise, and where the types refer to each other."""
    by_id = {t.type_def.id: t for t in imports}
    order: list[_TypeImport] = []
    placed: set[int] = set()
    visiting: set[int] = set()

    def place(type_import: _TypeImport) -> None:
        type_id = type_import.type_def.id
        if type_id in placed or type_id in visiting:
            return
        visiting.add(type_id)
        for end in type_import.type_def.ends.values():
            target = by_id.get(end.other_type_id)
            if end.holder_is_source and target is not None:
                place(target)
        visiting.discard(type_id)
        placed.add(type_id)
        order.append(type_import)

    for type_import in imports:
        place(type_import)
    return order


def _record_pointer(body_pointer: str) -> str:
    """Where in a record a problem of its element body is (a record gives name, description and parent
    bare, not as an array of one)."""
    for bare in _BARE_KEYS:
        if body_pointer.startswith(bare):
            return bare[:-2]
    return body_pointer


def _survey(
    writer: Writer,
    type_name: str,
    records: list[Any],
    read_names: list[Any] | None,
    read_ids: list[Any] | None,
    mode: str,
    problems: _Problems,
    *,
    own_ids: bool,
) -> _TypeImport:
    """The records of one type read for their names and, where the file is this repository's own export
    (`own_ids`), their ids (`read_names`/`read_ids`: those the document's reader read, else the record is
    parsed here, and it is parsed again when its chunk is written): the file's names, the stored elements
    the records describe and, in cud mode, the stored elements the file lacks (403 for the whole type
    when the caller lacks a right the import needs). A record found malformed here is let go.

    A record whose id is a stored element of the type describes that element, whatever its name (a rename
    is a rename, history and incoming relations kept); the others are matched by name, among the elements
    no id claimed. An id of an element since deleted, or of another type, counts for nothing."""
    type_def = writer.metamodel.type_named(type_name)
    where = f"/elements/{type_name}"
    if type_def is None:
        raise UnknownType(
            f"there is no building block type {type_name!r}", errors=[ErrorItem(where, "unknown_type", "")]
        )
    actions = ["read", "create", "update"] + (["delete"] if mode == "cud" else [])
    missing = [a for a in actions if not writer.actor.can_type(type_def.id, a)]
    if missing:
        raise Forbidden(f"importing {type_name} needs {', '.join(missing)} on it")
    result = _TypeImport(
        type_def, records, _BodyBuilder(writer.actor, type_def, problems), read_names=read_names
    )
    names = result.names
    given_ids: dict[int, Any] = {}  # record index -> the id it gives
    for index, record in enumerate(records):
        if read_names is not None and (given := read_names[index]) is not UNREAD:
            try:
                name = check_name(given)
            except ValueProblem:
                pass  # reported below, unless the record is malformed
            else:
                if name not in names:
                    names[name] = index
                    if own_ids and read_ids is not None:
                        given_ids[index] = read_ids[index]
                    continue
        # The record parsed here: its name was not read, or there is a problem to report.
        try:
            raw = record_of(record)
        except orjson.JSONDecodeError as exc:
            problems.add(f"{where}/{index}", "malformed_json", f"malformed JSON: {exc}")
            records[index] = None  # reported: its chunk leaves it out
            continue
        if not isinstance(raw, dict):
            problems.add(f"{where}/{index}", "wrong_type", f"a record is an object, got {json_type(raw)}")
            continue
        try:
            name = check_name(raw.get("name"))
        except ValueProblem as problem:
            problems.add(f"{where}/{index}/name", problem.code, f"name: {problem.message}")
            continue
        if name in names:
            problems.add(f"{where}/{index}/name", "duplicate", f"record {names[name]} has this name already")
            continue
        names[name] = index
        if own_ids:
            given_ids[index] = raw.get("id")
    _match_by_id(writer.db, result, given_ids)
    claimed = set(result.owners.values())
    if mode == "cud":
        stored = repository.placement_by_name(writer.db, type_def.id)
        for name, (element_id, _, _) in stored.items():
            matched = names.get(name)
            if matched is not None and matched not in result.owners and element_id not in claimed:
                result.owners[matched] = element_id
        kept = set(result.owners.values())
        gone = {element_id: parent for element_id, parent, _ in stored.values() if element_id not in kept}
        result.doomed = _parents_first(gone)
        result.doomed_names = {
            element_id: name for name, (element_id, _, _) in stored.items() if element_id not in kept
        }
    else:
        unmatched = [name for name, index in names.items() if index not in result.owners]
        for name, element_id in repository.ids_by_name(writer.db, type_def.id, unmatched).items():
            if element_id not in claimed:
                result.owners[names[name]] = element_id
    return result


def _match_by_id(db: Session, result: _TypeImport, given_ids: dict[int, Any]) -> None:
    """The records whose id names a stored element of their type describe it (`result.owners`), and those
    that give it a new name rename it (`result.renamed`); each element is claimed by one record."""
    wanted = {
        index: int(element_id)
        for index, element_id in given_ids.items()
        # A spreadsheet may hand a whole number back as a float.
        if (isinstance(element_id, int) and not isinstance(element_id, bool))
        or (isinstance(element_id, float) and element_id.is_integer())
    }
    if not wanted:
        return
    stored = repository.find_by_ids(db, wanted.values())
    name_of = {index: name for name, index in result.names.items()}
    claimed: set[int] = set()
    for index, element_id in sorted(wanted.items()):
        found = stored.get(element_id)
        if found is None or found[0] != result.type_def.id or element_id in claimed:
            continue
        claimed.add(element_id)
        result.owners[index] = element_id
        if found[1] != name_of[index]:
            result.renamed[element_id] = found[1]


def _record_where(where: str, index: int) -> str:
    return f"{where}/{index}"


def _member_where(record_where: Callable[[], str], key: str) -> str:
    return f"{record_where()}/{key}"


def _empty_the_rest(type_import: _TypeImport, items: Sequence[WriteItem]) -> None:
    """An updated element's writable attributes that its record leaves out are emptied (not by the
    deferred update, which names only what it writes)."""
    builder = type_import.builder
    if builder is None or type_import.keep_unlisted:
        return
    for item in items:
        if item.draft is not None and not item.creating:
            for attribute in builder.writable:
                item.draft.values.setdefault(attribute.id, [])


def _parents_first(parents: Mapping[int, int | None]) -> list[int]:
    """The ids of `parents` (id -> parent id) ordered so that each comes after its parent."""
    depth: dict[int, int] = {}
    for start in parents:
        chain: list[int] = []
        current: int | None = start
        while current is not None and current in parents and current not in depth:
            chain.append(current)
            current = parents[current]
        base = depth.get(current, -1) if current is not None else -1
        for offset, element_id in enumerate(reversed(chain)):
            depth[element_id] = base + 1 + offset
    return sorted(parents, key=lambda element_id: (depth[element_id], element_id))


def _refuse_references_to_doomed(
    metamodel: Metamodel,
    type_import: _TypeImport,
    items: Sequence[WriteItem],
    doomed: set[int],
    problems: _Problems,
) -> None:
    """In cud mode an element the file lacks is deleted, so nothing in the file may refer to it."""
    for item in items:
        if item.draft is None:
            continue
        for reference in item.draft.references():
            if reference.resolved_id in doomed:
                problems.add(
                    f"{type_import.where}/{item.index}{_record_pointer(reference.pointer)}",
                    "unknown_target",
                    f"there is no {metamodel.type_by_id(reference.type_id).name} named "
                    f"{reference.name!r} (in cud mode it must be in the file)",
                )
