"""SQL of the administration API: users, roles and their permissions (a fixed number of queries per call)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.orm import Session

from blockrepo.access.actor import SUPERVISOR_ROLE
from blockrepo.access.models import (
    Role,
    RoleFunctionalPermission,
    RoleSubRole,
    RoleTypePermission,
    User,
    UserRole,
)

ACTION_COLUMNS = (
    ("read", "can_read"),
    ("create", "can_create"),
    ("update", "can_update"),
    ("delete", "can_delete"),
)


@dataclass
class UserRecord:
    id: int
    login: str
    first_name: str
    last_name: str
    email: str
    enabled: bool
    credentials_version: int
    roles: list[str] = field(default_factory=list)


@dataclass
class RoleRecord:
    id: int
    name: str
    description: str
    builtin: bool
    sub_roles: list[str] = field(default_factory=list)
    type_permissions: dict[int, list[str]] = field(default_factory=dict)
    functional_permissions: list[str] = field(default_factory=list)


# --- users ---------------------------------------------------------------------------------------------


def _user_records(db: Session, condition: Any = None) -> list[UserRecord]:
    query = select(User).order_by(User.login)
    if condition is not None:
        query = query.where(condition)
    users = {
        u.id: UserRecord(u.id, u.login, u.first_name, u.last_name, u.email, u.enabled, u.credentials_version)
        for u in db.scalars(query)
    }
    if users:
        role_query = (
            select(UserRole.user_id, Role.name).join(Role, Role.id == UserRole.role_id).order_by(Role.name)
        )
        if condition is not None:
            role_query = role_query.where(UserRole.user_id.in_(list(users)))
        for user_id, role_name in db.execute(role_query):
            if user_id in users:
                users[user_id].roles.append(role_name)
    return list(users.values())


def list_users(db: Session) -> list[UserRecord]:
    return _user_records(db)


def get_user(db: Session, user_id: int) -> UserRecord | None:
    found = _user_records(db, User.id == user_id)
    return found[0] if found else None


def login_taken(db: Session, login: str, *, except_id: int | None = None) -> bool:
    query = select(User.id).where(func.lower(User.login) == func.lower(login))
    if except_id is not None:
        query = query.where(User.id != except_id)
    return db.scalar(query.limit(1)) is not None


def insert_user(db: Session, values: dict[str, Any]) -> int:
    return int(db.execute(insert(User).values(**values).returning(User.id)).scalar_one())


def update_user(db: Session, user_id: int, values: dict[str, Any]) -> None:
    db.execute(update(User).where(User.id == user_id).values(**values))


def set_user_roles(db: Session, user_id: int, role_ids: Iterable[int]) -> None:
    db.execute(delete(UserRole).where(UserRole.user_id == user_id))
    rows = [{"user_id": user_id, "role_id": role_id} for role_id in sorted(set(role_ids))]
    if rows:
        db.execute(insert(UserRole), rows)


def delete_user(db: Session, user_id: int) -> None:
    db.execute(delete(User).where(User.id == user_id))


def count_enabled_supervisors(db: Session) -> int:
    """Enabled users who hold Supervisor directly or through sub-roles."""
    supervisor_id = db.scalar(select(Role.id).where(Role.name == SUPERVISOR_ROLE))
    if supervisor_id is None:
        return 0
    parents: dict[int, set[int]] = {}
    for role_id, sub_role_id in db.execute(select(RoleSubRole.role_id, RoleSubRole.sub_role_id)):
        parents.setdefault(sub_role_id, set()).add(role_id)
    granting = {supervisor_id}
    stack = [supervisor_id]
    while stack:
        for parent in parents.get(stack.pop(), ()):
            if parent not in granting:
                granting.add(parent)
                stack.append(parent)
    return int(
        db.scalar(
            select(func.count(func.distinct(User.id)))
            .join(UserRole, UserRole.user_id == User.id)
            .where(User.enabled.is_(True), UserRole.role_id.in_(granting))
        )
        or 0
    )


# --- roles ---------------------------------------------------------------------------------------------


def role_ids_by_name(db: Session, names: Iterable[str]) -> dict[str, int]:
    wanted = set(names)
    if not wanted:
        return {}
    return {
        name: role_id for role_id, name in db.execute(select(Role.id, Role.name).where(Role.name.in_(wanted)))
    }


def _role_records(db: Session, role_id: int | None = None) -> list[RoleRecord]:
    query = select(Role).order_by(Role.name)
    if role_id is not None:
        query = query.where(Role.id == role_id)
    roles = {r.id: RoleRecord(r.id, r.name, r.description, r.builtin) for r in db.scalars(query)}
    if not roles:
        return []
    names: dict[int, str] = {role_id: name for role_id, name in db.execute(select(Role.id, Role.name))}
    wanted = list(roles)
    for owner, sub in db.execute(
        select(RoleSubRole.role_id, RoleSubRole.sub_role_id).where(RoleSubRole.role_id.in_(wanted))
    ):
        roles[owner].sub_roles.append(names[sub])
    for p in db.scalars(select(RoleTypePermission).where(RoleTypePermission.role_id.in_(wanted))):
        actions = [action for action, column in ACTION_COLUMNS if getattr(p, column)]
        if actions:
            roles[p.role_id].type_permissions[p.block_type_id] = actions
    for owner, permission in db.execute(
        select(RoleFunctionalPermission.role_id, RoleFunctionalPermission.permission)
        .where(RoleFunctionalPermission.role_id.in_(wanted))
        .order_by(RoleFunctionalPermission.permission)
    ):
        roles[owner].functional_permissions.append(permission)
    for record in roles.values():
        record.sub_roles.sort()
    return list(roles.values())


def list_roles(db: Session) -> list[RoleRecord]:
    return _role_records(db)


def get_role(db: Session, role_id: int) -> RoleRecord | None:
    found = _role_records(db, role_id)
    return found[0] if found else None


def role_name_taken(db: Session, name: str, *, except_id: int | None = None) -> bool:
    query = select(Role.id).where(func.lower(Role.name) == func.lower(name))
    if except_id is not None:
        query = query.where(Role.id != except_id)
    return db.scalar(query.limit(1)) is not None


def sub_role_edges(db: Session) -> dict[int, set[int]]:
    edges: dict[int, set[int]] = {}
    for role_id, sub_role_id in db.execute(select(RoleSubRole.role_id, RoleSubRole.sub_role_id)):
        edges.setdefault(role_id, set()).add(sub_role_id)
    return edges


def insert_role(db: Session, name: str, description: str) -> int:
    return int(
        db.execute(
            insert(Role).values(name=name, description=description, builtin=False).returning(Role.id)
        ).scalar_one()
    )


def update_role(db: Session, role_id: int, values: dict[str, Any]) -> None:
    db.execute(update(Role).where(Role.id == role_id).values(**values))


def set_sub_roles(db: Session, role_id: int, sub_role_ids: Iterable[int]) -> None:
    db.execute(delete(RoleSubRole).where(RoleSubRole.role_id == role_id))
    rows = [{"role_id": role_id, "sub_role_id": s} for s in sorted(set(sub_role_ids))]
    if rows:
        db.execute(insert(RoleSubRole), rows)


def set_type_permissions(db: Session, role_id: int, permissions: dict[int, set[str]]) -> None:
    db.execute(delete(RoleTypePermission).where(RoleTypePermission.role_id == role_id))
    rows = [
        {
            "role_id": role_id,
            "block_type_id": type_id,
            **{column: action in actions for action, column in ACTION_COLUMNS},
        }
        for type_id, actions in sorted(permissions.items())
        if actions
    ]
    if rows:
        db.execute(insert(RoleTypePermission), rows)


def set_functional_permissions(db: Session, role_id: int, permissions: Iterable[str]) -> None:
    db.execute(delete(RoleFunctionalPermission).where(RoleFunctionalPermission.role_id == role_id))
    rows = [{"role_id": role_id, "permission": p} for p in sorted(set(permissions))]
    if rows:
        db.execute(insert(RoleFunctionalPermission), rows)


def delete_role(db: Session, role_id: int) -> None:
    db.execute(delete(Role).where(Role.id == role_id))
