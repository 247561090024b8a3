"""SQL of the administration API: users, roles and their permissions (a fixed number of queries per call)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import LargeBinary, cast, delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from blockrepo.access.models import (
    SUPERVISOR_ROLE,
    AttributeGroupPermission,
    Role,
    RoleFunctionalPermission,
    RoleSubRole,
    RoleTypePermission,
    User,
    UserRole,
)
from blockrepo.elements.models import ElementValue, RelationValue
from blockrepo.metamodel.models import (
    Attribute,
    AttributeGroup,
    AttributeLiteral,
    AttributeRelationActivation,
    AttributeTypeActivation,
    RelationType,
)
from blockrepo.name_normalization import name_key

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
    return _key_taken(db, User.id, User.login, login, except_id)


def _key_taken(db: Session, id_column: Any, name_column: Any, name: str, except_id: int | None) -> bool:
    """Whether another row's name has the uniqueness key of `name` (`name_key`: full Unicode case
    folding in Python, where SQL lower() folds only ASCII on SQLite). SQL narrows the rows first, as an
    import creating many users checks each login under the write lock: an ASCII name's key is its SQL
    lower(), exact for ASCII rows on both databases; only a name that is not all ASCII (more bytes than
    characters) can fold into a key differently (`Straße` into `strasse`), so those rows are compared in
    Python. Logins are ASCII (LOGIN_PATTERN): for them the check reads the one row that clashes."""
    key = name_key(name)
    not_ascii = func.length(cast(name_column, LargeBinary)) != func.length(name_column)
    candidates = or_(func.lower(name_column) == key, not_ascii) if key.isascii() else not_ascii
    query = select(id_column, name_column).where(candidates)
    if except_id is not None:
        query = query.where(id_column != except_id)
    return any(name_key(row_name) == key for _, row_name in db.execute(query))


def insert_user(db: Session, values: dict[str, Any]) -> int:
    return int(db.execute(insert(User).values(**values).returning(User.id)).scalar_one())


def user_id_by_login(db: Session, login: str) -> int | None:
    """The id of the user with exactly this login."""
    return db.scalar(select(User.id).where(User.login == login))


def set_password(db: Session, user_id: int, password_hash: str) -> None:
    """A new password; the credentials version moves, so the user's sessions and cached credentials end."""
    db.execute(
        update(User)
        .where(User.id == user_id)
        .values(password_hash=password_hash, credentials_version=User.credentials_version + 1)
    )


def update_user(db: Session, user_id: int, values: dict[str, Any]) -> None:
    db.execute(update(User).where(User.id == user_id).values(**values))


def set_user_roles(db: Session, user_id: int, role_ids: Iterable[int]) -> None:
    db.execute(delete(UserRole).where(UserRole.user_id == user_id))
    rows = [{"user_id": user_id, "role_id": role_id} for role_id in sorted(set(role_ids))]
    if rows:
        db.execute(insert(UserRole), rows)


def delete_user(db: Session, user_id: int) -> None:
    db.execute(delete(User).where(User.id == user_id))


def supervisor_roles(db: Session) -> dict[int, str]:
    """The roles that carry Supervisor: the built-in role and every role that has it among its sub-roles,
    directly or through others (id -> name)."""
    supervisor_id = db.scalar(select(Role.id).where(Role.name == SUPERVISOR_ROLE))
    if supervisor_id is None:
        return {}
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
    return {
        role_id: name for role_id, name in db.execute(select(Role.id, Role.name).where(Role.id.in_(granting)))
    }


def count_enabled_supervisors(db: Session) -> int:
    """Enabled users who hold Supervisor directly or through sub-roles."""
    granting = list(supervisor_roles(db))
    if not granting:
        return 0
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
    return _key_taken(db, Role.id, Role.name, name, except_id)


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


# --- attributes ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LiteralRow:
    id: int | None  # None: a new literal
    name: str
    description: str
    color: str | None


def insert_attribute(db: Session, values: dict[str, Any]) -> int:
    position = db.scalar(select(func.coalesce(func.max(Attribute.position), -1)))
    return int(
        db.execute(
            insert(Attribute).values(**values, position=int(position or 0) + 1).returning(Attribute.id)
        ).scalar_one()
    )


def update_attribute(db: Session, attribute_id: int, values: dict[str, Any]) -> None:
    db.execute(update(Attribute).where(Attribute.id == attribute_id).values(**values))


def delete_attribute(db: Session, attribute_id: int) -> None:
    """Values, literals and activations cascade."""
    db.execute(delete(Attribute).where(Attribute.id == attribute_id))


