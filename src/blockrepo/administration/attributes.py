"""Attribute administration: definitions, literals, activation on types and relation types.

Also the removal of stored values that an edit takes away (recorded in history)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.administration import repository
from blockrepo.administration.repository import LiteralRow
from blockrepo.administration.schemas import AttributeCreate, AttributeUpdate, require_matching_id
from blockrepo.administration.value_removal import (
    remove_element_values,
    remove_relation_values,
    rename_element_literals,
    rename_relation_literals,
)
from blockrepo.errors import Conflict, ErrorItem, Forbidden, NameConflict, NotFound, ValidationFailed
from blockrepo.metamodel.names import attribute_name_problem, clash_on_type
from blockrepo.metamodel.repository import lock_current_metamodel
from blockrepo.metamodel.schemas import AttributeOut, LiteralIn
from blockrepo.metamodel.service import attribute_out
from blockrepo.metamodel.snapshot import AttributeDef, Metamodel
from blockrepo.name_normalization import name_key
from blockrepo.revisions.recorder import ChangeLog

ADMIN_ATTRIBUTES = "ADMIN_ATTRIBUTES"


def require_admin(actor: Actor) -> None:
    if not actor.can(ADMIN_ATTRIBUTES):
        raise Forbidden("attribute administration needs the ADMIN_ATTRIBUTES permission")


def list_attributes(actor: Actor, metamodel: Metamodel) -> list[AttributeOut]:
    require_admin(actor)
    return [attribute_out(metamodel, a) for a in metamodel.attributes]


def get_attribute(actor: Actor, metamodel: Metamodel, attribute_id: int) -> AttributeOut:
    require_admin(actor)
    return read_attribute(metamodel, attribute_id)


def read_attribute(metamodel: Metamodel, attribute_id: int) -> AttributeOut:
    return attribute_out(metamodel, existing_attribute(metamodel, attribute_id))


def existing_attribute(metamodel: Metamodel, attribute_id: int) -> AttributeDef:
    for attribute in metamodel.attributes:
        if attribute.id == attribute_id:
            return attribute
    raise NotFound(f"no attribute with id {attribute_id}")


def _resolve_names(
    metamodel: Metamodel, types: list[str] | None, relation_types: list[str] | None, errors: list[ErrorItem]
) -> tuple[dict[int, str] | None, dict[int, str] | None]:
    type_ids: dict[int, str] | None = None
    if types is not None:
        type_ids = {}
        for i, name in enumerate(types):
            block_type = metamodel.type_named(name)
            if block_type is None:
                errors.append(ErrorItem(f"/types/{i}", "unknown_type", f"unknown type '{name}'"))
            else:
                type_ids[block_type.id] = name
    relation_type_ids: dict[int, str] | None = None
    if relation_types is not None:
        relation_type_ids = {}
        for i, name in enumerate(relation_types):
            relation_type = metamodel.relation_type_named(name)
            if relation_type is None:
                errors.append(
                    ErrorItem(
                        f"/relationTypes/{i}", "unknown_relation_type", f"unknown relation type '{name}'"
                    )
                )
            else:
                relation_type_ids[relation_type.id] = name
    return type_ids, relation_type_ids


def _check_shape(
    value_type: str,
    literals: list[LiteralIn] | None,
    unit: str | None,
    minimum: float | None,
    maximum: float | None,
    errors: list[ErrorItem],
) -> None:
    """Literals only for enums, unit/min/max only for numbers, min <= max, literal names unique."""
    if value_type != "enum" and literals:
        errors.append(ErrorItem("/literals", "not_applicable", "only enum attributes have literals"))
    if value_type != "number":
        for pointer, given in (("/unit", unit), ("/min", minimum), ("/max", maximum)):
            if given is not None:
                errors.append(
                    ErrorItem(pointer, "not_applicable", "only number attributes have unit, min and max")
                )
    if minimum is not None and maximum is not None and minimum > maximum:
        errors.append(ErrorItem("/max", "out_of_range", "max must not be below min"))
    seen: set[str] = set()
    for i, literal in enumerate(literals or []):
        if not literal.name.strip() or literal.name != literal.name.strip():
            errors.append(
                ErrorItem(f"/literals/{i}/name", "invalid_name", "no blank or padded literal names")
            )
        if literal.name in seen:
            errors.append(ErrorItem(f"/literals/{i}/name", "duplicate", f"literal '{literal.name}' twice"))
        seen.add(literal.name)


def _name_clashes(
    metamodel: Metamodel, name: str, type_ids: dict[int, str], *, attribute_id: int | None
) -> list[ErrorItem]:
    clashes = [
        ErrorItem("/name", "name_conflict", f"an attribute named '{other.name}' exists")
        for other in metamodel.attributes
        if other.id != attribute_id and name_key(other.name) == name_key(name)
    ]
    for i, type_name in enumerate(type_ids.values()):
        clash = clash_on_type(metamodel, type_name, name, ignore_attribute_id=attribute_id)
        if clash:
            clashes.append(ErrorItem(f"/types/{i}", "name_conflict", clash))
    return clashes


def _group_id(metamodel: Metamodel, group: str | None, errors: list[ErrorItem]) -> int | None:
    if group is None:
        return metamodel.default_group.id
    for candidate in metamodel.groups:
        if candidate.name == group:
            return candidate.id
    errors.append(ErrorItem("/group", "unknown_group", f"unknown attribute group '{group}'"))
    return None


def _dedupe(names: list[str] | None) -> list[str] | None:
    return None if names is None else list(dict.fromkeys(names))


def create_attribute(
    db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, body: AttributeCreate
) -> int:
    require_admin(actor)
    metamodel = lock_current_metamodel(db, metamodel)
    errors: list[ErrorItem] = []
    problem = attribute_name_problem(body.name)
    if problem:
        errors.append(ErrorItem("/name", "invalid_name", problem))
    _check_shape(body.value_type, body.literals, body.unit, body.min, body.max, errors)
    group_id = _group_id(metamodel, body.group, errors)
    type_ids, relation_type_ids = _resolve_names(
        metamodel, _dedupe(body.types), _dedupe(body.relation_types), errors
    )
    if errors:
        raise ValidationFailed("invalid attribute", errors=errors)
    assert type_ids is not None and relation_type_ids is not None and group_id is not None
    clashes = _name_clashes(metamodel, body.name, type_ids, attribute_id=None)
    if clashes:
        raise NameConflict("; ".join(c.message for c in clashes), errors=clashes)
    attribute_id = repository.insert_attribute(
        db,
        {
            "name": body.name,
            "description": body.description,
            "value_type": body.value_type,
            "multiple": body.multiple,
            "mandatory": body.mandatory,
            "group_id": group_id,
            "unit": body.unit,
            "min_value": body.min,
            "max_value": body.max,
            "builtin_type_id": None,
        },
    )
    repository.write_literals(
        db,
        attribute_id,
        [LiteralRow(None, lit.name, lit.description, lit.color) for lit in body.literals],
        (),
    )
    repository.set_type_activations(db, attribute_id, type_ids)
    repository.set_relation_activations(db, attribute_id, relation_type_ids)
    repository.make_attributable(db, relation_type_ids)
    record: list[dict[str, Any]] = [
        {"property": "valueType", "old": [], "new": [body.value_type]},
        {"property": "group", "old": [], "new": [body.group or metamodel.default_group.name]},
        {"property": "types", "old": [], "new": list(type_ids.values())},
        {"property": "relationTypes", "old": [], "new": list(relation_type_ids.values())},
    ]
    if body.literals:
        record.append({"property": "literals", "old": [], "new": [lit.name for lit in body.literals]})
    changes.metamodel("created", f"attribute {body.name}", record)
    return attribute_id


def _plan_literals(
    attribute: AttributeDef, sent: list[LiteralIn], errors: list[ErrorItem]
) -> tuple[list[LiteralRow], set[int]]:
    """Match sent literals to existing ones (by id, else by name); the rest of the existing ones go."""
    by_id = {lit.id: lit for lit in attribute.literals}
    by_name = {lit.name: lit for lit in attribute.literals}
    rows: list[LiteralRow] = []
    kept: set[int] = set()
    for i, literal in enumerate(sent):
        if literal.id is not None:
            if literal.id not in by_id:
                errors.append(
                    ErrorItem(f"/literals/{i}/id", "unknown_literal", f"no literal {literal.id} here")
                )
                continue
            existing_id: int | None = literal.id
        else:
            match = by_name.get(literal.name)
            existing_id = match.id if match is not None and match.id not in kept else None
        if existing_id is not None:
            if existing_id in kept:
                errors.append(ErrorItem(f"/literals/{i}/id", "duplicate", f"literal {existing_id} twice"))
                continue
            kept.add(existing_id)
        rows.append(LiteralRow(existing_id, literal.name, literal.description, literal.color))
    return rows, set(by_id) - kept


def update_attribute(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute_id: int,
    body: AttributeUpdate,
) -> None:
    require_admin(actor)
    metamodel = lock_current_metamodel(db, metamodel)
    require_matching_id(body.id, attribute_id)
    current = existing_attribute(metamodel, attribute_id)
    sent = body.model_fields_set
    errors: list[ErrorItem] = []
    name = body.name if body.name is not None else current.name
    if name != current.name:
        problem = attribute_name_problem(name)
        if problem:
            errors.append(ErrorItem("/name", "invalid_name", problem))
    value_type = body.value_type or current.value_type
    unit = body.unit if "unit" in sent else current.unit
    minimum = body.min if "min" in sent else current.min_value
    maximum = body.max if "max" in sent else current.max_value
    if value_type != "number" and value_type != current.value_type:
        # A value type change drops what only numbers have unless the body insists on it.
        unit = body.unit if "unit" in sent else None
        minimum = body.min if "min" in sent else None
        maximum = body.max if "max" in sent else None
    literals_sent = body.literals if body.literals is not None else None
    if value_type != "enum" and value_type != current.value_type and literals_sent is None:
        literals_sent = []
    _check_shape(value_type, literals_sent, unit, minimum, maximum, errors)
    group_id = current.group_id if body.group is None else _group_id(metamodel, body.group, errors)
    type_ids, relation_type_ids = _resolve_names(
        metamodel, _dedupe(body.types), _dedupe(body.relation_types), errors
    )
    literal_rows: list[LiteralRow] | None = None
    removed_literals: set[int] = set()
    if literals_sent is not None:
        literal_rows, removed_literals = _plan_literals(current, literals_sent, errors)
    if errors:
        raise ValidationFailed("invalid attribute", errors=errors)
    new_type_ids = (
        type_ids if type_ids is not None else {t: metamodel.type_by_id(t).name for t in current.type_ids}
    )
    clashes = _name_clashes(metamodel, name, new_type_ids, attribute_id=attribute_id)
    if clashes:
        raise NameConflict("; ".join(c.message for c in clashes), errors=clashes)
    if value_type != current.value_type and repository.attribute_has_values(db, attribute_id):
        raise Conflict(
            f"'{current.name}' has values; its value type cannot change",
            code="in_use",
            errors=[ErrorItem("/valueType", "in_use", "delete the values first")],
        )
    multiple = current.multiple if body.multiple is None else body.multiple
    if current.multiple and not multiple and repository.attribute_holds_several(db, attribute_id):
        raise Conflict(
            f"some element holds several values of '{current.name}'",
            code="in_use",
            errors=[ErrorItem("/multiple", "in_use", "reduce those elements to one value first")],
        )

    record: list[dict[str, Any]] = []
    login = actor.login
    # Values that the edit takes away go first, encoded with the literals they still point at.
    if removed_literals:
        remove_element_values(db, metamodel, changes, current, literal_ids=removed_literals, login=login)
        remove_relation_values(db, metamodel, changes, current, literal_ids=removed_literals, login=login)
    if type_ids is not None:
        dropped_types = set(current.type_ids) - set(type_ids)
        remove_element_values(db, metamodel, changes, current, type_ids=dropped_types, login=login)
        if set(type_ids) != set(current.type_ids):
            repository.set_type_activations(db, attribute_id, type_ids)
            record.append(
                {
                    "property": "types",
                    "old": [metamodel.type_by_id(t).name for t in sorted(current.type_ids)],
                    "new": [metamodel.type_by_id(t).name for t in sorted(type_ids)],
                }
            )
    if relation_type_ids is not None:
        dropped = set(current.relation_type_ids) - set(relation_type_ids)
        remove_relation_values(db, metamodel, changes, current, relation_type_ids=dropped, login=login)
        if set(relation_type_ids) != set(current.relation_type_ids):
            repository.set_relation_activations(db, attribute_id, relation_type_ids)
            repository.make_attributable(db, set(relation_type_ids) - set(current.relation_type_ids))
            record.append(
                {
                    "property": "relationTypes",
                    "old": [metamodel.relation_type_by_id(r).name for r in sorted(current.relation_type_ids)],
                    "new": [metamodel.relation_type_by_id(r).name for r in sorted(relation_type_ids)],
                }
            )
    if literal_rows is not None:
        old_literals = [lit.name for lit in current.literals]
        new_literals = [lit.name for lit in literal_rows]
        unchanged = old_literals == new_literals and all(
            (lit.description, lit.color) == (row.description, row.color)
            for lit, row in zip(current.literals, literal_rows, strict=True)
        )
        if not unchanged:
            current_names = {lit.id: lit.name for lit in current.literals}
            renamed = {
                row.id: row.name
                for row in literal_rows
                if row.id is not None and current_names.get(row.id, row.name) != row.name
            }
            rename_element_literals(db, metamodel, changes, current, renamed, login=login)
            rename_relation_literals(db, metamodel, changes, current, renamed, login=login)
            repository.write_literals(db, attribute_id, literal_rows, removed_literals)
            record.append({"property": "literals", "old": old_literals, "new": new_literals})
    fields = {
        "name": (current.name, name),
        "description": (
            current.description,
            body.description if body.description is not None else current.description,
        ),
        "value_type": (current.value_type, value_type),
        "multiple": (current.multiple, multiple),
        "mandatory": (current.mandatory, current.mandatory if body.mandatory is None else body.mandatory),
        "group_id": (current.group_id, group_id),
        "unit": (current.unit, unit),
        "min_value": (current.min_value, minimum),
        "max_value": (current.max_value, maximum),
    }
    values = {column: new for column, (old, new) in fields.items() if old != new}
    if values:
        repository.update_attribute(db, attribute_id, values)
        for column in values:
            old, new = fields[column]
            if column == "group_id":
                record.append({"property": "group", "old": [current.group_name], "new": [body.group]})
            else:
                record.append({"property": _wire_name(column), "old": [old], "new": [new]})
    if record:
        changes.metamodel("updated", f"attribute {name}", record)
    if name != current.name:
        changes.attribute_renamed(attribute_id, current.name)


def delete_attribute(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    attribute_id: int,
) -> None:
    """Delete the attribute with every value it has; each element that had values gets an "updated"
    change in history and a new revision."""
    require_admin(actor)
    metamodel = lock_current_metamodel(db, metamodel)
    current = existing_attribute(metamodel, attribute_id)
    remove_element_values(db, metamodel, changes, current, login=actor.login)
    remove_relation_values(db, metamodel, changes, current, login=actor.login)
    repository.delete_attribute(db, attribute_id)
    changes.attribute_deleted(attribute_id, current.name, current.group_id)
    changes.metamodel(
        "deleted",
        f"attribute {current.name}",
        [
            {"property": "valueType", "old": [current.value_type], "new": []},
            {
                "property": "types",
                "old": [metamodel.type_by_id(t).name for t in sorted(current.type_ids)],
                "new": [],
            },
        ],
    )


def _wire_name(column: str) -> str:
    return {"value_type": "valueType", "min_value": "min", "max_value": "max"}.get(column, column)
