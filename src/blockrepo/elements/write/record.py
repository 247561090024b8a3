"""The one recorder of element writes (`ElementRecorder`): every written element is handed in as its
states before and after, recorded through `changesets.Changesets` (with what its neighbours see), and
given one new revision per request. In a write of the core (`ElementRecorder.write`) created elements
are recorded from their drafts where they are self-contained, the other written elements read back,
deleted ones from their last state."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter
from typing import Any, NamedTuple

from sqlalchemy.orm import Session

from blockrepo.elements.compiled import reader_of
from blockrepo.elements.read.reader import READ_BATCH
from blockrepo.elements.read.repository import LoadedElement, load_elements
from blockrepo.elements.read.view import ElementView
from blockrepo.elements.repository import chunks
from blockrepo.elements.values import TypedValue, value_encoder
from blockrepo.elements.write import repository
from blockrepo.elements.write.changesets import Changesets
from blockrepo.elements.write.drafts import Reference
from blockrepo.elements.write.items import TypeItems, WriteItem, Writer
from blockrepo.elements.write.plan import UpdatePlan, applied
from blockrepo.metamodel.snapshot import BlockTypeDef
from blockrepo.revisions.recorder import ChangeLog, ElementState, ElementUpdate


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
    if not entangled and not updated:  # a bulk create: `drafted` below is true of every created item
        return {
            id(item)
            for group in groups
            for item in group.items
            if item.element_id is None and item.draft is not None
        }

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


class _DraftStates:
    """The state of a created element of one type from its draft: what `ElementView.render` of the
    stored element shows of the keys history records, in the view's order, values encoded as
    `encode_value` does, without reading it back. A source end's entries keep their order (their
    positions are their indexes), a target end's too (its relations are made in that order)."""

    def __init__(self, view: ElementView) -> None:
        self.show_parent = "parent" in view.head
        # Positions in the view's order, looked up by the sort's key function at C level.
        self.property_position = {p.id: index for index, p in enumerate(view.properties)}
        self.properties = {p.id: (p.name, value_encoder(p)) for p in view.properties}
        self.end_position = {end.name: index for index, end in enumerate(view.ends)}
        self.end_attributes = {
            end.name: None
            if (attributes := view.relation_attributes.get(end.relation_type.id)) is None
            else [(a.id, a.name, value_encoder(a)) for a in attributes]
            for end in view.ends
        }
        # The drafts' keys (as they list them) -> those keys in the view's order with what encodes them:
        # the items of a bulk write mostly name the same keys, so each order is sorted out once.
        self.value_orders: dict[tuple[int, ...], list[tuple[int, str, Callable[[TypedValue], Any]]]] = {}
        self.end_orders: dict[tuple[str, ...], list[str]] = {}

    def state(self, item: WriteItem, received: ReceivedEnds | None) -> dict[str, Any]:
        """`item`'s element as written; `received`: what other created elements list it in, per end."""
        draft = item.draft
        assert draft is not None and draft.name is not None
        state: dict[str, Any] = {"name": [draft.name]}
        if draft.description:
            state["description"] = [draft.description]
        if draft.parent is not None and self.show_parent:
            state["parent"] = [_entry(draft.parent)]
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
                state[key] = [encode(given[0])] if len(given) == 1 else list(map(encode, given))
        end_keys = tuple(draft.ends)
        if received:
            end_keys += tuple(end_name for end_name in received if end_name not in draft.ends)
        end_order = self.end_orders.get(end_keys)
        if end_order is None:
            end_order = sorted(end_keys, key=self.end_position.__getitem__)
            if len(self.end_orders) < _ORDERS_KEPT:
                self.end_orders[end_keys] = end_order
        for end_name in end_order:
            attributes = self.end_attributes[end_name]
            if received and end_name in received:
                state[end_name] = [
                    _listed(other_id, other_name, attributes, relation_values)
                    for other_id, other_name, relation_values in received[end_name]
                ]
                continue
            entries = draft.ends[end_name]
            if not entries:
                continue
            if attributes is None:  # most relation types: no call per entry
                rendered = []
                for entry in entries:
                    reference = entry.reference
                    rendered.append({"id": reference.resolved_id, "name": reference.resolved_name})
                state[end_name] = rendered
            else:
                state[end_name] = [
                    _listed(
                        entry.reference.resolved_id,
                        entry.reference.resolved_name,
                        attributes,
                        entry.attributes,
                    )
                    for entry in entries
                ]
        return state


def draft_state(view: ElementView, item: WriteItem) -> dict[str, Any]:
    """The state of one validated item as the write core would record it, from its draft alone."""
    return _DraftStates(view).state(item, None)


