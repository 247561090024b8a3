"""Collects the changes of one write request and writes them as one revision in the same transaction.

Services call `ChangeLog.element(...)` (or `.metamodel(...)`, `.administration(...)`) as they change
things; the request calls `ChangeLog.flush(db)` right before committing. Flushing takes the next
revision number (`revisions.repository.next_revision`): on SQLite from `repository_state` under the
single writer's lock, on PostgreSQL from a sequence, claimed until the commit, so that concurrent writers
overlap. Readers of history stop at the committed horizon (`revisions.repository.visible_revision`): a
client polling the feed with `sinceRevision` never misses or repeats one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple, NotRequired, TypedDict, cast

import orjson
from sqlalchemy.orm import Session

from blockrepo.errors import Forbidden
from blockrepo.revisions import repository

FLUSH_SLICE = 5000  # change rows per insert when a request is flushed

JsonValue = Any
# Keys of the element JSON that history does not record (they change with every write).
UNRECORDED_KEYS = frozenset({"id", "type", "revision", "lastModificationTime", "lastModificationUser"})

# The shapes of element history, defined once (their constructors: `elements.write.changesets`).
# TypedDicts are plain dicts at run time: they cost the bulk path nothing.
# An element's JSON as history sees it, every key holding a list; a state may hold only some keys (its
# name and what a change concerns): a key missing from both states of a change is one it did not change.
ElementState = Mapping[str, Any]


class ValueChange(TypedDict):
    """A property's whole list of values before and after (name, description, parent, attributes)."""

    property: str
    old: list[Any]
    new: list[Any]


class EndChange(TypedDict):
    """A relation end's (or `children`') entries added and removed, matched by id; `order`: the ids in
    their new order, when the end was reordered as well."""

    property: str
    added: list[Any]
    removed: list[Any]
    order: NotRequired[list[Any]]


Change = ValueChange | EndChange  # one entry of a changeset


class ElementUpdate(NamedTuple):
    """An "updated" changeset of an element that the request changed through something else than a write
    of its own: a neighbour's (a relation or child), a removed or renamed value, a removed relation type."""

    type_name: str
    element_id: int
    element_name: str
    changes: list[Change]


@dataclass(slots=True)
class _Entry:
    """One changeset; its changes are held as the JSON text the change row stores. An import records a
    changeset for every element it writes and they all wait for the commit: as Python lists and dicts
    they took a large share of an import's memory, as text a fraction of it (bench/README.md). What is
    recorded of the element later in the request waits beside it (`later`, as text too) and is folded in
    once, when the changeset is read: an import's components are recorded again by every chunk of the
    systems that list them, and folding each time decoded and encoded their growing lists again."""

    entity: str
    operation: str
    type_name: str | None
    element_id: int | None
    element_name: str | None
    subject: str | None
    text: str
    later: list[str] | None = None

    @property
    def changes_json(self) -> str:
        if self.later:
            folded = orjson.loads(self.text)
            if self.operation == "created":
                folded = _merge_into_created(folded, [c for text in self.later for c in orjson.loads(text)])
            else:
                for text in self.later:
                    folded = _merge_property_changes(folded, orjson.loads(text))
            self.text, self.later = _json_text(folded), None
        return self.text

    @property
    def changes(self) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], orjson.loads(self.changes_json))

    @changes.setter
    def changes(self, changes: list[dict[str, Any]]) -> None:
        self.text, self.later = _json_text(changes), None

    def add_later(self, changes: Sequence[Change] | Sequence[Mapping[str, Any]]) -> None:
        if self.later is None:
            self.later = []
        self.later.append(_json_text(changes))

    @property
    def empty(self) -> bool:
        return self.changes_json == "[]"


# Change columns (`revisions.repository.CHANGE_COLUMNS` but revision) and the entry fields that fill them.
_ENTRY_FIELDS = (
    ("entity", attrgetter("entity")),
    ("operation", attrgetter("operation")),
    ("type_name", attrgetter("type_name")),
    ("element_id", attrgetter("element_id")),
    ("element_name", attrgetter("element_name")),
    ("subject", attrgetter("subject")),
    ("changes", attrgetter("changes_json")),
)


def _columns(entries: Sequence[_Entry]) -> dict[str, list[Any]]:
    """The change rows of `entries` column by column (`repository.insert_change_columns`)."""
    return {name: list(map(field, entries)) for name, field in _ENTRY_FIELDS}


def _json_text(changes: Sequence[Mapping[str, Any]]) -> str:
    # What the JSON column's bind processor would write (storage.engine: orjson), made once here.
    return orjson.dumps(changes).decode()


