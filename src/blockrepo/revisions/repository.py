"""All SQL of recording: a new revision under the `repository_state` row lock, and its change rows."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Table, UpdateBase, bindparam, insert, update
from sqlalchemy.orm import Session

from blockrepo.revisions.models import AttributeFormerName, Change, RepositoryState, Revision
from blockrepo.storage.bulk_insert import insert_columns
from blockrepo.storage.engine import TypedStatement

CHANGE = cast(Table, Change.__table__)


def next_revision(
    db: Session,
    *,
    metamodel_changed: bool,
    access_changed: bool,
    created_at: dt.datetime,
    user_login: str,
    request_id: str,
) -> int:
    """Allocate the next revision (and move the metamodel and access revisions when those changed) and
    write its row. The UPDATE takes the row lock on `repository_state`, held until the commit. Both run
    at the driver level: every write request runs them (bench/hot_path.py)."""
    connection = db.connection()
    bump = _BUMPS.get((metamodel_changed, access_changed))
    if bump is None:
        bump = _BUMPS[(metamodel_changed, access_changed)] = TypedStatement(
            _bump(metamodel_changed=metamodel_changed, access_changed=access_changed)
        )
    revision = int(bump.rows(connection, {})[0][0])
    _INSERT_REVISION.rows(
        connection,
        {"id": revision, "created_at": created_at, "user_login": user_login, "request_id": request_id},
    )
    return revision


def _bump(*, metamodel_changed: bool, access_changed: bool) -> UpdateBase:
    values: dict[str, Any] = {"revision": RepositoryState.revision + 1}
    if metamodel_changed:
        values["metamodel_revision"] = RepositoryState.metamodel_revision + 1
    if access_changed:
        values["access_revision"] = RepositoryState.access_revision + 1
    return (
        update(RepositoryState)
        .where(RepositoryState.id == 1)
        .values(**values)
        .returning(RepositoryState.revision)
    )


# (metamodel changed, access changed) -> the UPDATE that allocates a revision, compiled once.
_BUMPS: dict[tuple[bool, bool], TypedStatement] = {}
_INSERT_REVISION = TypedStatement(
    insert(Revision).values(
        id=bindparam("id"),
        created_at=bindparam("created_at"),
        user_login=bindparam("user_login"),
        request_id=bindparam("request_id"),
    )
)


CHANGE_COLUMNS = (
    "revision",
    "entity",
    "operation",
    "type_name",
    "element_id",
    "element_name",
    "subject",
    "changes",
)


def insert_change_columns(db: Session, revision: int, columns: Mapping[str, Sequence[Any]]) -> None:
    """Change rows of one revision given column by column (set-based, below the ORM): each of
    CHANGE_COLUMNS but `revision` with a value a row, `changes` as JSON text already. A column no row
    fills (`subject` for every change of a bulk create) is left out: Python 3.11's sqlite3 binds a None
    through its adapter lookup. The rows keep their order."""
    count = len(columns["changes"])
    if not count:
        return
    filled: dict[str, Sequence[Any]] = {"revision": [revision] * count}
    for name, column in columns.items():
        if column.count(None) != count:
            filled[name] = column
    insert_columns(db, CHANGE, filled, verbatim={"changes"})


def insert_former_names(
    db: Session, revision: int, former_names: Sequence[tuple[int, str, int | None]]
) -> None:
    """Rows of `attribute_former_name` for (attribute id, name, group id at deletion or None), all borne
    until `revision`."""
    db.execute(
        insert(AttributeFormerName),
        [
            {"attribute_id": attribute_id, "name": name, "until_revision": revision, "group_id": group_id}
            for attribute_id, name, group_id in former_names
        ],
    )
