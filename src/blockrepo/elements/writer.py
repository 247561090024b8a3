"""The one element write core: validates, plans, writes, diffs and records 1..n elements of 1..n types.

Every element write goes through here: the element API calls it with one item, bulk writes with many
of one type, the importer with the records of every type of its file (`validate_types`,
`persist_types`); metamodel edits use its diff and history parts. Order of work, with a fixed number of
statements per chunk of items rather than per item:
1. `validate`: `BodyParser.parse` per item; references to elements that other items create (`{"name": …}`:
   earlier items of the type, or with `forward` any item of the write) are set aside, every other
   reference is resolved at once (`resolve_references`, `check_partners`); then the rules across items:
   hierarchy cycles, single-valued partners claimed twice, names (against the database and the other
   items), items depending on a failed item;
2. `persist`: creates as rows of tuples for every type before any value or relation (SQLite: with the
   ids handed out as AUTOINCREMENT would; PostgreSQL: INSERT … RETURNING), then values and relations as
   multi-row VALUES (COPY); updates: each item's `plan_update` applied in batches; deletions last. From
   PIPELINE_MIN_CREATES created elements on, SQLite runs these inserts on the write pipeline
   (`storage.write_pipeline`) while this thread goes on;
3. history: created elements are recorded from their drafts (with what other created items list them
   in, when that is all that refers to them), the other written elements are re-read a batch at a time;
   each is recorded (created, or the diff of before and after), deleted ones from their last state; the
   elements at the other end of changed relations and parents get one mirrored changeset each and a new
   revision (`NeighbourMirror`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import repository
from blockrepo.elements.reader import READ_BATCH, ElementReader
from blockrepo.elements.repository import LoadedElement, NewRelation, chunks
from blockrepo.elements.validation import (
    ElementDraft,
    EndEntry,
    Reference,
    body_parser,
    check_partners,
    resolve_references,
)
from blockrepo.elements.values import TypedValue, value_encoder
from blockrepo.elements.view import ElementView, view_of
from blockrepo.errors import ErrorItem
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel, RelationEnd
from blockrepo.revisions.recorder import UNRECORDED_KEYS, ChangeLog, apply_related_change
from blockrepo.storage.write_pipeline import pipelined

NewKey = tuple[str, int]  # ("new", index of the item that creates the element)
VALUES_BATCH = 5000  # created items whose values are inserted together
PIPELINE_MIN_CREATES = 500  # created elements from which a write's inserts run on a pipeline
# Builds a NamedTuple from its fields without the Python-level constructor (see values._typed).
_NEW_TUPLE = tuple.__new__
K = TypeVar("K", bound=Hashable)


@dataclass
class Writer:
    """Who writes where: the request's session, metamodel snapshot, actor and change log."""

    db: Session
    metamodel: Metamodel
    actor: Actor
    changes: ChangeLog


@dataclass(slots=True)
class WriteItem:
    """One element to write: its body, the element it updates (None: created) and, once validated, its
    draft or why it failed (an HTTP status and the problems)."""

    index: int
    body: dict[str, Any] | None
    element_id: int | None = None
    draft: ElementDraft | None = None
    status: int | None = None  # set once the item failed
    errors: list[ErrorItem] = field(default_factory=list)
    conflicting_id: int | None = None  # the element that already has the item's name (409)
    # References to elements that other items of the write create, with the item that creates each.
    pending: list[tuple[Reference, WriteItem]] = field(default_factory=list)
    aside_ends: dict[str, list[EndEntry]] = field(default_factory=dict)
    aside_parent: Reference | None = None
    new_id: int | None = None

    @property
    def failed(self) -> bool:
        return self.status is not None

    @property
    def creating(self) -> bool:
        return self.element_id is None

    @property
    def written_id(self) -> int | None:
        return self.element_id if self.element_id is not None else self.new_id

    def fail(self, status: int, errors: Iterable[ErrorItem]) -> None:
        if self.status is None:
            self.status = status
            self.errors = list(errors)


# --- validation ----------------------------------------------------------------------------------------