def _listed(
    other_id: int | None,
    other_name: str | None,
    attributes: Sequence[tuple[int, str, Callable[[TypedValue], Any]]] | None,
    relation_values: Mapping[int, Sequence[TypedValue]] | None,
) -> dict[str, Any]:
    """A relation entry as the element JSON shows it: with the relation type's attributes, `attributes`
    holds every one of the view with the values the relation was given (none: empty)."""
    entry: dict[str, Any] = {"id": other_id, "name": other_name}
    if attributes is not None:
        given = relation_values or {}
        entry["attributes"] = {
            key: list(map(encode, given.get(attribute_id, ()))) for attribute_id, key, encode in attributes
        }
    return entry


_ORDERS_KEPT = 64  # orders of keys a _DraftStates keeps (bodies may list their keys in any order)
_NEW_ID, _ELEMENT_ID = attrgetter("new_id"), attrgetter("element_id")


def _entry(reference: Reference) -> dict[str, Any]:
    return {"id": reference.resolved_id, "name": reference.resolved_name}


class _Stamp(NamedTuple):
    """The revision an update of an element writes, and the revision and stamps it had before."""

    revision: int
    old_revision: int
    old_at: dt.datetime
    old_by: str


class ElementRecorder:
    """The one recorder of element writes. Each written element is handed in as its states before and
    after (`created`, `updated`, `deleted`; states as `ElementView.render` gives them, or only the name
    and the properties a change concerns); the recorder records its changeset and what changed on its
    relations and parent for the elements at their other end (`Changesets`), and gives every element one
    new revision per request: an element written by an update of its own at the revision `revision`
    hands out (written with the update's row; put back by `finish` when the update changed nothing),
    every other changed element by `finish`, in one statement per chunk. Nothing else moves an element's
    revision. Created elements are written at revision 1; `write` records a write of the core, with the
    states of created elements made from their drafts where that is exactly what was written
    (`_DraftStates`)."""

    def __init__(self, db: Session, changes: ChangeLog, login: str) -> None:
        self.db = db
        self.changes = changes
        self.login = login
        self.changesets = Changesets()
        self._stamps: dict[int, _Stamp] = {}
        self._unchanged: list[tuple[int, int, dt.datetime, str]] = []
        self._indirect: list[ElementUpdate] = []

    def own_records(self, ids: Iterable[int]) -> None:
        """Elements that get a record of their own (so nothing is mirrored to them)."""
        self.changesets.skip.update(ids)

    def revision(self, before: LoadedElement) -> int:
        """The revision an update of the element `before` writes: one more, unless the request has given
        it its new revision already (it recorded the element)."""
        revision = before.revision if self.changes.recorded(before.id) else before.revision + 1
        stamp = _Stamp(revision, before.revision, before.last_modified_at, before.last_modified_by)
        self._stamps[before.id] = stamp
        return revision

    def written_revision(self, element_id: int) -> int:
        """The revision `revision` handed out for the element."""
        return self._stamps[element_id].revision

    def created(self, type_def: BlockTypeDef, element_id: int, after: ElementState) -> None:
        self._whole(type_def, element_id, after, created=True)

    def updated(
        self,
        type_def: BlockTypeDef,
        element_id: int,
        before: ElementState,
        after: ElementState,
        *,
        order_counts: bool = True,
    ) -> bool:
        """Record the diff of the element's states, if there is one (whether there is)."""
        changes = self.changesets.diff(type_def, element_id, before, after, order_counts=order_counts)
        stamp = self._stamps.pop(element_id, None)
        if not changes:
            if stamp is not None:
                # An element rewritten without a change anyone can see keeps its revision and stamps.
                self._unchanged.append((element_id, stamp.old_revision, stamp.old_at, stamp.old_by))
            return False
        name = after["name"][0]
        if stamp is None:  # changed through something else: recorded, with its new revision, by `finish`
            self._indirect.append(ElementUpdate(type_def.name, element_id, name, changes))
        else:
            self.changes.element(
                "updated", type_name=type_def.name, element_id=element_id, element_name=name, changes=changes
            )
        return True

    def deleted(self, type_def: BlockTypeDef, element_id: int, before: ElementState) -> None:
        self._whole(type_def, element_id, before, created=False)

    def _whole(self, type_def: BlockTypeDef, element_id: int, state: ElementState, *, created: bool) -> None:
        """Record a created element (`state`: as written) or a deleted one (`state`: as it was last), whose
        changeset holds all of it."""
        whole = self.changesets.created if created else self.changesets.deleted
        self.changes.element(
            "created" if created else "deleted",
            type_name=type_def.name,
            element_id=element_id,
            element_name=state["name"][0],
            changes=whole(type_def, element_id, state),
        )

    def changed(self, states: Iterable[tuple[BlockTypeDef, int, ElementState, ElementState]]) -> None:
        """Record elements changed through something else than a write of theirs (a removed or renamed
        value, a removed relation type), each given as (type, id, state before, state after) with its
        name and what changed, the elements at both ends of each changed relation among them."""
        listed = list(states)
        self.own_records(element_id for _, element_id, _, _ in listed)
        for type_def, element_id, before, after in listed:
            self.updated(type_def, element_id, before, after)
        self.finish()

    def write(
        self,
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
        """Record a write of the core (whose updates were written at the revisions `revision` handed out),
        type by type (those that need no read first), each in item order: a created element that nothing
        else in the write touches is recorded from its draft (what was inserted is exactly what it says);
        the other written elements are read back with the column-oriented reader (the same JSON as
        `full.render` of a loaded element, a batch at a time, so that a large import never holds every
        element's JSON at once) and recorded as created or as the diff of before and after; the deleted
        ones from their last state; then what the neighbours saw. With `loaded` (one element: the caller
        renders its answer from it) they are loaded."""
        db, changes = writer.db, writer.changes
        result = Written()
        # Every written and deleted element has a record of its own (the ids gathered at C level: a bulk
        # write has thousands).
        for items in creates.values():
            self.own_records(map(_NEW_ID, items))
        for items in changed.values():
            self.own_records(map(_ELEMENT_ID, items))
            changes.recall(map(_ELEMENT_ID, items))  # an import's earlier chunk may have written them ahead
        self.own_records(element_id for _, element_id, _ in gone)
        drafted = set() if loaded else _self_contained(groups, changed, received)
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
            drafts = _DraftStates(full) if type_creates and not loaded else None
            if loaded:
                # An update's plan may say all the element is now (its own row and values changed only).
                now: dict[int, LoadedElement] = {}
                for item, plan in plans[type_def.id]:
                    element_id = item.element_id or 0
                    revision = self.written_revision(element_id)
                    state = applied(old_elements[element_id], plan, revision, changes.now, writer.actor.login)
                    if state is not None:
                        now[state.id] = state
                rest = [element_id for element_id in unread if element_id not in now]
                if rest:
                    now.update(load_elements(db, type_def.id, rest, full.selection))
                result.loaded.update(old_elements)
                result.loaded.update(now)
                read = (full.render(now[element_id]) for element_id in unread)
            else:
                reader = reader_of(writer.metamodel, None, type_def)
                batches = reader.read_batches(db, chunks(unread, READ_BATCH))
                read = (element for batch in batches for element in batch)
            for item in type_creates:
                if drafts is not None and id(item) in drafted:
                    new_id = item.new_id
                    assert new_id is not None
                    self.created(
                        type_def, new_id, drafts.state(item, received.get(new_id) if received else None)
                    )
                    # Nothing reads a recorded draft again: freed here, while the inserts still run on the
                    # pipeline, rather than with the items once the answer is made.
                    item.draft = None
                    continue
                element = next(read)
                self.created(type_def, element["id"][0], element)
            for _ in type_changed:
                element = next(read)
                element_id = element["id"][0]
                old = full.render(old_elements[element_id])
                if self.updated(type_def, element_id, old, element, order_counts=order_counts):
                    result.changed.add(element_id)
        for type_def, element_id, last in gone:
            self.deleted(type_def, element_id, last)
        result.mirrored = set(self.changesets.mirrored)
        self.finish()
        return result

    def finish(self) -> None:
        """Put back the stamps of the elements an update left as they were, record the changesets of the
        elements changed through something else and of the neighbours, and give each of those that the
        request had not recorded before its new revision."""
        repository.restore_stamps(self.db, self._unchanged)
        self._unchanged = []
        fresh = []
        changes = self.changes
        changes.recall(chain(map(_ELEMENT_ID, self._indirect), self.changesets.mirrored))
        for type_name, element_id, element_name, element_changes in chain(
            self._indirect, self.changesets.neighbours()
        ):
            if not changes.recorded(element_id):
                fresh.append(element_id)
            changes.element(
                "updated",
                type_name=type_name,
                element_id=element_id,
                element_name=element_name,
                changes=element_changes,
            )
        self._indirect = []
        self.changesets.mirrored.clear()
        repository.bump_elements(self.db, fresh, now=changes.now, user=self.login)
