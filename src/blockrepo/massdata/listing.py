"""Filtered, sorted reads of one type: keyset-paginated pages, or every match streamed as NDJSON.

A page costs one query for the ids (the iteraQL condition, the sort and the keyset run in the database),
a fixed number for their JSON (`reader.ElementReader`, the JSON `ElementView.render` gives), and one more for
`total` when asked: the same number for 1 or 1000 items.
The cursor carries the sort key values and the id of the last row, so the next page starts right after it
however many rows were inserted or deleted before it meanwhile (no offset drift).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import io
import logging
from collections.abc import Callable, Collection, Generator, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

import orjson
from sqlalchemy import CTE, ColumnElement, Select, and_, bindparam, false, func, or_, select
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements.models import Element, ElementValue
from blockrepo.elements.service import ElementReader, ElementView
from blockrepo.errors import BadRequest, ErrorItem, Forbidden, UnknownType, invalid_cursor
from blockrepo.history.repository import hold_horizon
from blockrepo.massdata.query.compiler import compile_filter, compile_query
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.massdata.query.parser import parse_predicate, parse_query
from blockrepo.massdata.query.syntax import Predicate, Query
from blockrepo.metamodel.models import AttributeLiteral
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, Metamodel

log = logging.getLogger("blockrepo.massdata")
Condition = ColumnElement[bool]
# Rows per round trip of a stream: large enough to amortise the queries, small enough to keep memory flat.
STREAM_BATCH = 1000

_COLUMN_KEYS: dict[str, tuple[Any, str]] = {
    "id": (Element.id, "integer"),
    "name": (Element.name, "text"),
    "description": (Element.description, "text"),
    "revision": (Element.revision, "integer"),
    "lastModificationTime": (Element.last_modified_at, "datetime"),
    "lastModificationUser": (Element.last_modified_by, "text"),
}
_ATTRIBUTE_KINDS = {
    "text": "text",
    "richtext": "text",
    "responsibility": "text",
    "number": "number",
    "date": "date",
    "dateInterval": "date",
    "boolean": "boolean",
    "enum": "integer",  # sorted by literal position, the order the metamodel lists them in
}


def require_massdata(actor: Actor, permission: str = "MASSDATA") -> None:
    """Refuse (403) an actor without the functional permission: MASSDATA, IMPORT or EXPORT. The massdata
    services call it first thing, so every entry point (the API, the command line) applies it."""
    if not actor.can(permission):
        raise Forbidden(f"this needs the {permission} permission")


def readable_type(metamodel: Metamodel, actor: Actor, type_name: str) -> BlockTypeDef:
    type_def = metamodel.type_named(type_name)
    if type_def is None:
        raise UnknownType(f"there is no building block type {type_name!r}")
    if not actor.can_type(type_def.id, "read"):
        raise Forbidden(f"you may not read {type_name} elements")
    return type_def


def in_url(name: str) -> str:
    """Where a problem with the URL parameter `name` is reported (API.md section 7)."""
    return f"query:{name}"


def in_body(name: str) -> str:
    """Where a problem with the body member `name` is reported: its JSON pointer."""
    return f"/{name}"


def _bad(pointer: str, code: str, message: str) -> BadRequest:
    return BadRequest(message, code=code, errors=[ErrorItem(pointer, code, message)])


# --- sorting -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SortKey:
    """One `sort` item: a SQL expression on `element`, its direction and how cursor values decode."""

    name: str
    descending: bool
    expression: Any
    kind: str  # integer, number, text, date, datetime, boolean
    nullable: bool

    @property
    def spec(self) -> str:
        return f"-{self.name}" if self.descending else self.name

    def order(self) -> Any:
        ordered = self.expression.desc() if self.descending else self.expression.asc()
        # Elements without a value come last in either direction (and the keyset below agrees).
        return ordered.nulls_last() if self.nullable else ordered

    def after(self, value: Any) -> Condition:
        if value is None:
            return false()  # nothing sorts after the empty values but more empty values
        beyond = self.expression < value if self.descending else self.expression > value
        return or_(beyond, self.expression.is_(None)) if self.nullable else beyond

    def equal(self, value: Any) -> Condition:
        return self.expression.is_(None) if value is None else self.expression == value  # type: ignore[no-any-return]


def _attribute_sort_expression(attribute: AttributeDef, descending: bool) -> Any:
    """The element's value of an attribute (its largest for a descending sort of a multi-valued one)."""
    pick = func.max if descending else func.min
    if attribute.value_type == "enum":
        column: Any = AttributeLiteral.position
        values = (
            select(pick(column))
            .select_from(ElementValue)
            .join(AttributeLiteral, AttributeLiteral.id == ElementValue.literal_id)
        )
    else:
        column = {
            "number": ElementValue.number_value,
            "date": ElementValue.date_value,
            "dateInterval": ElementValue.date_value,
            "boolean": ElementValue.bool_value,
        }.get(attribute.value_type, ElementValue.text_value)
        values = select(pick(column))
    return (
        values.where(ElementValue.element_id == Element.id, ElementValue.attribute_id == attribute.id)
        .correlate(Element)
        .scalar_subquery()
    )