def write_literals(
    db: Session, attribute_id: int, literals: list[LiteralRow], removed_ids: Iterable[int]
) -> None:
    """Make the attribute's literals exactly `literals`, in that order (existing ones keep their ids, so
    stored values keep pointing at them)."""
    removed = list(removed_ids)
    if removed:
        db.execute(delete(AttributeLiteral).where(AttributeLiteral.id.in_(removed)))
    kept = [lit for lit in literals if lit.id is not None]
    if kept:
        # Two passes, so that swapping two names never trips the (attribute, name) uniqueness.
        db.execute(
            update(AttributeLiteral),
            [{"id": lit.id, "name": f"\x01{lit.id}"} for lit in kept],
        )
        db.execute(
            update(AttributeLiteral),
            [
                {
                    "id": lit.id,
                    "name": lit.name,
                    "description": lit.description,
                    "color": lit.color,
                    "position": i,
                }
                for i, lit in enumerate(literals)
                if lit.id is not None
            ],
        )
    new_rows = [
        {
            "attribute_id": attribute_id,
            "name": lit.name,
            "description": lit.description,
            "color": lit.color,
            "position": i,
        }
        for i, lit in enumerate(literals)
        if lit.id is None
    ]
    if new_rows:
        db.execute(insert(AttributeLiteral), new_rows)


def set_type_activations(db: Session, attribute_id: int, type_ids: Iterable[int]) -> None:
    db.execute(delete(AttributeTypeActivation).where(AttributeTypeActivation.attribute_id == attribute_id))
    rows = [{"attribute_id": attribute_id, "block_type_id": t} for t in sorted(set(type_ids))]
    if rows:
        db.execute(insert(AttributeTypeActivation), rows)


def set_relation_activations(db: Session, attribute_id: int, relation_type_ids: Iterable[int]) -> None:
    db.execute(
        delete(AttributeRelationActivation).where(AttributeRelationActivation.attribute_id == attribute_id)
    )
    rows = [{"attribute_id": attribute_id, "relation_type_id": r} for r in sorted(set(relation_type_ids))]
    if rows:
        db.execute(insert(AttributeRelationActivation), rows)


def make_attributable(db: Session, relation_type_ids: Iterable[int]) -> None:
    ids = list(relation_type_ids)
    if ids:
        db.execute(update(RelationType).where(RelationType.id.in_(ids)).values(attributable=True))


def attribute_has_values(db: Session, attribute_id: int) -> bool:
    element_value = select(ElementValue.id).where(ElementValue.attribute_id == attribute_id).limit(1)
    relation_value = select(RelationValue.id).where(RelationValue.attribute_id == attribute_id).limit(1)
    return db.scalar(element_value) is not None or db.scalar(relation_value) is not None


def attribute_holds_several(db: Session, attribute_id: int) -> bool:
    """Whether some element or relation holds more than one value of the attribute."""
    on_elements = (
        select(ElementValue.element_id)
        .where(ElementValue.attribute_id == attribute_id)
        .group_by(ElementValue.element_id)
        .having(func.count() > 1)
        .limit(1)
    )
    on_relations = (
        select(RelationValue.relation_id)
        .where(RelationValue.attribute_id == attribute_id)
        .group_by(RelationValue.relation_id)
        .having(func.count() > 1)
        .limit(1)
    )
    return db.scalar(on_elements) is not None or db.scalar(on_relations) is not None


# --- attribute groups ----------------------------------------------------------------------------------


def group_permissions(db: Session, group_id: int | None = None) -> dict[int, list[tuple[str, bool, bool]]]:
    """(role name, read, write) per group, by role name."""
    query = (
        select(
            AttributeGroupPermission.group_id,
            Role.name,
            AttributeGroupPermission.can_read,
            AttributeGroupPermission.can_write,
        )
        .join(Role, Role.id == AttributeGroupPermission.role_id)
        .order_by(Role.name)
    )
    if group_id is not None:
        query = query.where(AttributeGroupPermission.group_id == group_id)
    result: dict[int, list[tuple[str, bool, bool]]] = {}
    for owner, role_name, can_read, can_write in db.execute(query):
        result.setdefault(owner, []).append((role_name, can_read, can_write))
    return result


def group_name_taken(db: Session, name: str, *, except_id: int | None = None) -> bool:
    return _key_taken(db, AttributeGroup.id, AttributeGroup.name, name, except_id)


def insert_group(db: Session, name: str, description: str, position: int | None) -> int:
    if position is None:
        position = int(db.scalar(select(func.coalesce(func.max(AttributeGroup.position), -1))) or 0) + 1
    return int(
        db.execute(
            insert(AttributeGroup)
            .values(name=name, description=description, position=position)
            .returning(AttributeGroup.id)
        ).scalar_one()
    )


def update_group(db: Session, group_id: int, values: dict[str, Any]) -> None:
    db.execute(update(AttributeGroup).where(AttributeGroup.id == group_id).values(**values))


def move_attributes(db: Session, attribute_ids: Iterable[int], group_id: int) -> None:
    ids = list(attribute_ids)
    if ids:
        db.execute(update(Attribute).where(Attribute.id.in_(ids)).values(group_id=group_id))


def set_group_permissions(db: Session, group_id: int, permissions: dict[int, tuple[bool, bool]]) -> None:
    db.execute(delete(AttributeGroupPermission).where(AttributeGroupPermission.group_id == group_id))
    rows = [
        {"group_id": group_id, "role_id": role_id, "can_read": read, "can_write": write}
        for role_id, (read, write) in sorted(permissions.items())
    ]
    if rows:
        db.execute(insert(AttributeGroupPermission), rows)


def delete_group(db: Session, group_id: int) -> None:
    db.execute(delete(AttributeGroup).where(AttributeGroup.id == group_id))
