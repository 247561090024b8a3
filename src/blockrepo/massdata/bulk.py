"""Bulk writes of one type (`POST/DELETE /api/massdata/{type}`): every item is validated with the element
rules (`elements.validation`, batched over the whole request), then all are written set-based.

Order of work, with a fixed number of statements per chunk of items rather than per item:
1. targets: ids given, or names looked up (`match: "name"`); updated rows are locked;
2. `parse_body` per item; references to elements created by earlier items (`{"name": …}`) are set
   aside, every other reference is resolved at once (`resolve_references`, `check_partners`);
3. rules across items: hierarchy cycles, single-valued partners claimed twice, names (against the
   database and the request), items depending on a failed item;
4. atomic: any failure -> 400 with every item's problems (403 when an item writes what the caller may
   not), nothing written; perItem: the good ones go on;
5. creates: one executemany for elements, one lookup of their ids by name, values and relations in
   executemany batches; updates: each item's plan (`service.plan_update`) applied in batches;
6. history: created and updated elements are re-read in batches and recorded as a single write would
   record them; the elements at the other end of changed relations get one mirrored entry each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from blockrepo.elements import repository as elements_repository
from blockrepo.elements import service as element_service
from blockrepo.elements.repository import LoadedElement, NewRelation
from blockrepo.elements.service import UNRECORDED_KEYS, Writer, diff_elements
from blockrepo.elements.validation import (
    LARGEST_ID,
    ElementDraft,
    EndEntry,
    Reference,
    check_partners,
    parse_body,
    pointer,
    resolve_references,
)
from blockrepo.elements.view import ElementView
from blockrepo.errors import (
    ErrorItem,
    Forbidden,
    HasChildren,
    NotFound,
    PayloadTooLarge,
    ValidationFailed,
)
from blockrepo.history.recorder import ChangeLog
from blockrepo.massdata import repository
from blockrepo.massdata.listing import require_massdata
from blockrepo.massdata.reader import ElementReader
from blockrepo.metamodel.snapshot import BlockTypeDef

MODES = ("atomic", "perItem")
MATCHES = ("id", "name")
NewKey = tuple[str, int]  # ("new", index of the item that creates the element)


@dataclass
class BulkRequest:
    elements: list[Any]
    mode: str = "atomic"
    dry_run: bool = False
    match: str = "id"


def parse_request(body: dict[str, Any], max_elements: int) -> BulkRequest:
    """The envelope of a bulk write; 413 beyond `max_elements` items, 400 for anything malformed."""
    errors: list[ErrorItem] = []
    elements = body.get("elements")
    if not isinstance(elements, list):
        errors.append(
            ErrorItem("/elements", "mandatory", "elements (an array of element objects) is mandatory")
        )
        elements = []
    elif len(elements) > max_elements:
        raise PayloadTooLarge(f"at most {max_elements} elements per request, got {len(elements)}")
    mode = body.get("mode", "atomic")
    if mode not in MODES:
        errors.append(ErrorItem("/mode", "wrong_value", f"mode is one of {', '.join(MODES)}"))
    match = body.get("match", "id")
    if match not in MATCHES:
        errors.append(ErrorItem("/match", "wrong_value", f"match is one of {', '.join(MATCHES)}"))
    dry_run = body.get("dryRun", False)
    if not isinstance(dry_run, bool):
        errors.append(ErrorItem("/dryRun", "wrong_type", "dryRun is true or false"))
    for key in body:
        if key not in ("elements", "mode", "match", "dryRun"):
            errors.append(ErrorItem(pointer(key), "unknown_property", f"a bulk write has no member {key!r}"))
    if errors:
        raise ValidationFailed("; ".join(f"{e.pointer}: {e.message}" for e in errors), errors=errors)
    return BulkRequest(elements, str(mode), bool(dry_run), str(match))


@dataclass
class _Item:
    index: int
    body: dict[str, Any] | None
    element_id: int | None = None  # the element updated; None: created
    draft: ElementDraft | None = None
    status: int | None = None  # set once the item failed
    errors: list[ErrorItem] = field(default_factory=list)
    pending: list[tuple[Reference, int]] = field(default_factory=list)  # refs to elements of earlier items
    aside_ends: dict[str, list[EndEntry]] = field(default_factory=dict)
    aside_parent: Reference | None = None
    new_id: int | None = None

    @property
    def failed(self) -> bool:
        return self.status is not None

    @property
    def creating(self) -> bool:
        return self.element_id is None

    def fail(self, status: int, errors: Iterable[ErrorItem]) -> None:
        if self.status is None:
            self.status = status
            self.errors = list(errors)

    def result(self, dry_run: bool) -> dict[str, Any]:
        if self.failed:
            status = self.status
            element_id = self.element_id
        else:
            status = 201 if self.creating else 200
            element_id = self.element_id if self.element_id is not None else self.new_id
        result: dict[str, Any] = {"index": self.index, "status": status, "id": element_id}
        if dry_run and self.creating:
            result["id"] = None
        result["errors"] = [e.as_dict() for e in self.errors]
        return result


@dataclass(frozen=True)
class BulkOutcome:
    created: int
    updated: int
    failed: int
    results: list[dict[str, Any]]
    dry_run: bool

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"created": self.created, "updated": self.updated, "failed": self.failed}
        if self.dry_run:
            body["dryRun"] = True
        body["results"] = self.results
        return body


def bulk_write(writer: Writer, type_name: str, request: BulkRequest) -> BulkOutcome:
    """Create and update many elements of one type; see the module docstring. Needs MASSDATA."""
    require_massdata(writer.actor)
    type_def = element_service.resolve_type(writer.metamodel, writer.actor, type_name)
    repository.plan_with_parameters(writer.db)
    items = [_Item(i, raw if isinstance(raw, dict) else None) for i, raw in enumerate(request.elements)]
    for item in items:
        if item.body is None:
            item.fail(400, [ErrorItem("", "wrong_type", "an element is a JSON object")])
    _assign_targets(writer, type_def, items, request.match)
    _parse(writer, type_def, items)
    drafts = [item.draft for item in items if item.draft is not None]
    resolve_references(writer.db, writer.metamodel, drafts)
    check_partners(writer.db, drafts)
    for item in items:
        _restore(item)
    _check_across_items(writer, type_def, items)
    _decide(writer, type_def, items)
    failed = [item for item in items if item.failed]
    results = [item.result(request.dry_run) for item in items]
    if request.mode == "atomic" and failed:
        errors = [
            ErrorItem(f"/elements/{item.index}{e.pointer}", e.code, e.message)
            for item in failed
            for e in item.errors
        ]
        detail = f"{len(failed)} of {len(items)} element(s) failed; nothing was written"
        if any(item.status == 403 for item in failed):
            # Writing what the caller may not write is 403, as in the element API, with every problem.
            raise Forbidden(detail, errors=errors, extra={"results": results})
        raise ValidationFailed(detail, errors=errors, extra={"results": results})
    good = [item for item in items if not item.failed]
    if not request.dry_run:
        _persist(writer, type_def, items, good)
        results = [item.result(False) for item in items]
    return BulkOutcome(
        created=sum(1 for item in good if item.creating),
        updated=sum(1 for item in good if not item.creating),
        failed=len(failed),
        results=results,
        dry_run=request.dry_run,
    )


# --- validation ----------------------------------------------------------------------------------------


def _single_id(raw: Any) -> int | None:
    value = raw[0] if isinstance(raw, list) and len(raw) == 1 else raw
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= LARGEST_ID:
        return None
    return value


def _assign_targets(writer: Writer, type_def: BlockTypeDef, items: Sequence[_Item], match: str) -> None:
    """Which element each item updates: its `id`, or (match by name) the element of that name."""
    by_id: list[_Item] = []
    by_name: dict[str, list[_Item]] = {}
    for item in items:
        if item.body is None:
            continue
        if "id" in item.body:
            element_id = _single_id(item.body["id"])
            if element_id is None:
                item.fail(400, [ErrorItem("/id", "wrong_type", "id is a positive integer (or [n])")])
                continue
            item.element_id = element_id
            by_id.append(item)
        elif match == "name":
            raw = item.body.get("name")
            if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], str):
                by_name.setdefault(raw[0], []).append(item)
    found = repository.ids_by_name(writer.db, type_def.id, by_name)
    for name, named in by_name.items():
        for item in named:
            item.element_id = found.get(name)
            if item.element_id is not None:
                by_id.append(item)
    existing = repository.existing_ids(
        writer.db, type_def.id, (item.element_id or 0 for item in by_id), lock=True
    )
    seen: dict[int, int] = {}
    for item in sorted(by_id, key=lambda i: i.index):
        assert item.element_id is not None
        if item.element_id not in existing:
            item.fail(
                404, [ErrorItem("/id", "not_found", f"there is no {type_def.name} with id {item.element_id}")]
            )
        elif item.element_id in seen:
            message = f"element {item.element_id} is already written by item {seen[item.element_id]}"
            item.fail(400, [ErrorItem("/id", "duplicate", message)])
        else:
            seen[item.element_id] = item.index
    actor = writer.actor
    for item in items:
        if item.failed:
            continue
        action = "create" if item.creating else "update"
        if not actor.can_type(type_def.id, action):
            item.fail(403, [ErrorItem("", "forbidden", f"you may not {action} {type_def.name} elements")])


def _parse(writer: Writer, type_def: BlockTypeDef, items: Sequence[_Item]) -> None:
    """Parse every body; set aside references to elements that earlier items create (they resolve once
    those exist), so that the rest resolve against the database in one go."""
    creators: dict[str, int] = {}
    for item in items:
        if item.failed or item.body is None:
            continue
        draft = parse_body(writer.metamodel, writer.actor, type_def, item.body, element_id=item.element_id)
        if draft.forbidden:
            item.fail(403, draft.forbidden)
            continue
        item.draft = draft

        def earlier(reference: Reference) -> int | None:
            if reference.id is not None or reference.type_id != type_def.id or reference.name is None:
                return None
            return creators.get(reference.name)

        for end_name, entries in draft.ends.items():
            kept = []
            for entry in entries:
                creator = earlier(entry.reference)
                if creator is None:
                    kept.append(entry)
                else:
                    item.pending.append((entry.reference, creator))
            if len(kept) != len(entries):
                item.aside_ends[end_name] = entries
                draft.ends[end_name] = kept
        if draft.parent is not None and (creator := earlier(draft.parent)) is not None:
            item.pending.append((draft.parent, creator))
            item.aside_parent = draft.parent
            draft.parent = None
        if draft.creating and draft.name is not None:
            creators.setdefault(draft.name, item.index)


def _restore(item: _Item) -> None:
    """Put the set-aside references back in their places."""
    draft = item.draft
    if draft is None:
        return
    draft.ends.update(item.aside_ends)
    if item.aside_parent is not None:
        draft.parent = item.aside_parent


def _pending_keys(item: _Item) -> dict[int, NewKey]:
    return {id(reference): ("new", creator) for reference, creator in item.pending}


def _key_of(reference: Reference, pending: dict[int, NewKey]) -> int | NewKey | None:
    return pending.get(id(reference), reference.resolved_id)


def _holder_key(item: _Item) -> int | NewKey:
    return item.element_id if item.element_id is not None else ("new", item.index)


def _check_across_items(writer: Writer, type_def: BlockTypeDef, items: Sequence[_Item]) -> None:
    """Rules that span items: the same new element listed twice, one single-valued partner claimed by two
    holders, and moves that would close a cycle in the hierarchy."""
    claims: dict[tuple[int, bool, int | NewKey], int | NewKey] = {}
    new_parents: dict[int, int | NewKey] = {}  # index of a creating item -> its parent
    moves: dict[int, int | NewKey | None] = {}  # id of an updated element -> its new parent
    movers: list[_Item] = []
    for item in items:
        draft = item.draft
        if item.failed or draft is None:
            continue
        pending = _pending_keys(item)
        for end_name, entries in draft.ends.items():
            end = type_def.ends[end_name]
            seen: set[int | NewKey] = set()
            opposite_multiple = (
                end.relation_type.target_multiple
                if end.holder_is_source
                else end.relation_type.source_multiple
            )
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
                if opposite_multiple:
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
            new_parents[item.index] = parent
        elif not item.creating and draft.parent_given:
            assert item.element_id is not None
            moves[item.element_id] = parent
            movers.append(item)
    if not movers:
        return
    starts = [p for p in (*new_parents.values(), *moves.values()) if isinstance(p, int)]
    stored = repository.parent_chains(writer.db, starts)

    def parent_of(key: int | NewKey) -> int | NewKey | None:
        if isinstance(key, tuple):
            return new_parents.get(key[1])
        return moves[key] if key in moves else stored.get(key)

    limit = len(stored) + len(items) + 1
    for item in movers:
        assert item.draft is not None and item.element_id is not None
        current = moves[item.element_id]
        for _ in range(limit):
            if current is None:
                break
            if current == item.element_id:
                reference = item.aside_parent or item.draft.parent
                item.draft.error(
                    reference.pointer if reference else "/parent",
                    "cycle",
                    "the parent is the element itself or one of its descendants",
                )
                break
            current = parent_of(current)


def _decide(writer: Writer, type_def: BlockTypeDef, items: Sequence[_Item]) -> None:
    """In item order: an item fails on its own problems, on a name another element has, or when an
    element it refers to was to be created by an item that failed."""
    names = {item.draft.name for item in items if item.draft is not None and item.draft.name is not None}
    owners = repository.ids_by_name(writer.db, type_def.id, names)
    claimed: dict[str, int] = {}
    for item in items:
        draft = item.draft
        if item.failed or draft is None:
            continue
        if draft.errors:
            item.fail(400, draft.errors)
            continue
        broken = [(reference, creator) for reference, creator in item.pending if items[creator].failed]
        if broken:
            item.fail(
                400,
                [
                    ErrorItem(
                        reference.pointer,
                        "failed_dependency",
                        f"{reference.name!r} was to be created by element {creator}, which failed",
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
            item.fail(409, [ErrorItem("/name/0", "name_conflict", message)])
        elif draft.name in claimed:
            message = f"element {claimed[draft.name]} of this request is named {draft.name!r} already"
            item.fail(409, [ErrorItem("/name/0", "name_conflict", message)])
        else:
            claimed[draft.name] = item.index


# --- persistence ---------------------------------------------------------------------------------------


def _relation(
    end_holder_is_source: bool, rt_id: int, holder: int, other: int, index: int, entry: Any
) -> NewRelation:
    values = entry.attributes or {}
    if end_holder_is_source:
        return NewRelation(rt_id, holder, other, index, values)
    return NewRelation(rt_id, other, holder, None, values)


def _persist(writer: Writer, type_def: BlockTypeDef, items: Sequence[_Item], good: Sequence[_Item]) -> None:
    """Write the items that passed (`good`, a part of `items`, which pending references index)."""
    db, now, login = writer.db, writer.changes.now, writer.actor.login
    full = ElementView.build(writer.metamodel, None, type_def)
    creates = [item for item in good if item.creating]
    updates = [item for item in good if not item.creating]
    # Before any write: the state the updates change (creates may add relations to these elements).
    before = elements_repository.load_elements(
        db, type_def.id, [u.element_id or 0 for u in updates], full.selection
    )
    touched: set[int] = set()
    inserted: set[tuple[int, int, int]] = set()
    _insert_creates(writer, type_def, creates, items, touched, inserted)
    changed = _apply_updates(writer, type_def, updates, before, touched, inserted)
    written = {item.new_id for item in creates} | {item.element_id for item in changed}
    reader = ElementReader(full)
    after = {element["id"][0]: element for element in reader.read(db, [i for i in written if i is not None])}
    mirror = NeighbourMirror({i for i in written if i is not None})
    for item in creates:
        assert item.new_id is not None
        rendered = after[item.new_id]
        writer.changes.element(
            "created",
            type_name=type_def.name,
            element_id=item.new_id,
            element_name=rendered["name"][0],
            changes=[
                {"property": key, "old": [], "new": value}
                for key, value in rendered.items()
                if key not in UNRECORDED_KEYS and value
            ],
        )
        mirror.add(type_def, item.new_id, None, rendered)
    for item in changed:
        assert item.element_id is not None
        old, new = full.render(before[item.element_id]), after[item.element_id]
        writer.changes.element(
            "updated",
            type_name=type_def.name,
            element_id=item.element_id,
            element_name=new["name"][0],
            changes=diff_elements(type_def, old, new),
        )
        mirror.add(type_def, item.element_id, old, new)
    neighbours = mirror.record(writer.changes)
    elements_repository.bump_elements(db, neighbours, now=now, user=login)


def _insert_creates(
    writer: Writer,
    type_def: BlockTypeDef,
    creates: Sequence[_Item],
    items: Sequence[_Item],
    touched: set[int],
    inserted: set[tuple[int, int, int]],
) -> None:
    if not creates:
        _resolve_pending(items)
        return
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
    for item in creates:
        draft = item.draft
        assert draft is not None and draft.name is not None
        parent: int | NewKey | None = None
        if item.aside_parent is not None:
            parent = ("new", next(c for r, c in item.pending if r is item.aside_parent))
        elif draft.parent is not None:
            parent = draft.parent.resolved_id
        # A new child goes last among its siblings, as a single create places it.
        position = positions.get(parent, -1) + 1
        positions[parent] = position
        rows.append(
            {
                "type_id": type_def.id,
                "name": draft.name,
                "description": draft.description or "",
                "parent_id": parent if isinstance(parent, int) else None,
                "position": position,
                "revision": 1,
                "created_at": now,
                "last_modified_at": now,
                "last_modified_by": login,
            }
        )
        if isinstance(parent, int):
            touched.add(parent)
    repository.insert_elements(db, rows)
    ids = repository.ids_by_name(
        db, type_def.id, [item.draft.name for item in creates if item.draft and item.draft.name]
    )
    for item in creates:
        assert item.draft is not None and item.draft.name is not None
        item.new_id = ids[item.draft.name]
    _resolve_pending(items)
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
    repository.insert_values(
        db,
        [
            {"element_id": item.new_id, "attribute_id": attribute_id, "position": position, **value.columns()}
            for item in creates
            if item.draft is not None
            for attribute_id, values in item.draft.values.items()
            for position, value in enumerate(values)
        ],
    )
    relations: list[NewRelation] = []
    for item in creates:
        assert item.draft is not None and item.new_id is not None
        for end_name, entries in item.draft.ends.items():
            end = type_def.ends[end_name]
            for index, entry in enumerate(entries):
                other = entry.reference.resolved_id
                assert other is not None
                relation = _relation(
                    end.holder_is_source, end.relation_type.id, item.new_id, other, index, entry
                )
                triple = (relation.relation_type_id, relation.source_id, relation.target_id)
                if triple in inserted:
                    continue  # both elements list each other: one relation
                inserted.add(triple)
                relations.append(relation)
                touched.add(other)
    elements_repository.insert_relations(db, relations)


def _resolve_pending(items: Sequence[_Item]) -> None:
    """References to elements created by earlier items point at their new ids now."""
    for item in items:
        if item.failed:
            continue
        for reference, creator in item.pending:
            source = items[creator]
            assert source.draft is not None
            reference.resolved_id, reference.resolved_name = source.new_id, source.draft.name


def _apply_updates(
    writer: Writer,
    type_def: BlockTypeDef,
    updates: Sequence[_Item],
    before: dict[int, LoadedElement],
    touched: set[int],
    inserted: set[tuple[int, int, int]],
) -> list[_Item]:
    """Apply each update's plan in batches; returns the items that changed something."""
    db, now, login = writer.db, writer.changes.now, writer.actor.login
    plans = []
    for item in updates:
        assert item.draft is not None and item.element_id is not None
        plan = element_service.plan_update(item.draft, before[item.element_id])
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
    elements_repository.delete_relations(db, removed)
    elements_repository.set_relation_positions(db, reordered)
    elements_repository.replace_relation_values(db, relation_values)
    elements_repository.insert_relations(db, relations)
    return [item for item, _ in plans]


