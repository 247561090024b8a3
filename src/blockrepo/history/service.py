"""Rules of the history reads: who may read what, parameter checks, cursors and the changeset JSON."""

from __future__ import annotations

import base64
import binascii
import calendar
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import orjson
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.errors import (
    BadRequest,
    ErrorItem,
    Forbidden,
    NotFound,
    UnknownType,
    ValidationFailed,
    invalid_cursor,
)
from blockrepo.history import repository
from blockrepo.history.identities import AttributeIdentities, FormerName, no_former_names
from blockrepo.history.repository import ChangesetRow, FeedScope, Window
from blockrepo.history.visibility import PropertyVisibility
from blockrepo.metamodel.snapshot import Metamodel

VIEW_HISTORY = "VIEW_HISTORY"
# Revisions and change ids are 32-bit integer columns; larger numbers in a request are out of range.
MAX_REVISION = 2**31 - 1
# The kind of an administration change is the first word of its subject; who may see it.
ADMINISTRATION_KIND_PERMISSIONS = {
    "user": "ADMIN_USERS",
    "role": "ADMIN_ROLES",
    "attribute": "ADMIN_ATTRIBUTES",  # also "attribute group …"
    "token": "ADMIN_USERS",
    "webhook": "ADMIN_USERS",
    "import": "IMPORT",
}
# Rows read per batch while a page skips changesets the reader may not see, and the most rows one page
# looks at before it ends early with a cursor past them (bounds the work of one request).
FILTER_BATCH = 500
SCAN_BUDGET = 20_000


@dataclass(frozen=True)
class PlannedChanges:
    """A planning scenario's own changesets, which a history read in the scenario shows before main's:
    the scenario is main as of `base` with these on top. `fetch` reads them newest first by (main's
    revision when made, change number) in a window; `type_of` names the type the scenario knows an
    element by (for an element's history; None: the scenario has no change of it)."""

    scope: str
    base: int
    fetch: Callable[[Window], list[ChangesetRow]]
    type_of: Callable[[int], str | None]


@dataclass(frozen=True)
class PageParameters:
    """Raw query parameters shared by the history endpoints, as the client sent them."""

    limit: str | None = None
    cursor: str | None = None
    from_: str | None = None
    to: str | None = None


@dataclass(frozen=True)
class Limits:
    page_size: int
    max_page_size: int


def format_timestamp(moment: dt.datetime) -> str:
    """ISO-8601 UTC with milliseconds, as `lastModificationTime` (SQLite hands back naive UTC values)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def revision_number(raw: str, pointer: str) -> int:
    """Digits naming a revision; beyond the column's range is a 400, not a database error."""
    number = int(raw)
    if number > MAX_REVISION:
        raise ValidationFailed(
            f"{pointer.split(':')[-1]} is out of range",
            errors=[ErrorItem(pointer, "out_of_range", f"at most {MAX_REVISION}")],
        )
    return number


def parse_moment(raw: str, pointer: str) -> int | dt.datetime:
    """A revision number (digits) or an ISO-8601 time (naive means UTC), else a 400 naming the problem."""
    text = raw.strip()
    if _digits(text):
        return revision_number(text, pointer)
    try:
        return iso_moment(text)
    except ValueError as exc:
        raise ValidationFailed(
            f"{pointer.split(':')[-1]} must be a revision number or an ISO-8601 time",
            errors=[
                ErrorItem(
                    pointer,
                    "invalid_revision_or_time",
                    f"not a revision or an ISO-8601 time: {raw!r} ({exc})",
                )
            ],
        ) from None


# ISO-8601 forms Python's fromisoformat does not read: ordinal dates (2026-328), the end of a day (T24:00)
# and a leap second (23:59:60).
_ORDINAL_DATE = re.compile(r"(\d{4})-?(\d{3})(?=$|T)")
_END_OF_DAY = re.compile(r"T24(?::?00(?::?00(?:[.,]0+)?)?)?(?=$|[Zz+-])")
_LEAP_SECOND = re.compile(r"(T\d{2}:?\d{2}:?)60(?=$|[.,Zz+-])")
_LATEST = dt.datetime.max.replace(tzinfo=dt.UTC)
_EARLIEST = dt.datetime.min.replace(tzinfo=dt.UTC)


