"""The history of a write: created elements recorded from their drafts where they are self-contained, the
others read back and diffed, deleted ones from their last state, and one mirrored changeset per element
at the other end of what changed (`NeighbourMirror`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.elements.read.reader import READ_BATCH, ElementReader
from blockrepo.elements.read.repository import LoadedElement, load_elements
from blockrepo.elements.read.view import ElementView
from blockrepo.elements.repository import chunks
from blockrepo.elements.values import TypedValue, value_encoder
from blockrepo.elements.write import repository
from blockrepo.elements.write.drafts import Reference
from blockrepo.elements.write.items import TypeItems, WriteItem, Writer
from blockrepo.elements.write.plan import UpdatePlan, applied
from blockrepo.metamodel.snapshot import BlockTypeDef
from blockrepo.revisions.recorder import (
    UNRECORDED_KEYS,
    Change,
    ChangeLog,
    ElementState,
    ElementUpdate,
    EndChange,
    apply_related_change,
)


@dataclass
class Written:
    """What a write did, for its caller's answer."""

    loaded: dict[int, LoadedElement] = field(default_factory=dict)  # with `loaded`: each item's element now
    changed: set[int] = field(default_factory=set)  # updated elements that changed (each has its record)
    mirrored: set[int] = field(default_factory=set)  # other elements whose relations or children changed


# What one created element receives: its end -> (id, name, relation attributes) of each created element
# that lists it on the opposite end, in the order the relations are made; by the element's new id.
ReceivedEnds = dict[str, list[tuple[int, str, dict[int, list[TypedValue]] | None]]]
Received = dict[int, ReceivedEnds]


def receivers(groups: Sequence[TypeItems]) -> Received:
    """The created elements that other created items refer to on a relation end of theirs only (not as
    parent, not from an update): an import's components, which its systems list by name. Their element
    once written is their draft plus what those items list (`_insert_contents` collects it), so they
    can be recorded without reading them back."""
    listed: dict[int, WriteItem] = {}
    refused: set[int] = set()
    for group in groups:
        for item in group.items:
            for reference, creator in item.pending:
                if not item.creating or reference is item.aside_parent:
                    refused.add(id(creator))
                else:
                    listed[id(creator)] = creator
    return {
        creator.new_id: {}
        for key, creator in listed.items()
        if key not in refused and creator.new_id is not None
    }


def _self_contained(
    groups: Sequence[TypeItems], changed: dict[int, list[WriteItem]], received: Received
) -> set[int]:
    """The created items (by `id()`) whose element is, once written, exactly what their draft says (and,
    for those in `received`, what other created items list them in): no other item refers to them
    otherwise (as parent, on an end of theirs they list themselves), and none of the elements they refer
    to is changed by an update of the write (a renamed parent would show its new name). An item may refer
    to elements that other items create (an import's records mostly do): its references hold their ids
    and names by now, and the relations it lists are made in its order."""
    entangled = {id(creator) for group in groups for item in group.items for _, creator in item.pending}
    updated = {item.element_id for items in changed.values() for item in items}

    def drafted(item: WriteItem) -> bool:
        draft = item.draft
        if not item.creating or draft is None:
            return False
        if id(item) in entangled:
            gets = received.get(item.new_id or 0)
            if gets is None or any(draft.ends.get(end_name) for end_name in gets):
                return False
        return not updated or not any(reference.resolved_id in updated for reference in draft.references())

    return {id(item) for group in groups for item in group.items if drafted(item)}


