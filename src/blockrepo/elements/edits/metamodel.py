"""The stored elements as metamodel edits see them: whether a type or relation end is in use, and removing
a relation type's relations with their history (passed to `metamodel.service` as its `StoredElements`,
since the metamodel sits below the elements and does not import them)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.elements.edits import repository
from blockrepo.elements.write.record import record_updates
from blockrepo.metamodel.snapshot import RelationTypeDef
from blockrepo.revisions.recorder import ChangeLog, ElementUpdate


def type_has_elements(db: Session, type_id: int) -> bool:
    return repository.type_has_elements(db, type_id)


def type_has_parents(db: Session, type_id: int) -> bool:
    return repository.type_has_parents(db, type_id)


def end_holds_several(db: Session, relation_type_id: int, *, holder_is_source: bool) -> bool:
    return repository.end_holds_several(db, relation_type_id, holder_is_source=holder_is_source)


def remove_relations_of_type(
    db: Session, changes: ChangeLog, relation_type: RelationTypeDef, *, login: str, now: dt.datetime
) -> None:
    """Delete every relation of the type; each element that loses relations gets one "updated" change
    (the entries it lost, per end) and a new revision."""
    # Grouped per element and end first, so each element gets one change record whatever its relations.
    elements: dict[int, tuple[str, str]] = {}
    removed: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for source_id, source_name, target_id, target_name in repository.relations_of_type(db, relation_type.id):
        elements[source_id] = (relation_type.source_type, source_name)
        elements[target_id] = (relation_type.target_type, target_name)
        removed.setdefault(source_id, {}).setdefault(relation_type.source_end, []).append(
            {"id": target_id, "name": target_name}
        )
        removed.setdefault(target_id, {}).setdefault(relation_type.target_end, []).append(
            {"id": source_id, "name": source_name}
        )
    updates = (
        ElementUpdate(
            elements[element_id][0],
            element_id,
            elements[element_id][1],
            [{"property": end, "added": [], "removed": others} for end, others in ends.items()],
        )
        for element_id, ends in removed.items()
    )
    record_updates(db, changes, updates, login=login, now=now)
    repository.delete_relations_of_type(db, relation_type.id)