def parse_sort(
    text: str | None, type_def: BlockTypeDef, actor: Actor, pointer: str = "query:sort"
) -> tuple[SortKey, ...]:
    """`name,-id` -> sort keys; `id` always ends the list (it makes the order total). A problem is
    reported at `pointer`."""
    keys: list[SortKey] = []
    for raw in (text or "id").split(","):
        item = raw.strip()
        descending = item.startswith("-")
        name = item.lstrip("+-").strip()
        if not name:
            raise _bad(pointer, "invalid_sort", f"sort item {raw!r} names no property")
        if any(key.name == name for key in keys):
            raise _bad(pointer, "invalid_sort", f"sort names {name!r} twice")
        if name in _COLUMN_KEYS:
            expression, kind = _COLUMN_KEYS[name]
            keys.append(SortKey(name, descending, expression, kind, nullable=False))
        else:
            attribute = type_def.property_named(name)
            if attribute is None or not (attribute.builtin or actor.can_read_group(attribute.group_id)):
                # Only what the actor may read: the message must not reveal a hidden attribute.
                readable = (
                    p.name for p in type_def.properties if p.builtin or actor.can_read_group(p.group_id)
                )
                sortable = ", ".join([*_COLUMN_KEYS, *readable])
                raise _bad(
                    pointer, "invalid_sort", f"cannot sort {type_def.name} by {name!r}; sortable: {sortable}"
                )
            keys.append(
                SortKey(
                    name,
                    descending,
                    _attribute_sort_expression(attribute, descending),
                    _ATTRIBUTE_KINDS[attribute.value_type],
                    nullable=True,
                )
            )
        if name == "id":
            break  # ids are unique: keys after it could never matter
    if keys[-1].name != "id":
        keys.append(SortKey("id", False, Element.id, "integer", nullable=False))
    return tuple(keys)


def keyset_after(keys: Sequence[SortKey], values: Sequence[Any]) -> Condition:
    """Rows strictly after the row whose sort key values are `values`, in the order of `keys`."""
    condition = keys[-1].after(values[-1])
    for key, value in zip(reversed(keys[:-1]), reversed(values[:-1]), strict=True):
        condition = or_(key.after(value), and_(key.equal(value), condition))
    return condition


# --- cursors -------------------------------------------------------------------------------------------

# The integer sort keys (ids, revisions, literal positions) are 32-bit columns.
_SMALLEST_INTEGER = -(2**31)
_LARGEST_INTEGER = 2**31 - 1