def apply_related_change(current: list[Any], change: Mapping[str, Any]) -> list[Any]:
    """A relation end's (or `children`') entries after one recorded `added`/`removed` change.

    Removed entries go; an entry both removed and added (its relation attributes changed) keeps its
    place, and the attributes it names replace those (a record may name only the attributes it changed,
    as the removal of an attribute does); added ones come last. When that is not the order the end ended
    up in (a write that added and reordered at once), the change carries `order`, the ids in their new
    order, and that order wins."""
    replaced = {entry["id"]: entry for entry in change.get("added", [])}
    gone = {entry["id"] for entry in change.get("removed", [])}
    result = []
    for entry in current:
        if entry["id"] in replaced:
            result.append(_replaced_entry(entry, replaced.pop(entry["id"])))
        elif entry["id"] not in gone:
            result.append(entry)
    result.extend(entry for entry in change.get("added", []) if entry["id"] in replaced)
    order = change.get("order")
    if order is not None:
        position = {entry_id: index for index, entry_id in enumerate(order)}
        result.sort(key=lambda entry: position.get(entry["id"], len(position)))
    return result


def _replaced_entry(before: Any, after: Any) -> Any:
    old_attributes, new_attributes = before.get("attributes"), after.get("attributes")
    if isinstance(old_attributes, dict) and isinstance(new_attributes, dict):
        return {**after, "attributes": {**old_attributes, **new_attributes}}
    return after


def _merged_order(known: Mapping[str, Any], change: Mapping[str, Any]) -> list[Any] | None:
    """The `order` of two folded relation changes: the later one's, or the earlier one moved on by the
    later additions and removals."""
    if "order" in change:
        return list(change["order"])
    if "order" not in known:
        return None
    ids = [{"id": entry_id} for entry_id in known["order"]]
    return [entry["id"] for entry in apply_related_change(ids, change)]


