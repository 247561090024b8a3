"""All SQL of the history reads: changesets by element, by type and in feed order, and the folds of `asOf`.

Every query walks one of the change table's indexes: (element_id, revision) for one element,
(type_name, revision) for a type, (revision) for the feed, so a read costs in proportion to the rows it
returns, not to the size of the whole history. The changeset reads stop at the committed horizon
(`revisions.repository.visible_revision`), read in a statement of its own just before them: on PostgreSQL
writers commit out of revision order, and a revision above it could still be followed by a smaller one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, case, func, or_, select, true
from sqlalchemy.orm import Session, aliased

from blockrepo.revisions.models import AttributeFormerName, Change, RepositoryState, Revision
from blockrepo.revisions.repository import visible_revision

# Ids per IN (...) list: well under SQLite's bound-parameter limit; a page of 1,000 ids is one query.
_IN_CHUNK = 1000


@dataclass(frozen=True)
class ChangesetRow:
    """One change row with the revision it belongs to."""

    change_id: int
    revision: int
    entity: str
    operation: str
    type_name: str | None
    element_id: int | None
    element_name: str | None
    subject: str | None
    changes: list[dict[str, Any]]
    created_at: dt.datetime
    user_login: str
    request_id: str
    via: str | None = None
    scenario: str | None = None
    # A change made in a planning scenario and not in main (`change_id` is the scenario's number).
    planned: bool = False


@dataclass(frozen=True)
class Window:
    """Which part of an ordered history to read: bounds (inclusive), a keyset position and a page size.

    `after` is the (revision, change id) of the last row of the previous page; rows strictly beyond it in
    the reading direction come next.
    """

    descending: bool
    limit: int
    from_revision: int | None = None
    to_revision: int | None = None
    from_time: dt.datetime | None = None
    to_time: dt.datetime | None = None
    after: tuple[int, int] | None = None


@dataclass(frozen=True)
class FeedScope:
    """What the feed may show one reader. `type_names` None: every element change; `administration_kinds`
    None: every administration change (else only subjects starting with one of these kinds)."""

    type_names: frozenset[str] | None
    include_metamodel: bool
    administration_kinds: frozenset[str] | None


def _changeset_select() -> Select[Any]:
    return select(
        Change.id,
        Change.revision,
        Change.entity,
        Change.operation,
        Change.type_name,
        Change.element_id,
        Change.element_name,
        Change.subject,
        Change.changes,
        Revision.created_at,
        Revision.user_login,
        Revision.request_id,
        Revision.via,
        Revision.scenario,
    ).join(Revision, Revision.id == Change.revision)


def _rows(db: Session, statement: Select[Any]) -> list[ChangesetRow]:
    return [ChangesetRow(*row) for row in db.execute(statement)]


def _horizon(db: Session) -> int | None:
    """The bound of a history read: none on SQLite, whose one writer commits revisions in order, so any
    snapshot holds a gap-free prefix of them already; `visible_revision` on PostgreSQL."""
    return None if db.get_bind().dialect.name == "sqlite" else visible_revision(db)


def _windowed(statement: Select[Any], window: Window, horizon: int | None) -> Select[Any]:
    if horizon is not None:
        statement = statement.where(Change.revision <= horizon, Revision.id <= horizon)
    if window.from_revision is not None:
        statement = statement.where(
            Change.revision >= window.from_revision, Revision.id >= window.from_revision
        )
    if window.to_revision is not None:
        statement = statement.where(Change.revision <= window.to_revision, Revision.id <= window.to_revision)
    if window.from_time is not None:
        statement = statement.where(Revision.created_at >= window.from_time)
    if window.to_time is not None:
        statement = statement.where(Revision.created_at <= window.to_time)
    if window.after is not None:
        revision, change_id = window.after
        if window.descending:
            statement = statement.where(
                or_(Change.revision < revision, and_(Change.revision == revision, Change.id < change_id))
            )
        else:
            statement = statement.where(
                or_(Change.revision > revision, and_(Change.revision == revision, Change.id > change_id))
            )
    if window.descending:
        statement = statement.order_by(Change.revision.desc(), Change.id.desc())
    else:
        statement = statement.order_by(Change.revision, Change.id)
    # One row more than the page tells whether another page follows.
    return statement.limit(window.limit + 1)


def element_changesets(db: Session, element_id: int, window: Window) -> list[ChangesetRow]:
    """The changesets of one element via (element_id, revision) alone: no other condition, so the plan
    cannot drift to a type-wide index. An element id is never reused and never changes type, so every row
    names the element's one type (only element changes carry an element id)."""
    statement = _changeset_select().where(Change.element_id == element_id)
    return _rows(db, _windowed(statement, window, _horizon(db)))


