"""All SQL of recording: a new revision (SQLite: the `repository_state` counter; PostgreSQL: a sequence and
a claim), its change rows, and the committed horizon that readers of history stop at."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, cast

from sqlalchemy import Connection, Table, UpdateBase, bindparam, delete, insert, select, update
from sqlalchemy.orm import Session

from blockrepo.revisions.models import AttributeFormerName, Change, RepositoryState, Revision
from blockrepo.storage.bulk_insert import insert_columns
from blockrepo.storage.engine import TypedStatement, driver_rows, prepared_rows
from blockrepo.storage.prepared import PreparedStatement
from blockrepo.storage.transactions import REVISION_CLAIMS

CHANGE = cast(Table, Change.__table__)


def next_revision(
    db: Session,
    *,
    metamodel_changed: bool,
    access_changed: bool,
    created_at: dt.datetime,
    user_login: str,
    request_id: str,
    via: str | None = None,
    scenario: str | None = None,
    changes: Mapping[str, Sequence[Any]] | None = None,
) -> int:
    """Allocate the next revision (and move the metamodel and access revisions when those changed) and
    write its row, and its first change rows (`changes`, as `insert_change_columns` takes them) if any.
    At the driver level: every write request runs it (bench/hot_path.py).

    SQLite: the counter of `repository_state`, its single writer holding the database lock. PostgreSQL:
    the next number of `revision_id_seq`, claimed in the same statement with an advisory lock keyed by
    it and held until the transaction ends (`visible_revision` reads the claims); concurrent writers
    overlap their commits, so a number can become visible before a smaller one, or never (a rollback
    after the flush leaves a gap readers step over once it is final). The metamodel and access counters
    move only in writes that hold the write gate exclusively (storage.transactions)."""
    connection = db.connection()
    if connection.dialect.name == "postgresql":
        arguments = {
            "created_at": created_at,
            "user_login": user_login,
            "request_id": request_id,
            "via": via,
            "scenario": scenario,
        }
        if changes and changes["changes"]:
            # The claim and the change rows in one statement: a round trip less for every write.
            arguments.update({name: changes[name] for name in CHANGE_COLUMNS if name != "revision"})
            revision = int(prepared_rows(connection, _CLAIM_WITH_CHANGES, arguments)[0][0])
        else:
            revision = int(prepared_rows(connection, _CLAIM, arguments)[0][0])
        if metamodel_changed or access_changed:
            bump = _bumps(metamodel_changed, access_changed, counter=False)
            bump.rows(connection, {})
        return revision
    revision = int(_bumps(metamodel_changed, access_changed, counter=True).rows(connection, {})[0][0])
    _INSERT_REVISION.rows(
        connection,
        {
            "id": revision,
            "created_at": created_at,
            "user_login": user_login,
            "request_id": request_id,
            "via": via,
            "scenario": scenario,
        },
    )
    if changes:
        insert_change_columns(db, revision, changes)
    return revision


def visible_revision(db: Session | Connection) -> int:
    """The newest revision readers of history may see: every revision at or below it is final, so a
    statement that starts after this one (a new snapshot) sees all of them that committed, and none
    that could still roll back. Call it in a statement of its own before the reads it bounds, and
    before a REPEATABLE READ transaction takes its snapshot.

    SQLite: the counter, moved by the one writer in the transaction that commits. PostgreSQL:
    `blockrepo_revision_horizon()` (migration 0009): the sequence's value read first, capped below the
    oldest number still claimed by a running transaction. Numbers are handed out in order, so a number
    at or below that value was handed out before the claims were read; its writer was either still
    running then (holding its claim, which caps the answer below it) or finished (committed, or rolled
    back for good). The feed therefore never skips a revision that commits later and never shows one
    that could roll back; it lags by the writes in flight."""
    connection = db.connection() if isinstance(db, Session) else db
    if connection.dialect.name == "postgresql":
        return int(driver_rows(connection, "SELECT blockrepo_revision_horizon()", ())[0][0])
    return int(driver_rows(connection, "SELECT revision FROM repository_state WHERE id = 1", ())[0][0])


_CLAIM_SQL = (
    "INSERT INTO revision (id, created_at, user_login, request_id, via, scenario)"
    " SELECT claim.id, %(created_at)s::timestamptz, %(user_login)s::varchar, %(request_id)s::varchar,"
    " %(via)s::varchar, %(scenario)s::varchar"
    " FROM (SELECT nextval('revision_id_seq')::integer AS id) AS claim,"
    f" LATERAL (SELECT pg_advisory_xact_lock({REVISION_CLAIMS}, claim.id)) AS held"
    " RETURNING id"
)
_CLAIM = PreparedStatement(_CLAIM_SQL)


# The claim with the revision's change rows, given column by column; they keep their order (ORDINALITY), and
# the change rows see the revision row the same statement inserts (a foreign key is checked at its end).
_CLAIM_WITH_CHANGES_SQL = (
    "WITH claimed AS ("
    + _CLAIM_SQL
    + ") INSERT INTO change (revision, entity, operation, type_name, element_id, element_name, subject,"
    " changes)"
    " SELECT claimed.id, c.entity, c.operation, c.type_name, c.element_id, c.element_name, c.subject,"
    " c.changes::json"
    " FROM claimed, unnest(%(entity)s::text[], %(operation)s::text[], %(type_name)s::text[],"
    " %(element_id)s::integer[], %(element_name)s::text[], %(subject)s::text[], %(changes)s::text[])"
    " WITH ORDINALITY AS c(entity, operation, type_name, element_id, element_name, subject, changes, n)"
    " ORDER BY c.n"
    " RETURNING revision"
)
_CLAIM_WITH_CHANGES = PreparedStatement(_CLAIM_WITH_CHANGES_SQL)


def _bumps(metamodel_changed: bool, access_changed: bool, *, counter: bool) -> TypedStatement:
    key = (metamodel_changed, access_changed, counter)
    bump = _BUMPS.get(key)
    if bump is None:
        bump = _BUMPS[key] = TypedStatement(
            _bump(metamodel_changed=metamodel_changed, access_changed=access_changed, counter=counter)
        )
    return bump


def _bump(*, metamodel_changed: bool, access_changed: bool, counter: bool) -> UpdateBase:
    values: dict[str, Any] = {"revision": RepositoryState.revision + 1} if counter else {}
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


# (metamodel changed, access changed, revision counter) -> the UPDATE of `repository_state`, compiled once.
_BUMPS: dict[tuple[bool, bool, bool], TypedStatement] = {}
_INSERT_REVISION = TypedStatement(
    insert(Revision).values(
        id=bindparam("id"),
        created_at=bindparam("created_at"),
        user_login=bindparam("user_login"),
        request_id=bindparam("request_id"),
        via=bindparam("via"),
        scenario=bindparam("scenario"),
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


def move_counters(db: Session, *, metamodel_changed: bool, access_changed: bool) -> None:
    """Move the metamodel and access revisions of a revision allocated before the request knew it changed
    them (`ChangeLog.write_ahead`)."""
    if metamodel_changed or access_changed:
        _bumps(metamodel_changed, access_changed, counter=False).rows(db.connection(), {})


TAKEN_PER_STATEMENT = 500


def take_element_changes(
    db: Session, revision: int, element_ids: Sequence[int]
) -> list[tuple[int, str, str, str, Any]]:
    """The element change rows of `element_ids` in `revision` (element id, operation, type name, element
    name, changes), deleted: the request records them again, folded with what it records now."""
    taken: list[tuple[int, str, str, str, Any]] = []
    for start in range(0, len(element_ids), TAKEN_PER_STATEMENT):
        part = element_ids[start : start + TAKEN_PER_STATEMENT]
        where = (Change.revision == revision, Change.entity == "element", Change.element_id.in_(part))
        rows = db.execute(
            select(Change.element_id, Change.operation, Change.type_name, Change.element_name, Change.changes)
            .where(*where)
            .order_by(Change.id)
        )
        taken += [(row[0], row[1], row[2], row[3], row[4]) for row in rows]
        db.execute(delete(Change).where(*where))
    return taken


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


def revision_mark(db: Session, revision: int) -> str | None:
    """What tells revision `revision` of this repository's history from any other repository's: a hash of
    its number, time and request id (None: no such revision). An export carries the mark of the revision
    it was taken at; a database with the same mark there shares that history (the same repository, or a
    restored copy of it), so the ids in the export name its elements. A copy that went its own way since
    hands out the same numbers to other writes, with other marks. The newest revision at or below
    `revision` is the one marked (on PostgreSQL a number can belong to a write that rolled back)."""
    row = db.execute(
        select(Revision.id, Revision.created_at, Revision.request_id)
        .where(Revision.id <= revision)
        .order_by(Revision.id.desc())
        .limit(1)
    ).first()
    if row is None:
        return None
    moment = row.created_at if row.created_at.tzinfo else row.created_at.replace(tzinfo=dt.UTC)
    text = f"{row.id}|{moment.astimezone(dt.UTC).isoformat()}|{row.request_id}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]