class _CreatedRecorder:
    """Records created elements straight from their drafts: the changeset `ChangeLog.element_created`
    makes of the element's JSON (every property that holds something, in the view's order, encoded as
    `encode_value` does), and what `NeighbourMirror.add` mirrors to its parent and the other ends of its
    relations, without the JSON itself. A source end's entries keep their order (their positions are
    their indexes), a target end's too (its relations are made in that order)."""

    def __init__(self, view: ElementView, changes: ChangeLog, mirror: NeighbourMirror) -> None:
        self.type_name = view.type_def.name
        self.changes = changes
        self.mirror = mirror
        self.show_parent = "parent" in view.head
        # Positions in the view's order, looked up by the sort's key function at C level.
        self.property_position = {p.id: index for index, p in enumerate(view.properties)}
        self.properties = {p.id: (p.name, value_encoder(p)) for p in view.properties}
        self.end_position = {end.name: index for index, end in enumerate(view.ends)}
        self.ends = {
            end.name: (
                end.other_type,
                end.opposite_name,
                None
                if (attributes := view.relation_attributes.get(end.relation_type.id)) is None
                else [(a.id, a.name, value_encoder(a)) for a in attributes],
            )
            for end in view.ends
        }
        # The drafts' keys (as they list them) -> those keys in the view's order with what records them:
        # the items of a bulk write mostly name the same keys, so each order is sorted out once.
        self.value_orders: dict[tuple[int, ...], list[tuple[int, str, Callable[[TypedValue], Any]]]] = {}
        self.end_orders: dict[tuple[str, ...], list[str]] = {}

    def record(
        self,
        item: WriteItem,
        received: ReceivedEnds | None,
    ) -> None:
        """Record `item`'s element; `received`: what other created elements list it in, per end."""
        draft, element_id = item.draft, item.new_id
        assert draft is not None and draft.name is not None and element_id is not None
        name = draft.name
        recorded: list[Change] = [{"property": "name", "old": [], "new": [name]}]
        if draft.description:
            recorded.append({"property": "description", "old": [], "new": [draft.description]})
        parent = _entry(draft.parent) if draft.parent is not None and self.show_parent else None
        if parent is not None:
            recorded.append({"property": "parent", "old": [], "new": [parent]})
        values = draft.values
        value_keys = tuple(values)
        value_order = self.value_orders.get(value_keys)
        if value_order is None:
            properties = self.properties
            value_order = [
                (attribute_id, *properties[attribute_id])
                for attribute_id in sorted(values, key=self.property_position.__getitem__)
            ]
            if len(self.value_orders) < _ORDERS_KEPT:
                self.value_orders[value_keys] = value_order
        for attribute_id, key, encode in value_order:
            given = values[attribute_id]
            if given:
                # One value mostly: no map and list over it.
                new = [encode(given[0])] if len(given) == 1 else list(map(encode, given))
                recorded.append({"property": key, "old": [], "new": new})
        ends = self.ends
        end_keys = tuple(draft.ends)
        if received:
            end_keys += tuple(end_name for end_name in received if end_name not in draft.ends)
        end_order = self.end_orders.get(end_keys)
        if end_order is None:
            end_order = sorted(end_keys, key=self.end_position.__getitem__)
            if len(self.end_orders) < _ORDERS_KEPT:
                self.end_orders[end_keys] = end_order
        mirror = self.mirror._mirror
        for end_name in end_order:
            if received and end_name in received:
                # Elements of this write: nothing to mirror to them (they have their own records).
                recorded.append({"property": end_name, "old": [], "new": self._listed(end_name, received)})
                continue
            entries = draft.ends[end_name]
            if not entries:
                continue
            other_type, opposite_name, attributes = ends[end_name]
            rendered = []
            for entry in entries:
                reference = entry.reference
                other: dict[str, Any] = {"id": reference.resolved_id, "name": reference.resolved_name}
                me: dict[str, Any] = {"id": element_id, "name": name}
                if attributes is not None:
                    other["attributes"] = me["attributes"] = _encoded(attributes, entry.attributes)
                rendered.append(other)
                mirror(other_type, other, opposite_name, me, "added")
            recorded.append({"property": end_name, "old": [], "new": rendered})
        if parent is not None:  # after the ends, as `NeighbourMirror.add` mirrors them
            self.mirror.added(self.type_name, parent, "children", {"id": element_id, "name": name})
        self.changes.element(
            "created", type_name=self.type_name, element_id=element_id, element_name=name, changes=recorded
        )

    def _listed(self, end_name: str, received: ReceivedEnds) -> list[dict[str, Any]]:
        attributes = self.ends[end_name][2]
        rendered = []
        for other_id, other_name, relation_values in received[end_name]:
            entry: dict[str, Any] = {"id": other_id, "name": other_name}
            if attributes is not None:
                entry["attributes"] = _encoded(attributes, relation_values)
            rendered.append(entry)
        return rendered


def _encoded(
    attributes: Sequence[tuple[int, str, Callable[[TypedValue], Any]]],
    relation_values: Mapping[int, Sequence[TypedValue]] | None,
) -> dict[str, list[Any]]:
    """A relation entry's `attributes` as the element JSON shows them: every relation attribute of the
    view, with the values the relation was given (none: empty)."""
    given = relation_values or {}
    return {key: list(map(encode, given.get(attribute_id, ()))) for attribute_id, key, encode in attributes}


_ORDERS_KEPT = 64  # orders of keys a _CreatedRecorder keeps (bodies may list their keys in any order)


def _entry(reference: Reference) -> dict[str, Any]:
    return {"id": reference.resolved_id, "name": reference.resolved_name}


