"""Removing stored values when the metamodel takes an attribute (or some of its literals) away, and
recording renamed literals on the elements that hold them.

Set-based: one query reads every affected value with its element, one DELETE removes the values; each
affected element is handed to the element recorder (`elements.service.record_changed_elements`) as its
states before and after (its name and the attribute, or the relation end whose entries' attributes
change), which records its "updated" change as any write's and gives it its new revision.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.elements import service as element_service
from blockrepo.elements.edits import repository
from blockrepo.elements.values import encode_value
from blockrepo.metamodel.snapshot import AttributeDef, Metamodel
from blockrepo.revisions.recorder import ChangeLog

NewValue = Callable[[int | None, Any], Any]  # (literal id, encoded old value) -> new value, None: dropped


def _kept_unless(literal_ids: Collection[int] | None) -> NewValue:
    """Removal: a value stays only when the removal names literals and not its own."""
    return lambda literal_id, encoded: (
        encoded if literal_ids is not None and literal_id not in literal_ids else None
    )


def _renamed_to(renamed: Mapping[int, str]) -> NewValue:
    """Renaming: a value of a renamed literal reads under the new name; others stay."""
    return lambda literal_id, encoded: renamed.get(literal_id, encoded) if literal_id is not None else encoded


def remove_element_values(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    *,
    type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
    login: str,
) -> None:
    """Delete the attribute's values on elements (of `type_ids`, or all; only values of `literal_ids`, or
    all) and record the change per element."""
    if (type_ids is not None and not type_ids) or (literal_ids is not None and not literal_ids):
        return
    # Read every value of the affected elements, so history shows the whole old and new list.
    rows = repository.attribute_values(db, attribute.id, type_ids=type_ids, holding=literal_ids)
    _record_element_values(db, metamodel, changes, attribute, rows, _kept_unless(literal_ids), login)
    repository.delete_attribute_everywhere(db, attribute.id, type_ids=type_ids, literal_ids=literal_ids)


def rename_element_literals(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    renamed: Mapping[int, str],
    *,
    login: str,
) -> None:
    """Record renamed enum literals on every element that holds one: the values are literal ids and stay
    as they are, but the element JSON and history name literals, so each such element gets an "updated"
    change (old names -> new names) and a new revision, as if it had been written. Without it a replay of
    the feed, and `asOf` reads, would keep the old name forever."""
    if not renamed:
        return
    rows = repository.attribute_values(db, attribute.id, holding=renamed)
    _record_element_values(db, metamodel, changes, attribute, rows, _renamed_to(renamed), login)


def _record_element_values(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    rows: list[tuple[int, str, int, int | None, Any]],
    new_value: NewValue,
    login: str,
) -> None:
    """Record per element the old list of the attribute's values (`rows`) and the list of
    `new_value(literal id, encoded old value)` (None drops the value)."""
    affected: dict[int, tuple[int, str, list[Any], list[Any]]] = {}
    for element_id, element_name, type_id, literal_id, value in rows:
        entry = affected.setdefault(element_id, (type_id, element_name, [], []))
        encoded = encode_value(attribute, value)
        entry[2].append(encoded)
        replacement = new_value(literal_id, encoded)
        if replacement is not None:
            entry[3].append(replacement)
    changed: dict[int, element_service.ChangedElement] = {
        element_id: (type_id, element_name, {attribute.name: old}, {attribute.name: new})
        for element_id, (type_id, element_name, old, new) in affected.items()
    }
    element_service.record_changed_elements(db, metamodel, changes, login, changed)


def remove_relation_values(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    *,
    relation_type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
    login: str,
) -> None:
    """Delete the attribute's values on relations (of `relation_type_ids`, or all; only values of
    `literal_ids`, or all) and record the change on both elements of each relation."""
    if (relation_type_ids is not None and not relation_type_ids) or (
        literal_ids is not None and not literal_ids
    ):
        return
    rows = repository.relation_attribute_values(
        db, attribute.id, relation_type_ids=relation_type_ids, holding=literal_ids
    )
    _record_relation_values(db, metamodel, changes, attribute, rows, _kept_unless(literal_ids), login)
    repository.delete_relation_attribute_everywhere(
        db, attribute.id, relation_type_ids=relation_type_ids, literal_ids=literal_ids
    )


def rename_relation_literals(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    renamed: Mapping[int, str],
    *,
    login: str,
) -> None:
    """`rename_element_literals` for relation attributes: both elements of each relation record it."""
    if not renamed:
        return
    rows = repository.relation_attribute_values(db, attribute.id, holding=renamed)
    _record_relation_values(db, metamodel, changes, attribute, rows, _renamed_to(renamed), login)


def _record_relation_values(
    db: Session,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute: AttributeDef,
    rows: list[repository.RelationValueRow],
    new_value: NewValue,
    login: str,
) -> None:
    """On both elements of each relation in `rows`, record the entry with the old values of the attribute
    and with `new_value(...)` of each (None drops it)."""
    relations: dict[int, dict[str, Any]] = {}
    for row in rows:
        relation = relations.setdefault(
            row.relation_id,
            {
                "relation_type_id": row.relation_type_id,
                "source": row.source,
                "target": row.target,
                "old": [],
                "new": [],
            },
        )
        encoded = encode_value(attribute, row.value)
        relation["old"].append(encoded)
        replacement = new_value(row.literal_id, encoded)
        if replacement is not None:
            relation["new"].append(replacement)
    # Per element: its type id, name, and per end its entries before and after.
    per_element: dict[int, tuple[int, str, dict[str, tuple[list[Any], list[Any]]]]] = {}
    for relation in relations.values():
        relation_type = metamodel.relation_type_by_id(relation["relation_type_id"])
        for holder, other, end in (
            (relation["source"], relation["target"], relation_type.source_end),
            (relation["target"], relation["source"], relation_type.target_end),
        ):
            holder_id, holder_name, holder_type = holder
            other_id, other_name, _ = other
            record = per_element.setdefault(holder_id, (holder_type, holder_name, {}))
            before, after = record[2].setdefault(end, ([], []))
            before.append(
                {"id": other_id, "name": other_name, "attributes": {attribute.name: relation["old"]}}
            )
            after.append(
                {"id": other_id, "name": other_name, "attributes": {attribute.name: relation["new"]}}
            )
    changed: dict[int, element_service.ChangedElement] = {
        element_id: (
            type_id,
            element_name,
            {end: entries[0] for end, entries in ends.items()},
            {end: entries[1] for end, entries in ends.items()},
        )
        for element_id, (type_id, element_name, ends) in per_element.items()
    }
    element_service.record_changed_elements(db, metamodel, changes, login, changed)