def type_changesets(db: Session, type_name: str, window: Window) -> list[ChangesetRow]:
    """The changesets of every element of a type, deleted ones included, via (type_name, revision)."""
    statement = _changeset_select().where(Change.type_name == type_name, Change.entity == "element")
    return _rows(db, _windowed(statement, window, _horizon(db)))


def feed_changesets(db: Session, since_revision: int, scope: FeedScope, window: Window) -> list[ChangesetRow]:
    """Every changeset after `since_revision` that the scope lets through, in commit order."""
    statement = _changeset_select().where(
        Change.revision > since_revision, Revision.id > since_revision, _scope_predicate(scope)
    )
    return _rows(db, _windowed(statement, window, _horizon(db)))


def _scope_predicate(scope: FeedScope) -> ColumnElement[bool]:
    if scope.type_names is None and scope.include_metamodel and scope.administration_kinds is None:
        return true()
    allowed: list[ColumnElement[bool]] = []
    if scope.type_names is None:
        allowed.append(Change.entity == "element")
    elif scope.type_names:
        allowed.append(and_(Change.entity == "element", Change.type_name.in_(sorted(scope.type_names))))
    if scope.include_metamodel:
        allowed.append(Change.entity == "metamodel")
    if scope.administration_kinds is None:
        allowed.append(Change.entity == "administration")
    else:
        allowed.extend(
            and_(Change.entity == "administration", Change.subject.like(f"{kind} %"))
            for kind in sorted(scope.administration_kinds)
        )
    return or_(*allowed) if allowed else Change.id.is_(None)


def element_type_in_history(db: Session, element_id: int, up_to: int | None = None) -> str | None:
    """The type name history knows the element by (None: it never existed, up to revision `up_to`)."""
    statement = select(Change.type_name).where(Change.element_id == element_id)
    if up_to is not None:
        statement = statement.where(Change.revision <= up_to)
    return db.scalar(statement.limit(1))


# Session.info key: the horizon read just before a REPEATABLE READ snapshot began (`hold_horizon`).
_HELD_HORIZON = "blockrepo.history.horizon"


def hold_horizon(db: Session) -> None:
    """Read the horizon in a transaction of its own and keep it for `current_revision`: call on a fresh
    session right before it begins a REPEATABLE READ snapshot. A horizon read inside that snapshot could
    count a revision that committed after the snapshot was taken; one read before it names revisions the
    snapshot holds, all of them (it may hold later ones too)."""
    if db.get_bind().dialect.name != "sqlite":
        db.info[_HELD_HORIZON] = visible_revision(db)
        db.rollback()


def cache_revisions(db: Session) -> tuple[int, int]:
    """The metamodel and access revisions (`repository_state`): rights and names are read again when
    they move."""
    row = db.execute(
        select(RepositoryState.metamodel_revision, RepositoryState.access_revision).where(
            RepositoryState.id == 1
        )
    ).one()
    return int(row[0]), int(row[1])


def current_revision(db: Session) -> int:
    """The newest revision history shows (`visible_revision`), or the one `hold_horizon` kept."""
    held = db.info.get(_HELD_HORIZON)
    return int(held) if held is not None else visible_revision(db)


def last_revision_at(db: Session, moment: dt.datetime) -> int:
    """The newest revision stamped at or before `moment` (0: none). Stamps are request start times, so a
    long request that commits late can carry an earlier stamp than the revision before it; taking the
    highest number among those stamped in time keeps every revision stamped at or before `moment`.
    Only revisions up to the committed horizon count: one above it may still be followed by a smaller one."""
    newest = select(func.max(Revision.id)).where(Revision.created_at <= moment)
    horizon = _horizon(db)
    if horizon is not None:
        newest = newest.where(Revision.id <= horizon)
    return int(db.scalar(newest) or 0)


def revision_timestamps(db: Session, revisions: Iterable[int]) -> dict[int, tuple[dt.datetime, str]]:
    wanted = sorted(set(revisions))
    found: dict[int, tuple[dt.datetime, str]] = {}
    for chunk in _chunks(wanted):
        statement = select(Revision.id, Revision.created_at, Revision.user_login).where(
            Revision.id.in_(chunk)
        )
        for revision, created_at, user_login in db.execute(statement):
            found[revision] = (created_at, user_login)
    return found


def element_changesets_up_to(db: Session, element_ids: Sequence[int], revision: int) -> list[ChangesetRow]:
    """Every changeset of these elements up to `revision`, oldest first per element (the fold of asOf)."""
    rows: list[ChangesetRow] = []
    for chunk in _chunks(sorted(set(element_ids))):
        statement = (
            _changeset_select()
            .where(Change.element_id.in_(chunk), Change.entity == "element", Change.revision <= revision)
            .order_by(Change.element_id, Change.revision, Change.id)
        )
        rows.extend(_rows(db, statement))
    return rows