def record_write(
    writer: Writer,
    groups: Sequence[TypeItems],
    views: dict[int, ElementView],
    creates: dict[int, list[WriteItem]],
    changed: dict[int, list[WriteItem]],
    before: dict[int, dict[int, LoadedElement]],
    gone: list[tuple[BlockTypeDef, int, dict[str, Any]]],
    order_counts: bool,
    loaded: bool,
    plans: dict[int, list[tuple[WriteItem, UpdatePlan]]],
    received: Received,
) -> Written:
    """History of a write, type by type (those that need no read first), each in item order: a created
    element that nothing else in the write touches is recorded from its draft (what was inserted is
    exactly what it says); the other written elements are read back with the column-oriented reader (the
    same JSON as `full.render` of a loaded element, a batch at a time, so that a large import never holds
    every element's JSON at once) and recorded as created or as the diff of before and after; the deleted
    ones from their last state; then what the neighbours saw. With `loaded` (one element: the caller
    renders its answer from it) they are loaded."""
    db, changes = writer.db, writer.changes
    result = Written()
    written = {item.written_id for items in (*creates.values(), *changed.values()) for item in items}
    mirror = NeighbourMirror({i for i in written if i is not None} | {i for _, i, _ in gone})
    drafted = set() if loaded else _self_contained(groups, changed, received)
    unchanged: list[LoadedElement] = []
    unread_by_type = {
        group.type_def.id: [
            item.written_id or 0
            for item in (*creates[group.type_def.id], *changed[group.type_def.id])
            if id(item) not in drafted
        ]
        for group in groups
    }
    # Types recorded from their drafts alone first: a read waits for every pipelined insert, and what
    # these types record in Python meanwhile overlaps them (an import's components, which the systems
    # refer to by name, are read back; the systems are not).
    for group in sorted(groups, key=lambda group: bool(unread_by_type[group.type_def.id])):
        type_def, full = group.type_def, views[group.type_def.id]
        type_creates, type_changed = creates[type_def.id], changed[type_def.id]
        old_elements = before[type_def.id]
        unread = unread_by_type[type_def.id]
        read: Iterator[dict[str, Any]]
        if loaded:
            # An update's plan may say all the element is now (its own row and values changed only).
            now: dict[int, LoadedElement] = {}
            for item, plan in plans[type_def.id]:
                state = applied(old_elements[item.element_id or 0], plan, changes.now, writer.actor.login)
                if state is not None:
                    now[state.id] = state
            rest = [element_id for element_id in unread if element_id not in now]
            if rest:
                now.update(load_elements(db, type_def.id, rest, full.selection))
            result.loaded.update(old_elements)
            result.loaded.update(now)
            read = (full.render(now[element_id]) for element_id in unread)
        else:
            batches = ElementReader(full).read_batches(db, chunks(unread, READ_BATCH))
            read = (element for batch in batches for element in batch)
        from_draft = _CreatedRecorder(full, changes, mirror)
        for item in type_creates:
            if id(item) in drafted:
                from_draft.record(item, received.get(item.new_id or 0))
                # Nothing reads a recorded draft again: freed here, while the inserts still run on the
                # pipeline, rather than with the items once the answer is made.
                item.draft = None
                continue
            element = next(read)
            changes.element_created(type_def.name, element["id"][0], element)
            mirror.add(type_def, element["id"][0], None, element)
        for _ in type_changed:
            element = next(read)
            old_element = old_elements[element["id"][0]]
            old = full.render(old_element)
            diff = diff_elements(type_def, old, element, order_counts=order_counts)
            if not diff:
                unchanged.append(old_element)
                continue
            changes.element(
                "updated",
                type_name=type_def.name,
                element_id=old_element.id,
                element_name=element["name"][0],
                changes=diff,
            )
            result.changed.add(old_element.id)
            mirror.add(type_def, old_element.id, old, element)
    for type_def, element_id, last in gone:
        changes.element_deleted(type_def.name, element_id, last)
        mirror.add(type_def, element_id, last, None)
    # An element rewritten without a change anyone can see keeps its revision and stamps.
    repository.restore_stamps(
        db, [(e.id, e.revision, e.last_modified_at, e.last_modified_by) for e in unchanged]
    )
    mirror.record(db, changes, writer.actor.login)
    result.mirrored = set(mirror.mirrored)
    return result


# --- history -------------------------------------------------------------------------------------------


