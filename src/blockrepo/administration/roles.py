"""Role administration: type permissions, functional permissions and inherited sub-roles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import FUNCTIONAL_PERMISSIONS, TYPE_ACTIONS, Actor
from blockrepo.administration import repository, supervision
from blockrepo.administration.schemas import RoleCreate, RoleOut, RoleUpdate, require_matching_id
from blockrepo.errors import Conflict, ErrorItem, Forbidden, NameConflict, NotFound, ValidationFailed
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog

ADMIN_ROLES = "ADMIN_ROLES"


def _require_admin(actor: Actor) -> None:
    if not actor.can(ADMIN_ROLES):
        raise Forbidden("role administration needs the ADMIN_ROLES permission")


def role_out(record: repository.RoleRecord, metamodel: Metamodel) -> RoleOut:
    if record.builtin:
        # The Supervisor holds every right, whatever rows exist for it.
        type_permissions = {t.name: list(TYPE_ACTIONS) for t in metamodel.types}
        functional = list(FUNCTIONAL_PERMISSIONS)
    else:
        type_permissions = {
            metamodel.type_by_id(type_id).name: actions
            for type_id, actions in record.type_permissions.items()
        }
        functional = record.functional_permissions
    return RoleOut(
        id=record.id,
        name=record.name,
        description=record.description,
        builtin=record.builtin,
        sub_roles=record.sub_roles,
        type_permissions=type_permissions,  # type: ignore[arg-type]
        functional_permissions=functional,  # type: ignore[arg-type]
    )


def list_roles(db: Session, actor: Actor, metamodel: Metamodel) -> list[RoleOut]:
    _require_admin(actor)
    return [role_out(r, metamodel) for r in repository.list_roles(db)]


def get_role(db: Session, actor: Actor, metamodel: Metamodel, role_id: int) -> RoleOut:
    _require_admin(actor)
    return read_role(db, metamodel, role_id)


def read_role(db: Session, metamodel: Metamodel, role_id: int) -> RoleOut:
    """A role without a permission check: the answer to a write that was already authorised."""
    return role_out(_existing(db, role_id), metamodel)


def _existing(db: Session, role_id: int) -> repository.RoleRecord:
    record = repository.get_role(db, role_id)
    if record is None:
        raise NotFound(f"no role with id {role_id}")
    return record


def _type_permissions(metamodel: Metamodel, sent: Mapping[str, Sequence[str]]) -> dict[int, set[str]]:
    errors: list[ErrorItem] = []
    result: dict[int, set[str]] = {}
    for type_name, actions in sent.items():
        block_type = metamodel.type_named(type_name)
        if block_type is None:
            errors.append(
                ErrorItem(f"/typePermissions/{type_name}", "unknown_type", f"unknown type '{type_name}'")
            )
        else:
            result[block_type.id] = set(actions)
    if errors:
        raise ValidationFailed("unknown types in typePermissions", errors=errors)
    return result


def _sub_role_ids(db: Session, role_id: int | None, names: list[str]) -> dict[str, int]:
    found = repository.role_ids_by_name(db, names)
    errors = [
        ErrorItem(f"/subRoles/{i}", "unknown_role", f"unknown role '{name}'")
        for i, name in enumerate(names)
        if name not in found
    ]
    if role_id is not None:
        edges = repository.sub_role_edges(db)
        for i, name in enumerate(names):
            sub_id = found.get(name)
            if sub_id is not None and _reaches(edges, sub_id, role_id):
                errors.append(ErrorItem(f"/subRoles/{i}", "cycle", f"'{name}' already inherits this role"))
    if errors:
        raise ValidationFailed("invalid sub-roles", errors=errors)
    return found


def _reaches(edges: dict[int, set[int]], start: int, goal: int) -> bool:
    seen: set[int] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edges.get(node, ()))
    return False


def _named_permissions(metamodel: Metamodel, permissions: dict[int, set[str]]) -> dict[str, list[str]]:
    return {
        metamodel.type_by_id(type_id).name: [a for a in TYPE_ACTIONS if a in actions]
        for type_id, actions in sorted(permissions.items())
        if actions
    }


def create_role(db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, body: RoleCreate) -> int:
    _require_admin(actor)
    type_permissions = _type_permissions(metamodel, body.type_permissions)
    sub_roles = _sub_role_ids(db, None, body.sub_roles)
    supervision.refuse_granting(db, actor, body.sub_roles, "/subRoles", "add as a sub-role")
    if repository.role_name_taken(db, body.name):
        raise NameConflict(f"a role named '{body.name}' exists")
    role_id = repository.insert_role(db, body.name, body.description)
    repository.set_sub_roles(db, role_id, sub_roles.values())
    repository.set_type_permissions(db, role_id, type_permissions)
    repository.set_functional_permissions(db, role_id, body.functional_permissions)
    changes.administration(
        "created",
        f"role {body.name}",
        [
            {"property": "name", "old": [], "new": [body.name]},
            {"property": "subRoles", "old": [], "new": sorted(sub_roles)},
            {
                "property": "typePermissions",
                "old": [],
                "new": [_named_permissions(metamodel, type_permissions)],
            },
            {"property": "functionalPermissions", "old": [], "new": sorted(set(body.functional_permissions))},
        ],
    )
    return role_id


def _ensure_mutable(record: repository.RoleRecord) -> None:
    if record.builtin:
        raise Conflict(
            f"the built-in role '{record.name}' cannot be changed or deleted", code="immutable_role"
        )


def update_role(
    db: Session, actor: Actor, metamodel: Metamodel, changes: ChangeLog, role_id: int, body: RoleUpdate
) -> None:
    _require_admin(actor)
    require_matching_id(body.id, role_id)
    current = _existing(db, role_id)
    _ensure_mutable(current)
    supervision.refuse_touching_role(db, actor, current.name, "change")
    if body.sub_roles is not None:
        supervision.refuse_granting(db, actor, body.sub_roles, "/subRoles", "add as a sub-role")
    record: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    if body.name is not None and body.name != current.name:
        if repository.role_name_taken(db, body.name, except_id=role_id):
            raise NameConflict(f"a role named '{body.name}' exists")
        values["name"] = body.name
        record.append({"property": "name", "old": [current.name], "new": [body.name]})
    if body.description is not None and body.description != current.description:
        values["description"] = body.description
        record.append({"property": "description", "old": [current.description], "new": [body.description]})
    if values:
        repository.update_role(db, role_id, values)
    if body.sub_roles is not None:
        sub_roles = _sub_role_ids(db, role_id, body.sub_roles)
        if sorted(sub_roles) != current.sub_roles:
            repository.set_sub_roles(db, role_id, sub_roles.values())
            record.append({"property": "subRoles", "old": current.sub_roles, "new": sorted(sub_roles)})
    if body.type_permissions is not None:
        new_permissions = _type_permissions(metamodel, body.type_permissions)
        old_named = _named_permissions(metamodel, {k: set(v) for k, v in current.type_permissions.items()})
        new_named = _named_permissions(metamodel, new_permissions)
        if old_named != new_named:
            repository.set_type_permissions(db, role_id, new_permissions)
            record.append({"property": "typePermissions", "old": [old_named], "new": [new_named]})
    if body.functional_permissions is not None:
        new_functional = sorted(set(body.functional_permissions))
        if new_functional != current.functional_permissions:
            repository.set_functional_permissions(db, role_id, new_functional)
            record.append(
                {
                    "property": "functionalPermissions",
                    "old": current.functional_permissions,
                    "new": new_functional,
                }
            )
    # Dropping an inherited Supervisor may demote the last supervisor.
    if body.sub_roles is not None and repository.count_enabled_supervisors(db) == 0:
        raise Conflict("the last enabled supervisor cannot be demoted", code="last_supervisor")
    if record:
        changes.administration("updated", f"role {values.get('name', current.name)}", record)


def delete_role(db: Session, actor: Actor, changes: ChangeLog, role_id: int) -> None:
    _require_admin(actor)
    current = _existing(db, role_id)
    _ensure_mutable(current)
    supervision.refuse_touching_role(db, actor, current.name, "delete")
    repository.delete_role(db, role_id)
    if repository.count_enabled_supervisors(db) == 0:
        raise Conflict("the last enabled supervisor cannot be demoted", code="last_supervisor")
    changes.administration(
        "deleted", f"role {current.name}", [{"property": "name", "old": [current.name], "new": []}]
    )