def changed_element_ids(
    db: Session,
    after_revision: int,
    to_revision: int,
    type_names: frozenset[str] | None,
    *,
    after_element: int = 0,
    limit: int | None = None,
) -> list[int]:
    """Ids of the elements (of these types; None: any) changed by a revision in (`after_revision`,
    `to_revision`], ascending from after `after_element`, at most `limit`. Walks the change rows of that
    range (the revision index): its cost grows with the changes in the range, not with the history."""
    statement = (
        select(Change.element_id)
        .where(
            Change.entity == "element",
            Change.revision > after_revision,
            Change.revision <= to_revision,
            Change.element_id > after_element,
        )
        .group_by(Change.element_id)
        .order_by(Change.element_id)
    )
    if type_names is not None:
        statement = statement.where(Change.type_name.in_(sorted(type_names)))
    if limit is not None:
        statement = statement.limit(limit)
    return [int(element_id) for element_id in db.scalars(statement) if element_id is not None]


def element_changesets_between(
    db: Session, element_ids: Sequence[int], after_revision: int, to_revision: int
) -> list[ChangesetRow]:
    """The changesets of these elements in (`after_revision`, `to_revision`], oldest first per element."""
    rows: list[ChangesetRow] = []
    for chunk in _chunks(sorted(set(element_ids))):
        statement = (
            _changeset_select()
            .where(
                Change.element_id.in_(chunk),
                Change.entity == "element",
                Change.revision > after_revision,
                Change.revision <= to_revision,
            )
            .order_by(Change.element_id, Change.revision, Change.id)
        )
        rows.extend(_rows(db, statement))
    return rows


def names_at(db: Session, element_ids: Iterable[int], revision: int) -> dict[int, tuple[str, str | None]]:
    """(name, type name) of each element as recorded by its newest changeset up to `revision`."""
    newer = aliased(Change)
    found: dict[int, tuple[str, str | None]] = {}
    for chunk in _chunks(sorted(set(element_ids))):
        latest = (
            select(func.max(newer.revision))
            .where(
                newer.element_id == Change.element_id, newer.entity == "element", newer.revision <= revision
            )
            .scalar_subquery()
        )
        statement = select(Change.element_id, Change.element_name, Change.type_name, Change.id).where(
            Change.element_id.in_(chunk), Change.entity == "element", Change.revision == latest
        )
        # Several rows of one element in one revision cannot happen (the recorder folds them); if they
        # did, the last written wins.
        for element_id, name, type_name, _ in sorted(db.execute(statement), key=lambda r: int(r[3])):
            if element_id is not None:
                found[element_id] = (name or "", type_name)
    return found


def former_attribute_names(db: Session) -> list[tuple[int | None, str, int, int | None]]:
    """(attribute id, name, until revision, group id at deletion) of every name an attribute bore before
    a rename or its deletion: one row per rename or deletion, so few."""
    statement = select(
        AttributeFormerName.attribute_id,
        AttributeFormerName.name,
        AttributeFormerName.until_revision,
        AttributeFormerName.group_id,
    )
    return [
        (attribute_id, name, int(until), group_id)
        for attribute_id, name, until, group_id in db.execute(statement)
    ]


def revisions_between(db: Session, after: int, upto: int) -> int:
    """How many revisions there are in (`after`, `upto`]: on PostgreSQL a number a rolled-back write
    claimed is no revision, so this may be less than the difference."""
    if upto <= after:
        return 0
    statement = select(func.count()).select_from(Revision).where(Revision.id > after, Revision.id <= upto)
    return int(db.scalar(statement) or 0)


def changes_after(db: Session, revision: int) -> int:
    """How many change rows were recorded after `revision`: the number tells a snapshot's set of them from
    a later one's (rows are never removed). Counts the revision index alone."""
    return int(db.scalar(select(func.count()).select_from(Change).where(Change.revision > revision)) or 0)


def element_ids_changed_after(db: Session, revision: int) -> list[int]:
    """The elements change rows recorded after `revision` concern. Walks the revision index, so the cost
    grows with what changed since, not with the history."""
    statement = select(Change.element_id).where(Change.entity == "element", Change.revision > revision)
    return [int(element_id) for element_id in db.scalars(statement) if element_id is not None]


def element_ids_alive_at(db: Session, type_name: str, revision: int) -> list[int]:
    """Ids of the elements of a type that existed at `revision` (created, not yet deleted), ascending."""
    statement = (
        select(Change.element_id)
        .where(Change.type_name == type_name, Change.entity == "element", Change.revision <= revision)
        .group_by(Change.element_id)
        .having(func.sum(case((Change.operation == "deleted", 1), else_=0)) == 0)
        .order_by(Change.element_id)
    )
    return [int(element_id) for element_id in db.scalars(statement) if element_id is not None]


def _chunks(values: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]
