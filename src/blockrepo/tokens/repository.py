"""All SQL of API tokens: the lookup every Bearer request makes, its rare writes, and the management reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Engine, String, any_, bindparam, select, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import Session

from blockrepo.access.models import User
from blockrepo.revisions.models import CommittedState, RepositoryState
from blockrepo.storage.engine import DriverStatement
from blockrepo.tokens.models import ApiToken

# A token, its owner and the repository's revisions in one statement: every Bearer request runs it.
_LOOKUP_SELECT = (
    select(
        ApiToken.public_id,
        ApiToken.id,
        ApiToken.user_id,
        ApiToken.secret_hash,
        ApiToken.pepper_id,
        ApiToken.expires_at,
        ApiToken.enabled,
        ApiToken.restriction,
        ApiToken.allowed_networks,
        ApiToken.last_used_at,
        User.login,
        User.enabled,
        User.credentials_version,
        CommittedState(),
        RepositoryState.metamodel_revision,
        RepositoryState.access_revision,
    )
    .join(User, User.id == ApiToken.user_id)
    .join(RepositoryState, RepositoryState.id == 1)
    .where(ApiToken.revoked_at.is_(None))
)
_LOOKUP = DriverStatement(_LOOKUP_SELECT.where(ApiToken.public_id == bindparam("public_id")), prepared=True)
_LOOKUP_MANY = DriverStatement(
    _LOOKUP_SELECT.where(ApiToken.public_id == any_(bindparam("public_ids", type_=postgresql.ARRAY(String)))),
    prepared=True,
)


def tokens_by_public_id(connection: Connection, public_ids: Sequence[str]) -> dict[str, Any]:
    """The driver's rows (public id, id, user id, secret hash, pepper id, expires at, enabled, restriction,
    allowed networks, last used at, owner's login, owner enabled, owner's credentials version, revision,
    metamodel revision, access revision) of the unrevoked tokens among `public_ids`; one statement on
    PostgreSQL."""
    if len(public_ids) == 1 or connection.dialect.name != "postgresql":
        found = {}
        for public_id in public_ids:
            row = token_by_public_id_row(connection, public_id)
            if row is not None:
                found[public_id] = row
        return found
    return {row[0]: row for row in _LOOKUP_MANY.rows(connection, {"public_ids": list(public_ids)})}


def token_by_public_id_row(connection: Connection, public_id: str) -> Any | None:
    """`tokens_by_public_id` of one public id: its row, or None."""
    return _LOOKUP.first(connection, {"public_id": public_id})


def touch(engine: Engine, token_id: int, now: int, address: str, due_before: int) -> None:
    """Record a use, unless another request recorded one since `due_before`."""
    with engine.begin() as connection:
        connection.execute(
            update(ApiToken)
            .where(
                ApiToken.id == token_id,
                (ApiToken.last_used_at.is_(None)) | (ApiToken.last_used_at < due_before),
            )
            .values(last_used_at=now, last_used_address=address[:64])
        )


def rehash(engine: Engine, token_id: int, old_pepper: str, new_pepper: str, new_hash: str) -> None:
    """Store the hash under the current pepper in place of one under a previous pepper."""
    with engine.begin() as connection:
        connection.execute(
            update(ApiToken)
            .where(ApiToken.id == token_id, ApiToken.pepper_id == old_pepper)
            .values(pepper_id=new_pepper, secret_hash=new_hash)
        )


def add_token(db: Session, token: ApiToken) -> ApiToken:
    db.add(token)
    db.flush()
    return token


def token_by_id(db: Session, token_id: int) -> ApiToken | None:
    return db.get(ApiToken, token_id)


def token_by_public_id(db: Session, public_id: str) -> ApiToken | None:
    return db.scalar(select(ApiToken).where(ApiToken.public_id == public_id))


def listed_tokens(db: Session, owner_id: int | None, *, revoked: bool) -> list[tuple[ApiToken, str]]:
    """(token, owner's login) of one owner's tokens (every owner's with None), newest first; revoked ones
    only when asked."""
    statement = select(ApiToken, User.login).join(User, User.id == ApiToken.user_id)
    if owner_id is not None:
        statement = statement.where(ApiToken.user_id == owner_id)
    if not revoked:
        statement = statement.where(ApiToken.revoked_at.is_(None))
    return [(row[0], row[1]) for row in db.execute(statement.order_by(ApiToken.id.desc()))]


def successor_of(db: Session, token_id: int) -> ApiToken | None:
    """The token a rotation of this one made, if any (a token is rotated once)."""
    return db.scalar(select(ApiToken).where(ApiToken.rotated_from == token_id).order_by(ApiToken.id).limit(1))


def login_of(db: Session, user_id: int) -> str | None:
    return db.scalar(select(User.login).where(User.id == user_id))


def user_id_named(db: Session, login: str) -> int | None:
    return db.scalar(select(User.id).where(User.login == login))
