"""Imports an export document into the repository, all or nothing, as one revision.

1. The metamodel the file needs is created where missing (`metamodel_sync`).
2. Every record is validated in memory with the element value codecs (`elements.values`): keys,
   cardinalities, literals, mandatory attributes, write permissions, names unique per type, parents
   (same type, no cycles), relation targets (in the file or the repository), single-valued ends, user
   logins. One 400 lists every problem, with pointers like `/elements/InformationSystem/3/Costs/0`.
3. Elements are matched by name within their type: known names are updated (the record is the
   element's whole state: what it leaves out is emptied), the others created; in `cud` mode the
   elements of the file's types that the file does not hold are deleted.
4. Writes are set-based (driver-level executemany in batches); relations of the file's elements are
   replaced by the file's.
5. History: created elements get a "created" changeset built from the records (nothing is read back),
   updated and deleted ones are read before and after, the elements at the other end of changed
   relations get one mirrored changeset each.

Order within a type is kept: elements are created in file order (hierarchy order in an export), children
get positions in file order and source ends keep the order of their lists, so exporting again gives the
same file but for ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.administration import users as user_admin
from blockrepo.administration.schemas import UserCreate
from blockrepo.auth.passwords import generate_password
from blockrepo.elements import repository
from blockrepo.elements.reader import READ_BATCH, ElementReader
from blockrepo.elements.repository import chunks
from blockrepo.elements.values import (
    RICHTEXT_MAX_LENGTH,
    TypedValue,
    ValueProblem,
    check_name,
    check_text,
    decode_value,
    json_type,
)
from blockrepo.elements.view import ElementView
from blockrepo.elements.writer import NeighbourMirror, diff_elements, loops
from blockrepo.errors import ErrorItem, Forbidden, UnknownType, ValidationFailed
from blockrepo.massdata.listing import require_massdata
from blockrepo.massdata.transfer.document import Document
from blockrepo.massdata.transfer.metamodel_sync import apply_metamodel
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, Metamodel, RelationEnd
from blockrepo.revisions.recorder import ChangeLog

MODES = ("additive", "cud")
MAX_REPORTED_ERRORS = 1000
Progress = Callable[[str, int, int], None]  # (phase, done, total)
Key = tuple[int, str]  # (type id, element name): an element before ids are known


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


@dataclass
class _Relation:
    relation_type_id: int
    source: Key
    target: Key
    values: dict[int, list[TypedValue]]
    source_position: int | None  # index in the source's list; None: listed from the target's side


@dataclass
class _Record:
    type_def: BlockTypeDef
    index: int
    name: str
    description: str = ""
    parent: str | None = None
    values: dict[int, list[TypedValue]] = field(default_factory=dict)
    element_id: int | None = None  # the existing element it updates

    @property
    def key(self) -> Key:
        return (self.type_def.id, self.name)


@dataclass
class _Existing:
    """The repository's elements of one type: name -> (id, parent id, position)."""

    by_name: dict[str, tuple[int, int | None, int]]

    @property
    def names_by_id(self) -> dict[int, str]:
        return {element_id: name for name, (element_id, _, _) in self.by_name.items()}