def _encode_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return moment.astimezone(dt.UTC).isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _decode_value(kind: str, raw: Any) -> Any:
    """A cursor's value as the keyset query binds it; ValueError (or OverflowError) for anything a row of
    the database could not have given: an integer beyond the 32-bit columns, text with NUL, a time whose
    offset takes it out of Python's range."""
    if raw is None:
        return None
    if kind == "integer" and isinstance(raw, int) and not isinstance(raw, bool):
        if not _SMALLEST_INTEGER <= raw <= _LARGEST_INTEGER:
            raise ValueError("beyond the integer columns")
        return raw
    if kind == "number" and isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return float(raw)
    if kind == "text" and isinstance(raw, str):
        if "\0" in raw:
            raise ValueError("text holds NUL")
        return raw
    if kind == "boolean" and isinstance(raw, bool):
        return raw
    if kind == "date" and isinstance(raw, str):
        return dt.date.fromisoformat(raw)
    if kind == "datetime" and isinstance(raw, str):
        return dt.datetime.fromisoformat(raw).astimezone(dt.UTC)
    raise ValueError(f"not a {kind}")


def encode_values(values: Sequence[Any]) -> list[Any]:
    """Sort key values as a cursor writes them (JSON)."""
    return [_encode_value(v) for v in values]


def decode_values(keys: Sequence[SortKey], raw_values: Sequence[Any]) -> list[Any]:
    """Sort key values a cursor wrote, as the keyset query binds them (ValueError for any a row of the
    database could not have given)."""
    return [_decode_value(key.kind, raw) for key, raw in zip(keys, raw_values, strict=True)]


def encode_cursor(type_name: str, keys: Sequence[SortKey], values: Sequence[Any]) -> str:
    payload = [type_name, ",".join(key.spec for key in keys), encode_values(values)]
    return base64.urlsafe_b64encode(orjson.dumps(payload)).decode().rstrip("=")


def decode_cursor(token: str, type_name: str, keys: Sequence[SortKey], pointer: str) -> list[Any]:
    """The sort key values a cursor carries; 400 `invalid_cursor` at `pointer` for anything that is not
    ours or was made for another type or sort."""
    try:
        payload = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        cursor_type, spec, raw_values = payload
        if cursor_type != type_name or spec != ",".join(key.spec for key in keys):
            raise invalid_cursor(pointer)  # another type's or sort order's
        if not isinstance(raw_values, list) or len(raw_values) != len(keys):
            raise ValueError("wrong length")
        return decode_values(keys, raw_values)
    except BadRequest:
        raise
    except (ValueError, TypeError, OverflowError, binascii.Error, orjson.JSONDecodeError):
        raise invalid_cursor(pointer) from None


# --- what to list --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Listing:
    """A prepared read: the type, the iteraQL condition, the order, the fields and where to start. The
    syntax tree it was compiled from (`predicate` of a filter, or the whole `query`) serves `asOf` reads,
    which evaluate it on past states (massdata/asof.py)."""

    type_def: BlockTypeDef
    condition: Condition | None
    keys: tuple[SortKey, ...]
    view: ElementView
    after: list[Any] | None
    predicate: Predicate | None = None
    query: Query | None = None
    steps: tuple[CTE, ...] = ()  # the navigation steps the condition reads from (`CompiledQuery.steps`)

    def statement(
        self, limit: int, after: Sequence[Any] | None, without: Collection[int] = ()
    ) -> Select[Any]:
        statement = select(Element.id, *(key.expression for key in self.keys)).where(
            Element.type_id == self.type_def.id
        )
        if without:
            statement = statement.where(_not_among(without))
        if self.condition is not None:
            statement = statement.add_cte(*self.steps).where(self.condition)
        if after is not None:
            statement = statement.where(keyset_after(self.keys, after))
        return statement.order_by(*(key.order() for key in self.keys)).limit(limit)

    def count_statement(self, among: Collection[int] | None = None) -> Select[Any]:
        if among is None:
            of_type = Element.type_id == self.type_def.id
        else:
            # `type_id + 0` is no indexed column: SQLite then finds the few ids by the primary key instead
            # of walking the type's index and testing every row against the list.
            of_type = and_(Element.id.in_(_literal_ids(among)), Element.type_id + 0 == self.type_def.id)
        statement = select(func.count()).select_from(Element).where(of_type)
        if self.condition is None:
            return statement
        return statement.add_cte(*self.steps).where(self.condition)