def iso_moment(text: str) -> dt.datetime:
    """An ISO-8601 time in UTC (ValueError if it is none). A time whose offset puts it beyond year 9999 or
    before year 1 in UTC is still a valid time: it stands for "after (before) every revision" and is
    answered as the latest (earliest) moment Python can hold, not refused."""
    ordinal = _ORDINAL_DATE.match(text)
    if ordinal is not None:
        year, day = int(ordinal.group(1)), int(ordinal.group(2))
        days_in_year = 366 if calendar.isleap(year) else 365
        if not 1 <= day <= days_in_year or year < 1:
            raise ValueError(f"day of year must be in 1..{days_in_year}")
        date = dt.date(year, 1, 1) + dt.timedelta(days=day - 1)
        text = date.isoformat() + text[ordinal.end() :]
    later = dt.timedelta()
    if _END_OF_DAY.search(text):
        text, later = _END_OF_DAY.sub("T00:00:00", text, count=1), dt.timedelta(days=1)
    elif _LEAP_SECOND.search(text):
        text, later = _LEAP_SECOND.sub(r"\g<1>59", text, count=1), dt.timedelta(seconds=1)
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        return (moment + later).astimezone(dt.UTC)
    except OverflowError:
        return _LATEST if moment.year == dt.MAXYEAR else _EARLIEST


def end_of_moment(moment: dt.datetime) -> dt.datetime:
    """An upper bound given at millisecond precision (as history shows times) covers that millisecond."""
    if moment.microsecond % 1000 == 0:
        return moment + dt.timedelta(microseconds=999)
    return moment


def parse_limit(raw: str | None, limits: Limits) -> int:
    if raw is None:
        return limits.page_size
    text = raw.strip()
    if not _digits(text) or not 1 <= int(text) <= limits.max_page_size:
        raise ValidationFailed(
            f"limit must be an integer from 1 to {limits.max_page_size}",
            errors=[
                ErrorItem("query:limit", "invalid_limit", f"expected 1..{limits.max_page_size}, got {raw!r}")
            ],
        )
    return int(text)


def encode_cursor(scope: str, revision: int, change_id: int) -> str:
    payload = orjson.dumps([scope, revision, change_id])
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def decode_cursor(raw: str, scope: str) -> tuple[int, int]:
    invalid = invalid_cursor("query:cursor")
    try:
        payload = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
        value = orjson.loads(payload)
    except (binascii.Error, ValueError):
        raise invalid from None
    if (
        not isinstance(value, list)
        or len(value) != 3
        or value[0] != scope
        or not all(
            isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_REVISION for v in value[1:]
        )
    ):
        raise invalid
    return int(value[1]), int(value[2])


def _window(parameters: PageParameters, limits: Limits, scope: str, *, descending: bool) -> Window:
    after = decode_cursor(parameters.cursor, scope) if parameters.cursor is not None else None
    return bounded_window(parameters, limits, descending=descending, after=after)


def bounded_window(
    parameters: PageParameters, limits: Limits, *, descending: bool, after: tuple[int, int] | None
) -> Window:
    """The window of `parameters`' bounds and page size, from keyset position `after` (the caller has
    opened the cursor: a history read in a scenario keeps two positions, one per part)."""
    limit = parse_limit(parameters.limit, limits)
    bounds: dict[str, Any] = {}
    for name, raw in (("from", parameters.from_), ("to", parameters.to)):
        if raw is None:
            continue
        moment = parse_moment(raw, f"query:{name}")
        if isinstance(moment, int):
            bounds[f"{name}_revision"] = moment
        else:
            bounds[f"{name}_time"] = end_of_moment(moment) if name == "to" else moment
    return Window(descending=descending, limit=limit, after=after, **bounds)


def require_history(actor: Actor) -> None:
    if not actor.can(VIEW_HISTORY):
        raise Forbidden("reading history needs the VIEW_HISTORY permission")


def readable_type_history(actor: Actor, metamodel: Metamodel, type_name: str) -> None:
    """Refuse a history read of `type_name` that `actor` may not make (403), or of an unknown type (404)."""
    require_history(actor)
    block_type = metamodel.type_named(type_name)
    if block_type is None:
        raise UnknownType(f"unknown building block type {type_name!r}")
    if not actor.can_type(block_type.id, "read"):
        raise Forbidden(f"no read permission on {type_name}")


def attribute_identities(db: Session, metamodel: Metamodel) -> AttributeIdentities:
    """Which attribute each name recorded in history meant (one query over the few former names)."""
    return AttributeIdentities((FormerName(*row) for row in repository.former_attribute_names(db)), metamodel)


