"""The single-element rules: read, create, update (partial) and delete, with permissions and history.

Services never commit; the route does. Each write validates the whole body first (every problem in one
400), then writes set-based, bumps the revision of every element whose JSON changed exactly once, and
records field-level history for all of them in the request's ChangeLog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import repository
from blockrepo.elements.repository import LoadedElement, NewRelation
from blockrepo.elements.validation import (
    ElementDraft,
    check_partners,
    parse_body,
    resolve_references,
)
from blockrepo.elements.values import TypedValue
from blockrepo.elements.view import ElementView, read_elements
from blockrepo.errors import (
    Conflict,
    Forbidden,
    HasChildren,
    NameConflict,
    NotFound,
    PreconditionFailed,
    UnknownType,
    ValidationFailed,
)
from blockrepo.history.recorder import ChangeLog, apply_related_change
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel

__all__ = [
    "ElementView",
    "create_element",
    "delete_element",
    "get_element",
    "read_elements",
    "update_element",
]

# Keys of the element JSON that history does not record (they change with every write).
UNRECORDED_KEYS = frozenset({"id", "type", "revision", "lastModificationTime", "lastModificationUser"})

RevisionCheck = Callable[[int], bool]


@dataclass
class Writer:
    """Who writes where: the request's session, metamodel snapshot, actor and change log."""

    db: Session
    metamodel: Metamodel
    actor: Actor
    changes: ChangeLog


def resolve_type(metamodel: Metamodel, actor: Actor, type_name: str, action: str = "read") -> BlockTypeDef:
    """The type, if the actor may read it and perform `action` on its elements (404 / 403 otherwise)."""
    type_def = metamodel.type_named(type_name)
    if type_def is None:
        raise UnknownType(f"there is no building block type {type_name!r}")
    if not actor.can_type(type_def.id, "read") or not actor.can_type(type_def.id, action):
        raise Forbidden(f"you may not {action} {type_name} elements")
    return type_def


def get_element(
    db: Session, metamodel: Metamodel, actor: Actor, type_name: str, element_id: int
) -> dict[str, Any]:
    type_def = resolve_type(metamodel, actor, type_name)
    found = read_elements(db, metamodel, actor, type_def, [element_id])
    if not found:
        raise NotFound(f"there is no {type_name} with id {element_id}")
    return found[0]


def _raise_forbidden(drafts: Sequence[ElementDraft]) -> None:
    forbidden = [item for draft in drafts for item in draft.forbidden]
    if forbidden:
        raise Forbidden("; ".join(f"{e.pointer}: {e.message}" for e in forbidden), errors=forbidden)


def _raise_problems(drafts: Sequence[ElementDraft]) -> None:
    _raise_forbidden(drafts)
    errors = [item for draft in drafts for item in draft.errors]
    if errors:
        detail = f"{len(errors)} problem(s): " + "; ".join(f"{e.pointer}: {e.message}" for e in errors[:5])
        raise ValidationFailed(detail, errors=errors)


def _validate(writer: Writer, draft: ElementDraft) -> None:
    """Everything that can make the body invalid, all problems in one error."""
    _raise_forbidden([draft])  # a write to a property the actor may not touch is 403, before any lookup
    resolve_references(writer.db, writer.metamodel, [draft])
    check_partners(writer.db, [draft])
    new_parent = draft.parent.resolved_id if draft.parent is not None else None
    if (
        draft.element_id is not None
        and new_parent is not None
        and draft.element_id in repository.ancestor_ids(writer.db, new_parent)
    ):
        assert draft.parent is not None
        draft.error(
            draft.parent.pointer, "cycle", "the parent is the element itself or one of its descendants"
        )
    _raise_problems([draft])
    if draft.name is not None:
        owner = repository.name_owner(writer.db, draft.type_def.id, draft.name)
        if owner is not None and owner != draft.element_id:
            raise NameConflict(
                f"a {draft.type_def.name} named {draft.name!r} already exists (id {owner})",
                extra={"conflictingId": owner},
            )