# --- history of the other ends -------------------------------------------------------------------------


def _entry_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
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
        if other["id"] in self.skip:
            return
        record = self.mirrored.setdefault(
            other["id"], {"type": other_type, "name": other["name"], "changes": {}}
        )
        change = record["changes"].setdefault(prop, {"property": prop, "added": [], "removed": []})
        change[side].append(entry)

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
            added, removed = _entry_diff(old_entries or [], new_entries or [])
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

    def record(self, changes: ChangeLog) -> set[int]:
        """Record the collected changesets; returns the ids of the elements recorded here: their JSON
        changed, so their revision must move."""
        for other_id, record in self.mirrored.items():
            changes.element(
                "updated",
                type_name=record["type"],
                element_id=other_id,
                element_name=record["name"],
                changes=list(record["changes"].values()),
            )
        return set(self.mirrored)


# --- bulk delete ---------------------------------------------------------------------------------------


def parse_delete(body: dict[str, Any], max_elements: int) -> list[int]:
    ids = body.get("ids")
    errors: list[ErrorItem] = []
    if not isinstance(ids, list):
        errors.append(ErrorItem("/ids", "mandatory", "ids (an array of element ids) is mandatory"))
        ids = []
    elif len(ids) > max_elements:
        raise PayloadTooLarge(f"at most {max_elements} ids per request, got {len(ids)}")
    # JSON does not tell 7 from 7.0; the published schema (`integer`) accepts both, and so does the service.
    ids = [int(raw) if isinstance(raw, float) and raw.is_integer() else raw for raw in ids]
    for index, raw in enumerate(ids):
        if _single_id(raw) is None or isinstance(raw, list):
            errors.append(ErrorItem(f"/ids/{index}", "wrong_type", "an id is a positive integer"))
    for key in body:
        if key != "ids":
            errors.append(ErrorItem(pointer(key), "unknown_property", f"a bulk delete has no member {key!r}"))
    if errors:
        raise ValidationFailed("; ".join(f"{e.pointer}: {e.message}" for e in errors), errors=errors)
    return [int(i) for i in ids]


