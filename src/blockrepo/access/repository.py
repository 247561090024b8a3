"""All SQL of effective rights: a user's roles, their sub-roles and the permissions they grant."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, NamedTuple

from sqlalchemy import Connection, Integer, any_, bindparam, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from blockrepo.access.models import (
    AttributeGroupPermission,
    Role,
    RoleFunctionalPermission,
    RoleSubRole,
    RoleTypePermission,
    User,
    UserRole,
)
from blockrepo.revisions.models import CommittedState, RepositoryState
from blockrepo.storage.engine import DriverStatement

CHUNK_SIZE = 500  # logins per IN list, far below the bind-parameter limits

# Who acts and the revisions the caches are keyed by, in one statement: every request runs it.
_ACTING_SELECT = select(
    User.login,
    User.enabled,
    User.credentials_version,
    CommittedState(),
    RepositoryState.metamodel_revision,
    RepositoryState.access_revision,
).join(RepositoryState, RepositoryState.id == 1)
_ACTING = DriverStatement(_ACTING_SELECT.where(User.id == bindparam("user_id")), prepared=True)
# The same for several users at once, each row with its user's id (PostgreSQL: an array).
_ACTING_MANY = DriverStatement(
    _ACTING_SELECT.add_columns(User.id).where(
        User.id == any_(bindparam("user_ids", type_=postgresql.ARRAY(Integer)))
    ),
    prepared=True,
)


class Revisions(NamedTuple):
    """What a process caches is keyed by: `revision` moves with any write (`CommittedState`), a metamodel
    edit also moves `metamodel`, a change of users, roles or permissions also `access` (counters of
    `repository_state`)."""

    revision: int
    metamodel: int
    access: int


_REVISIONS = DriverStatement(
    select(CommittedState(), RepositoryState.metamodel_revision, RepositoryState.access_revision)
    .select_from(RepositoryState)
    .where(RepositoryState.id == 1),
    prepared=True,
)


def current_revisions(connection: Connection) -> Revisions:
    revision, metamodel_revision, access_revision = _REVISIONS.rows(connection, {})[0]
    return Revisions(revision, metamodel_revision, access_revision)


def acting_user(connection: Connection, user_id: int) -> Any | None:
    """The driver's row (login, enabled, credentials version, revision, metamodel revision, access
    revision) of this user and the repository state; None if the user does not exist."""
    return _ACTING.first(connection, {"user_id": user_id})


def acting_users(connection: Connection, user_ids: Sequence[int]) -> dict[int, Any]:
    """`acting_user` of several users, by id (those that exist): one statement on PostgreSQL."""
    if len(user_ids) == 1 or connection.dialect.name != "postgresql":
        found = {}
        for user_id in user_ids:
            row = acting_user(connection, user_id)
            if row is not None:
                found[user_id] = row
        return found
    return {row[6]: row[:6] for row in _ACTING_MANY.rows(connection, {"user_ids": list(user_ids)})}


def user_named(db: Session, login: str) -> User | None:
    """The user with exactly this login."""
    return db.scalar(select(User).where(User.login == login))


def user_names(db: Session, logins: Iterable[str]) -> list[tuple[str, str, str]]:
    """(login, first name, last name) of the users among `logins`."""
    found: list[tuple[str, str, str]] = []
    wanted = sorted(set(logins))
    for start in range(0, len(wanted), CHUNK_SIZE):
        found.extend(
            (row[0], row[1], row[2])
            for row in db.execute(
                select(User.login, User.first_name, User.last_name).where(
                    User.login.in_(wanted[start : start + CHUNK_SIZE])
                )
            )
        )
    return found


def direct_role_ids(db: Session, user_id: int) -> set[int]:
    return set(db.scalars(select(UserRole.role_id).where(UserRole.user_id == user_id)))


def sub_role_pairs(db: Session) -> list[tuple[int, int]]:
    """(role id, sub-role id) of every role that inherits another."""
    return [(row[0], row[1]) for row in db.execute(select(RoleSubRole.role_id, RoleSubRole.sub_role_id))]


def role_names(db: Session, role_ids: Collection[int]) -> frozenset[str]:
    if not role_ids:
        return frozenset()
    return frozenset(db.scalars(select(Role.name).where(Role.id.in_(role_ids))))


def type_permissions(db: Session, role_ids: Collection[int]) -> list[RoleTypePermission]:
    return list(db.scalars(select(RoleTypePermission).where(RoleTypePermission.role_id.in_(role_ids))))


def functional_permissions(db: Session, role_ids: Collection[int]) -> set[str]:
    return set(
        db.scalars(
            select(RoleFunctionalPermission.permission).where(RoleFunctionalPermission.role_id.in_(role_ids))
        )
    )


def group_permissions(db: Session) -> list[AttributeGroupPermission]:
    return list(db.scalars(select(AttributeGroupPermission)))
