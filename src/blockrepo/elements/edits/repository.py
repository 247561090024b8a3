"""The SQL of edits across all stored elements: the values of one attribute everywhere, whether a type
or relation end is in use, every relation of a type."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    and_,
    delete,
    exists,
    func,
    select,
)
from sqlalchemy.orm import Session, aliased

from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.repository import typed_row
from blockrepo.elements.values import TypedValue

# --- values of one attribute everywhere (metamodel edits) ----------------------------------------------


def _element_values_where(
    attribute_id: int, type_ids: Collection[int] | None, literal_ids: Collection[int] | None
) -> Any:
    condition = ElementValue.attribute_id == attribute_id
    if type_ids is not None:
        condition = and_(
            condition,
            ElementValue.element_id.in_(select(Element.id).where(Element.type_id.in_(list(type_ids)))),
        )
    if literal_ids is not None:
        condition = and_(condition, ElementValue.literal_id.in_(list(literal_ids)))
    return condition


def attribute_values(
    db: Session,
    attribute_id: int,
    *,
    type_ids: Collection[int] | None = None,
    holding: Collection[int] | None = None,
) -> list[tuple[int, str, int, int | None, TypedValue]]:
    """(element id, element name, type id, literal id, value) of every value of the attribute (on elements
    of `type_ids`, or all; only on elements holding one of the literals `holding`, or all), in each
    element's order."""
    condition = _element_values_where(attribute_id, type_ids, None)
    if holding is not None:
        condition = and_(
            condition,
            ElementValue.element_id.in_(
                select(ElementValue.element_id).where(
                    ElementValue.attribute_id == attribute_id, ElementValue.literal_id.in_(list(holding))
                )
            ),
        )
    rows = db.execute(
        select(ElementValue, Element.name, Element.type_id)
        .join(Element, Element.id == ElementValue.element_id)
        .where(condition)
        .order_by(ElementValue.element_id, ElementValue.position, ElementValue.id)
    ).all()
    return [
        (value.element_id, name, type_id, value.literal_id, typed_row(value)) for value, name, type_id in rows
    ]


def delete_attribute_everywhere(
    db: Session,
    attribute_id: int,
    *,
    type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
) -> None:
    """Delete the attribute's values on elements (of `type_ids`, or all; of `literal_ids`, or all)."""
    db.execute(
        delete(ElementValue)
        .where(_element_values_where(attribute_id, type_ids, literal_ids))
        .execution_options(synchronize_session=False)
    )


def _relation_values_where(
    attribute_id: int, relation_type_ids: Collection[int] | None, literal_ids: Collection[int] | None
) -> Any:
    condition = RelationValue.attribute_id == attribute_id
    if relation_type_ids is not None:
        condition = and_(
            condition,
            RelationValue.relation_id.in_(
                select(Relation.id).where(Relation.relation_type_id.in_(list(relation_type_ids)))
            ),
        )
    if literal_ids is not None:
        condition = and_(condition, RelationValue.literal_id.in_(list(literal_ids)))
    return condition


@dataclass(frozen=True, slots=True)
class RelationValueRow:
    """One value of a relation attribute with the relation's two elements as (id, name, type id)."""

    relation_id: int
    relation_type_id: int
    source: tuple[int, str, int]
    target: tuple[int, str, int]
    literal_id: int | None
    value: TypedValue


def relation_attribute_values(
    db: Session,
    attribute_id: int,
    *,
    relation_type_ids: Collection[int] | None = None,
    holding: Collection[int] | None = None,
) -> list[RelationValueRow]:
    """Every value of the relation attribute (on relations of `relation_type_ids`, or all; only on
    relations holding one of the literals `holding`, or all), in each relation's order."""
    condition = _relation_values_where(attribute_id, relation_type_ids, None)
    if holding is not None:
        condition = and_(
            condition,
            RelationValue.relation_id.in_(
                select(RelationValue.relation_id).where(
                    RelationValue.attribute_id == attribute_id, RelationValue.literal_id.in_(list(holding))
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
        .where(condition)
        .order_by(RelationValue.relation_id, RelationValue.position, RelationValue.id)
    ).all()
    return [
        RelationValueRow(
            row[0].relation_id,
            row[1],
            (row[2], row[3], row[4]),
            (row[5], row[6], row[7]),
            row[0].literal_id,
            typed_row(row[0]),
        )
        for row in rows
    ]


def delete_relation_attribute_everywhere(
    db: Session,
    attribute_id: int,
    *,
    relation_type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
) -> None:
    """Delete the attribute's values on relations (of `relation_type_ids`, or all; of `literal_ids`, or
    all)."""
    db.execute(
        delete(RelationValue)
        .where(_relation_values_where(attribute_id, relation_type_ids, literal_ids))
        .execution_options(synchronize_session=False)
    )


# --- what metamodel edits ask of the stored elements ---------------------------------------------------


def type_has_elements(db: Session, type_id: int) -> bool:
    return bool(db.scalar(select(exists().where(Element.type_id == type_id))))


def type_has_parents(db: Session, type_id: int) -> bool:
    return bool(db.scalar(select(exists().where(Element.type_id == type_id, Element.parent_id.is_not(None)))))


def end_holds_several(db: Session, relation_type_id: int, *, holder_is_source: bool) -> bool:
    """Whether some element holds more than one value in this end of the relation type."""
    holder = Relation.source_id if holder_is_source else Relation.target_id
    query = (
        select(holder)
        .where(Relation.relation_type_id == relation_type_id)
        .group_by(holder)
        .having(func.count() > 1)
        .limit(1)
    )
    return db.scalar(query) is not None


def relations_of_type(db: Session, relation_type_id: int) -> list[tuple[int, str, int, str]]:
    """(source id, source name, target id, target name) of every relation of the type, in the order of
    the sources' lists (one query)."""
    source = aliased(Element)
    target = aliased(Element)
    rows = db.execute(
        select(source.id, source.name, target.id, target.name)
        .select_from(Relation)
        .join(source, source.id == Relation.source_id)
        .join(target, target.id == Relation.target_id)
        .where(Relation.relation_type_id == relation_type_id)
        .order_by(Relation.source_id, Relation.position, Relation.id)
    )
    return [(row[0], row[1], row[2], row[3]) for row in rows]


def delete_relations_of_type(db: Session, relation_type_id: int) -> None:
    """Every relation of the type (their values cascade)."""
    db.execute(delete(Relation).where(Relation.relation_type_id == relation_type_id))
