"""The stored elements as metamodel edits see them: whether a type or relation end is in use, and removing
a relation type's relations with their history (passed to `metamodel.service` as its `StoredElements`,
since the metamodel sits below the elements and does not import them)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from blockrepo.elements import service as element_service
from blockrepo.elements.edits import repository
from blockrepo.metamodel.snapshot import Metamodel, RelationTypeDef
from blockrepo.revisions.recorder import ChangeLog


def type_has_elements(db: Session, type_id: int) -> bool:
    return repository.type_has_elements(db, type_id)


def type_has_parents(db: Session, type_id: int) -> bool:
    return repository.type_has_parents(db, type_id)


def end_holds_several(db: Session, relation_type_id: int, *, holder_is_source: bool) -> bool:
    return repository.end_holds_several(db, relation_type_id, holder_is_source=holder_is_source)


def remove_relations_of_type(
    db: Session, metamodel: Metamodel, changes: ChangeLog, relation_type: RelationTypeDef, *, login: str
) -> None:
    """Delete every relation of the type; each element that loses relations gets one "updated" change
    (the entries it lost, per end) and a new revision, from the element recorder."""
    # Per element: its type id, name, and per end the entries it loses, whatever its relations.
    lost: dict[int, tuple[int, str, dict[str, list[dict[str, Any]]]]] = {}
    for source_id, source_name, target_id, target_name in repository.relations_of_type(db, relation_type.id):
        source = lost.setdefault(source_id, (relation_type.source_type_id, source_name, {}))
        source[2].setdefault(relation_type.source_end, []).append({"id": target_id, "name": target_name})
        target = lost.setdefault(target_id, (relation_type.target_type_id, target_name, {}))
        target[2].setdefault(relation_type.target_end, []).append({"id": source_id, "name": source_name})
    changed: dict[int, element_service.ChangedElement] = {
        element_id: (type_id, name, ends, {end: [] for end in ends})
        for element_id, (type_id, name, ends) in lost.items()
    }
    element_service.record_changed_elements(db, metamodel, changes, login, changed)
    repository.delete_relations_of_type(db, relation_type.id)