def bulk_delete(writer: Writer, type_name: str, ids: Sequence[int], *, recursive: bool = False) -> int:
    """Delete elements of one type (all or nothing) with their relations; with `recursive`, their
    descendants too. Returns how many elements were deleted. Needs MASSDATA."""
    require_massdata(writer.actor)
    type_def = element_service.resolve_type(writer.metamodel, writer.actor, type_name, "delete")
    db = writer.db
    wanted = list(dict.fromkeys(ids))
    existing = repository.existing_ids(db, type_def.id, wanted, lock=True)
    missing = [(index, i) for index, i in enumerate(ids) if i not in existing]
    if missing:
        errors = [
            ErrorItem(f"/ids/{index}", "not_found", f"there is no {type_name} with id {i}")
            for index, i in missing
        ]
        raise NotFound(f"{len(missing)} id(s) name no {type_name}; nothing was deleted", errors=errors)
    doomed = repository.subtrees(db, wanted)
    descendants = [i for i in doomed if i not in existing]
    if descendants and not recursive:
        raise HasChildren(
            f"{len(descendants)} element(s) below the given ones would be left without parent; delete them "
            "too or pass ?recursive=true",
            extra={"children": descendants[:100]},
        )
    full = ElementView.build(writer.metamodel, None, type_def)
    loaded = elements_repository.load_elements(db, type_def.id, doomed, full.selection)
    mirror = NeighbourMirror(set(doomed))
    touched: set[int] = set()
    for element_id in doomed:
        element = loaded[element_id]
        rendered = full.render(element)
        writer.changes.element(
            "deleted",
            type_name=type_def.name,
            element_id=element_id,
            element_name=element.name,
            changes=[
                {"property": key, "old": value, "new": []}
                for key, value in rendered.items()
                if key not in UNRECORDED_KEYS and value
            ],
        )
        mirror.add(type_def, element_id, rendered, None)
        touched.update(item.other_id for items in element.ends.values() for item in items)
        if element.parent_id is not None:
            touched.add(element.parent_id)
    neighbours = mirror.record(writer.changes)
    elements_repository.delete_elements(db, doomed)
    elements_repository.bump_elements(db, neighbours, now=writer.changes.now, user=writer.actor.login)
    return len(doomed)