def _literal_ids(ids: Collection[int]) -> Any:
    # The ids are written into the statement (integers only): a planning scenario's thousands of diverging
    # elements would pass SQLite's limit of bound parameters.
    return bindparam("ids", sorted(ids), expanding=True, literal_execute=True)


def _not_among(ids: Collection[int]) -> Condition:
    return Element.id.not_in(_literal_ids(ids))


def _fields(
    text: Sequence[str] | str | None,
    metamodel: Metamodel,
    actor: Actor,
    type_def: BlockTypeDef,
    pointer: str,
) -> list[str] | None:
    if text is None:
        return None
    names = [n.strip() for n in text.split(",")] if isinstance(text, str) else [str(n).strip() for n in text]
    names = [n for n in names if n]
    visible = ElementView.build(metamodel, actor, type_def)
    known = {
        *visible.head,
        *visible.tail,
        *(p.name for p in visible.properties),
        *(e.name for e in visible.ends),
    }
    unknown = [n for n in names if n not in known]
    if unknown:
        message = f"{type_def.name} has no field {', '.join(map(repr, unknown))}"
        raise _bad(pointer, "unknown_field", message)
    return names


def prepare_listing(
    metamodel: Metamodel,
    actor: Actor,
    type_name: str,
    *,
    filter_text: str | None = None,
    sort: str | None = None,
    fields: Sequence[str] | str | None = None,
    cursor: str | None = None,
    limits: QueryLimits,
) -> Listing:
    """`GET /api/massdata/{type}`: elements of one type, optionally filtered by an iteraQL predicate.
    Needs MASSDATA."""
    require_massdata(actor)
    type_def = readable_type(metamodel, actor, type_name)
    condition = predicate = None
    if filter_text is not None and filter_text.strip():
        predicate = parse_predicate(filter_text, pointer="query:filter", limits=limits)
        condition = compile_filter(
            predicate, type_def, metamodel, actor, text=filter_text, pointer="query:filter"
        )
    prepared = _listing(metamodel, actor, type_def, condition, sort, fields, cursor, in_url)
    return replace(prepared, predicate=predicate)


def prepare_query(
    metamodel: Metamodel,
    actor: Actor,
    query_text: str,
    *,
    sort: str | None = None,
    fields: Sequence[str] | str | None = None,
    cursor: str | None = None,
    limits: QueryLimits,
    pointer_of: Callable[[str], str] = in_body,
) -> Listing:
    """`POST /api/massdata/query`: the elements an iteraQL query selects (of its last step's type).
    Needs MASSDATA. A problem with `sort`, `fields` or `cursor` is reported at `pointer_of(name)`: in the
    body by default, in the URL for what the client gave there."""
    require_massdata(actor)
    query = parse_query(query_text, limits=limits)
    compiled = compile_query(query, metamodel, actor, text=query_text)
    prepared = _listing(
        metamodel, actor, compiled.type_def, compiled.condition, sort, fields, cursor, pointer_of
    )
    return replace(prepared, query=query, steps=compiled.steps)


def _listing(
    metamodel: Metamodel,
    actor: Actor,
    type_def: BlockTypeDef,
    condition: Condition | None,
    sort: str | None,
    fields: Sequence[str] | str | None,
    cursor: str | None,
    pointer_of: Callable[[str], str],
) -> Listing:
    keys = parse_sort(sort, type_def, actor, pointer_of("sort"))
    names = _fields(fields, metamodel, actor, type_def, pointer_of("fields"))
    view = ElementView.build(metamodel, actor, type_def, names)
    after = decode_cursor(cursor, type_def.name, keys, pointer_of("cursor")) if cursor else None
    return Listing(type_def, condition, keys, view, after)


# --- reading -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_cursor: str | None
    total: int | None