def property_visibility(db: Session, actor: Actor, metamodel: Metamodel) -> PropertyVisibility:
    """What `actor` may read of recorded changes; a supervisor reads everything, whatever it was named,
    so the former names are not read for one."""
    identities = no_former_names(metamodel) if actor.supervisor else attribute_identities(db, metamodel)
    return PropertyVisibility(actor, metamodel, identities)


def changeset_json(row: ChangesetRow, visibility: PropertyVisibility) -> dict[str, Any] | None:
    """The API form of one changeset, with what the reader may not see left out; None when the reader may
    see none of its changes (API.md 5: such a changeset is left out whole, as it would still tell who
    changed the element and when)."""
    element = row.entity == "element"
    changes = visibility.filter_changes(row.type_name, row.changes, row.revision) if element else row.changes
    if element and not changes and not visibility.sees_everything:
        return None
    shown = {
        "revision": row.revision,
        "timestamp": format_timestamp(row.created_at),
        "user": row.user_login,
        "requestId": row.request_id,
        "via": row.via,
        "viaScenario": row.scenario,
        "entity": row.entity,
        "operation": row.operation,
        "type": row.type_name if element else None,
        "id": row.element_id if element else None,
        "name": row.element_name if element else None,
        "subject": None if element else row.subject,
        "changes": changes,
    }
    if row.planned:
        shown["scenarioChange"] = row.change_id
    return shown


def changeset_page(
    fetch: Callable[[Window], list[ChangesetRow]],
    window: Window,
    scope: str,
    visibility: PropertyVisibility,
    *,
    first: list[ChangesetRow] | None = None,
) -> dict[str, Any]:
    """One page of the changesets the reader may see, read batch by batch from the keyset position on.

    Changesets left out for the reader are skipped in SQL batches until the page is full, so a restricted
    reader still gets full pages. A page that would have to skip more than SCAN_BUDGET rows ends early
    with a cursor just past the last row looked at: the next page resumes there, so nothing the reader may
    see is missed or repeated and the cursor always moves forward. `first` is the first batch if the
    caller has read it already (`fetch(window)`)."""
    items: list[dict[str, Any]] = []
    last_item: ChangesetRow | None = None
    batch_window = window
    batch = first if first is not None else fetch(batch_window)
    scanned = 0
    while True:
        more = len(batch) > batch_window.limit
        batch = batch[: batch_window.limit]
        for row in batch:
            item = changeset_json(row, visibility)
            if item is None:
                continue
            if len(items) == window.limit:
                # A visible changeset beyond a full page: there is a next page, starting after this one.
                assert last_item is not None
                return {"items": items, "nextCursor": encode_cursor(scope, *_position(last_item))}
            items.append(item)
            last_item = row
        scanned += len(batch)
        if not more or not batch:
            return {"items": items, "nextCursor": None}
        if scanned >= SCAN_BUDGET:
            return {"items": items, "nextCursor": encode_cursor(scope, *_position(batch[-1]))}
        batch_window = replace(window, after=_position(batch[-1]), limit=max(window.limit, FILTER_BATCH))
        batch = fetch(batch_window)


def _position(row: ChangesetRow) -> tuple[int, int]:
    return row.revision, row.change_id


def element_history(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    limits: Limits,
    type_name: str,
    element_id: int,
    parameters: PageParameters,
    in_scenario: Callable[[], PlannedChanges] | None = None,
) -> dict[str, Any]:
    """The changesets of one element, newest first (404 if it never existed in that type); in a scenario
    (`in_scenario` gives its changes), the scenario's own before main's up to its base."""
    readable_type_history(actor, metamodel, type_name)
    scope = f"e{element_id}"
    if in_scenario is not None:
        planned = in_scenario()  # after the checks: who may not read history learns nothing of scenarios
        known = planned.type_of(element_id) or repository.element_type_in_history(
            db, element_id, planned.base
        )
        if known != type_name:
            raise NotFound(f"{type_name} {element_id} has no history in the scenario: it never existed there")
        return _planned_page(
            planned,
            lambda part: repository.element_changesets(db, element_id, part),
            scope,
            parameters,
            limits,
            property_visibility(db, actor, metamodel),
        )
    window = _window(parameters, limits, scope, descending=True)
    rows = repository.element_changesets(db, element_id, window)
    known_as = rows[0].type_name if rows else repository.element_type_in_history(db, element_id)
    if known_as != type_name:
        raise NotFound(f"{type_name} {element_id} has no history: it never existed")
    return changeset_page(
        lambda part: repository.element_changesets(db, element_id, part),
        window,
        scope,
        property_visibility(db, actor, metamodel),
        first=rows,
    )


