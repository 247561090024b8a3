"""The live change stream's reads (`GET /api/history/stream`): the feed's changesets after a position, as
the reader may see them, whole revisions at a time, so that a revision named as the stream's position was
sent entirely."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.errors import ErrorItem, Forbidden, UnknownType, ValidationFailed
from blockrepo.history import repository
from blockrepo.history.repository import ChangesetRow, FeedScope, Window
from blockrepo.history.service import (
    changeset_json,
    feed_scope,
    property_visibility,
    require_history,
    revision_number,
)
from blockrepo.history.visibility import PropertyVisibility
from blockrepo.metamodel.snapshot import Metamodel

# Changesets read per batch; a revision larger than this is sent over several batches.
STREAM_BATCH = 500
# Past the last change row of any revision: a position after the whole revision.
AFTER_REVISION = 2**31 - 1
OPERATIONS = ("created", "updated", "deleted")


@dataclass(frozen=True)
class StreamFilter:
    """Which changesets a stream sends, beyond what its reader may see."""

    type_name: str | None = None
    operations: frozenset[str] | None = None


@dataclass(frozen=True)
class StreamBatch:
    """Changesets to send in order, the position after them, the newest revision every visible
    changeset of which is among those sent so far (None: no revision completed in this batch), and
    whether more may be read at once (the batch was full)."""

    items: list[dict[str, Any]]
    position: tuple[int, int]
    complete_revision: int | None
    more: bool = False


def stream_filter(
    actor: Actor, metamodel: Metamodel, type_name: str | None, operation: str | None
) -> StreamFilter:
    """The filter of `?type=&operation=`: 400 for an unknown type or operation, 403 for a type the reader
    may not read (as the type's history answers)."""
    require_history(actor)
    if type_name is not None:
        type_def = metamodel.type_named(type_name)
        if type_def is None:
            raise UnknownType(f"unknown building block type '{type_name}'")
        if not actor.can_type(type_def.id, "read"):
            raise Forbidden(f"no read permission on {type_name}")
    operations = None
    if operation is not None:
        named = frozenset(part.strip() for part in operation.split(",") if part.strip())
        unknown = sorted(named - set(OPERATIONS))
        if unknown or not named:
            raise ValidationFailed(
                "operation names created, updated or deleted (comma-separated)",
                errors=[ErrorItem("query:operation", "invalid_operation", f"not an operation: {unknown}")],
            )
        operations = named
    return StreamFilter(type_name, operations)


def stream_start(db: Session, last_event_id: str | None, since_revision: str | None) -> int:
    """The revision a stream starts after: `Last-Event-ID` (a reconnecting client's), else
    `sinceRevision`, else the newest revision (only what changes from now on)."""
    for raw, pointer in ((last_event_id, "header:Last-Event-ID"), (since_revision, "query:sinceRevision")):
        if raw is not None and raw.strip():
            text = raw.strip()
            if not (text.isascii() and text.isdigit()):
                raise ValidationFailed(
                    f"{pointer.split(':')[-1]} must be a revision number (0 or more)",
                    errors=[ErrorItem(pointer, "invalid_revision", f"not a revision number: {raw!r}")],
                )
            return revision_number(text, pointer)
    return repository.current_revision(db)


def newest_revision(db: Session) -> int:
    """The newest revision history shows (the committed horizon on PostgreSQL)."""
    return repository.current_revision(db)


def cache_revisions(db: Session) -> tuple[int, int]:
    """The metamodel and access revisions now (what a view built now is keyed by)."""
    return repository.cache_revisions(db)


def stream_batch(
    db: Session, actor: Actor, metamodel: Metamodel, chosen: StreamFilter, position: tuple[int, int]
) -> StreamBatch:
    """The next changesets after `position` that the reader may see and the filter lets through."""
    require_history(actor)
    horizon = repository.current_revision(db)
    scope = feed_scope(actor, metamodel)
    if chosen.type_name is not None:
        scope = FeedScope(
            type_names=frozenset({chosen.type_name}),
            include_metamodel=False,
            administration_kinds=frozenset(),
        )
    rows = repository.feed_changesets(
        db, 0, scope, Window(descending=False, limit=STREAM_BATCH, after=position)
    )
    more = len(rows) > STREAM_BATCH
    rows = rows[:STREAM_BATCH]
    if not rows:
        return StreamBatch([], (max(horizon, position[0]), AFTER_REVISION), max(horizon, position[0]))
    if more and rows[0].revision != rows[-1].revision:
        # The last revision of a full batch may go on beyond it: it is read again, whole, next time.
        last = rows[-1].revision
        rows = [row for row in rows if row.revision != last]
        complete: int | None = last - 1
        after = (last - 1, AFTER_REVISION)
    elif more:
        complete = rows[0].revision - 1 if rows[0].revision - 1 >= position[0] else None
        after = (rows[-1].revision, rows[-1].change_id)  # one revision larger than a batch: in parts
    else:
        complete = max(horizon, rows[-1].revision)
        after = (complete, AFTER_REVISION)
    visibility = property_visibility(db, actor, metamodel)
    items = [item for row in rows if (item := _item(row, visibility, chosen)) is not None]
    return StreamBatch(items, after, complete, more)


# --- the rows a process reads once for all its streams (api/revision_watch.py) ------------------------------

EVERYTHING = FeedScope(type_names=None, include_metamodel=True, administration_kinds=None)
# A changeset as read for every stream, by the name the HTTP layer holds it under.
FeedRow = ChangesetRow


@dataclass(frozen=True)
class RecentRows:
    """The changesets after a position, every one whatever the reader: `rows` hold every row of every
    revision up to `through` after the position asked for (and maybe the first rows of the next one),
    `position` is where the next read goes on, and the metamodel and access revisions were read with
    them (a stream's rights are built again when those move)."""

    rows: list[ChangesetRow]
    through: int
    position: tuple[int, int]
    metamodel_revision: int
    access_revision: int


def recent_rows(db: Session, after: tuple[int, int] | None, limit: int) -> RecentRows:
    """Up to `limit` changesets after `after`, read once for every stream of the process; with None, none
    (where the newest revision stands: reading starts there)."""
    horizon = repository.current_revision(db)
    rows = (
        []
        if after is None
        else repository.feed_changesets(db, 0, EVERYTHING, Window(descending=False, limit=limit, after=after))
    )
    # Read after the rows: a right lost by a change among them is then applied to them too (the view
    # is built again for these revisions before they are sent).
    metamodel_revision, access_revision = repository.cache_revisions(db)
    if after is None:
        return RecentRows([], horizon, (horizon, AFTER_REVISION), metamodel_revision, access_revision)
    more = len(rows) > limit
    rows = rows[:limit]
    if not rows:
        through = max(horizon, after[0])
        return RecentRows([], through, (through, AFTER_REVISION), metamodel_revision, access_revision)
    if not more:
        through = max(horizon, rows[-1].revision)
        position = (through, AFTER_REVISION)
    else:  # the newest revision read may go on beyond the limit: it counts once it is read whole
        through = rows[-1].revision - 1
        position = (rows[-1].revision, rows[-1].change_id)
    return RecentRows(rows, through, position, metamodel_revision, access_revision)


@dataclass(frozen=True)
class StreamView:
    """What one stream lets through, under its reader's rights as of the revisions it was built at."""

    visibility: PropertyVisibility
    scope: FeedScope
    chosen: StreamFilter
    metamodel_revision: int
    access_revision: int


def stream_view(
    db: Session, actor: Actor, metamodel: Metamodel, chosen: StreamFilter, revisions: tuple[int, int]
) -> StreamView:
    """The reader's view for changesets the process read for all streams (`select_changes`)."""
    require_history(actor)
    scope = feed_scope(actor, metamodel)
    if chosen.type_name is not None:
        scope = FeedScope(
            frozenset({chosen.type_name}), include_metamodel=False, administration_kinds=frozenset()
        )
    return StreamView(property_visibility(db, actor, metamodel), scope, chosen, *revisions)


def select_changes(view: StreamView, rows: list[ChangesetRow], through: int) -> StreamBatch:
    """The changesets among `rows` (every row after the stream's position up to `through`) that the
    view lets through: the feed's scope and masking, in memory."""
    items = []
    for row in rows:
        if _in_scope(row, view.scope):
            item = _item(row, view.visibility, view.chosen)
            if item is not None:
                items.append(item)
    return StreamBatch(items, (through, AFTER_REVISION), through)


def _in_scope(row: ChangesetRow, scope: FeedScope) -> bool:
    """`repository.feed_changesets`' scope for one row already read (the same rule, in Python)."""
    if row.entity == "element":
        return scope.type_names is None or row.type_name in scope.type_names
    if row.entity == "metamodel":
        return scope.include_metamodel
    if scope.administration_kinds is None:
        return True
    subject = row.subject or ""
    return any(subject.startswith(f"{kind} ") for kind in scope.administration_kinds)


def _item(row: ChangesetRow, visibility: PropertyVisibility, chosen: StreamFilter) -> dict[str, Any] | None:
    if chosen.operations is not None and row.operation not in chosen.operations:
        return None
    return changeset_json(row, visibility)
