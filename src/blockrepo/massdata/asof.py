"""Massdata reads as of a past revision: list pages, streams and queries over states folded from history.

A past state is not in today's tables, so the iteraQL condition cannot run in SQL. Instead the type's
elements as they stood (`history.asof`) are read a batch at a time, the listing's syntax tree is evaluated
on them (`query.evaluator`), and only the sort key values and ids of the matches are kept; they are sorted
as the SQL listing sorts, the keyset cursor applies the same way, and only the page (or a stream's current
batch) is rendered with the requested fields. The cost grows with the type's history, not with the page
size; memory holds one batch of elements plus a key per match.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import orjson
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements.repository import chunks
from blockrepo.elements.service import ElementView
from blockrepo.history.asof import Layer, element_ids_as_of, read_elements_as_of, resolve_as_of
from blockrepo.history.service import require_history
from blockrepo.massdata.listing import Listing, Page, SortKey, begin_snapshot, encode_cursor, log
from blockrepo.massdata.query.compiler import QueryCompiler
from blockrepo.massdata.query.evaluator import ElementJson, Evaluator, attribute_value, column_value
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel

# Elements folded per round trip: `read_elements_as_of` costs a fixed number of queries per 1,000 ids.
BATCH = 1000
# Elements rendered per NDJSON chunk.
STREAM_BATCH = 500

Keyed = list[Any]  # the sort key values of a match; the last is its id (parse_sort ends with id)


def past_revision(db: Session, actor: Actor, raw: str, pointer: str = "query:asOf") -> int:
    """The revision an `asOf` names (a problem with it reported at `pointer`); reading the past needs
    VIEW_HISTORY (it is history)."""
    require_history(actor)
    return resolve_as_of(db, raw, pointer)


class _PastState:
    """Loads elements as they stood at one revision, as one actor may read them (every readable key); with
    a `layer`, as a planning scenario has them (main at its base, its own changes on top)."""

    def __init__(
        self, db: Session, metamodel: Metamodel, actor: Actor, revision: int, layer: Layer | None = None
    ) -> None:
        self.db, self.metamodel, self.actor, self.revision = db, metamodel, actor, revision
        self.layer = layer

    def load(
        self, type_def: BlockTypeDef, ids: Sequence[int], view: ElementView | None = None
    ) -> list[ElementJson]:
        found: list[ElementJson] = []
        for chunk in chunks(ids, BATCH):
            overlay = None if self.layer is None else self.layer.overlay(self.db, chunk)
            found.extend(
                read_elements_as_of(
                    self.db,
                    self.metamodel,
                    self.actor,
                    type_def,
                    chunk,
                    self.revision,
                    view=view,
                    overlay=overlay,
                )
            )
        return found

    def scan(self, type_def: BlockTypeDef) -> Iterable[list[ElementJson]]:
        ids = element_ids_as_of(self.db, type_def, self.revision)
        if self.layer is not None:
            ids = sorted({*ids, *self.layer.created(self.db, type_def.name)})
        for chunk in chunks(ids, BATCH):
            yield self.load(type_def, chunk)


def _sort_value(key: SortKey, type_def: BlockTypeDef, element: ElementJson) -> Any:
    """The value the SQL listing sorts by: a column (the keys that are never empty), or an attribute's
    smallest (largest when descending) value, None when empty."""
    attribute = type_def.property_named(key.name) if key.nullable else None
    if attribute is None:
        return column_value(element, key.name)
    present = [
        value
        for value in (attribute_value(attribute, raw) for raw in element.get(key.name) or [])
        if value is not None
    ]
    if not present:
        return None
    return max(present) if key.descending else min(present)


def _compare_keys(keys: Sequence[SortKey], left: Sequence[Any], right: Sequence[Any]) -> int:
    """-1, 0 or 1 as `left` sorts before, with or after `right`: directions per key, empty values last."""
    for key, a, b in zip(keys, left, right, strict=True):
        if a == b:
            continue
        if a is None:
            return 1
        if b is None:
            return -1
        before = a < b
        return (1 if before else -1) if key.descending else (-1 if before else 1)
    return 0


def _sorted_matches(state: _PastState, listing: Listing) -> list[Keyed]:
    """The sort key values of every match (the cursor aside), in listing order."""
    evaluator = Evaluator(QueryCompiler(state.metamodel, state.actor, "", "filter"), state.load)
    type_def = listing.type_def
    batches: Iterable[list[ElementJson]]
    if listing.query is not None:
        batches = [evaluator.query_elements(listing.query, state.scan)]
    else:
        batches = (evaluator.filter(listing.predicate, type_def, batch) for batch in state.scan(type_def))
    keyed: list[Keyed] = [
        [_sort_value(key, type_def, element) for key in listing.keys]
        for batch in batches
        for element in batch
    ]

    def order(left: Keyed, right: Keyed) -> int:
        return _compare_keys(listing.keys, left, right)

    keyed.sort(key=functools.cmp_to_key(order))
    return keyed


def _after_cursor(listing: Listing, keyed: list[Keyed]) -> list[Keyed]:
    if listing.after is None:
        return keyed
    after = listing.after
    return [item for item in keyed if _compare_keys(listing.keys, item, after) > 0]


def read_page_as_of(
    db: Session,
    metamodel: Metamodel,
    actor: Actor,
    listing: Listing,
    revision: int,
    *,
    limit: int,
    count: bool,
    layer: Layer | None = None,
) -> Page:
    """A page of the listing as the repository stood at `revision` (the counterpart of `read_page`), or as
    a planning scenario has it (`layer`)."""
    state = _PastState(db, metamodel, actor, revision, layer)
    matches = _sorted_matches(state, listing)
    remaining = _after_cursor(listing, matches)
    page = remaining[:limit]
    items = state.load(listing.type_def, [values[-1] for values in page], listing.view)
    more = len(remaining) > limit
    next_cursor = encode_cursor(listing.type_def.name, listing.keys, page[-1]) if more else None
    # `total` counts every match, as the SQL listing does, not only those after the cursor.
    return Page(items, next_cursor, len(matches) if count else None)


def stream_ndjson_as_of(
    open_session: Callable[[], Session],
    metamodel: Metamodel,
    actor: Actor,
    listing: Listing,
    revision: int,
    layer: Layer | None = None,
) -> Iterator[bytes]:
    """NDJSON lines of every match as of `revision` (the counterpart of `listing.stream_ndjson`), or as a
    planning scenario has them (`layer`)."""
    with open_session() as db:
        begin_snapshot(db)
        try:
            state = _PastState(db, metamodel, actor, revision, layer)
            matches = _after_cursor(listing, _sorted_matches(state, listing))
            ids = [values[-1] for values in matches]
            for chunk in chunks(ids, STREAM_BATCH):
                items = state.load(listing.type_def, chunk, listing.view)
                yield b"".join(orjson.dumps(item) + b"\n" for item in items)
        except Exception:
            log.exception("streaming %s elements as of revision %s failed", listing.type_def.name, revision)
            raise
