"""Who acts: the account behind a principal as it is now, with the repository's revisions read alongside."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import Connection

from blockrepo.access.repository import Revisions, acting_user, acting_users, current_revisions
from blockrepo.revisions.repository import visible_revision


class ActingAccount(NamedTuple):
    """The login of a principal's account and the repository's revisions, read in one statement (a tuple:
    the read lane builds one per request, and a frozen dataclass costs several times as much)."""

    login: str
    revisions: Revisions


def acting_account(connection: Connection, user_id: int, credentials_version: int) -> ActingAccount | None:
    """The account of `user_id`, if it still exists, is enabled and has the credentials version its
    principal was given (a new password, login or disabling changes it); else None."""
    row = acting_user(connection, user_id)
    if row is None or not row[1] or row[2] != credentials_version:
        return None
    return ActingAccount(row[0], Revisions(row[3], row[4], row[5]))


def acting_accounts(
    connection: Connection, principals: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], ActingAccount]:
    """`acting_account` of several (user id, credentials version) at once (one statement on PostgreSQL):
    those whose account still exists, is enabled and has that credentials version."""
    rows = acting_users(connection, sorted({user_id for user_id, _ in principals}))
    found = {}
    for user_id, credentials_version in principals:
        row = rows.get(user_id)
        if row is not None and row[1] and row[2] == credentials_version:
            found[user_id, credentials_version] = ActingAccount(row[0], Revisions(row[3], row[4], row[5]))
    return found


def revisions_now(connection: Connection) -> Revisions:
    """The repository's revisions (data, metamodel, access) as `connection` sees them."""
    return current_revisions(connection)


def settled(connection: Connection, revisions: Revisions) -> bool:
    """Whether every write up to `revisions.revision` has ended (committed or rolled back), so that a
    snapshot begun after this call holds all of them and what it reads may be kept under `revisions`.
    Always so on SQLite (its one writer moves the counter as it commits); on PostgreSQL a write takes
    its number before it commits (`revisions.repository.visible_revision`). Call it in autocommit, before
    the snapshot begins."""
    if connection.dialect.name == "sqlite":
        return True
    return visible_revision(connection) >= revisions.revision
