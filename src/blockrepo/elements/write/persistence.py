"""Writes the validated items of 1..n types and the deletions as one write, then has it recorded (the
revisions of updated elements come from the recorder)."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

from blockrepo.elements import repository as lookups
from blockrepo.elements.compiled import view_of
from blockrepo.elements.read.repository import LoadedElement, load_elements
from blockrepo.elements.values import TypedValue
from blockrepo.elements.write import repository
from blockrepo.elements.write.items import NewKey, TypeItems, WriteItem, Writer
from blockrepo.elements.write.plan import UpdatePlan, new_relation, plan_update
from blockrepo.elements.write.record import ElementRecorder, Received, Written, receivers
from blockrepo.elements.write.repository import NewRelation
from blockrepo.metamodel.snapshot import BlockTypeDef
from blockrepo.storage.write_pipeline import pipelined

VALUES_BATCH = 5000  # created items whose values are inserted together
PIPELINE_MIN_CREATES = 500  # created elements from which a write's inserts run on a pipeline


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
        or load_elements(db, type_id, [item.element_id or 0 for item in items], views[type_id].selection)
        for type_id, items in updates.items()
    }
    gone: list[tuple[BlockTypeDef, int, dict[str, Any]]] = []
    for type_def, ids in deletions:
        view = views[type_def.id]
        last = load_elements(db, type_def.id, ids, view.selection)
        gone += [(type_def, element_id, view.render(last[element_id])) for element_id in ids]
    recorder = ElementRecorder(db, writer.changes, writer.actor.login)
    inserted: set[tuple[int, int, int]] = set()
    # A large write's rows go into SQLite on a second thread while this one goes on to build the next
    # ones and record the history (`storage.write_pipeline`); a single write is not worth a thread.
    created = sum(len(items) for items in creates.values())
    with pipelined(db) if created >= PIPELINE_MIN_CREATES else nullcontext():
        _insert_elements(writer, [(group.type_def, creates[group.type_def.id]) for group in groups])
        for group in groups:
            _resolve_pending(group.items)
        received = {} if loaded else receivers(groups)
        for group in groups:
            _insert_contents(writer, group.type_def, creates[group.type_def.id], inserted, received)
        plans = {
            group.type_def.id: _apply_updates(
                writer,
                recorder,
                group.type_def,
                updates[group.type_def.id],
                before[group.type_def.id],
                inserted,
                order_counts=order_counts,
            )
            for group in groups
        }
        for _, ids in deletions:
            repository.delete_elements(db, ids)
        changed = {type_id: [item for item, _ in applied_plans] for type_id, applied_plans in plans.items()}
        return recorder.write(
            writer,
            groups,
            views,
            creates,
            changed,
            before,
            gone,
            order_counts,
            loaded,
            plans,
            received,
        )


def _insert_elements(writer: Writer, groups: Sequence[tuple[BlockTypeDef, Sequence[WriteItem]]]) -> None:
    """The element rows of the created items of every type, in item order, each last among its
    siblings; sets their `new_id`. Parents created by the write itself are set by `_insert_contents`.
    Every type's positions are read before any row is written: on the write pipeline a read waits for
    the rows before it."""
    rows = [_element_rows(writer, type_def, creates) for type_def, creates in groups]
    for (_, creates), ids in zip(groups, repository.insert_named_elements(writer.db, rows), strict=True):
        for item in creates:
            assert item.draft is not None and item.draft.name is not None
            item.new_id = ids[item.draft.name]


def _element_rows(
    writer: Writer, type_def: BlockTypeDef, creates: Sequence[WriteItem]
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
    for stored_parent, last in lookups.last_child_positions(db, type_def.id, {*stored_parents, None}).items():
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
    return rows


def _insert_contents(
    writer: Writer,
    type_def: BlockTypeDef,
    creates: Sequence[WriteItem],
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
    recorder: ElementRecorder,
    type_def: BlockTypeDef,
    updates: Sequence[WriteItem],
    before: dict[int, LoadedElement],
    inserted: set[tuple[int, int, int]],
    *,
    order_counts: bool = True,
) -> list[tuple[WriteItem, UpdatePlan]]:
    """Apply each update's plan in batches, at the revision `recorder` hands out; returns the items that
    changed something with their plans."""
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
    positions = lookups.last_child_positions(db, type_def.id, moved_to)
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
                "new_revision": recorder.revision(old),
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
    repository.update_elements_and_values(db, rows, value_pairs, value_rows)
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