class _Validator:
    def __init__(self, db: Session, metamodel: Metamodel, actor: Actor, mode: str) -> None:
        self.db = db
        self.metamodel = metamodel
        self.actor = actor
        self.mode = mode
        self.errors: list[ErrorItem] = []
        self.forbidden: list[ErrorItem] = []
        self.records: dict[int, list[_Record]] = {}  # type id -> records in file order
        self.relations: list[_Relation] = []
        self.logins: list[tuple[str, str]] = []
        self.existing: dict[int, _Existing] = {}

    def error(self, pointer: str, code: str, message: str) -> None:
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(ErrorItem(pointer, code, message))
        else:
            self.errors[-1] = ErrorItem("", "too_many_errors", f"more than {MAX_REPORTED_ERRORS} problems")

    def existing_of(self, type_def: BlockTypeDef) -> _Existing:
        known = self.existing.get(type_def.id)
        if known is None:
            known = self.existing[type_def.id] = _Existing(repository.placement_by_name(self.db, type_def.id))
        return known

    # --- records ---------------------------------------------------------------------------------------

    def type_records(self, type_name: str, raw_records: list[Any]) -> None:
        type_def = self.metamodel.type_named(type_name)
        where = f"/elements/{type_name}"
        if type_def is None:
            raise UnknownType(
                f"there is no building block type {type_name!r}",
                errors=[ErrorItem(where, "unknown_type", "")],
            )
        actions = ["read", "create", "update"] + (["delete"] if self.mode == "cud" else [])
        missing = [a for a in actions if not self.actor.can_type(type_def.id, a)]
        if missing:
            raise Forbidden(f"importing {type_name} needs {', '.join(missing)} on it")
        writable = {
            p.name: p for p in type_def.properties if p.builtin or self.actor.can_write_group(p.group_id)
        }
        hidden = {p.name for p in type_def.properties} - set(writable)
        ends = {
            name: end for name, end in type_def.ends.items() if self.actor.can_type(end.other_type_id, "read")
        }
        existing = self.existing_of(type_def)
        seen: dict[str, int] = {}
        records = self.records.setdefault(type_def.id, [])
        for index, raw in enumerate(raw_records):
            # Each raw record is let go once validated: the parsed file and the validated records of a
            # large type are then not held in full at once (bench/massdata_scale.py, peak RSS).
            raw_records[index] = None
            pointer = f"{where}/{index}"
            if not isinstance(raw, dict):
                self.error(pointer, "wrong_type", f"a record is an object, got {json_type(raw)}")
                continue
            record = self.record(type_def, index, raw, pointer, writable, hidden, ends)
            if record is None:
                continue
            if record.name in seen:
                self.error(
                    f"{pointer}/name", "duplicate", f"record {seen[record.name]} has this name already"
                )
                continue
            seen[record.name] = index
            found = existing.by_name.get(record.name)
            record.element_id = None if found is None else found[0]
            records.append(record)

    def record(
        self,
        type_def: BlockTypeDef,
        index: int,
        raw: dict[str, Any],
        pointer: str,
        writable: dict[str, AttributeDef],
        hidden: set[str],
        ends: dict[str, RelationEnd],
    ) -> _Record | None:
        name = raw.get("name")
        try:
            name = check_name(name)
        except ValueProblem as problem:
            self.error(f"{pointer}/name", problem.code, f"name: {problem.message}")
            return None
        record = _Record(type_def, index, name)
        for key, value in raw.items():
            where = f"{pointer}/{key}"
            if key in ("id", "name"):
                continue
            if key == "description":
                try:
                    record.description = check_text(value, RICHTEXT_MAX_LENGTH)
                except ValueProblem as problem:
                    self.error(where, problem.code, problem.message)
            elif key == "parent" and type_def.hierarchical:
                if isinstance(value, str) and value:
                    record.parent = value
                else:
                    self.error(where, "wrong_type", "parent is the name of an element of the same type")
            elif key in writable:
                self.values(record, writable[key], value, where)
            elif key in ends:
                self.end(record, ends[key], value, where)
            elif key in hidden:
                self.forbidden.append(ErrorItem(where, "forbidden", f"you may not write {key}"))
            else:
                self.error(where, "unknown_property", f"{type_def.name} has no property {key!r}")
        for attribute in writable.values():
            if attribute.mandatory and not record.values.get(attribute.id):
                self.error(f"{pointer}/{attribute.name}", "mandatory", f"{attribute.name} is mandatory")
        return record

    def decode(self, attribute: AttributeDef, raw: Any, where: str) -> list[TypedValue] | None:
        if not isinstance(raw, list):
            self.error(
                where, "not_an_array", f"{attribute.name} takes an array of values, got {json_type(raw)}"
            )
            return None
        if not attribute.multiple and len(raw) > 1:
            self.error(f"{where}/1", "too_many_values", f"{attribute.name} holds at most one value")
            return None
        typed: list[TypedValue] = []
        for position, item in enumerate(raw):
            try:
                value = decode_value(attribute, item)
            except ValueProblem as problem:
                self.error(f"{where}/{position}", problem.code, problem.message)
                return None
            if value in typed:
                self.error(f"{where}/{position}", "duplicate", f"{attribute.name} lists this value twice")
                return None
            if attribute.value_type == "responsibility" and value.text is not None:
                self.logins.append((f"{where}/{position}", value.text))
            typed.append(value)
        return typed

    def values(self, record: _Record, attribute: AttributeDef, raw: Any, where: str) -> None:
        decoded = self.decode(attribute, raw, where)
        if decoded:
            record.values[attribute.id] = decoded

    def end(self, record: _Record, end: RelationEnd, raw: Any, where: str) -> None:
        if not isinstance(raw, list):
            self.error(where, "not_an_array", f"{end.name} takes an array of names, got {json_type(raw)}")
            return
        if not end.multiple and len(raw) > 1:
            self.error(f"{where}/1", "too_many_values", f"{end.name} holds at most one value")
            return
        relation_type = end.relation_type
        attributes = {a.name: a for a in relation_type.attributes}
        for position, item in enumerate(raw):
            item_where = f"{where}/{position}"
            values: dict[int, list[TypedValue]] = {}
            if isinstance(item, dict):
                other = item.get("name")
                for attribute_name, attribute_values in (item.get("attributes") or {}).items():
                    attribute = attributes.get(attribute_name)
                    value_where = f"{item_where}/attributes/{attribute_name}"
                    if attribute is None:
                        self.error(
                            value_where,
                            "unknown_property",
                            f"{relation_type.name} has no attribute {attribute_name!r}",
                        )
                        continue
                    if not self.actor.can_write_group(attribute.group_id):
                        self.forbidden.append(
                            ErrorItem(value_where, "forbidden", f"you may not write {attribute_name}")
                        )
                        continue
                    decoded = self.decode(attribute, attribute_values, value_where)
                    if decoded:
                        values[attribute.id] = decoded
            else:
                other = item
            if not isinstance(other, str) or not other:
                self.error(
                    item_where, "wrong_type", 'a relation entry is a name or {"name": …, "attributes": {…}}'
                )
                continue
            other_key = (end.other_type_id, other)
            if end.holder_is_source:
                relation = _Relation(relation_type.id, record.key, other_key, values, position)
            else:
                relation = _Relation(relation_type.id, other_key, record.key, values, None)
            self.relations.append(relation)
            self._pointers[id(relation)] = item_where

    _pointers: dict[int, str]

    # --- across records --------------------------------------------------------------------------------

    def resolve(self) -> None:
        """Parents, relation targets, cardinalities, logins and (cud) what deletion would break."""
        file_names = {type_id: {r.name for r in records} for type_id, records in self.records.items()}

        def known(key: Key) -> bool:
            type_id, name = key
            if name in file_names.get(type_id, ()):
                return True
            if name not in self.existing_of(self.metamodel.type_by_id(type_id)).by_name:
                return False
            return not (self.mode == "cud" and type_id in file_names)

        for type_id, records in self.records.items():
            type_def = self.metamodel.type_by_id(type_id)
            for record in records:
                if record.parent is not None and not known((type_id, record.parent)):
                    self.error(
                        f"/elements/{type_def.name}/{record.index}/parent",
                        "unknown_target",
                        f"there is no {type_def.name} named {record.parent!r}"
                        + (" (in cud mode it must be in the file)" if self.mode == "cud" else ""),
                    )
            self._cycles(type_def, records)
        unique: dict[tuple[int, Key, Key], _Relation] = {}
        for relation in self.relations:
            pointer = self._pointers[id(relation)]
            for key in (relation.source, relation.target):
                if not known(key):
                    type_name = self.metamodel.type_by_id(key[0]).name
                    self.error(pointer, "unknown_target", f"there is no {type_name} named {key[1]!r}")
            triple = (relation.relation_type_id, relation.source, relation.target)
            first = unique.get(triple)
            if first is not None and (first.source_position is None) == (relation.source_position is None):
                self.error(pointer, "duplicate", "the list names this element twice")
            # Listed from both sides, one relation: the source's list decides its position.
            if first is None or first.source_position is None:
                unique[triple] = relation
        self.relations = list(unique.values())
        self._single_valued()
        logins = repository.existing_logins(self.db, (login for _, login in self.logins))
        for pointer, login in self.logins:
            if login not in logins:
                self.error(pointer, "unknown_user", f"there is no user {login!r}")

    def _cycles(self, type_def: BlockTypeDef, records: list[_Record]) -> None:
        existing = self.existing_of(type_def)
        names = existing.names_by_id
        parent_of: dict[str, str | None] = {
            name: (names.get(parent_id) if parent_id is not None else None)
            for name, (_, parent_id, _) in existing.by_name.items()
        }
        for record in records:
            parent_of[record.name] = record.parent
        looped = loops((record.name for record in records), parent_of.get)
        for record in records:
            reached = looped.get(record.name)
            if reached is not None:
                self.error(
                    f"/elements/{type_def.name}/{record.index}/parent",
                    "cycle",
                    f"the parents of {record.name!r} lead back to {reached!r}",
                )

    def _single_valued(self) -> None:
        """A single-valued end holds one element: count what the file gives and what stays stored."""
        replaced_sources = self._holders(source=True)
        replaced_targets = self._holders(source=False)
        per_holder: dict[tuple[int, bool, Key], int] = {}
        for relation in self.relations:
            relation_type = self.metamodel.relation_type_by_id(relation.relation_type_id)
            for holder_is_source, multiple in (
                (True, relation_type.source_multiple),
                (False, relation_type.target_multiple),
            ):
                if multiple:
                    continue
                holder = relation.source if holder_is_source else relation.target
                count = per_holder.get((relation.relation_type_id, holder_is_source, holder), 0) + 1
                per_holder[(relation.relation_type_id, holder_is_source, holder)] = count
                if count > 1:
                    end = relation_type.source_end if holder_is_source else relation_type.target_end
                    self.error(
                        self._pointers[id(relation)],
                        "cardinality",
                        f"{holder[1]!r} holds one {end} only; the file gives it more",
                    )
        stored = self._stored_partners(per_holder, replaced_sources, replaced_targets)
        for (rt_id, holder_is_source, holder), partner in stored.items():
            relation_type = self.metamodel.relation_type_by_id(rt_id)
            end = relation_type.source_end if holder_is_source else relation_type.target_end
            self.error(
                "/elements",
                "cardinality",
                f"{holder[1]!r} already has {end} {partner!r}, which stays; it holds one value",
            )

    def _holders(self, *, source: bool) -> set[tuple[int, Key]]:
        """(relation type, element) pairs whose relations on that side the file replaces."""
        return {
            (relation.relation_type_id, relation.source if source else relation.target)
            for relation in self.relations
            if (relation.source_position is not None) == source
        }

    def _stored_partners(
        self,
        per_holder: dict[tuple[int, bool, Key], int],
        replaced_sources: set[tuple[int, Key]],
        replaced_targets: set[tuple[int, Key]],
    ) -> dict[tuple[int, bool, Key], str]:
        """Holders of single-valued ends that the file fills while the repository keeps another partner."""
        conflicts: dict[tuple[int, bool, Key], str] = {}
        for (rt_id, holder_is_source, holder), _ in per_holder.items():
            type_def = self.metamodel.type_by_id(holder[0])
            found = self.existing_of(type_def).by_name.get(holder[1])
            if found is None:
                continue
            other = repository.single_partner(self.db, rt_id, holder_is_source, found[0])
            if other is None:
                continue
            other_name, other_type_id = other
            other_key = (other_type_id, other_name)
            replaced = replaced_targets if holder_is_source else replaced_sources
            own_side = replaced_sources if holder_is_source else replaced_targets
            if (rt_id, holder) in own_side or (rt_id, other_key) in replaced:
                continue
            conflicts[(rt_id, holder_is_source, holder)] = other_name
        return conflicts


