"""Reads as of a past revision: an element's JSON rebuilt by folding its own change rows up to that revision.

Nothing but the change rows is needed: a "created" changeset lists every non-empty property, "updated" ones
replace values (`old`/`new`) or add and remove related elements (`added`/`removed`, relation ends and
`children`), "deleted" ends the element. Each element's rows come through the (element_id, revision) index,
so a read costs in proportion to the history of the elements read, not to the whole history. Related
elements are named as they were named at that revision.

For list reads (massdata), `element_ids_as_of` gives the ids of a type that existed at a revision and
`read_elements_as_of` their JSON, batched: a fixed number of queries per 1,000 ids. Attributes renamed
since a change was recorded are read under today's name, deleted ones not at all (`AttributeNames`).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements.service import ElementView
from blockrepo.errors import ErrorItem, NotFound, ValidationFailed
from blockrepo.history import repository
from blockrepo.history.identities import AttributeIdentities
from blockrepo.history.repository import ChangesetRow
from blockrepo.history.service import (
    attribute_identities,
    end_of_moment,
    format_timestamp,
    parse_moment,
    require_history,
)
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.revisions.recorder import apply_related_change

# Properties whose values are related elements ({"id", "name", ...}) besides the type's relation ends.
_ELEMENT_REFERENCES = ("parent", "children")
_VALUE_LISTS = ("old", "new", "added", "removed")


def resolve_as_of(db: Session, raw: str, pointer: str = "query:asOf") -> int:
    """The revision an `asOf` parameter names: a revision number (at most the newest one), or an ISO-8601
    time, meaning the newest revision stamped at or before it (given to the millisecond, that whole
    millisecond counts). 400 at `pointer` for anything else."""
    moment = parse_moment(raw, pointer)
    if isinstance(moment, int):
        newest = repository.current_revision(db)
        if moment > newest:
            raise ValidationFailed(
                f"asOf revision {moment} is after the newest revision {newest}",
                errors=[ErrorItem(pointer, "future_revision", f"the newest revision is {newest}")],
            )
        return moment
    return repository.last_revision_at(db, end_of_moment(moment))


@dataclass
class Folded:
    """One element as its change rows describe it up to a revision."""

    element_id: int
    type_name: str | None = None
    name: str = ""
    properties: dict[str, list[Any]] = field(default_factory=dict)
    changesets: int = 0
    exists: bool = False
    last: ChangesetRow | None = None

    @property
    def modified(self) -> dt.datetime | None:
        """When its newest changeset was written (to the microsecond, as the stored column has it)."""
        return None if self.last is None else self.last.created_at

    def apply(self, row: ChangesetRow, names: AttributeNames | None) -> None:
        self.changesets += 1
        self.last = row
        self.type_name = row.type_name
        # The name is what the rows' `name` changes made it. A row's own `element_name` is the name when it
        # was written: a scenario's row written before a sync may predate a rename main made since.
        if row.operation != "updated" or not self.name:
            self.name = row.element_name or ""
        if row.operation == "created":
            self.exists = True
            self.properties = {}
        elif row.operation == "deleted":
            self.exists = False
            return
        changes = row.changes if names is None else names.today(row.type_name, row.changes, row.revision)
        for change in changes:
            prop = change["property"]
            if "added" in change or "removed" in change:
                self.properties[prop] = apply_related_change(self.properties.get(prop, []), change)
            else:
                self.properties[prop] = list(change.get("new", []))
                if prop == "name" and self.properties[prop]:
                    self.name = str(self.properties[prop][0])


@dataclass(frozen=True)
class AttributeNames:
    """Recorded attribute names as an `asOf` read has them: history keeps the name an attribute had when a
    change was recorded, and an `asOf` read has today's shape, so a renamed attribute's values read under
    its name of today and a deleted attribute's not at all (its name may belong to another attribute by
    now, whose key must not show them)."""

    identities: AttributeIdentities
    metamodel: Metamodel

    def today(
        self, type_name: str | None, changes: list[dict[str, Any]], recorded_at: int
    ) -> list[dict[str, Any]]:
        """The change list with attribute names (properties and relation attributes) as they are today,
        changes of deleted attributes left out."""
        if self.identities.empty:
            return changes
        block_type = self.metamodel.type_named(type_name) if type_name else None
        result = []
        for change in changes:
            bearer = self.identities.recorded_attribute(block_type, change, recorded_at)
            if bearer is not None:
                if bearer.attribute is None:
                    continue
                change = {**change, "property": bearer.attribute.name}
            result.append(
                {
                    key: [self._entry(v, recorded_at) for v in value] if key in _VALUE_LISTS else value
                    for key, value in change.items()
                }
            )
        return result

    def _entry(self, value: Any, recorded_at: int) -> Any:
        if not isinstance(value, dict) or not isinstance(value.get("attributes"), dict):
            return value
        attributes = {}
        for name, values in value["attributes"].items():
            bearer = self.identities.former(name, recorded_at)
            if bearer is None:
                attributes[name] = values
            elif bearer.attribute is not None:
                attributes[bearer.attribute.name] = values
        return {**value, "attributes": attributes}


def attribute_names(db: Session, metamodel: Metamodel) -> AttributeNames:
    return AttributeNames(attribute_identities(db, metamodel), metamodel)


def fold_elements(rows: Iterable[ChangesetRow], names: AttributeNames | None = None) -> dict[int, Folded]:
    folded: dict[int, Folded] = {}
    for row in rows:
        if row.element_id is None:
            continue
        element = folded.get(row.element_id)
        if element is None:
            element = folded[row.element_id] = Folded(row.element_id)
        element.apply(row, names)
    return folded


def element_ids_as_of(db: Session, type_def: BlockTypeDef, revision: int) -> list[int]:
    """Ids (ascending) of the elements of a type that existed at `revision`; deleted ones included if they
    were deleted later. Checks no permission: the caller checks type read first."""
    return repository.element_ids_alive_at(db, type_def.name, revision)


@dataclass(frozen=True)
class Overlay:
    """Change rows recorded after `revision` somewhere else than main (a planning scenario's), folded
    after main's rows of the same elements; `names_of`: the names it gave some elements, by id."""

    rows: Sequence[ChangesetRow] = ()
    names_of: Callable[[set[int]], Mapping[int, str]] = lambda ids: {}

    def of(self, ids: Iterable[int]) -> list[ChangesetRow]:
        wanted = set(ids)
        return [row for row in self.rows if row.element_id in wanted]


@dataclass(frozen=True)
class Layer:
    """Changes kept beside main (a planning scenario's) that reads fold on top of main as of `base`: the
    ids of the elements it created, by type name, and its rows of given elements (each in the session
    the read runs in)."""

    base: int
    created: Callable[[Session, str], list[int]]
    overlay: Callable[[Session, Sequence[int]], Overlay]
    # What tells one state of the layer's rows from another (a scenario's id, key, creation time and
    # version), and the ids of every element it has rows of: with both, reads start from main's stored
    # elements and fold only those that diverge (`diverged`).
    identity: tuple[Any, ...] = ()
    changed: Callable[[Session], Iterable[int]] | None = None


T = TypeVar("T")
_DERIVED_KEPT = 64


@dataclass(frozen=True)
class Divergence:
    """Where a layered view (a planning scenario) may differ from main's stored elements: `ids`, the
    elements (of any type) main changed after the layer's base or the layer changed; `alive`, those of
    them that exist in the view, as it has them (main's rows up to the base, then the layer's). Every
    other element is in the view exactly as main stores it now."""

    ids: frozenset[int]
    alive: Mapping[int, Folded]
    # What reads derived from it (a type's elements in an order, those a filter keeps), by what they asked:
    # paging through a list reads the same again. Emptied when full.
    derived: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    def of_type(self, type_name: str) -> list[Folded]:
        return self.remembered(
            ("type", type_name),
            lambda: [element for element in self.alive.values() if element.type_name == type_name],
        )

    def remembered(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, kept under `key` for the next read of this divergence."""
        if key in self.derived:
            return cast(T, self.derived[key])
        value = compute()
        if len(self.derived) >= _DERIVED_KEPT:
            self.derived.clear()
        self.derived[key] = value
        return value

    def renamed(self, items: list[dict[str, Any]], view: ElementView) -> list[dict[str, Any]]:
        """Main's JSON of elements that do not diverge, with the related elements they name named as the
        view names them (a name changed in main after the base or in the layer)."""
        keys = [key for key in _ELEMENT_REFERENCES if key in view.head] + [end.name for end in view.ends]
        if not keys:
            return items
        out = []
        for item in items:
            fixed = None
            for key in keys:
                entries = item.get(key) or []
                if any(isinstance(e, dict) and e.get("id") in self.alive for e in entries):
                    fixed = fixed or dict(item)
                    fixed[key] = [self._named(entry) for entry in entries]
            out.append(fixed or item)
        return out

    def _named(self, entry: Any) -> Any:
        folded = self.alive.get(entry["id"]) if isinstance(entry, dict) and "id" in entry else None
        return entry if folded is None else {**entry, "name": folded.name}


class _DivergenceCache:
    """Divergences lately computed, by everything they depend on, least recently used first out; bounded
    by the elements they hold. A layer's rows and main's rows after its base only grow, and the key
    counts both, so an entry is never stale: a newer snapshot with the same counts has the same rows."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple[Any, ...], Divergence] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Divergence | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[Any, ...], divergence: Divergence) -> None:
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = divergence
            self._held += len(divergence.ids)
            while self._held > self.capacity and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._held -= len(dropped.ids)


# About a hundred thousand folded elements (some hundred MB at most) per process.
_DIVERGENCES = _DivergenceCache(100_000)


def diverged(db: Session, metamodel: Metamodel, layer: Layer) -> Divergence | None:
    """Where `layer`'s view differs from main's stored elements (None for a layer that cannot say). Costs
    a count of main's change rows after the base per call; the fold is kept for the next read of the
    same rows (per process)."""
    if layer.changed is None:
        return None
    changes = repository.changes_after(db, layer.base)
    key = (str(db.get_bind().engine.url), *layer.identity, layer.base, changes, metamodel.revision)
    found = _DIVERGENCES.get(key)
    if found is not None:
        return found
    ids = sorted({*repository.element_ids_changed_after(db, layer.base), *layer.changed(db)})
    rows = repository.element_changesets_up_to(db, ids, layer.base)
    folded = fold_elements([*rows, *layer.overlay(db, ids).of(ids)], attribute_names(db, metamodel))
    divergence = Divergence(
        frozenset(ids),
        {i: e for i, e in folded.items() if e.exists and e.type_name is not None},
    )
    _DIVERGENCES.put(key, divergence)
    return divergence


def render_diverged(
    db: Session,
    view: ElementView,
    divergence: Divergence,
    elements: Sequence[Folded],
    base: int,
    *,
    look_up_names: bool = True,
) -> list[dict[str, Any]]:
    """The JSON of diverging `elements` (of `view`'s type) as the view has them. Related elements are
    named as the view names them: those that diverge from the divergence, the others as main named them
    at the base (one query), or, without `look_up_names`, as the change rows named them."""
    referenced = _referenced(view, elements)
    names = {i: divergence.alive[i].name for i in referenced if i in divergence.alive}
    rest = referenced - divergence.ids
    if look_up_names and rest:
        names.update({i: name for i, (name, _) in repository.names_at(db, rest, base).items()})
    return [_render(view, element, names) for element in elements]


@dataclass(frozen=True)
class StateAt:
    """An element as its change rows describe it: its type, its state (the recorded properties, `name`
    first, as the write core's states) and how many changesets made it (its revision)."""

    type_name: str
    state: dict[str, list[Any]]
    changesets: int


def states_as_of(
    db: Session, metamodel: Metamodel, ids: Iterable[int], revision: int, overlay: Overlay | None = None
) -> dict[int, StateAt]:
    """The states of `ids` that existed at `revision` (with `overlay`'s rows folded on top), by id."""
    ids = list(ids)
    rows = repository.element_changesets_up_to(db, ids, revision)
    if overlay is not None:
        rows = [*rows, *overlay.of(ids)]
    return {
        element_id: StateAt(
            element.type_name, {"name": [element.name], **element.properties}, element.changesets
        )
        for element_id, element in fold_elements(rows, attribute_names(db, metamodel)).items()
        if element.exists and element.type_name is not None
    }


def read_elements_as_of(
    db: Session,
    metamodel: Metamodel,
    actor: Actor | None,
    type_def: BlockTypeDef,
    ids: Sequence[int],
    revision: int,
    fields: Iterable[str] | None = None,
    *,
    view: ElementView | None = None,
    overlay: Overlay | None = None,
) -> list[dict[str, Any]]:
    """The element JSON of `ids` (in that order) as it stood at `revision`, as `actor` may see it; ids that
    did not exist then as elements of this type are skipped. The counterpart of
    `ElementView.render` of the loaded elements (same arguments plus the revision, same JSON): three queries
    per 1,000 ids. The keys shown follow today's metamodel and permissions (a property since deleted from the
    metamodel is not shown). Checks no type permission itself. With `overlay`, its rows are folded after
    main's: the elements as a planning scenario has them."""
    view = view or ElementView.build(metamodel, actor, type_def, fields)
    rows = repository.element_changesets_up_to(db, ids, revision)
    if overlay is not None:
        rows = [*rows, *overlay.of(ids)]
    folded = fold_elements(rows, attribute_names(db, metamodel))
    alive = [
        folded[i]
        for i in dict.fromkeys(ids)
        if i in folded and folded[i].exists and folded[i].type_name == type_def.name
    ]
    referenced = _referenced(view, alive)
    names = {i: name for i, (name, _) in repository.names_at(db, referenced, revision).items()}
    if overlay is not None and referenced:
        names.update(overlay.names_of(referenced))
    return [_render(view, element, names) for element in alive]


def _referenced(view: ElementView, elements: Iterable[Folded]) -> set[int]:
    """The ids of the elements `elements` relate to along the view's ends, `parent` and `children`."""
    return {
        entry["id"]
        for element in elements
        for key in (*_ELEMENT_REFERENCES, *(end.name for end in view.ends))
        for entry in element.properties.get(key, [])
        if isinstance(entry, dict) and "id" in entry
    }


def _render(view: ElementView, element: Folded, names: dict[int, str]) -> dict[str, Any]:
    """The element JSON in the shape `ElementView.render` gives today's elements."""
    props = element.properties

    def reference(entry: dict[str, Any]) -> dict[str, Any]:
        return {"id": entry["id"], "name": names.get(entry["id"], entry.get("name", ""))}

    out: dict[str, Any] = {}
    for key in view.head:
        if key == "id":
            out["id"] = [element.element_id]
        elif key == "type":
            out["type"] = [view.type_def.name]
        elif key == "revision":
            out["revision"] = [element.changesets]
        elif key == "name":
            out["name"] = [element.name]
        else:
            values = props.get(key, [])
            out[key] = [reference(v) for v in values] if key in _ELEMENT_REFERENCES else list(values)
    for prop in view.properties:
        out[prop.name] = list(props.get(prop.name, []))
    for end in view.ends:
        attributes = view.relation_attributes.get(end.relation_type.id)
        entries = []
        for entry in props.get(end.name, []):
            rendered = reference(entry)
            if attributes is not None:
                recorded = entry.get("attributes") or {}
                rendered["attributes"] = {a.name: list(recorded.get(a.name, [])) for a in attributes}
            entries.append(rendered)
        out[end.name] = entries
    last = element.last
    assert last is not None
    if "lastModificationTime" in view.tail:
        out["lastModificationTime"] = [format_timestamp(last.created_at)]
    if "lastModificationUser" in view.tail:
        out["lastModificationUser"] = [last.user_login]
    return out


def get_element_as_of(
    db: Session, metamodel: Metamodel, actor: Actor, type_def: BlockTypeDef, element_id: int, as_of: str
) -> dict[str, Any]:
    """GET /api/element/{type}/{id}?asOf=…: the element as it stood then (404 if it did not exist then).
    Past states are history, so this needs VIEW_HISTORY; the caller has checked read on the type."""
    require_history(actor)
    revision = resolve_as_of(db, as_of)
    found = read_elements_as_of(db, metamodel, actor, type_def, [element_id], revision)
    if not found:
        raise NotFound(f"there was no {type_def.name} with id {element_id} at revision {revision}")
    return found[0]
