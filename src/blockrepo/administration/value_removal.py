"""Removing stored values when the metamodel takes an attribute (or some of its literals) away.

Set-based: one query reads every affected value with its element, one UPDATE per chunk bumps the elements'
revisions, one DELETE removes the values; each affected element gets one "updated" change in history in the
same shape the element API records (values `old`/`new`; relation attributes as the entry `removed` with its
old attribute values and `added` with the new ones).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from typing import Any

from sqlalchemy import and_, delete, select
from sqlalchemy.orm import Session, aliased

from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.repository import bump_elements
from blockrepo.elements.values import TypedValue, encode_value
from blockrepo.history.recorder import ChangeLog
from blockrepo.metamodel.snapshot import AttributeDef, Metamodel


def _typed(row: Any) -> TypedValue:
    return TypedValue(
        text=row.text_value,
        number=row.number_value,
        date=row.date_value,
        date_end=row.date_end,
        boolean=row.bool_value,
        literal_id=row.literal_id,
    )


def remove_element_values(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    *,
    type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
    login: str,
    now: dt.datetime,
) -> int:
    """Delete the attribute's values on elements (of `type_ids`, or all; only values of `literal_ids`, or
    all) and record the change per element. Returns the number of elements touched."""
    if (type_ids is not None and not type_ids) or (literal_ids is not None and not literal_ids):
        return 0
    condition = ElementValue.attribute_id == attribute.id
    if type_ids is not None:
        condition = and_(
            condition,
            ElementValue.element_id.in_(select(Element.id).where(Element.type_id.in_(list(type_ids)))),
        )
    if literal_ids is not None:
        having_literal = select(ElementValue.element_id).where(
            ElementValue.attribute_id == attribute.id, ElementValue.literal_id.in_(list(literal_ids))
        )
        # Read every value of the affected elements, so history shows the whole old and new list.
        read_condition = and_(condition, ElementValue.element_id.in_(having_literal))
    else:
        read_condition = condition
    rows = db.execute(
        select(ElementValue, Element.name, Element.type_id)
        .join(Element, Element.id == ElementValue.element_id)
        .where(read_condition)
        .order_by(ElementValue.element_id, ElementValue.position, ElementValue.id)
    ).all()
    affected: dict[int, tuple[int, str, list[Any], list[Any]]] = {}
    for value, element_name, type_id in rows:
        entry = affected.setdefault(value.element_id, (type_id, element_name, [], []))
        encoded = encode_value(attribute, _typed(value))
        entry[2].append(encoded)
        if literal_ids is not None and value.literal_id not in literal_ids:
            entry[3].append(encoded)
    for element_id, (type_id, element_name, old, new) in affected.items():
        changes.element(
            "updated",
            type_name=metamodel.type_by_id(type_id).name,
            element_id=element_id,
            element_name=element_name,
            changes=[{"property": attribute.name, "old": old, "new": new}],
        )
    bump_elements(db, affected, now=now, user=login)
    if literal_ids is not None:
        condition = and_(condition, ElementValue.literal_id.in_(list(literal_ids)))
    db.execute(delete(ElementValue).where(condition).execution_options(synchronize_session=False))
    return len(affected)


def remove_relation_values(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    *,
    relation_type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
    login: str,
    now: dt.datetime,
) -> int:
    """Delete the attribute's values on relations (of `relation_type_ids`, or all; only values of
    `literal_ids`, or all) and record the change on both elements of each relation."""
    if (relation_type_ids is not None and not relation_type_ids) or (
        literal_ids is not None and not literal_ids
    ):
        return 0
    condition = RelationValue.attribute_id == attribute.id
    if relation_type_ids is not None:
        condition = and_(
            condition,
            RelationValue.relation_id.in_(
                select(Relation.id).where(Relation.relation_type_id.in_(list(relation_type_ids)))
            ),
        )
    read_condition = condition
    if literal_ids is not None:
        read_condition = and_(
            condition,
            RelationValue.relation_id.in_(
                select(RelationValue.relation_id).where(
                    RelationValue.attribute_id == attribute.id,
                    RelationValue.literal_id.in_(list(literal_ids)),
                )
            ),
        )
    source = aliased(Element)
    target = aliased(Element)
    rows = db.execute(
        select(
            RelationValue,
            Relation.relation_type_id,
            source.id,
            source.name,
            source.type_id,
            target.id,
            target.name,
            target.type_id,
        )
        .join(Relation, Relation.id == RelationValue.relation_id)
        .join(source, source.id == Relation.source_id)
        .join(target, target.id == Relation.target_id)
        .where(read_condition)
        .order_by(RelationValue.relation_id, RelationValue.position, RelationValue.id)
    ).all()
    relations: dict[int, dict[str, Any]] = {}
    for (
        value,
        relation_type_id,
        source_id,
        source_name,
        source_type,
        target_id,
        target_name,
        target_type,
    ) in rows:
        relation = relations.setdefault(
            value.relation_id,
            {
                "relation_type_id": relation_type_id,
                "source": (source_id, source_name, source_type),
                "target": (target_id, target_name, target_type),
                "old": [],
                "new": [],
            },
        )
        encoded = encode_value(attribute, _typed(value))
        relation["old"].append(encoded)
        if literal_ids is not None and value.literal_id not in literal_ids:
            relation["new"].append(encoded)
    per_element: dict[int, tuple[str, str, dict[str, dict[str, list[Any]]]]] = {}
    for relation in relations.values():
        relation_type = metamodel.relation_type_by_id(relation["relation_type_id"])
        for holder, other, end in (
            (relation["source"], relation["target"], relation_type.source_end),
            (relation["target"], relation["source"], relation_type.target_end),
        ):
            holder_id, holder_name, holder_type = holder
            other_id, other_name, _ = other
            record = per_element.setdefault(
                holder_id, (metamodel.type_by_id(holder_type).name, holder_name, {})
            )
            change = record[2].setdefault(end, {"added": [], "removed": []})
            change["removed"].append(
                {"id": other_id, "name": other_name, "attributes": {attribute.name: relation["old"]}}
            )
            change["added"].append(
                {"id": other_id, "name": other_name, "attributes": {attribute.name: relation["new"]}}
            )
    for element_id, (type_name, element_name, ends) in per_element.items():
        changes.element(
            "updated",
            type_name=type_name,
            element_id=element_id,
            element_name=element_name,
            changes=[{"property": end, **change} for end, change in ends.items()],
        )
    bump_elements(db, per_element, now=now, user=login)
    if literal_ids is not None:
        condition = and_(condition, RelationValue.literal_id.in_(list(literal_ids)))
    db.execute(delete(RelationValue).where(condition).execution_options(synchronize_session=False))
    return len(relations)