def _create_missing_users(
    db: Session, actor: Actor, changes: ChangeLog, users: list[Any], hash_password: Callable[[str], str]
) -> None:
    """Accounts that the file's responsibility values name and the repository lacks: created disabled,
    with a random password and no role, so the values keep their meaning (needs ADMIN_USERS)."""
    wanted: dict[str, dict[str, Any]] = {
        u["login"]: u for u in users if isinstance(u, dict) and isinstance(u.get("login"), str)
    }
    missing = set(wanted) - repository.existing_logins(db, wanted)
    errors: list[ErrorItem] = []
    for login in sorted(missing):
        user = wanted[login]
        try:
            body = UserCreate.model_validate(
                {
                    "login": login,
                    "firstName": str(user.get("firstName") or ""),
                    "lastName": str(user.get("lastName") or ""),
                    "enabled": False,
                    "password": generate_password(),
                }
            )
        except PydanticValidationError as exc:
            errors.append(ErrorItem("/users", "invalid_user", f"{login!r}: {exc.errors()[0]['msg']}"))
            continue
        user_admin.create_user(db, actor, changes, body, hash_password)
    if errors:
        raise ValidationFailed("the file names users that cannot be created", errors=errors)


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
    _create_missing_users(db, actor, changes, document.users, hash_password)
    validator = _Validator(db, metamodel, actor, mode)
    validator._pointers = {}
    total = sum(len(records) for records in document.elements.values())
    done = 0
    for type_name, raw_records in document.elements.items():
        validator.type_records(type_name, raw_records)  # lets each raw record go once validated
        done += len(raw_records)
        notify("validate", done, total)
    validator.resolve()
    if validator.forbidden:
        raise Forbidden(
            "; ".join(f"{e.pointer}: {e.message}" for e in validator.forbidden[:5]),
            errors=validator.forbidden,
        )
    if validator.errors:
        failed = {"/".join(e.pointer.split("/")[:4]) for e in validator.errors}
        report = ImportReport(failed=len(failed), errors=validator.errors)
        raise ValidationFailed(
            f"{len(validator.errors)} problem(s) in the file; nothing was imported: "
            + "; ".join(f"{e.pointer}: {e.message}" for e in validator.errors[:3]),
            errors=validator.errors,
            extra={"report": report.as_json()},
        )
    return _Writer(db, metamodel, actor, changes, validator, notify).write()


