"""Massdata reads as of a past revision: list pages, streams and queries over states folded from history.

A past state is not in today's tables, so the iteraQL condition cannot run in SQL. Instead the type's
elements as they stood (`history.asof`) are read a batch at a time, the listing's syntax tree is evaluated
on them (`query.evaluator`), and only the sort key values and ids of the matches are kept; they are sorted
as the SQL listing sorts, the keyset cursor applies the same way, and only the page (or a stream's current
batch) is rendered with the requested fields. The cost grows with the type's history, not with the page
size; memory holds one batch of elements plus a key per match. Any other state with the same two
operations (an `ElementState`, such as the landscape projected to a date) is listed and queried the same
way (`read_page_of`, `stream_ndjson_of`).
"""

from __future__ import annotations

import bisect
import functools
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

import orjson
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import repository as elements_repository
from blockrepo.elements.repository import chunks
from blockrepo.elements.service import ElementReader, ElementView
from blockrepo.history.asof import (
    Divergence,
    Folded,
    Layer,
    diverged,
    element_ids_as_of,
    read_elements_as_of,
    render_diverged,
    resolve_as_of,
    states_as_of,
)
from blockrepo.history.service import require_history
from blockrepo.massdata.listing import (
    Listing,
    Page,
    SortKey,
    begin_snapshot,
    count_stored,
    decode_values,
    encode_cursor,
    encode_values,
    log,
    stored_matches,
)
from blockrepo.massdata.query.compiler import QueryCompiler
from blockrepo.massdata.query.evaluator import ElementJson, Evaluator, attribute_value, column_value
from blockrepo.massdata.query.syntax import Comparison, Count, Not, Predicate, TextMatch
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


class ElementState(Protocol):
    """Elements in some state other than today's stored one, as one actor may read them."""

    @property
    def metamodel(self) -> Metamodel: ...

    @property
    def actor(self) -> Actor: ...

    def load(
        self, type_def: BlockTypeDef, ids: Sequence[int], view: ElementView | None = None
    ) -> list[ElementJson]:
        """Those of `ids` that are elements of the type in this state, in that order (every readable
        key, or `view`'s)."""
        ...

    def scan(self, type_def: BlockTypeDef) -> Iterable[list[ElementJson]]:
        """Every element of the type in this state, a batch at a time."""
        ...


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

    def ids(self, type_def: BlockTypeDef) -> list[int]:
        """The ids (ascending) of the type's elements the state may hold: those alive at the revision and
        those the layer created (`load` leaves out the ones since deleted)."""
        ids = element_ids_as_of(self.db, type_def, self.revision)
        if self.layer is not None:
            ids = sorted({*ids, *self.layer.created(self.db, type_def.name)})
        return ids

    def scan(self, type_def: BlockTypeDef) -> Iterable[list[ElementJson]]:
        for chunk in chunks(self.ids(type_def), BATCH):
            yield self.load(type_def, chunk)

    def hierarchy(self, type_def: BlockTypeDef) -> Iterator[tuple[int, int | None, list[int]]]:
        """(id, parent id, children's ids in their order) of each of the type's elements the state holds,
        folded a batch at a time."""
        for chunk in chunks(self.ids(type_def), BATCH):
            overlay = None if self.layer is None else self.layer.overlay(self.db, chunk)
            for element_id, at in states_as_of(
                self.db, self.metamodel, chunk, self.revision, overlay
            ).items():
                if at.type_name != type_def.name:
                    continue
                parents = [entry["id"] for entry in at.state.get("parent", []) if isinstance(entry, dict)]
                children = [entry["id"] for entry in at.state.get("children", []) if isinstance(entry, dict)]
                yield element_id, parents[0] if parents else None, children


# Where an element sorts that its parent's children do not list, or a root main does not hold: last.
_LAST = sys.maxsize


class ScenarioLandscape:
    """A planning scenario's state as an export reads it (a `transfer.export.Landscape`): main at the
    scenario's base with its rows folded on top (`_PastState`), as the actor may read it, a batch at a
    time; `revision` is the base and `scenario` names the scenario (key, name, base)."""

    def __init__(
        self, db: Session, metamodel: Metamodel, actor: Actor, layer: Layer, scenario: dict[str, Any]
    ) -> None:
        self.db = db
        self.state = _PastState(db, metamodel, actor, layer.base, layer)
        self.revision = layer.base
        self.scenario = scenario
        self.projection: dict[str, Any] | None = None

    def placements(self, type_def: BlockTypeDef) -> list[tuple[int, int | None, int]]:
        """(id, parent id, position) of each element as the scenario has it: a child's position is its
        place in its parent's `children`; roots keep the order main gives them (history records no order
        of roots), those main does not hold as roots come after them by id. Costs a fold of the type."""
        parent_of: dict[int, int | None] = {}
        order_of: dict[int, dict[int, int]] = {}  # parent id -> child id -> place
        for element_id, parent_id, children in self.state.hierarchy(type_def):
            parent_of[element_id] = parent_id
            if children:
                order_of[element_id] = {child: place for place, child in enumerate(children)}
        root_places = {
            element_id: position
            for element_id, parent_id, position in elements_repository.placements(self.db, type_def.id)
            if parent_id is None and element_id in parent_of
        }
        placed: list[tuple[int, int | None, int]] = []
        for element_id, parent_id in parent_of.items():
            if parent_id is None or parent_id not in parent_of:  # a parent the scenario no longer holds
                placed.append((element_id, None, root_places.get(element_id, _LAST)))
            else:
                placed.append((element_id, parent_id, order_of.get(parent_id, {}).get(element_id, _LAST)))
        return placed

    def read_batches(
        self, view: ElementView, batches: Iterable[Sequence[int]]
    ) -> Iterator[list[ElementJson]]:
        for ids in batches:
            yield self.state.load(view.type_def, ids, view)