def type_history(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    limits: Limits,
    type_name: str,
    parameters: PageParameters,
    in_scenario: Callable[[], PlannedChanges] | None = None,
) -> dict[str, Any]:
    """The changesets of every element of a type, deleted ones included, newest first; in a scenario
    (`in_scenario` gives its changes), the scenario's own before main's up to its base."""
    readable_type_history(actor, metamodel, type_name)
    scope = f"t{type_name}"
    if in_scenario is not None:
        return _planned_page(
            in_scenario(),
            lambda part: repository.type_changesets(db, type_name, part),
            scope,
            parameters,
            limits,
            property_visibility(db, actor, metamodel),
        )
    window = _window(parameters, limits, scope, descending=True)
    return changeset_page(
        lambda part: repository.type_changesets(db, type_name, part),
        window,
        scope,
        property_visibility(db, actor, metamodel),
    )


def _planned_page(
    planned: PlannedChanges,
    main: Callable[[Window], list[ChangesetRow]],
    scope: str,
    parameters: PageParameters,
    limits: Limits,
    visibility: PropertyVisibility,
) -> dict[str, Any]:
    """One page of a history read in a scenario: its own changesets, newest first, then main's up to its
    base. The cursor names the part it continues (its scope) and the position within it, so a page may
    end in either part and one that fills up with the scenario's last changeset leads on to main's."""
    own_scope, main_scope = f"{scope}.own.{planned.scope}", f"{scope}.main.{planned.scope}"
    part, after = own_scope, None
    if parameters.cursor is not None:
        try:
            after = decode_cursor(parameters.cursor, own_scope)
        except BadRequest:
            part, after = main_scope, decode_cursor(parameters.cursor, main_scope)
    window = bounded_window(parameters, limits, descending=True, after=after)
    up_to = planned.base if window.to_revision is None else min(window.to_revision, planned.base)
    if part == main_scope:
        return changeset_page(main, replace(window, to_revision=up_to), main_scope, visibility)
    page = changeset_page(planned.fetch, window, own_scope, visibility)
    remaining = window.limit - len(page["items"])
    if page["nextCursor"] is not None:
        return page
    in_main = replace(window, to_revision=up_to, after=None)
    if remaining == 0:
        # A full page: a cursor into main's part only if that part has a changeset to show.
        ahead = main(replace(in_main, limit=1))
        page["nextCursor"] = encode_cursor(main_scope, planned.base + 1, 0) if ahead else None
        return page
    rest = changeset_page(main, replace(in_main, limit=remaining), main_scope, visibility)
    return {"items": page["items"] + rest["items"], "nextCursor": rest["nextCursor"]}


def feed_scope(actor: Actor, metamodel: Metamodel) -> FeedScope:
    if actor.supervisor:
        return FeedScope(type_names=None, include_metamodel=True, administration_kinds=None)
    return FeedScope(
        type_names=frozenset(t.name for t in metamodel.types if actor.can_type(t.id, "read")),
        # Metamodel changesets name attributes, groups, literals and types; only those who see the whole
        # metamodel (MetamodelView's rule) see them. Others follow GET /api/metamodel's revision.
        include_metamodel=actor.can("EDIT_METAMODEL") or actor.can("ADMIN_ATTRIBUTES"),
        administration_kinds=frozenset(
            kind for kind, permission in ADMINISTRATION_KIND_PERMISSIONS.items() if actor.can(permission)
        ),
    )


def _parse_since(raw: str | None) -> int:
    if raw is None:
        return 0
    text = raw.strip()
    if not _digits(text):
        raise ValidationFailed(
            "sinceRevision must be a revision number (0 or more)",
            errors=[ErrorItem("query:sinceRevision", "invalid_revision", f"not a revision number: {raw!r}")],
        )
    return revision_number(text, "query:sinceRevision")


def feed(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    limits: Limits,
    since_revision: str | None,
    parameters: PageParameters,
) -> dict[str, Any]:
    """The change feed: every visible changeset after `since_revision`, in commit order."""
    require_history(actor)
    since = _parse_since(since_revision)
    window = _window(parameters, limits, "f", descending=False)
    scope = feed_scope(actor, metamodel)
    return changeset_page(
        lambda part: repository.feed_changesets(db, since, scope, part),
        window,
        "f",
        property_visibility(db, actor, metamodel),
    )