@contextmanager
def concurrent_change_guard(name: str | None = None) -> Iterator[None]:
    """Validation ran before the writes; a concurrent request can still win a race the checks could not
    see (the same name created in parallel, a target deleted meanwhile). Those surface as constraint
    violations and become 409s instead of 500s."""
    try:
        yield
    except IntegrityError as exc:
        message = str(exc.orig)
        if name is not None and (
            "uq_element_type_id" in message or "element.type_id, element.name" in message
        ):
            raise NameConflict(f"an element named {name!r} was just created by another request") from exc
        raise Conflict("the change conflicts with a concurrent change; retry") from exc


def create_element(writer: Writer, type_name: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create an element from a body (name required); returns its JSON as the actor sees it."""
    type_def = resolve_type(writer.metamodel, writer.actor, type_name, "create")
    draft = parse_body(writer.metamodel, writer.actor, type_def, body, element_id=None)
    _validate(writer, draft)
    now, user = writer.changes.now, writer.actor.login
    parent_id = draft.parent.resolved_id if draft.parent is not None else None
    with concurrent_change_guard(draft.name):
        element_id = repository.insert_element(
            writer.db,
            type_id=type_def.id,
            name=draft.name or "",
            description=draft.description or "",
            parent_id=parent_id,
            now=now,
            user=user,
        )
        repository.replace_values(writer.db, element_id, draft.values, existing=False)
        new_relations: list[NewRelation] = []
        touched: set[int] = set() if parent_id is None else {parent_id}
        for end_name, entries in draft.ends.items():
            end = type_def.ends[end_name]
            for index, entry in enumerate(entries):
                other = entry.reference.resolved_id
                assert other is not None  # resolved, or _validate raised
                touched.add(other)
                new_relations.append(
                    _relation(
                        end.relation_type.id, end.holder_is_source, element_id, other, index, entry.attributes
                    )
                )
        repository.insert_relations(writer.db, new_relations)
        # One new revision per element and request, as its changes fold into one changeset: a neighbour
        # this request already changed (the demo creates many elements in one request) keeps its revision.
        repository.bump_elements(writer.db, writer.changes.unrecorded(touched), now=now, user=user)
    full = ElementView.build(writer.metamodel, None, type_def)
    after = _load_one(writer.db, type_def, element_id, full)
    after_json = full.render(after)
    writer.changes.element(
        "created",
        type_name=type_def.name,
        element_id=element_id,
        element_name=after.name,
        changes=[
            {"property": key, "old": [], "new": value}
            for key, value in after_json.items()
            if key not in UNRECORDED_KEYS and value
        ],
    )
    _record_neighbours(writer, type_def, element_id, None, after_json)
    return ElementView.build(writer.metamodel, writer.actor, type_def).render(after)


def _relation(
    relation_type_id: int,
    holder_is_source: bool,
    holder_id: int,
    other_id: int,
    index: int,
    attributes: dict[int, list[TypedValue]] | None,
) -> NewRelation:
    if holder_is_source:
        return NewRelation(relation_type_id, holder_id, other_id, index, attributes or {})
    return NewRelation(relation_type_id, other_id, holder_id, None, attributes or {})


def _load_one(db: Session, type_def: BlockTypeDef, element_id: int, view: ElementView) -> LoadedElement:
    return repository.load_elements(db, type_def.id, [element_id], view.selection)[element_id]


def _lock(writer: Writer, type_def: BlockTypeDef, element_id: int, if_match: RevisionCheck | None) -> None:
    head = repository.lock_element(writer.db, type_def.id, element_id)
    if head is None:
        raise NotFound(f"there is no {type_def.name} with id {element_id}")
    if if_match is not None and not if_match(head.revision):
        raise PreconditionFailed(
            f"the element is at revision {head.revision}; If-Match does not match",
            extra={"currentRevision": head.revision},
        )


@dataclass
class _Plan:
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


def _plan_update(draft: ElementDraft, before: LoadedElement) -> _Plan:
    plan = _Plan()
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
        for index, entry in enumerate(entries):
            new_other = entry.reference.resolved_id
            assert new_other is not None
            existing = current.get(new_other)
            if existing is None:
                plan.add_relations.append(
                    _relation(
                        end.relation_type.id,
                        end.holder_is_source,
                        before.id,
                        new_other,
                        index,
                        entry.attributes,
                    )
                )
                plan.touched.add(new_other)
                continue
            if end.holder_is_source and existing.position != index:
                plan.positions[existing.relation_id] = index
            changed = {
                attribute_id: values
                for attribute_id, values in (entry.attributes or {}).items()
                if values != existing.values.get(attribute_id, [])
            }
            if changed:
                plan.relation_values[existing.relation_id] = changed
                plan.touched.add(new_other)
    return plan


def update_element(
    writer: Writer,
    type_name: str,
    element_id: int,
    body: dict[str, Any],
    *,
    if_match: RevisionCheck | None = None,
) -> dict[str, Any]:
    """Change the properties present in `body` (PUT and PATCH alike); a body that changes nothing writes
    nothing and keeps the revision."""
    type_def = resolve_type(writer.metamodel, writer.actor, type_name, "update")
    _lock(writer, type_def, element_id, if_match)
    draft = parse_body(writer.metamodel, writer.actor, type_def, body, element_id=element_id)
    _validate(writer, draft)
    full = ElementView.build(writer.metamodel, None, type_def)
    before = _load_one(writer.db, type_def, element_id, full)
    plan = _plan_update(draft, before)
    if not plan.empty:
        now, user = writer.changes.now, writer.actor.login
        with concurrent_change_guard(draft.name):
            repository.update_element(
                writer.db,
                element_id,
                fields=plan.element_fields,
                move_to_parent=plan.move,
                now=now,
                user=user,
            )
            repository.replace_values(writer.db, element_id, plan.values)
            repository.delete_relations(writer.db, plan.remove_relations)
            repository.set_relation_positions(writer.db, plan.positions)
            repository.replace_relation_values(writer.db, plan.relation_values)
            repository.insert_relations(writer.db, plan.add_relations)
            repository.bump_elements(
                writer.db, writer.changes.unrecorded(plan.touched - {element_id}), now=now, user=user
            )
    after = _load_one(writer.db, type_def, element_id, full) if not plan.empty else before
    if not plan.empty:
        before_json, after_json = full.render(before), full.render(after)
        writer.changes.element(
            "updated",
            type_name=type_def.name,
            element_id=element_id,
            element_name=after.name,
            changes=diff_elements(type_def, before_json, after_json),
        )
        _record_neighbours(writer, type_def, element_id, before_json, after_json)
    return ElementView.build(writer.metamodel, writer.actor, type_def).render(after)


def delete_element(
    writer: Writer,
    type_name: str,
    element_id: int,
    *,
    recursive: bool = False,
    if_match: RevisionCheck | None = None,
) -> None:
    """Delete an element (with `recursive`, its whole subtree) and its relations; the other ends of those
    relations and the parent get a new revision and a history entry."""
    type_def = resolve_type(writer.metamodel, writer.actor, type_name, "delete")
    _lock(writer, type_def, element_id, if_match)
    ids = repository.subtree_ids(writer.db, element_id)
    if len(ids) > 1 and not recursive:
        raise HasChildren(
            f"{type_def.name} {element_id} has children; delete them first or pass ?recursive=true",
            extra={"children": len(ids) - 1},
        )
    full = ElementView.build(writer.metamodel, None, type_def)
    loaded = repository.load_elements(writer.db, type_def.id, ids, full.selection)
    deleted = set(ids)
    for current_id in ids:
        element = loaded[current_id]
        before_json = full.render(element)
        writer.changes.element(
            "deleted",
            type_name=type_def.name,
            element_id=current_id,
            element_name=element.name,
            changes=[
                {"property": key, "old": value, "new": []}
                for key, value in before_json.items()
                if key not in UNRECORDED_KEYS and value
            ],
        )
        _record_neighbours(writer, type_def, current_id, before_json, None, skip=deleted)
    touched = {
        entry["id"]
        for element in loaded.values()
        for items in element.ends.values()
        for entry in ({"id": item.other_id} for item in items)
        if entry["id"] not in deleted
    }
    root_parent = loaded[element_id].parent_id
    if root_parent is not None:
        touched.add(root_parent)
    with concurrent_change_guard():
        repository.delete_elements(writer.db, ids)
        repository.bump_elements(writer.db, touched, now=writer.changes.now, user=writer.actor.login)


def diff_elements(
    type_def: BlockTypeDef, before: dict[str, Any], after: dict[str, Any]
) -> list[dict[str, Any]]:
    """Field-level changes between two renderings of one element: `old`/`new` for values, `added`/
    `removed` for relation ends and children (matched by id; changed relation attributes show the old
    entry as removed and the new one as added, and `order` lists the ids when the end was reordered as
    well); a pure reordering is recorded as `old`/`new`."""
    changes: list[dict[str, Any]] = []
    for key in dict.fromkeys([*before, *after]):
        if key in UNRECORDED_KEYS:
            continue
        old, new = before.get(key, []), after.get(key, [])
        if old == new:
            continue
        if key == "children" or key in type_def.ends:
            added, removed = _list_diff(old, new)
            if added or removed:
                change: dict[str, Any] = {"property": key, "added": added, "removed": removed}
                new_order = [entry["id"] for entry in new]
                if [entry["id"] for entry in apply_related_change(old, change)] != new_order:
                    change["order"] = new_order  # added and reordered at once: history keeps the order
                changes.append(change)
                continue
        changes.append({"property": key, "old": old, "new": new})
    return changes


def _list_diff(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> tuple[list[Any], list[Any]]:
    old_by_id = {entry["id"]: entry for entry in old}
    new_by_id = {entry["id"]: entry for entry in new}
    added = [entry for entry in new if old_by_id.get(entry["id"]) != entry]
    removed = [entry for entry in old if new_by_id.get(entry["id"]) != entry]
    return added, removed


def _record_neighbours(
    writer: Writer,
    type_def: BlockTypeDef,
    element_id: int,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    *,
    skip: Iterable[int] = (),
) -> None:
    """Mirror the element's relation and parent changes into the history of the elements at the other
    ends (their JSON changed too)."""
    skipped = set(skip)
    mirrored: dict[tuple[int, str, str], dict[str, Any]] = {}

    def mirror(other_type: str, other: dict[str, Any], prop: str, entry: dict[str, Any], side: str) -> None:
        if other["id"] in skipped:
            return
        key = (other["id"], other_type, prop)
        record = mirrored.setdefault(
            key, {"name": other["name"], "change": {"property": prop, "added": [], "removed": []}}
        )
        record["change"][side].append(entry)

    def me(state: dict[str, Any], relation: dict[str, Any] | None = None) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": element_id, "name": state["name"][0]}
        if relation is not None and "attributes" in relation:
            entry["attributes"] = relation["attributes"]
        return entry

    old_state, new_state = before or {}, after or {}
    for end_name, end in type_def.ends.items():
        added, removed = _list_diff(old_state.get(end_name, []), new_state.get(end_name, []))
        for entry in removed:
            mirror(end.other_type, entry, end.opposite_name, me(old_state, entry), "removed")
        for entry in added:
            mirror(end.other_type, entry, end.opposite_name, me(new_state, entry), "added")
    if type_def.hierarchical:
        old_parent, new_parent = old_state.get("parent", []), new_state.get("parent", [])
        if old_parent != new_parent:
            for parent in old_parent:
                mirror(type_def.name, parent, "children", me(old_state), "removed")
            for parent in new_parent:
                mirror(type_def.name, parent, "children", me(new_state), "added")
    for (other_id, other_type, _), record in mirrored.items():
        writer.changes.element(
            "updated",
            type_name=other_type,
            element_id=other_id,
            element_name=record["name"],
            changes=[record["change"]],
        )


# Bulk writes (blockrepo.massdata.bulk) validate many drafts at once and persist them set-based, but plan
# each update exactly as a single write does.
UpdatePlan = _Plan
plan_update = _plan_update