class _Writer:
    def __init__(
        self,
        db: Session,
        metamodel: Metamodel,
        actor: Actor,
        changes: ChangeLog,
        validated: _Validator,
        notify: Progress,
    ) -> None:
        self.db = db
        self.metamodel = metamodel
        self.actor = actor
        self.changes = changes
        self.validated = validated
        self.notify = notify
        self.ids: dict[Key, int] = {}
        self.names: dict[int, str] = {}
        self.report = ImportReport()

    def id_of(self, key: Key) -> int:
        return self.ids[key]

    def write(self) -> ImportReport:
        db, validated = self.db, self.validated
        full_views = {
            t: ElementView.build(self.metamodel, None, self.metamodel.type_by_id(t))
            for t in validated.records
        }
        for type_id in {k[0] for r in validated.relations for k in (r.source, r.target)}:
            for name, (element_id, _, _) in validated.existing_of(
                self.metamodel.type_by_id(type_id)
            ).by_name.items():
                self.ids[(type_id, name)] = element_id
        updated = {
            t: [r for r in records if r.element_id is not None] for t, records in validated.records.items()
        }
        doomed = self._doomed()
        before: dict[int, dict[int, dict[str, Any]]] = {}
        for type_id, records in updated.items():
            reader = ElementReader(full_views[type_id])
            before[type_id] = {e["id"][0]: e for e in reader.read(db, [r.element_id or 0 for r in records])}
        deleted_before: dict[int, dict[int, dict[str, Any]]] = {}
        for type_id, ids in doomed.items():
            reader = ElementReader(
                full_views.get(type_id)
                or ElementView.build(self.metamodel, None, self.metamodel.type_by_id(type_id))
            )
            deleted_before[type_id] = {e["id"][0]: e for e in reader.read(db, ids)}
        self._elements()
        self._values()
        replaced_relations = self._relations()
        self._delete(doomed)
        self._history(full_views, updated, before, deleted_before, replaced_relations)
        return self.report

    # --- elements ------------------------------------------------------------------------------------

    def _doomed(self) -> dict[int, list[int]]:
        """cud: per type, the stored elements the file does not hold, parents before children."""
        if self.validated.mode != "cud":
            return {}
        doomed: dict[int, list[int]] = {}
        for type_id, records in self.validated.records.items():
            existing = self.validated.existing_of(self.metamodel.type_by_id(type_id))
            kept = {r.name for r in records}
            gone = {
                element_id: parent
                for name, (element_id, parent, _) in existing.by_name.items()
                if name not in kept
            }
            depth: dict[int, int] = {}

            def depth_of(
                element_id: int, gone: dict[int, int | None] = gone, depth: dict[int, int] = depth
            ) -> int:
                chain = []
                current: int | None = element_id
                while current is not None and current in gone and current not in depth:
                    chain.append(current)
                    current = gone[current]
                base = depth.get(current, -1) if current is not None else -1
                for offset, item in enumerate(reversed(chain)):
                    depth[item] = base + 1 + offset
                return depth[element_id]

            doomed[type_id] = sorted(gone, key=lambda i: (depth_of(i), i))
            self.report.deleted += len(gone)
        return doomed

    def _elements(self) -> None:
        db, now, login = self.db, self.changes.now, self.actor.login
        self._load_stamps()
        total = sum(len(records) for records in self.validated.records.values())
        created_rows = (
            {
                "type_id": type_id,
                "name": record.name,
                "description": record.description,
                "parent_id": None,
                "position": 0,
                "revision": 1,
                "created_at": now,
                "last_modified_at": now,
                "last_modified_by": login,
            }
            for type_id, records in self.validated.records.items()
            for record in records
            if record.element_id is None
        )
        created = self._insert_in_slices(created_rows, repository.insert_elements, "elements", total)
        self.report.created = created
        for type_id, records in self.validated.records.items():
            if any(r.element_id is None for r in records):
                for name, element_id in repository.ids_of_type(db, type_id).items():
                    self.ids[(type_id, name)] = element_id
            for record in records:
                if record.element_id is not None:
                    self.ids[record.key] = record.element_id
        # Parents and positions: children in file order after the siblings that stay as they are.
        updates: list[dict[str, Any]] = []
        for type_id, records in self.validated.records.items():
            existing = self.validated.existing_of(self.metamodel.type_by_id(type_id))
            in_file = {r.name for r in records}
            last: dict[int | None, int] = {}
            for name, (_, parent_id, position) in existing.by_name.items():
                if name not in in_file:
                    last[parent_id] = max(last.get(parent_id, -1), position)
            for record in records:
                parent_id = self.ids[(type_id, record.parent)] if record.parent is not None else None
                position = last.get(parent_id, -1) + 1
                last[parent_id] = position
                stored = existing.by_name.get(record.name)
                updates.append(
                    {
                        "element_id": self.ids[record.key],
                        "new_name": record.name,
                        "new_description": record.description,
                        "new_parent_id": parent_id,
                        "new_position": position,
                        "new_revision": 1 if stored is None else self._stamps[stored[0]][0] + 1,
                        "modified_at": self.changes.now,
                        "modified_by": self.actor.login,
                    }
                )
                if stored is not None:
                    self.report.updated += 1
        repository.update_elements(db, updates)
        self.notify("hierarchy", total, total)

    _stamps: dict[int, tuple[int, Any, str]]

    def _load_stamps(self) -> None:
        """Revision and modification stamp of every element the file updates, before it writes."""
        ids = [r.element_id for rs in self.validated.records.values() for r in rs if r.element_id is not None]
        self._stamps = repository.stamps(self.db, ids)

    def _values(self) -> None:
        db = self.db
        for type_id, records in self.validated.records.items():
            type_def = self.metamodel.type_by_id(type_id)
            writable = [
                p.id for p in type_def.properties if p.builtin or self.actor.can_write_group(p.group_id)
            ]
            updated = [r.element_id for r in records if r.element_id is not None]
            repository.delete_attribute_values(db, updated, writable)
        rows = (
            {
                "element_id": self.ids[record.key],
                "attribute_id": attribute_id,
                "position": position,
                **value.columns(),
            }
            for records in self.validated.records.values()
            for record in records
            for attribute_id, values in record.values.items()
            for position, value in enumerate(values)
        )
        total = sum(
            len(values)
            for records in self.validated.records.values()
            for record in records
            for values in record.values.values()
        )
        self._insert_in_slices(rows, repository.insert_values, "values", total)

    def _insert_in_slices(
        self,
        rows: Iterable[dict[str, Any]],
        insert: Callable[[Session, Sequence[dict[str, Any]]], None],
        phase: str,
        total: int,
    ) -> int:
        """Insert rows as they are made, ROWS_PER_CALL at a time, so that only one slice of row
        dictionaries exists at once (an import of 100,000 elements writes half a million value rows);
        returns how many were inserted."""
        done = 0
        iterator = iter(rows)
        while batch := list(islice(iterator, repository.ROWS_PER_CALL)):
            insert(self.db, batch)
            done += len(batch)
            self.notify(phase, done, total)
        return done

    # --- relations -----------------------------------------------------------------------------------

    def _relations(self) -> list[tuple[int, int, int, int]]:
        """Replace the relations of the file's holders by the file's; returns the removed ones as
        (relation id, type, source, target)."""
        db, validated = self.db, self.validated
        removed: list[tuple[int, int, int, int]] = []
        for source_side in (True, False):
            holders: dict[int, list[int]] = {}
            for rt_id, key in validated._holders(source=source_side):
                if key in self.ids and self._stored(key):
                    holders.setdefault(rt_id, []).append(self.ids[key])
            for rt_id, ids in holders.items():
                removed.extend(repository.take_relations(db, rt_id, source_side, ids))
        # Source-held lists first (their positions are the list order), then what targets list.
        ordered = sorted(validated.relations, key=lambda r: r.source_position is None)
        sources = {(r.relation_type_id, self.ids[r.source]) for r in ordered if r.source_position is None}
        next_position = repository.next_source_positions(self.db, sources)

        def rows() -> Iterator[dict[str, Any]]:
            for relation in ordered:
                source, target = self.ids[relation.source], self.ids[relation.target]
                key = (relation.relation_type_id, source)
                position = relation.source_position
                if position is None:
                    position = next_position.get(key, 0)
                next_position[key] = max(next_position.get(key, 0), position + 1)
                yield {
                    "relation_type_id": relation.relation_type_id,
                    "source_id": source,
                    "target_id": target,
                    "position": position,
                }

        self._insert_in_slices(rows(), repository.insert_relation_rows, "relations", len(ordered))
        self._relation_values(ordered)
        return removed

    def _stored(self, key: Key) -> bool:
        return key[1] in self.validated.existing_of(self.metamodel.type_by_id(key[0])).by_name

    def _relation_values(self, relations: Sequence[_Relation]) -> None:
        with_values = [r for r in relations if r.values]
        if not with_values:
            return
        ids: dict[tuple[int, int, int], int] = {}
        by_type: dict[int, list[int]] = {}
        for relation in with_values:
            by_type.setdefault(relation.relation_type_id, []).append(self.ids[relation.source])
        for rt_id, sources in by_type.items():
            for (source, target), relation_id in repository.relation_ids(self.db, rt_id, sources).items():
                ids[(rt_id, source, target)] = relation_id
        rows = [
            {
                "relation_id": ids[(r.relation_type_id, self.ids[r.source], self.ids[r.target])],
                "attribute_id": attribute_id,
                "position": position,
                **value.columns(),
            }
            for r in with_values
            for attribute_id, values in r.values.items()
            for position, value in enumerate(values)
        ]
        repository.insert_relation_value_rows(self.db, rows)

    def _delete(self, doomed: dict[int, list[int]]) -> None:
        for ids in doomed.values():
            repository.delete_elements(self.db, ids)

    # --- history -------------------------------------------------------------------------------------

    def _history(
        self,
        views: dict[int, ElementView],
        updated: dict[int, list[_Record]],
        before: dict[int, dict[int, dict[str, Any]]],
        deleted_before: dict[int, dict[int, dict[str, Any]]],
        removed: list[tuple[int, int, int, int]],
    ) -> None:
        db, changes = self.db, self.changes
        file_ids = {self.ids[r.key] for rs in self.validated.records.values() for r in rs}
        gone = {i for ids in deleted_before.values() for i in ids}
        mirror = NeighbourMirror(file_ids | gone)
        for type_id, elements in deleted_before.items():
            type_def = self.metamodel.type_by_id(type_id)
            for element_id, element in elements.items():
                changes.element_deleted(type_def.name, element_id, element)
                mirror.add(type_def, element_id, element, None)
        unchanged: list[int] = []
        for type_id, type_records in updated.items():
            type_def = self.metamodel.type_by_id(type_id)
            after = {
                e["id"][0]: e
                for e in ElementReader(views[type_id]).read(db, [r.element_id or 0 for r in type_records])
            }
            for record in type_records:
                updated_id = record.element_id
                assert updated_id is not None
                old, new = before[type_id][updated_id], after[updated_id]
                diff = diff_elements(type_def, old, new, order_counts=False)
                if not diff:
                    self.report.updated -= 1
                    unchanged.append(updated_id)
                    continue
                changes.element(
                    "updated",
                    type_name=type_def.name,
                    element_id=updated_id,
                    element_name=record.name,
                    changes=diff,
                )
                mirror.add(type_def, updated_id, old, new)
        self._restore_stamps(unchanged)
        # One batch of created elements' JSON at a time: each goes into the change log as text and into the
        # mirror as the few entries its neighbours need.
        for element_id, type_def, element in self._created(views):
            changes.element_created(type_def.name, element_id, element)
            mirror.add(type_def, element_id, None, element)
        mirror.record(db, changes, self.actor.login)

    def _restore_stamps(self, unchanged: list[int]) -> None:
        """Elements the import rewrote without changing them keep their revision and stamps."""
        repository.restore_stamps(self.db, [(i, *self._stamps[i]) for i in unchanged])

    def _created(self, views: dict[int, ElementView]) -> Iterator[tuple[int, BlockTypeDef, dict[str, Any]]]:
        """The JSON of every created element (id, type, JSON) as the element reader renders it, read back
        one batch at a time so that only one batch of JSON exists at once."""
        for type_id, records in self.validated.records.items():
            created = [self.ids[record.key] for record in records if record.element_id is None]
            type_def = self.metamodel.type_by_id(type_id)
            for batch in ElementReader(views[type_id]).read_batches(self.db, chunks(created, READ_BATCH)):
                for element in batch:
                    yield element["id"][0], type_def, element
