"""Imports an export document into the repository, all or nothing, as one revision, through the element
write core (`elements.write`), the same code that writes single elements and bulk writes.

1. The metamodel the file needs is created where missing (`metamodel_sync`), and so are the accounts its
   responsibility values name (disabled, without roles).
2. Records are matched by name within their type: a known name updates that element, the others are
   created; in `cud` mode the stored elements of the file's types that the file lacks are deleted. A
   record is its element's whole state: the writable attributes and the description it leaves out are
   emptied, without a parent it is a root, and each relation end it lists replaces what the end held
   (an end it leaves out or lists empty keeps its relations).
3. Each record becomes an element body (`parent` and relation entries as references by name) and the core
   validates every type at once, references to elements the file creates anywhere in it included
   (`validate_types(forward=True)`). One 400 lists every problem, with pointers into the file like
   `/elements/InformationSystem/3/Costs/0`; writing what the caller may not is 403.
4. The core writes set-based and records history (`persist_types`): created, updated and deleted elements,
   one mirrored changeset per element at the other end. A relation list's order is no change
   (`order_counts=False`), so importing an unchanged export writes no revision and reports `updated: 0`.

Within a type elements are created in file order (hierarchy order in an export): children get positions
in file order and source ends keep the order of their lists, so exporting again gives the same file but
for ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
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
from blockrepo.massdata.transfer.document import Document, record_of
from blockrepo.massdata.transfer.metamodel_sync import apply_metamodel
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, Metamodel, RelationEnd
from blockrepo.revisions.recorder import ChangeLog

MODES = ("additive", "cud")
MAX_REPORTED_ERRORS = 1000
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
        return body


class _Problems:
    """The problems of a file, in the order found, at most MAX_REPORTED_ERRORS of them."""

    def __init__(self) -> None:
        self.errors: list[ErrorItem] = []
        self.forbidden: list[ErrorItem] = []

    def add(self, pointer_: str, code: str, message: str) -> None:
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(ErrorItem(pointer_, code, message))
        else:
            self.errors[-1] = ErrorItem("", "too_many_errors", f"more than {MAX_REPORTED_ERRORS} problems")


@dataclass
class _TypeImport:
    """The records of one type: their write items (index: the record's place in the file), the stored
    elements by name, and (cud) the stored elements the file lacks."""

    type_def: BlockTypeDef
    writable: tuple[AttributeDef, ...] = ()
    items: list[WriteItem] = field(default_factory=list)
    doomed: list[int] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"/elements/{self.type_def.name}"


class _BodyBuilder:
    """Turns the records of one type into element bodies of the whole state they describe."""

    def __init__(self, actor: Actor, type_def: BlockTypeDef, problems: _Problems) -> None:
        self.type_def = type_def
        self.problems = problems
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
                elif entries:  # an end listed empty keeps its relations
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
) -> ImportReport:
    """Validate the whole document, then write it; raises (400 with every problem, 403, 409) and writes
    nothing when anything is wrong. The caller commits; the document's elements are consumed.
    `hash_password` hashes the random passwords of accounts the file names and the repository lacks
    (they are created disabled). Needs IMPORT, whoever calls (the API or `blockrepo import`)."""
    require_massdata(actor, "IMPORT")
    notify = progress or (lambda _phase, _done, _total: None)
    metamodel = apply_metamodel(db, actor, metamodel, changes, document.metamodel)
    user_admin.create_missing_users(db, actor, changes, document.users, hash_password)
    writer = Writer(db, metamodel, actor, changes)
    problems = _Problems()
    total = sum(len(records) for records in document.elements.values())
    imports = [
        _type_import(writer, type_name, records, mode, problems)
        for type_name, records in document.elements.items()
    ]
    validation.validate_types(writer, [TypeItems(t.type_def, t.items) for t in imports], forward=True)
    if mode == "cud":
        _refuse_references_to_doomed(metamodel, imports, problems)
    for type_import in imports:
        for item in type_import.items:
            for error in item.errors:
                where = f"{type_import.where}/{item.index}"
                if isinstance(item.error, Forbidden):
                    problems.forbidden.append(
                        ErrorItem(where + _record_pointer(error.pointer), error.code, error.message)
                    )
                elif error.code != "failed_dependency":  # the record it depends on is reported
                    problems.add(where + _record_pointer(error.pointer), error.code, error.message)
    notify("validate", total, total)
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
    for type_import in imports:
        _empty_the_rest(type_import)
    written = persistence.persist_types(
        writer,
        [TypeItems(t.type_def, t.items) for t in imports],
        deletions=[(t.type_def, t.doomed) for t in imports if t.doomed],
        order_counts=False,
    )
    notify("write", total, total)
    changed = written.changed | written.mirrored
    return ImportReport(
        created=sum(1 for t in imports for item in t.items if item.creating),
        updated=sum(1 for t in imports for item in t.items if item.element_id in changed),
        deleted=sum(len(t.doomed) for t in imports),
    )


def _record_pointer(body_pointer: str) -> str:
    """Where in a record a problem of its element body is (a record gives name, description and parent
    bare, not as an array of one)."""
    for bare in _BARE_KEYS:
        if body_pointer.startswith(bare):
            return bare[:-2]
    return body_pointer


def _type_import(
    writer: Writer, type_name: str, records: list[Any], mode: str, problems: _Problems
) -> _TypeImport:
    """The write items of one type's records, matched by name to the stored elements (403 for the whole
    type when the caller lacks a right the import needs)."""
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
    builder = _BodyBuilder(writer.actor, type_def, problems)
    result = _TypeImport(type_def, tuple(builder.writable))
    seen: dict[str, int] = {}
    for index, record in enumerate(records):
        # Each record is parsed here (a JSON import holds its text) and let go once it is a body: the
        # parsed file and the drafts of a large type are then not held in full at once
        # (bench/import_memory.py).
        records[index] = None
        record_where = partial(_record_where, where, index)
        try:
            raw = record_of(record)
        except orjson.JSONDecodeError as exc:
            problems.add(record_where(), "malformed_json", f"malformed JSON: {exc}")
            continue
        del record
        if not isinstance(raw, dict):
            problems.add(record_where(), "wrong_type", f"a record is an object, got {json_type(raw)}")
            continue
        try:
            name = check_name(raw.get("name"))
        except ValueProblem as problem:
            problems.add(f"{record_where()}/name", problem.code, f"name: {problem.message}")
            continue
        if name in seen:
            problems.add(f"{record_where()}/name", "duplicate", f"record {seen[name]} has this name already")
            continue
        seen[name] = index
        body = builder.body(raw, record_where)
        if body is not None:
            body["name"] = [name]  # normalised, as it is matched against the stored names
            result.items.append(WriteItem(index, body))
    if mode == "cud":
        stored = repository.placement_by_name(writer.db, type_def.id)
        owners = {name: element_id for name, (element_id, _, _) in stored.items()}
        gone = {element_id: parent for name, (element_id, parent, _) in stored.items() if name not in seen}
        result.doomed = _parents_first(gone)
    else:
        owners = repository.ids_by_name(writer.db, type_def.id, seen)
    for item in result.items:
        assert item.body is not None
        item.element_id = owners.get(item.body["name"][0])
        if item.element_id is not None:
            # What the record of a stored element leaves out is emptied: the description and parent
            # here, its attributes once it is a draft (`_empty_the_rest`; parsing an empty list per
            # attribute and record would cost a tenth of an import). A created element has none.
            item.body.setdefault("description", [""])
            if type_def.hierarchical:
                item.body.setdefault("parent", [])
            # The core demands mandatory values of what a body names.
            for attribute in result.writable:
                if attribute.mandatory and attribute.name not in item.body:
                    problems.add(
                        f"{where}/{item.index}/{attribute.name}",
                        "mandatory",
                        f"{attribute.name} is mandatory",
                    )
    return result


def _record_where(where: str, index: int) -> str:
    return f"{where}/{index}"


def _member_where(record_where: Callable[[], str], key: str) -> str:
    return f"{record_where()}/{key}"


def _empty_the_rest(type_import: _TypeImport) -> None:
    """An updated element's writable attributes that its record leaves out are emptied."""
    for item in type_import.items:
        if item.draft is not None and not item.creating:
            for attribute in type_import.writable:
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
    metamodel: Metamodel, imports: Sequence[_TypeImport], problems: _Problems
) -> None:
    """In cud mode an element the file lacks is deleted, so nothing in the file may refer to it."""
    doomed = {element_id for t in imports for element_id in t.doomed}
    if not doomed:
        return
    for type_import in imports:
        for item in type_import.items:
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