def scenario_landscape(
    metamodel: Metamodel, actor: Actor, layer: Layer, scenario: dict[str, Any]
) -> Callable[[Session], ScenarioLandscape]:
    """What an export of the scenario reads in the session it streams from (opened later)."""

    def in_session(db: Session) -> ScenarioLandscape:
        return ScenarioLandscape(db, metamodel, actor, layer, scenario)

    return in_session


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


def _sorted_matches(state: ElementState, listing: Listing) -> list[Keyed]:
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
    if layer is not None and _reads_only_its_own(listing):
        divergence = diverged(db, metamodel, layer)
        if divergence is not None:
            return _layered_page(db, metamodel, actor, listing, layer, divergence, limit=limit, count=count)
    return read_page_of(_PastState(db, metamodel, actor, revision, layer), listing, limit=limit, count=count)


def read_page_of(state: ElementState, listing: Listing, *, limit: int, count: bool) -> Page:
    """A page of the listing over the elements of `state`: filtered, sorted and paged as `read_page`
    does on today's."""
    matches = _sorted_matches(state, listing)
    remaining = _after_cursor(listing, matches)
    page = remaining[:limit]
    items = state.load(listing.type_def, [values[-1] for values in page], listing.view)
    more = len(remaining) > limit
    next_cursor = encode_cursor(listing.type_def.name, listing.keys, page[-1]) if more else None
    # `total` counts every match, as the SQL listing does, not only those after the cursor.
    return Page(items, next_cursor, len(matches) if count else None)


def _reads_only_its_own(listing: Listing) -> bool:
    """Whether the listing's condition reads nothing but each element's own state (no query steps, no
    `count(end[...])` looking at related elements): then a condition on an element main stores as the
    view has it can run in SQL."""
    if listing.query is not None:
        return False

    def own(predicate: Predicate | None) -> bool:
        if predicate is None or isinstance(predicate, (Comparison, TextMatch)):
            return True
        if isinstance(predicate, Count):
            return predicate.where is None
        if isinstance(predicate, Not):
            return own(predicate.part)
        return all(own(part) for part in predicate.parts)

    return own(listing.predicate)


def _fields_read(predicate: Predicate) -> set[str]:
    """The keys of element JSON a condition reads."""
    if isinstance(predicate, (Comparison, TextMatch)):
        return {predicate.prop.name}
    if isinstance(predicate, Count):
        return {predicate.target}
    if isinstance(predicate, Not):
        return _fields_read(predicate.part)
    return {name for part in predicate.parts for name in _fields_read(part)}


def _nothing_related(type_def: BlockTypeDef, ids: Sequence[int]) -> list[ElementJson]:
    raise AssertionError("a condition on the element's own state loads no related elements")


def _as_cursor_has_it(keys: Sequence[SortKey], values: Sequence[Any]) -> list[Any]:
    """Sort key values as a cursor carries them, whichever side gave them (a row's columns or values
    taken from element JSON): comparable with each other."""
    try:
        return decode_values(keys, encode_values(values))
    except (ValueError, OverflowError):
        return list(values)