def _merge_property_changes(
    first: Sequence[Mapping[str, Any]], later: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Fold two change lists of one entity: first `old` and last `new` win; relation lists combine."""
    merged: dict[str, dict[str, Any]] = {c["property"]: dict(c) for c in first}
    for change in later:
        prop = change["property"]
        known = merged.get(prop)
        if known is None:
            merged[prop] = dict(change)
        elif "added" in change or "removed" in change:
            added = [v for v in known.get("added", []) if v not in change.get("removed", [])]
            removed = [v for v in known.get("removed", []) if v not in change.get("added", [])]
            added += [v for v in change.get("added", []) if v not in known.get("removed", [])]
            removed += [v for v in change.get("removed", []) if v not in known.get("added", [])]
            known["added"], known["removed"] = added, removed
            order = _merged_order(known, change)
            if order is not None:
                known["order"] = order
        else:
            known["new"] = change["new"]
    result = []
    for change in merged.values():
        if "old" in change and change.get("old") == change.get("new"):
            continue
        if (
            ("added" in change or "removed" in change)
            and not change.get("added")
            and not change.get("removed")
        ):
            continue
        result.append(change)
    return result


def _merge_into_created(
    created: Sequence[Mapping[str, Any]], later: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """A created element's changes with what later changed in the same request (an import that writes it
    in one chunk and lists it in another): still every property as new, relation lists as they ended
    (`apply_related_change` of each later change in turn, in one pass over each list: `_EndFold`)."""
    merged: dict[str, dict[str, Any]] = {c["property"]: dict(c) for c in created}
    ends: dict[str, _EndFold] = {}
    for change in later:
        prop = change["property"]
        if "added" in change or "removed" in change:
            fold = ends.get(prop)
            if fold is None:
                known = merged.get(prop)
                fold = ends[prop] = _EndFold(known["new"] if known else [])
                merged.setdefault(prop, {"property": prop, "old": [], "new": []})
            fold.apply(change)
        else:
            ends.pop(prop, None)
            merged[prop] = {"property": prop, "old": [], "new": change["new"]}
    for prop, fold in ends.items():
        merged[prop] = {"property": prop, "old": [], "new": fold.result()}
    return [change for change in merged.values() if change["new"]]


class _EndFold:
    """A relation list as `apply_related_change` leaves it after each of many changes, each applied in
    the time of its own entries rather than of the whole list."""

    def __init__(self, entries: Sequence[Any]) -> None:
        self.entries: list[Any] = []
        self.at: dict[Any, int] = {}
        self._reset(entries)

    def _reset(self, entries: Sequence[Any]) -> None:
        self.entries = list(entries)
        self.at = {entry["id"]: index for index, entry in enumerate(self.entries)}

    def apply(self, change: Mapping[str, Any]) -> None:
        if "order" in change:  # rare (added and reordered at once): the general path
            self._reset(apply_related_change(self.result(), change))
            return
        added = change.get("added", [])
        replacing = {entry["id"] for entry in added}
        for entry in change.get("removed", []):
            index = self.at.get(entry["id"])
            if index is not None and entry["id"] not in replacing:
                self.entries[index] = None
                del self.at[entry["id"]]
        for entry in added:
            index = self.at.get(entry["id"])
            if index is None:
                self.at[entry["id"]] = len(self.entries)
                self.entries.append(entry)
            else:
                self.entries[index] = _replaced_entry(self.entries[index], entry)

    def result(self) -> list[Any]:
        return [entry for entry in self.entries if entry is not None]


@dataclass
class ChangeLog:
    """The pending history of one request."""

    user_login: str
    request_id: str
    via: str | None = None  # what authenticated the request (`Revision.via`)
    scenario: str | None = None  # the planning scenario a merge brings in (`Revision.scenario`)
    # Main is protected (settings.protected_main) and the request is no supervisor's: it may change
    # elements only by merging a scenario (`scenario` set).
    main_protected: bool = False
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    metamodel_changed: bool = False
    access_changed: bool = False
    _entries: list[_Entry] = field(default_factory=list)
    _by_element: dict[int, _Entry] = field(default_factory=dict)
    # (attribute id, name, group id at deletion or None): names attributes stop bearing with this revision.
    _former_names: list[tuple[int, str, int | None]] = field(default_factory=list)
    # Written ahead (`write_ahead`): the request's revision, allocated then, and the elements whose
    # changesets wait in the database rather than here; those recalled once are kept here from then on.
    _revision: int | None = None
    _revision_flags: tuple[bool, bool] = (False, False)
    _db: Session | None = None
    _settled: set[int] = field(default_factory=set)
    _recalled: set[int] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return (
            not self._entries
            and self._revision is None
            and not self.metamodel_changed
            and not self.access_changed
        )

    def element(
        self,
        operation: str,
        *,
        type_name: str,
        element_id: int,
        element_name: str,
        changes: Sequence[Change] | Sequence[Mapping[str, Any]],
    ) -> None:
        """Record that an element was "created", "updated" or "deleted"; several records of one element in
        one request fold into one changeset."""
        if element_id in self._settled:
            self.recall([element_id])
        known = self._by_element.get(element_id)
        if known is None:
            entry = _Entry(
                "element", operation, type_name, element_id, element_name, None, _json_text(changes)
            )
            self._entries.append(entry)
            self._by_element[element_id] = entry
            return
        if known.operation == "created" and operation == "deleted":
            self._entries.remove(known)
            del self._by_element[element_id]
            return
        if operation == "deleted":
            known.operation = "deleted"
            # The deletion lists every old value; keep the oldest known ones.
            merged = _merge_property_changes(changes, [])
            for change in merged:
                change["old"] = change.get("old", [])
            known.changes = merged
        else:
            known.add_later(changes)  # folded when the changeset is read (`_Entry.changes_json`)
        known.element_name = element_name

    def recorded(self, element_id: int) -> bool:
        """Whether this request recorded the element already (so it has the new revision the request gives
        it: `elements.write.record.ElementRecorder` gives an element one new revision per request, with
        its first record)."""
        return element_id in self._by_element or element_id in self._settled

    def write_ahead(self, db: Session) -> None:
        """Write the element changesets recorded so far to the database now, under the request's revision
        (allocated by the first call), so that a large import's history does not wait in memory for the
        commit; a changeset recalled before stays here, as its element is likely recorded again (the
        components an import's systems list). Recording a written element again takes its changeset
        back first (`recall`). The revision is then held from here to the commit (PostgreSQL: its claim
        holds readers' horizon below it), which suits a write that holds the write gate alone."""
        if not any(e.element_id not in self._recalled and not e.empty for e in self._entries):
            return  # nothing worth a revision yet (an unchanged import writes none)
        if self._revision is None:
            self._revision = self._allocate(db)
            self._revision_flags = (self.metamodel_changed, self.access_changed)
            self._db = db
        kept: list[_Entry] = []
        ahead: list[_Entry] = []
        for entry in self._entries:
            if entry.element_id is None or entry.element_id in self._recalled:
                kept.append(entry)
            else:
                ahead.append(entry)
                del self._by_element[entry.element_id]
                self._settled.add(entry.element_id)
        self._entries = kept
        self._insert(db, self._revision, [e for e in ahead if e.operation != "updated" or not e.empty])

    def recall(self, element_ids: Iterable[int]) -> None:
        """Take the changesets of these elements that `write_ahead` wrote back from the database (one
        statement for many), to fold what the request records of them next into them."""
        if not self._settled:
            return
        settled = [element_id for element_id in element_ids if element_id in self._settled]
        if not settled:
            return
        assert self._db is not None and self._revision is not None
        for element_id, operation, type_name, element_name, changes in repository.take_element_changes(
            self._db, self._revision, settled
        ):
            entry = _Entry(
                "element", operation, type_name, element_id, element_name, None, _json_text(changes)
            )
            self._entries.append(entry)
            self._by_element[element_id] = entry
        self._settled.difference_update(settled)
        self._recalled.update(settled)

    @property
    def records_changes(self) -> bool:
        """Whether flushing would write a revision that changes something (an update with no change in
        it does not count)."""
        return (
            self._revision is not None
            or self.metamodel_changed
            or self.access_changed
            or any(e.operation != "updated" or not e.empty for e in self._entries)
        )

    def import_completed(self, changes: list[dict[str, Any]]) -> None:
        """Record that an import wrote what it wrote (administration subject "import"; no cache moves)."""
        self._entries.append(
            _Entry("administration", "completed", None, None, None, "import", _json_text(changes))
        )

    def metamodel(self, operation: str, subject: str, changes: list[dict[str, Any]]) -> None:
        self.metamodel_changed = True
        self._entries.append(_Entry("metamodel", operation, None, None, None, subject, _json_text(changes)))

    def administration(self, operation: str, subject: str, changes: list[dict[str, Any]]) -> None:
        self.access_changed = True
        self._entries.append(
            _Entry("administration", operation, None, None, None, subject, _json_text(changes))
        )

    def attribute_renamed(self, attribute_id: int, old_name: str) -> None:
        """Record that an attribute bears `old_name` no longer after this revision (history keeps naming
        it so in what it recorded until then, and a later attribute may take the name)."""
        self._former_names.append((attribute_id, old_name, None))

    def attribute_deleted(self, attribute_id: int, name: str, group_id: int) -> None:
        """Record that an attribute is deleted with this revision: its name is free from then on, and its
        past values stay readable to those who may read `group_id`, the group it was in."""
        self._former_names.append((attribute_id, name, group_id))

    def flush(self, db: Session) -> int | None:
        """Allocate the next revision and write every entry; returns the revision (None if nothing changed).

        Call right before commit: the number is taken late so that a write holds it (SQLite: the counter;
        PostgreSQL: its claim, which holds readers' horizon below it) as briefly as possible."""
        entries = [e for e in self._entries if e.operation != "updated" or not e.empty]
        if (
            self.main_protected
            and self.scenario is None
            and (self._revision is not None or any(e.entity == "element" for e in entries))
        ):
            raise Forbidden(
                "main is protected: change it in a planning scenario and merge that once it is approved",
                code="main_protected",
            )
        if self._revision is not None:
            revision = self._revision
            metamodel_before, access_before = self._revision_flags
            repository.move_counters(
                db,
                metamodel_changed=self.metamodel_changed and not metamodel_before,
                access_changed=self.access_changed and not access_before,
            )
        elif not entries and not self.metamodel_changed and not self.access_changed:
            return None
        else:
            # The first slice of change rows goes with the revision's row (one statement on PostgreSQL).
            revision = self._allocate(db, _columns(entries[:FLUSH_SLICE]))
            entries = entries[FLUSH_SLICE:]
        self._insert(db, revision, entries)
        if self._former_names:
            repository.insert_former_names(db, revision, self._former_names)
            self._former_names.clear()
        self._entries.clear()
        self._by_element.clear()
        self.metamodel_changed = self.access_changed = False
        self._revision, self._db = None, None
        self._settled.clear()
        self._recalled.clear()
        return int(revision)

    def _allocate(self, db: Session, changes: dict[str, list[Any]] | None = None) -> int:
        return repository.next_revision(
            db,
            metamodel_changed=self.metamodel_changed,
            access_changed=self.access_changed,
            created_at=self.now,
            user_login=self.user_login,
            request_id=self.request_id,
            via=self.via,
            scenario=self.scenario,
            changes=changes,
        )

    @staticmethod
    def _insert(db: Session, revision: int, entries: Sequence[_Entry]) -> None:
        # In slices, so that only one slice of parameters exists at a time; column by column, from the
        # entries' fields at C level (a bulk write flushes an entry per element).
        for start in range(0, len(entries), FLUSH_SLICE):
            repository.insert_change_columns(db, revision, _columns(entries[start : start + FLUSH_SLICE]))
