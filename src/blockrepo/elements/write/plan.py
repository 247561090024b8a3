"""What an update changes compared with the element's current state (`UpdatePlan`), and the relation
rows a write makes."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from blockrepo.elements.read.repository import LoadedElement
from blockrepo.elements.values import TypedValue
from blockrepo.elements.write.drafts import ElementDraft
from blockrepo.elements.write.repository import NewRelation
from blockrepo.metamodel.snapshot import RelationEnd

# Builds a NamedTuple from its fields without the Python-level constructor (see values._typed).
_NEW_TUPLE = tuple.__new__


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
        # Without `order_counts`, the positions of an end that keeps its elements are dropped.
        positions = plan.positions if order_counts or wanted != current.keys() else {}
        for index, entry in enumerate(entries):
            new_other = entry.reference.resolved_id
            assert new_other is not None
            existing = current.get(new_other)
            if existing is None:
                plan.add_relations.append(new_relation(end, before.id, new_other, index, entry.attributes))
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
    return plan


def applied(
    before: LoadedElement, plan: UpdatePlan, revision: int, now: dt.datetime, login: str
) -> LoadedElement | None:
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
        revision=revision,
        last_modified_at=now,
        last_modified_by=login,
        values={**before.values, **plan.values},
    )