def read_page(
    db: Session, metamodel: Metamodel, actor: Actor, listing: Listing, *, limit: int, count: bool
) -> Page:
    rows = db.execute(listing.statement(limit + 1, listing.after)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    # The columnar reader: a page of elements with hundreds of relations each renders several times faster.
    items = ElementReader(listing.view).read(db, [row[0] for row in rows])
    next_cursor = encode_cursor(listing.type_def.name, listing.keys, list(rows[-1][1:])) if more else None
    total = int(db.scalar(listing.count_statement()) or 0) if count else None
    return Page(items, next_cursor, total)


def stored_matches(
    db: Session, listing: Listing, limit: int, without: Collection[int]
) -> list[tuple[list[Any], int]]:
    """(sort key values, id) of up to `limit` stored matches after the listing's cursor, leaving out
    `without` (elements a planning scenario has otherwise)."""
    rows = db.execute(listing.statement(limit, listing.after, without)).all()
    return [(list(row[1:]), int(row[0])) for row in rows]


def count_stored(db: Session, listing: Listing, without: Collection[int]) -> int:
    """How many stored elements match, leaving out `without`: all matches less those among `without`
    (a count over the index of ids each; excluding them row by row costs a lookup for every row)."""
    every = int(db.scalar(listing.count_statement()) or 0)
    return every - int(db.scalar(listing.count_statement(among=without)) or 0) if without else every


def begin_snapshot(db: Session) -> None:
    """Read everything that follows from one consistent snapshot of the database.

    SQLite gives every read transaction a snapshot already (WAL); PostgreSQL's default READ COMMITTED
    would let a long stream see other transactions' commits between pages. The committed horizon is read
    before the snapshot begins (`hold_horizon`): an export names it as its revision."""
    if db.get_bind().dialect.name == "postgresql":
        hold_horizon(db)
        db.connection(execution_options={"isolation_level": "REPEATABLE READ"})


def iterate_matches(
    db: Session, metamodel: Metamodel, actor: Actor | None, listing: Listing, *, batch: int = STREAM_BATCH
) -> Generator[list[dict[str, Any]], None, None]:
    """Every match, a batch of element JSON objects at a time, paging by keyset (flat memory). The objects
    come from `ElementReader` (the JSON `ElementView.render` gives, built for throughput; treat as
    read-only)."""

    def pages() -> Iterator[list[int]]:
        after = listing.after
        connection = db.connection()  # Core rows: the session's ORM result layer cost a tenth of a stream
        while True:
            rows = connection.execute(listing.statement(batch, after)).all()
            if rows:
                yield [row[0] for row in rows]
            if len(rows) < batch:
                return
            after = list(rows[-1][1:])

    yield from ElementReader(listing.view).read_batches(db, pages())


def stream_ndjson(
    open_session: Callable[[], Session],
    metamodel: Metamodel,
    actor: Actor,
    listing: Listing,
    *,
    batch: int | None = None,
) -> Iterator[bytes]:
    """NDJSON lines of every match. Opens its own session: the request's is closed before a streamed
    response finishes."""
    with open_session() as db:
        begin_snapshot(db)
        matches = iterate_matches(db, metamodel, actor, listing, batch=batch or STREAM_BATCH)
        try:
            # Closed explicitly when the client goes away: the next batch may be on its way in another
            # thread, which must be done with the connection before the session closes.
            with closing(matches):
                for items in matches:
                    # Each line written to one buffer is freed at once, and `getvalue` hands the buffer over
                    # without a copy: joining a list of a batch's lines, or copying a bytearray into bytes,
                    # cost as much as the encoding itself (bench/massdata_scale.py).
                    lines = io.BytesIO()
                    write = lines.write
                    for item in items:
                        write(orjson.dumps(item, option=orjson.OPT_APPEND_NEWLINE))
                    yield lines.getvalue()
        except Exception:
            # The status line is gone already; all that is left is to end the stream early and log why.
            log.exception("streaming %s elements failed", listing.type_def.name)
            raise