def diff_elements(
    type_def: BlockTypeDef, before: ElementState, after: ElementState, *, order_counts: bool = True
) -> list[Change]:
    """Field-level changes between two renderings of one element: `old`/`new` for values, `added`/
    `removed` for relation ends and children (matched by id, so the same entries in another order add and
    remove nothing; changed relation attributes show the old entry as removed and the new one as added,
    and `order` lists the ids when the end was reordered as well); a pure reordering is recorded as
    `old`/`new`, unless `order_counts` is false (an import: a relation list's order is not a change)."""
    changes: list[Change] = []
    for key in dict.fromkeys([*before, *after]):
        if key in UNRECORDED_KEYS:
            continue
        old, new = before.get(key, []), after.get(key, [])
        if old == new:
            continue
        if key == "children" or key in type_def.ends:
            added, removed = entry_diff(old, new)
            if added or removed:
                change: EndChange = {"property": key, "added": added, "removed": removed}
                new_order = [entry["id"] for entry in new]
                if [entry["id"] for entry in apply_related_change(old, change)] != new_order:
                    change["order"] = new_order  # added and reordered at once: history keeps the order
                changes.append(change)
                continue
            if not order_counts:
                continue
        changes.append({"property": key, "old": old, "new": new})
    return changes


def entry_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    """(added, removed) between two lists of related entries, matched by id: an entry whose attributes
    changed is in both."""
    old_by_id = {entry["id"]: entry for entry in old}
    new_by_id = {entry["id"]: entry for entry in new}
    return (
        [entry for entry in new if old_by_id.get(entry["id"]) != entry],
        [entry for entry in old if new_by_id.get(entry["id"]) != entry],
    )


class NeighbourMirror:
    """Collects, once per element at the other end, the relation and children changes that written
    elements caused there, and records them as one changeset each. Written elements are added one at a
    time (type, id, JSON before, JSON after), so that a large import need not hold every element's JSON
    at once; elements in `skip` have their own record."""

    def __init__(self, skip: set[int]) -> None:
        self.skip = skip
        self.mirrored: dict[int, dict[str, Any]] = {}

    def _mirror(
        self, other_type: str, other: dict[str, Any], prop: str, entry: dict[str, Any], side: str
    ) -> None:
        other_id = other["id"]
        if other_id in self.skip:
            return
        # get before setdefault: a bulk write mirrors thousands of entries onto a few hundred elements,
        # and a default built per call was mostly thrown away.
        record = self.mirrored.get(other_id)
        if record is None:
            record = self.mirrored[other_id] = {"type": other_type, "name": other["name"], "changes": {}}
        change = record["changes"].get(prop)
        if change is None:
            change = record["changes"][prop] = {"property": prop, "added": [], "removed": []}
        change[side].append(entry)

    def added(self, other_type: str, other: dict[str, Any], prop: str, entry: dict[str, Any]) -> None:
        """`entry` (a written element) was added to `prop` of `other` (an element of `other_type`)."""
        self._mirror(other_type, other, prop, entry, "added")

    def add(
        self,
        type_def: BlockTypeDef,
        element_id: int,
        before: ElementState | None,
        after: ElementState | None,
    ) -> None:
        old_state, new_state = before or {}, after or {}

        def me(state: ElementState, relation: dict[str, Any] | None = None) -> dict[str, Any]:
            entry: dict[str, Any] = {"id": element_id, "name": state["name"][0]}
            if relation is not None and "attributes" in relation:
                entry["attributes"] = relation["attributes"]
            return entry

        for end_name, end in type_def.ends.items():
            old_entries, new_entries = old_state.get(end_name), new_state.get(end_name)
            if not old_entries and not new_entries:
                continue  # most ends of most elements are empty: nothing to diff
            added, removed = entry_diff(old_entries or [], new_entries or [])
            for entry in removed:
                self._mirror(end.other_type, entry, end.opposite_name, me(old_state, entry), "removed")
            for entry in added:
                self._mirror(end.other_type, entry, end.opposite_name, me(new_state, entry), "added")
        if type_def.hierarchical:
            old_parent, new_parent = old_state.get("parent", []), new_state.get("parent", [])
            if old_parent != new_parent:
                for parent in old_parent:
                    self._mirror(type_def.name, parent, "children", me(old_state), "removed")
                for parent in new_parent:
                    self._mirror(type_def.name, parent, "children", me(new_state), "added")

    def record(self, db: Session, changes: ChangeLog, login: str) -> None:
        """Record the collected changesets and give those elements a new revision (their JSON changed)."""
        # A neighbour this request already changed (the demo creates many elements in one request) keeps
        # its revision (`record_updates`).
        updates = (
            ElementUpdate(record["type"], other_id, record["name"], list(record["changes"].values()))
            for other_id, record in self.mirrored.items()
        )
        record_updates(db, changes, updates, login=login, now=changes.now)


def record_updates(
    db: Session, changes: ChangeLog, updates: Iterable[ElementUpdate], *, login: str, now: dt.datetime
) -> None:
    """Record elements changed through something else than a write of theirs (a neighbour, a removed or
    renamed value, a removed relation type), and give each one new revision unless this request has one
    for it already (`ChangeLog.elements_updated`)."""
    repository.bump_elements(db, changes.elements_updated(updates), now=now, user=login)