def _layered_page(
    db: Session,
    metamodel: Metamodel,
    actor: Actor,
    listing: Listing,
    layer: Layer,
    divergence: Divergence,
    *,
    limit: int,
    count: bool,
) -> Page:
    """A page of a planning scenario's view that starts from main's stored elements: those that do not
    diverge are listed by the SQL listing (their state is main's), the diverging ones of the type are
    filtered and sorted in memory, and the two ordered runs are merged. Costs main's page plus the
    scenario's own elements of the type, not the type's history."""
    type_def, keys = listing.type_def, listing.keys
    stored = [
        (_as_cursor_has_it(keys, values), element_id)
        for values, element_id in stored_matches(db, listing, limit + 1, divergence.ids)
    ]
    own = divergence.of_type(type_def.name)
    by_id = divergence.remembered(("by id", type_def.name), lambda: {e.element_id: e for e in own})
    # The type's diverging elements in listing order, and those the filter keeps: both kept with the
    # divergence, so the next page of the same list reads them again for free. Neither depends on the
    # reader: what it may not read it cannot sort or filter by (`parse_sort`, `compile_filter`).
    keyed: list[tuple[Keyed, int]] = divergence.remembered(
        ("sorted", type_def.name, tuple(key.spec for key in keys)),
        lambda: _diverging_in_order(db, metamodel, actor, type_def, keys, divergence, own, layer.base),
    )
    if listing.predicate is not None:
        predicate, ordered = listing.predicate, keyed

        def filtered() -> list[tuple[Keyed, int]]:
            kept = _kept(db, metamodel, actor, type_def, predicate, divergence, own, layer.base)
            return [entry for entry in ordered if entry[1] in kept]

        keyed = divergence.remembered(
            ("filtered", type_def.name, tuple(key.spec for key in keys), predicate), filtered
        )
    total = len(keyed)
    if listing.after is not None:
        in_order = functools.cmp_to_key(functools.partial(_compare_keys, keys))
        after = in_order(listing.after)
        keyed = keyed[bisect.bisect_right(keyed, after, key=lambda entry: in_order(entry[0])) :]
    page = list(_merged(keys, stored, keyed, limit + 1))
    more = len(page) > limit
    page = page[:limit]
    from_main = [element_id for _, element_id in page if element_id not in by_id]
    items = {
        item["id"][0]: item
        for item in divergence.renamed(ElementReader(listing.view).read(db, from_main), listing.view)
    }
    ours = [by_id[element_id] for _, element_id in page if element_id in by_id]
    for item in render_diverged(db, listing.view, divergence, ours, layer.base):
        items[item["id"][0]] = item
    next_cursor = encode_cursor(type_def.name, keys, page[-1][0]) if more else None
    if count:
        total += count_stored(db, listing, divergence.ids)
    return Page([items[element_id] for _, element_id in page], next_cursor, total if count else None)


def _diverging_in_order(
    db: Session,
    metamodel: Metamodel,
    actor: Actor,
    type_def: BlockTypeDef,
    keys: Sequence[SortKey],
    divergence: Divergence,
    own: list[Folded],
    base: int,
) -> list[tuple[Keyed, int]]:
    """(sort key values as a cursor has them, id) of the type's diverging elements, in listing order."""
    view = ElementView.build(metamodel, actor, type_def, [key.name for key in keys])

    def sort_values(element: Folded, item: ElementJson) -> Keyed:
        # The JSON has times to the millisecond; the stored column (and its cursor) to the microsecond.
        return [
            element.modified if key.name == "lastModificationTime" else _sort_value(key, type_def, item)
            for key in keys
        ]

    rendered = render_diverged(db, view, divergence, own, base, look_up_names=False)
    keyed = [
        (_as_cursor_has_it(keys, sort_values(element, item)), element.element_id)
        for element, item in zip(own, rendered, strict=True)
    ]

    def order(left: tuple[Keyed, int], right: tuple[Keyed, int]) -> int:
        return _compare_keys(keys, left[0], right[0])

    keyed.sort(key=functools.cmp_to_key(order))
    return keyed


def _kept(
    db: Session,
    metamodel: Metamodel,
    actor: Actor,
    type_def: BlockTypeDef,
    predicate: Predicate,
    divergence: Divergence,
    own: list[Folded],
    base: int,
) -> frozenset[int]:
    """The ids of the type's diverging elements the filter keeps."""
    view = ElementView.build(metamodel, actor, type_def, _fields_read(predicate))
    rendered = render_diverged(db, view, divergence, own, base, look_up_names=False)
    # The condition reads each element's own state only (`_reads_only_its_own`): nothing to load.
    evaluator = Evaluator(QueryCompiler(metamodel, actor, "", "filter"), _nothing_related)
    return frozenset(item["id"][0] for item in evaluator.filter(predicate, type_def, rendered))


def _merged(
    keys: Sequence[SortKey], left: list[tuple[Keyed, int]], right: list[tuple[Keyed, int]], limit: int
) -> Iterator[tuple[Keyed, int]]:
    """The first `limit` of two runs in listing order, in that order."""
    i = j = 0
    for _ in range(limit):
        if i < len(left) and (j == len(right) or _compare_keys(keys, left[i][0], right[j][0]) <= 0):
            yield left[i]
            i += 1
        elif j < len(right):
            yield right[j]
            j += 1
        else:
            return


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

    def past(db: Session) -> ElementState:
        return _PastState(db, metamodel, actor, revision, layer)

    return stream_ndjson_of(open_session, past, listing, f"as of revision {revision}")


def stream_ndjson_of(
    open_session: Callable[[], Session],
    state_in: Callable[[Session], ElementState],
    listing: Listing,
    moment: str,
) -> Iterator[bytes]:
    """NDJSON lines of every match over the elements of the state `state_in` reads with the stream's own
    session (`moment` names it in the log)."""
    with open_session() as db:
        begin_snapshot(db)
        try:
            state = state_in(db)
            matches = _after_cursor(listing, _sorted_matches(state, listing))
            ids = [values[-1] for values in matches]
            for chunk in chunks(ids, STREAM_BATCH):
                items = state.load(listing.type_def, chunk, listing.view)
                yield b"".join(orjson.dumps(item) + b"\n" for item in items)
        except Exception:
            log.exception("streaming %s elements %s failed", listing.type_def.name, moment)
            raise