@dataclass
class TypeItems:
    """The items of one type in a write that spans several types (an import writes every type of its
    file at once)."""

    type_def: BlockTypeDef
    items: list[WriteItem]


def validate(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """Parse and check every item that has not failed yet; an item with a problem is marked failed (403
    when it writes what the actor may not, 400 for an invalid body, 409 for a name taken). A reference by
    name may name an element that an earlier item creates."""
    validate_types(writer, [TypeItems(type_def, list(items))])


def validate_types(writer: Writer, groups: Sequence[TypeItems], *, forward: bool = False) -> None:
    """`validate` for the items of several types as one write, with the same number of statements as for
    one type. With `forward`, a reference by name may name an element that any item of the write creates,
    of any type, listed before or after it (an import's file); else only one an earlier item of the same
    type creates (a bulk write)."""
    for group in groups:
        _parse(writer, group.type_def, group.items)
    creators: dict[tuple[int, str], WriteItem] = {}
    if forward:
        for group in groups:
            for item in group.items:
                if item.draft is not None and item.draft.creating and item.draft.name is not None:
                    creators.setdefault((group.type_def.id, item.draft.name), item)
    for group in groups:
        _set_aside(group.type_def, group.items, creators, forward=forward)
    drafts = [item.draft for group in groups for item in group.items if item.draft is not None]
    resolve_references(writer.db, writer.metamodel, drafts)
    check_partners(writer.db, drafts)
    for group in groups:
        for item in group.items:
            if item.aside_ends or item.aside_parent is not None:
                _restore(item)
    for group in groups:
        _check_across_items(writer, group.type_def, group.items)
    for group in groups:
        _decide(writer, group.type_def, group.items)


def _parse(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """Parse every body into a draft (403 at once for what the actor may not write)."""
    parse = body_parser(writer.actor, type_def).parse
    for item in items:
        if item.status is not None or item.body is None:
            continue
        draft = parse(item.body, element_id=item.element_id)
        # The draft holds what the body says: let the body go, so that an import's bodies and drafts of
        # every record are not held at once.
        item.body = None
        if draft.forbidden:
            item.fail(403, draft.forbidden)
            continue
        item.draft = draft


def _set_aside(
    type_def: BlockTypeDef,
    items: Sequence[WriteItem],
    creators: dict[tuple[int, str], WriteItem],
    *,
    forward: bool,
) -> None:
    """Set aside references to elements that items of this write create (they resolve once those
    exist), so that the rest resolve against the database in one go. Without `forward`, `creators` is
    filled here in item order, so only earlier items count."""

    def creator_of(reference: Reference) -> WriteItem | None:
        if reference.id is not None or reference.name is None:
            return None
        if not forward and reference.type_id != type_def.id:
            return None
        return creators.get((reference.type_id, reference.name))

    for item in items:
        draft = item.draft
        if item.status is not None or draft is None:
            continue
        for end_name, entries in draft.ends.items():
            for entry in entries:
                if entry.reference.id is None:
                    break
            else:
                continue  # every entry names an id: none is created by this write
            kept = []
            for entry in entries:
                creator = creator_of(entry.reference)
                if creator is None:
                    kept.append(entry)
                else:
                    item.pending.append((entry.reference, creator))
            if len(kept) != len(entries):
                item.aside_ends[end_name] = entries
                draft.ends[end_name] = kept
        if draft.parent is not None and (creator := creator_of(draft.parent)) is not None:
            item.pending.append((draft.parent, creator))
            item.aside_parent = draft.parent
            draft.parent = None
        if not forward and draft.creating and draft.name is not None:
            creators.setdefault((type_def.id, draft.name), item)


def _restore(item: WriteItem) -> None:
    """Put the set-aside references back in their places."""
    draft = item.draft
    if draft is None:
        return
    if item.aside_ends:
        draft.ends.update(item.aside_ends)
    if item.aside_parent is not None:
        draft.parent = item.aside_parent


_NO_PENDING: dict[int, NewKey] = {}  # only read


def _pending_keys(item: WriteItem) -> dict[int, NewKey]:
    return {id(reference): ("new", creator.index) for reference, creator in item.pending}


def _key_of(reference: Reference, pending: dict[int, NewKey]) -> int | NewKey | None:
    return pending.get(id(reference), reference.resolved_id)


def _holder_key(item: WriteItem) -> int | NewKey:
    return item.element_id if item.element_id is not None else ("new", item.index)


def _opposite_multiple(end: RelationEnd) -> bool:
    return end.relation_type.target_multiple if end.holder_is_source else end.relation_type.source_multiple


def _check_across_items(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """Rules that span items: the same new element listed twice, one single-valued partner claimed by two
    holders, and moves that would close a cycle in the hierarchy."""
    claims: dict[tuple[int, bool, int | NewKey], int | NewKey] = {}
    new_parents: dict[NewKey, int | NewKey] = {}  # a created element -> its parent
    moves: dict[int, int | NewKey | None] = {}  # id of an updated element -> its new parent
    movers: list[WriteItem] = []
    for item in items:
        draft = item.draft
        if item.status is not None or draft is None:
            continue
        pending = _pending_keys(item) if item.pending else _NO_PENDING
        for end_name, entries in draft.ends.items():
            end = type_def.ends[end_name]
            if _opposite_multiple(end) and (not pending or len(entries) < 2):
                # Nothing to check: duplicates are looked for among pending references only, and one
                # entry cannot repeat (an import's systems list their components by name).
                continue
            seen: set[int | NewKey] = set()
            for entry in entries:
                key = _key_of(entry.reference, pending)
                if key is None:
                    continue
                if id(entry.reference) in pending and key in seen:
                    draft.error(
                        entry.reference.pointer,
                        "duplicate",
                        f"{end_name} lists {entry.reference.name!r} twice",
                    )
                seen.add(key)
                if _opposite_multiple(end):
                    continue
                claim = (end.relation_type.id, end.holder_is_source, key)
                holder = claims.setdefault(claim, _holder_key(item))
                if holder != _holder_key(item):
                    draft.error(
                        entry.reference.pointer,
                        "cardinality",
                        f"{end.other_type} {entry.reference.name or key!r} holds one {end.opposite_name}, "
                        "which an earlier element of this request already takes",
                    )
        parent = _key_of(draft.parent, pending) if draft.parent is not None else None
        if item.creating and parent is not None:
            new_parents[("new", item.index)] = parent
        elif not item.creating and draft.parent_given:
            assert item.element_id is not None
            moves[item.element_id] = parent
            movers.append(item)
    # A created element can close a cycle only when its parent is created by the write as well (an
    # import may list a parent after its child).
    checked = movers
    if new_parents:
        checked = movers + [
            item
            for item in items
            if item.creating and isinstance(new_parents.get(("new", item.index)), tuple)
        ]
    if not checked:
        return
    starts = [p for p in (*new_parents.values(), *moves.values()) if isinstance(p, int)]
    stored = repository.parent_chains(writer.db, starts)

    def parent_of(key: int | NewKey) -> int | NewKey | None:
        if isinstance(key, tuple):
            return new_parents.get(key)
        return moves[key] if key in moves else stored.get(key)

    looped = loops([_holder_key(item) for item in checked], parent_of)
    for item in checked:
        assert item.draft is not None
        key = _holder_key(item)
        if looped.get(key) == key:
            reference = item.aside_parent or item.draft.parent
            item.draft.error(
                reference.pointer if reference else "/parent",
                "cycle",
                "the parent is the element itself or one of its descendants",
            )


def loops(starts: Iterable[K], parent_of: Callable[[K], K | None]) -> dict[K, K]:
    """start -> the first element its chain of parents reaches a second time, for every start whose chain
    runs into a loop (an element is in a loop when the answer is itself). Chains known to end at a root
    are walked once, however many starts share them."""
    rooted: set[K] = set()
    found: dict[K, K] = {}
    for start in starts:
        path: list[K] = []
        on_path: set[K] = set()
        current: K | None = start
        while current is not None and current not in rooted and current not in on_path:
            on_path.add(current)
            path.append(current)
            current = parent_of(current)
        if current is not None and current in on_path:
            found[start] = current
        else:
            rooted.update(path)
    return found


def _decide(writer: Writer, type_def: BlockTypeDef, items: Sequence[WriteItem]) -> None:
    """In item order: an item fails on its own problems, on a name another element has, or when an
    element it refers to was to be created by an item that failed."""
    names = {item.draft.name for item in items if item.draft is not None and item.draft.name is not None}
    owners = repository.ids_by_name(writer.db, type_def.id, names)
    claimed: dict[str, int] = {}
    for item in items:
        draft = item.draft
        if item.status is not None or draft is None:
            continue
        if draft.errors:
            item.fail(400, draft.errors)
            continue
        broken = (
            [(reference, creator) for reference, creator in item.pending if creator.failed]
            if item.pending
            else None
        )
        if broken:
            item.fail(
                400,
                [
                    ErrorItem(
                        reference.pointer,
                        "failed_dependency",
                        f"{reference.name!r} was to be created by element {creator.index}, which failed",
                    )
                    for reference, creator in broken
                ],
            )
            continue
        if draft.name is None:
            continue
        owner = owners.get(draft.name)
        if owner is not None and owner != item.element_id:
            message = f"a {type_def.name} named {draft.name!r} already exists (id {owner})"
            item.conflicting_id = owner
            item.fail(409, [ErrorItem("/name/0", "name_conflict", message)])
        elif draft.name in claimed:
            message = f"element {claimed[draft.name]} of this request is named {draft.name!r} already"
            item.fail(409, [ErrorItem("/name/0", "name_conflict", message)])
        else:
            claimed[draft.name] = item.index


# --- plans ---------------------------------------------------------------------------------------------


def new_relation(
    end: RelationEnd,
    holder_id: int,
    other_id: int,
    index: int,
    attributes: Mapping[int, Sequence[TypedValue]] | None,
) -> NewRelation:
    """The relation that lists `other_id` at `index` of the holder's `end` (a target end's list has no
    position of its own: the relation goes last on the source's end)."""
    # Built by tuple.__new__: the NamedTuple's own constructor is a Python function, and a bulk write
    # makes two relations an element.
    if end.holder_is_source:
        return _NEW_TUPLE(NewRelation, (end.relation_type.id, holder_id, other_id, index, attributes or {}))
    return _NEW_TUPLE(NewRelation, (end.relation_type.id, other_id, holder_id, None, attributes or {}))


@dataclass
class UpdatePlan:
    """What an update really changes, compared with the element's current state."""

    element_fields: dict[str, Any] = field(default_factory=dict)
    move: bool = False
    values: dict[int, list[TypedValue]] = field(default_factory=dict)
    remove_relations: list[int] = field(default_factory=list)
    add_relations: list[NewRelation] = field(default_factory=list)
    positions: dict[int, int] = field(default_factory=dict)
    relation_values: dict[int, dict[int, list[TypedValue]]] = field(default_factory=dict)
    touched: set[int] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (
            self.element_fields
            or self.values
            or self.remove_relations
            or self.add_relations
            or self.positions
            or self.relation_values
        )


def plan_update(draft: ElementDraft, before: LoadedElement, *, order_counts: bool = True) -> UpdatePlan:
    """The writes that bring `before` to what `draft` says; relation ends are compared as sets of
    elements (plus the source's order), so listing the same elements again changes nothing. Without
    `order_counts` (an import) an end that keeps its elements keeps its order too."""
    plan = UpdatePlan()
    if draft.name is not None and draft.name != before.name:
        plan.element_fields["name"] = draft.name
    if draft.description is not None and draft.description != before.description:
        plan.element_fields["description"] = draft.description
    if draft.parent_given:
        parent_id = draft.parent.resolved_id if draft.parent is not None else None
        if parent_id != before.parent_id:
            plan.element_fields["parent_id"] = parent_id
            plan.move = True
            plan.touched.update(p for p in (parent_id, before.parent_id) if p is not None)
    for attribute_id, values in draft.values.items():
        if values != before.values.get(attribute_id, []):
            plan.values[attribute_id] = values
    for end_name, entries in draft.ends.items():
        end = draft.type_def.ends[end_name]
        current = {item.other_id: item for item in before.ends.get(end_name, [])}
        wanted = {entry.reference.resolved_id for entry in entries}
        for other_id, item in current.items():
            if other_id not in wanted:
                plan.remove_relations.append(item.relation_id)
                plan.touched.add(other_id)
        # Without `order_counts`, the positions of an end that keeps its elements are dropped.
        positions = plan.positions if order_counts or wanted != current.keys() else {}
        for index, entry in enumerate(entries):
            new_other = entry.reference.resolved_id
            assert new_other is not None
            existing = current.get(new_other)
            if existing is None:
                plan.add_relations.append(new_relation(end, before.id, new_other, index, entry.attributes))
                plan.touched.add(new_other)
                continue
            if end.holder_is_source and existing.position != index:
                positions[existing.relation_id] = index
            changed = {
                attribute_id: values
                for attribute_id, values in (entry.attributes or {}).items()
                if values != existing.values.get(attribute_id, [])
            }
            if changed:
                plan.relation_values[existing.relation_id] = changed
                plan.touched.add(new_other)
    return plan


def applied(before: LoadedElement, plan: UpdatePlan, now: dt.datetime, login: str) -> LoadedElement | None:
    """The element as `plan` leaves it, when the plan changes only the element's own row and values: the
    state a single update answers with, without reading it again. None when the plan moves the element
    or changes relations (new rows whose ids, positions and names only the database holds)."""
    if plan.move or plan.remove_relations or plan.add_relations or plan.positions or plan.relation_values:
        return None
    fields = plan.element_fields
    return dataclasses.replace(
        before,
        name=fields.get("name", before.name),
        description=fields.get("description", before.description),
        revision=before.revision + 1,
        last_modified_at=now,
        last_modified_by=login,
        values={**before.values, **plan.values},
    )


# --- persistence ---------------------------------------------------------------------------------------


@dataclass
class Written:
    """What a write did, for its caller's answer."""

    loaded: dict[int, LoadedElement] = field(default_factory=dict)  # with `loaded`: each item's element now
    changed: set[int] = field(default_factory=set)  # updated elements that changed (each has its record)
    mirrored: set[int] = field(default_factory=set)  # other elements whose relations or children changed


def persist(
    writer: Writer,
    type_def: BlockTypeDef,
    good: Sequence[WriteItem],
    *,
    loaded: bool = False,
    before: dict[int, LoadedElement] | None = None,
) -> dict[int, LoadedElement]:
    """Write the items that passed validation (`good`) and record their history. With `loaded`, returns
    every good item's element as it is now (all properties, the form the element API renders for its
    caller); else nothing (an empty dict). `before` may hand in the updated elements as the caller has
    just read them (all properties, `full_selection`), so that they are not read twice."""
    group = TypeItems(type_def, list(good))
    return persist_types(
        writer, [group], loaded=loaded, known={type_def.id: before} if before else None
    ).loaded


def persist_types(
    writer: Writer,
    groups: Sequence[TypeItems],
    *,
    deletions: Sequence[tuple[BlockTypeDef, Sequence[int]]] = (),
    order_counts: bool = True,
    loaded: bool = False,
    known: dict[int, dict[int, LoadedElement]] | None = None,
) -> Written:
    """Write the good items of several types and delete `deletions` (per type, parents before children)
    as one write, and record it: every created, changed and deleted element once, and each element at the
    other end of what changed one mirrored changeset. The rows of every created element are inserted
    before any value or relation, so that items of any type may refer to each other. With `order_counts`
    false (an import), a relation list that names the same elements in another order is no change: it
    keeps its order, and an element that changes in nothing else keeps its revision and gets no record."""
    db = writer.db
    views = {group.type_def.id: view_of(writer.metamodel, None, group.type_def) for group in groups}
    for type_def, _ in deletions:
        if type_def.id not in views:
            views[type_def.id] = view_of(writer.metamodel, None, type_def)
    creates = {group.type_def.id: [item for item in group.items if item.creating] for group in groups}
    updates = {group.type_def.id: [item for item in group.items if not item.creating] for group in groups}
    # Before any write: the state the updates change (creates may add relations to these elements), and
    # the last state of what is deleted.
    before = {
        type_id: (known or {}).get(type_id)
        or repository.load_elements(
            db, type_id, [item.element_id or 0 for item in items], views[type_id].selection
        )
        for type_id, items in updates.items()
    }
    gone: list[tuple[BlockTypeDef, int, dict[str, Any]]] = []
    for type_def, ids in deletions:
        view = views[type_def.id]
        last = repository.load_elements(db, type_def.id, ids, view.selection)
        gone += [(type_def, element_id, view.render(last[element_id])) for element_id in ids]
    touched: set[int] = set()
    inserted: set[tuple[int, int, int]] = set()
    # A large write's rows go into SQLite on a second thread while this one goes on to build the next
    # ones and record the history (`storage.write_pipeline`); a single write is not worth a thread.
    created = sum(len(items) for items in creates.values())
    with pipelined(db) if created >= PIPELINE_MIN_CREATES else nullcontext():
        _insert_elements(writer, [(group.type_def, creates[group.type_def.id]) for group in groups], touched)
        for group in groups:
            _resolve_pending(group.items)
        received = {} if loaded else _receivers(groups)
        for group in groups:
            _insert_contents(writer, group.type_def, creates[group.type_def.id], touched, inserted, received)
        plans = {
            group.type_def.id: _apply_updates(
                writer,
                group.type_def,
                updates[group.type_def.id],
                before[group.type_def.id],
                touched,
                inserted,
                order_counts=order_counts,
            )
            for group in groups
        }
        for _, ids in deletions:
            repository.delete_elements(db, ids)
        changed = {type_id: [item for item, _ in applied_plans] for type_id, applied_plans in plans.items()}
        return _record(
            writer, groups, views, creates, changed, before, gone, order_counts, loaded, plans, received
        )


# What one created element receives: its end -> (id, name, relation attributes) of each created element
# that lists it on the opposite end, in the order the relations are made; by the element's new id.
ReceivedEnds = dict[str, list[tuple[int, str, dict[int, list[TypedValue]] | None]]]
Received = dict[int, ReceivedEnds]


def _receivers(groups: Sequence[TypeItems]) -> Received:
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
        recorded: list[dict[str, Any]] = [{"property": "name", "old": [], "new": [name]}]
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


def _record(
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
                now.update(repository.load_elements(db, type_def.id, rest, full.selection))
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


def _insert_elements(
    writer: Writer, groups: Sequence[tuple[BlockTypeDef, Sequence[WriteItem]]], touched: set[int]
) -> None:
    """The element rows of the created items of every type, in item order, each last among its
    siblings; sets their `new_id`. Parents created by the write itself are set by `_insert_contents`.
    Every type's positions are read before any row is written: on the write pipeline a read waits for
    the rows before it."""
    rows = [_element_rows(writer, type_def, creates, touched) for type_def, creates in groups]
    for (_, creates), ids in zip(groups, repository.insert_named_elements(writer.db, rows), strict=True):
        for item in creates:
            assert item.draft is not None and item.draft.name is not None
            item.new_id = ids[item.draft.name]


def _element_rows(
    writer: Writer, type_def: BlockTypeDef, creates: Sequence[WriteItem], touched: set[int]
) -> list[tuple[Any, ...]]:
    """The element rows (repository.ELEMENT_COLUMNS) of the created items of one type."""
    if not creates:
        return []
    db, now, login = writer.db, writer.changes.now, writer.actor.login
    stored_parents = {
        item.draft.parent.resolved_id
        for item in creates
        if item.draft is not None and item.draft.parent is not None and item.aside_parent is None
    }
    positions: dict[int | NewKey | None, int] = {}
    for stored_parent, last in repository.last_child_positions(
        db, type_def.id, {*stored_parents, None}
    ).items():
        positions[stored_parent] = last
    rows = []
    type_id = type_def.id
    for item in creates:
        draft = item.draft
        assert draft is not None and draft.name is not None
        parent: int | NewKey | None = None
        if item.aside_parent is not None:
            creator = next(c for r, c in item.pending if r is item.aside_parent)
            parent = ("new", creator.index)
        elif draft.parent is not None:
            parent = draft.parent.resolved_id
        # A new child goes last among its siblings.
        position = positions.get(parent, -1) + 1
        positions[parent] = position
        stored_parent = parent if isinstance(parent, int) else None
        rows.append(
            (type_id, draft.name, draft.description or "", stored_parent, position, 1, now, now, login)
        )
        if stored_parent is not None:
            touched.add(stored_parent)
    return rows


def _insert_contents(
    writer: Writer,
    type_def: BlockTypeDef,
    creates: Sequence[WriteItem],
    touched: set[int],
    inserted: set[tuple[int, int, int]],
    received: Received,
) -> None:
    """Parents created by the write, values and relations of the created items (every element row of
    the write exists by now). What an item lists on an end of an element in `received` is noted there;
    an element that an item's relation would make a source (whose position the database gives) leaves
    `received`."""
    if not creates:
        return
    db = writer.db
    repository.set_parents(
        db,
        {
            item.new_id: item.aside_parent.resolved_id
            for item in creates
            if item.new_id is not None
            and item.aside_parent is not None
            and item.aside_parent.resolved_id is not None
        },
    )
    # Values per attribute as the drafts hold them (5 an element in a bulk write): no row tuple per value;
    # VALUES_BATCH items at a time, so that an import's columns do not all exist at once.
    for start in range(0, len(creates), VALUES_BATCH):
        by_attribute: dict[int, list[tuple[int, list[TypedValue]]]] = {}
        for item in creates[start : start + VALUES_BATCH]:
            draft, element_id = item.draft, item.new_id
            if draft is None or element_id is None:
                continue
            for attribute_id, values in draft.values.items():
                held = by_attribute.get(attribute_id)
                if held is None:
                    by_attribute[attribute_id] = [(element_id, values)]
                else:
                    held.append((element_id, values))
        repository.insert_values_by_attribute(db, by_attribute)
    relations: list[NewRelation] = []
    ends = type_def.ends
    for position, item in enumerate(creates, 1):
        if position % VALUES_BATCH == 0:
            # Relations too go in VALUES_BATCH items at a time: an import's would all exist at once.
            repository.insert_relations(db, relations)
            relations = []
        element_id = item.new_id
        assert item.draft is not None and element_id is not None
        for end_name, entries in item.draft.ends.items():
            end = ends[end_name]
            for index, entry in enumerate(entries):
                other = entry.reference.resolved_id
                assert other is not None
                relation = new_relation(end, element_id, other, index, entry.attributes)
                triple = relation[:3]
                if triple in inserted:
                    continue  # both elements list each other: one relation
                inserted.add(triple)
                relations.append(relation)
                touched.add(other)
                if received and (gets := received.get(other)) is not None:
                    if end.holder_is_source:
                        listed = (element_id, item.draft.name or "", entry.attributes)
                        gets.setdefault(end.opposite_name, []).append(listed)
                    else:
                        del received[other]
    repository.insert_relations(db, relations)


def _resolve_pending(items: Sequence[WriteItem]) -> None:
    """References to elements created by other items point at their new ids now."""
    for item in items:
        if item.failed:
            continue
        for reference, creator in item.pending:
            assert creator.draft is not None
            reference.resolved_id, reference.resolved_name = creator.new_id, creator.draft.name


def _apply_updates(
    writer: Writer,
    type_def: BlockTypeDef,
    updates: Sequence[WriteItem],
    before: dict[int, LoadedElement],
    touched: set[int],
    inserted: set[tuple[int, int, int]],
    *,
    order_counts: bool = True,
) -> list[tuple[WriteItem, UpdatePlan]]:
    """Apply each update's plan in batches; returns the items that changed something with their plans."""
    db, now, login = writer.db, writer.changes.now, writer.actor.login
    plans = []
    for item in updates:
        assert item.draft is not None and item.element_id is not None
        plan = plan_update(item.draft, before[item.element_id], order_counts=order_counts)
        if not plan.empty:
            plans.append((item, plan))
    if not plans:
        return []
    moved_to = {plan.element_fields.get("parent_id") for _, plan in plans if plan.move}
    positions = repository.last_child_positions(db, type_def.id, moved_to)
    rows = []
    removed: list[int] = []
    reordered: dict[int, int] = {}
    relation_values: dict[int, dict[int, list[Any]]] = {}
    relations: list[NewRelation] = []
    value_pairs: list[tuple[int, int]] = []
    value_rows: list[dict[str, Any]] = []
    for item, plan in plans:
        element_id = item.element_id
        assert element_id is not None
        old = before[element_id]
        fields = plan.element_fields
        parent_id = fields.get("parent_id", old.parent_id)
        position = old.position
        if plan.move:
            position = positions.get(parent_id, -1) + 1
            positions[parent_id] = position
        rows.append(
            {
                "element_id": element_id,
                "new_name": fields.get("name", old.name),
                "new_description": fields.get("description", old.description),
                "new_parent_id": parent_id,
                "new_position": position,
                "new_revision": old.revision + 1,
                "modified_at": now,
                "modified_by": login,
            }
        )
        for attribute_id, values in plan.values.items():
            value_pairs.append((element_id, attribute_id))
            value_rows += [
                {"element_id": element_id, "attribute_id": attribute_id, "position": p, **v.columns()}
                for p, v in enumerate(values)
            ]
        removed += plan.remove_relations
        reordered.update(plan.positions)
        relation_values.update(plan.relation_values)
        for relation in plan.add_relations:
            key = (relation.relation_type_id, relation.source_id, relation.target_id)
            if key not in inserted:
                inserted.add(key)
                relations.append(relation)
        touched.update(plan.touched)
    repository.update_elements(db, rows)
    repository.delete_values(db, value_pairs)
    repository.insert_values(db, value_rows)
    repository.delete_relations(db, removed)
    repository.set_relation_positions(db, reordered)
    repository.replace_relation_values(db, relation_values)
    repository.insert_relations(db, relations)
    return plans


# --- deletion ------------------------------------------------------------------------------------------


def delete(writer: Writer, type_def: BlockTypeDef, ids: Sequence[int]) -> None:
    """Delete elements of one type (`ids` lists parents before their children) with their values and
    relations; each gets a "deleted" record, and each element at the other end of their relations (and a
    surviving parent) one mirrored change and a new revision."""
    persist_types(writer, [], deletions=[(type_def, ids)])


# --- history -------------------------------------------------------------------------------------------


def diff_elements(
    type_def: BlockTypeDef, before: dict[str, Any], after: dict[str, Any], *, order_counts: bool = True
) -> list[dict[str, Any]]:
    """Field-level changes between two renderings of one element: `old`/`new` for values, `added`/
    `removed` for relation ends and children (matched by id, so the same entries in another order add and
    remove nothing; changed relation attributes show the old entry as removed and the new one as added,
    and `order` lists the ids when the end was reordered as well); a pure reordering is recorded as
    `old`/`new`, unless `order_counts` is false (an import: a relation list's order is not a change)."""
    changes: list[dict[str, Any]] = []
    for key in dict.fromkeys([*before, *after]):
        if key in UNRECORDED_KEYS:
            continue
        old, new = before.get(key, []), after.get(key, [])
        if old == new:
            continue
        if key == "children" or key in type_def.ends:
            added, removed = entry_diff(old, new)
            if added or removed:
                change: dict[str, Any] = {"property": key, "added": added, "removed": removed}
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
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
    ) -> None:
        old_state, new_state = before or {}, after or {}

        def me(state: dict[str, Any], relation: dict[str, Any] | None = None) -> dict[str, Any]:
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
        # One new revision per element and request, as its changes fold into one changeset: a neighbour
        # this request already changed (the demo creates many elements in one request) keeps its revision.
        bumped = changes.unrecorded(self.mirrored)
        for other_id, record in self.mirrored.items():
            changes.element(
                "updated",
                type_name=record["type"],
                element_id=other_id,
                element_name=record["name"],
                changes=list(record["changes"].values()),
            )
        repository.bump_elements(db, bumped, now=changes.now, user=login)
