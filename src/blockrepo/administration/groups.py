"""Attribute group administration: grouping of attributes and the per-role read/write rule of API.md §6.

The rule itself lives in `Actor.can_read_group` / `can_write_group`; this module only stores it. Group
names and membership are part of the metamodel (a metamodel change); permissions are access data (an
administration change); either bumps a revision that every process's caches are keyed by.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.administration import repository
from blockrepo.administration.attributes import require_admin
from blockrepo.administration.schemas import (
    AttributeGroupCreate,
    AttributeGroupOut,
    AttributeGroupUpdate,
    GroupPermission,
    require_matching_id,
)
from blockrepo.errors import Conflict, ErrorItem, NameConflict, NotFound, ValidationFailed
from blockrepo.metamodel.repository import lock_current_metamodel
from blockrepo.metamodel.snapshot import DEFAULT_GROUP_NAME, AttributeGroupDef, Metamodel
from blockrepo.revisions.recorder import ChangeLog


def _out(
    metamodel: Metamodel, group: AttributeGroupDef, permissions: list[tuple[str, bool, bool]]
) -> AttributeGroupOut:
    return AttributeGroupOut(
        id=group.id,
        name=group.name,
        description=group.description,
        position=group.position,
        attributes=[a.name for a in metamodel.attributes if a.group_id == group.id],
        permissions=[GroupPermission(role=role, read=read, write=write) for role, read, write in permissions],
    )


def list_groups(db: Session, actor: Actor, metamodel: Metamodel) -> list[AttributeGroupOut]:
    require_admin(actor)
    permissions = repository.group_permissions(db)
    return [_out(metamodel, g, permissions.get(g.id, [])) for g in metamodel.groups]


def get_group(db: Session, actor: Actor, metamodel: Metamodel, group_id: int) -> AttributeGroupOut:
    require_admin(actor)
    return read_group(db, metamodel, group_id)


def read_group(db: Session, metamodel: Metamodel, group_id: int) -> AttributeGroupOut:
    group = _existing(metamodel, group_id)
    return _out(metamodel, group, repository.group_permissions(db, group_id).get(group_id, []))


def _existing(metamodel: Metamodel, group_id: int) -> AttributeGroupDef:
    for group in metamodel.groups:
        if group.id == group_id:
            return group
    raise NotFound(f"no attribute group with id {group_id}")


def _attribute_ids(metamodel: Metamodel, names: list[str], errors: list[ErrorItem]) -> dict[str, int]:
    found: dict[str, int] = {}
    for i, name in enumerate(names):
        attribute = metamodel.attribute_named(name)
        if attribute is None:
            errors.append(ErrorItem(f"/attributes/{i}", "unknown_attribute", f"unknown attribute '{name}'"))
        else:
            found[name] = attribute.id
    return found


def _permissions(
    db: Session, sent: list[GroupPermission], errors: list[ErrorItem]
) -> dict[int, tuple[bool, bool]]:
    role_ids = repository.role_ids_by_name(db, [p.role for p in sent])
    result: dict[int, tuple[bool, bool]] = {}
    for i, permission in enumerate(sent):
        role_id = role_ids.get(permission.role)
        if role_id is None:
            errors.append(
                ErrorItem(f"/permissions/{i}/role", "unknown_role", f"unknown role '{permission.role}'")
            )
        elif role_id in result:
            errors.append(ErrorItem(f"/permissions/{i}/role", "duplicate", f"role '{permission.role}' twice"))
        elif permission.write and not permission.read:
            errors.append(ErrorItem(f"/permissions/{i}/write", "write_needs_read", "write needs read"))
        elif permission.read:
            result[role_id] = (permission.read, permission.write)
    return result


def _permission_record(sent: list[GroupPermission]) -> list[dict[str, Any]]:
    return [p.model_dump() for p in sorted(sent, key=lambda p: p.role) if p.read]


def create_group(
    db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, body: AttributeGroupCreate
) -> int:
    require_admin(actor)
    metamodel = lock_current_metamodel(db, metamodel)
    errors: list[ErrorItem] = []
    attribute_ids = _attribute_ids(metamodel, body.attributes, errors)
    permissions = _permissions(db, body.permissions, errors)
    if errors:
        raise ValidationFailed("invalid attribute group", errors=errors)
    if repository.group_name_taken(db, body.name):
        raise NameConflict(f"an attribute group named '{body.name}' exists")
    group_id = repository.insert_group(db, body.name, body.description, body.position)
    repository.move_attributes(db, attribute_ids.values(), group_id)
    repository.set_group_permissions(db, group_id, permissions)
    changes.metamodel(
        "created",
        f"attributeGroup {body.name}",
        [{"property": "attributes", "old": [], "new": list(attribute_ids)}],
    )
    if permissions:
        changes.administration(
            "updated",
            f"attributeGroup {body.name}",
            [{"property": "permissions", "old": [], "new": _permission_record(body.permissions)}],
        )
    return group_id


def update_group(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    group_id: int,
    body: AttributeGroupUpdate,
) -> None:
    require_admin(actor)
    metamodel = lock_current_metamodel(db, metamodel)
    require_matching_id(body.id, group_id)
    current = _existing(metamodel, group_id)
    is_default = current.name == DEFAULT_GROUP_NAME
    errors: list[ErrorItem] = []
    values: dict[str, Any] = {}
    record: list[dict[str, Any]] = []
    if body.name is not None and body.name != current.name:
        if is_default:
            raise Conflict("the default attribute group cannot be renamed", code="default_group")
        values["name"] = body.name
    for column, new in (("description", body.description), ("position", body.position)):
        if new is not None and new != getattr(current, column):
            values[column] = new
    members = [a.name for a in metamodel.attributes if a.group_id == group_id]
    attribute_ids: dict[str, int] | None = None
    if body.attributes is not None:
        attribute_ids = _attribute_ids(metamodel, list(dict.fromkeys(body.attributes)), errors)
        if is_default and set(members) - set(attribute_ids):
            errors.append(
                ErrorItem(
                    "/attributes", "default_group", "attributes leave the default group by joining another"
                )
            )
    permissions = _permissions(db, body.permissions, errors) if body.permissions is not None else None
    if errors:
        raise ValidationFailed("invalid attribute group", errors=errors)
    if "name" in values and repository.group_name_taken(db, values["name"], except_id=group_id):
        raise NameConflict(f"an attribute group named '{values['name']}' exists")
    name = values.get("name", current.name)
    if values:
        repository.update_group(db, group_id, values)
        record += [
            {"property": column, "old": [getattr(current, column)], "new": [new]}
            for column, new in values.items()
        ]
    if attribute_ids is not None and set(attribute_ids) != set(members):
        leaving = [
            a.id for a in metamodel.attributes if a.group_id == group_id and a.name not in attribute_ids
        ]
        repository.move_attributes(db, leaving, metamodel.default_group.id)
        repository.move_attributes(db, attribute_ids.values(), group_id)
        record.append({"property": "attributes", "old": members, "new": list(attribute_ids)})
    if record:
        changes.metamodel("updated", f"attributeGroup {name}", record)
    if permissions is not None:
        assert body.permissions is not None
        old_permissions = [
            {"role": role, "read": read, "write": write}
            for role, read, write in repository.group_permissions(db, group_id).get(group_id, [])
        ]
        new_permissions = _permission_record(body.permissions)
        if old_permissions != new_permissions:
            repository.set_group_permissions(db, group_id, permissions)
            changes.administration(
                "updated",
                f"attributeGroup {name}",
                [{"property": "permissions", "old": old_permissions, "new": new_permissions}],
            )


def delete_group(db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, group_id: int) -> None:
    """Delete a group; its attributes move to the default group (keeping their values)."""
    require_admin(actor)
    metamodel = lock_current_metamodel(db, metamodel)
    current = _existing(metamodel, group_id)
    if current.name == DEFAULT_GROUP_NAME:
        raise Conflict("the default attribute group always exists", code="default_group")
    members = [a for a in metamodel.attributes if a.group_id == group_id]
    repository.move_attributes(db, [a.id for a in members], metamodel.default_group.id)
    repository.delete_group(db, group_id)
    changes.metamodel(
        "deleted",
        f"attributeGroup {current.name}",
        [{"property": "attributes", "old": [a.name for a in members], "new": []}],
    )
    changes.administration("deleted", f"attributeGroup {current.name}", [])
