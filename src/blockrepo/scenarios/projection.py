"""The landscape as it will be on a date (`GET /api/projection`): main now, the chosen scenarios' changes that
are effective by then, and the runtime periods that have begun and not ended.

A scenario is effective on its `effectiveDate` (one without a date always is); the effective ones apply in
the order of their dates, each as its merge would write it: field by field its net changes (what it
changed since its base, so main's later changes to other fields stay), relation ends as additions and
removals, its new elements, its deletions. Then an element whose `runtimePeriod` ends before the date, or
begins after it, is not there. The page walks main's stored elements of the type by id with the
scenarios' new ones merged in; each scenario's rows are read for the page's elements only. Two dates are
compared (`compare`, `GET /api/projection/diff`) in one such walk, in the diff shape of history's. Lists
and iteraQL read a `ProjectedState` (`projection=` on `/api/massdata`): a type's elements on the date a
batch at a time, or given ids, projected by the same walk.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import service as elements
from blockrepo.errors import Conflict, ErrorItem, ValidationFailed
from blockrepo.history import asof
from blockrepo.history.diff import Folding, NetChange, folding
from blockrepo.history.service import decode_cursor, encode_cursor
from blockrepo.massdata.listing import require_massdata
from blockrepo.massdata.transfer.export import Placement, StoredLandscape
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.scenarios import repository
from blockrepo.scenarios.models import Scenario
from blockrepo.scenarios.service import changeset_rows, overlay_of, visible_scenario

PROJECTION_LIMIT = 100
PROJECTION_MAX_LIMIT = 1000
# Main's stored elements read per round while a page fills.
_BATCH = 500
MOST_SCENARIOS = 20


@dataclass(frozen=True)
class _Plan:
    scenario: Scenario
    created: list[int]  # the ids of the type's elements it creates, ascending


def project(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    *,
    at: dt.date,
    type_name: str,
    scenario_keys: Sequence[str] = (),
    fields: Sequence[str] | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
    """A page (by id) of the type's elements as they will be on `at`; see the module docstring. Needs
    MASSDATA and read on the type; what the caller may not read is left out as everywhere."""
    require_massdata(actor)
    type_def = elements.resolve_type(metamodel, actor, type_name)
    size = _page_size(limit)
    chosen = _scenarios(db, actor, scenario_keys)
    effective = effective_on(chosen, at)
    plans = [_Plan(s, repository.created_ids_of_type(db, s.id, type_def.name)) for s in effective]
    scope = _cursor_scope("projection", at.isoformat(), type_def.name, *(s.key for s in chosen))
    after = decode_cursor(cursor, scope)[0] if cursor is not None else 0
    view = elements.ElementView.build(metamodel, actor, type_def, _fields(metamodel, actor, type_def, fields))
    fold = folding(db, actor, metamodel)
    items: list[dict[str, Any]] = []
    more = False
    for _, (item,) in _projected(db, actor, metamodel, type_def, [plans], fold, after):
        if item is None or not _running(item, at):
            continue
        if len(items) == size:
            more = True
            break
        items.append(item)
    return {
        "at": at.isoformat(),
        "type": type_def.name,
        "scenarios": [
            {
                "key": s.key,
                "name": s.name,
                "effectiveDate": s.effective_date.isoformat() if s.effective_date else None,
                "applied": s in effective,
            }
            for s in chosen
        ],
        "items": [_shown(item, view) for item in items],
        "nextCursor": encode_cursor(scope, items[-1]["id"][0], 0) if more else None,
    }


def compare(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    *,
    start: dt.date,
    end: dt.date,
    type_name: str,
    scenario_keys: Sequence[str] = (),
    limit: int | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
    """The landscape of a type on `start` compared with it on `end`, each projected as `project` does,
    in the diff shape of `/api/history/diff`: a page (by id) of the elements that differ, each `created`
    (there on `end` only), `deleted` (on `start` only) or `updated`, with its fields' values on `start`
    (`base`) and on `end` (`main`), relation ends and children as entries added and removed."""
    require_massdata(actor)
    type_def = elements.resolve_type(metamodel, actor, type_name)
    size = _page_size(limit)
    chosen = _scenarios(db, actor, scenario_keys)
    created = {s.id: repository.created_ids_of_type(db, s.id, type_def.name) for s in chosen}

    def plans_on(day: dt.date) -> list[_Plan]:
        return [_Plan(s, created[s.id]) for s in effective_on(chosen, day)]

    days = (start.isoformat(), end.isoformat())
    scope = _cursor_scope("projection-diff", *days, type_def.name, *(s.key for s in chosen))
    after = decode_cursor(cursor, scope)[0] if cursor is not None else 0
    view = elements.ElementView.build(metamodel, actor, type_def)
    fold = folding(db, actor, metamodel)
    items: list[dict[str, Any]] = []
    last = after
    more = False
    for element_id, (before, later) in _projected(
        db, actor, metamodel, type_def, [plans_on(start), plans_on(end)], fold, after
    ):
        item = _difference(
            view,
            before if before is not None and _running(before, start) else None,
            later if later is not None and _running(later, end) else None,
        )
        if item is None:
            continue
        if len(items) == size:
            more = True
            break
        items.append(item)
        last = element_id
    return {
        "from": {"at": days[0]},
        "to": {"at": days[1]},
        "type": type_def.name,
        "scenarios": [
            {
                "key": s.key,
                "name": s.name,
                "effectiveDate": s.effective_date.isoformat() if s.effective_date else None,
                "appliedFrom": s.effective_date is None or s.effective_date <= start,
                "appliedTo": s.effective_date is None or s.effective_date <= end,
            }
            for s in chosen
        ],
        "items": items,
        "nextCursor": encode_cursor(scope, last, 0) if more else None,
    }


# Keys of the element JSON that say nothing of the landscape (its counters and stamps) or name it.
_NOT_COMPARED = frozenset({"id", "type", "revision", "lastModificationTime", "lastModificationUser"})


def _difference(
    view: elements.ElementView, before: dict[str, Any] | None, later: dict[str, Any] | None
) -> dict[str, Any] | None:
    """One element on two days in the diff shape (None: the same on both, or on neither)."""
    if before is None and later is None:
        return None
    shown = later if later is not None else before
    assert shown is not None
    action = "created" if before is None else "deleted" if later is None else "updated"
    sets = {"children", *(end.name for end in view.ends)}
    fields: list[dict[str, Any]] = []
    for key in _shown(shown, view):
        if key in _NOT_COMPARED:
            continue
        old = [] if before is None else before.get(key, [])
        new = [] if later is None else later.get(key, [])
        if old == new:
            continue
        if key in sets:
            old_ids = {entry.get("id"): entry for entry in old}
            new_ids = {entry.get("id"): entry for entry in new}
            added = [entry for key_, entry in new_ids.items() if old_ids.get(key_) != entry]
            removed = [entry for key_, entry in old_ids.items() if key_ not in new_ids]
            if added or removed:
                fields.append({"field": key, "added": added, "removed": removed, "state": "changed"})
        else:
            fields.append({"field": key, "base": old, "main": new, "state": "changed"})
    if action == "updated" and not fields:
        return None
    element = {"id": shown["id"][0], "type": view.type_def.name, "name": shown["name"][0]}
    return {"element": element, "action": action, "fields": fields}


def effective_on(chosen: Sequence[Scenario], day: dt.date) -> list[Scenario]:
    """The chosen scenarios effective on `day` (one without an effective date always is), in the order
    they apply: by date, then in the order they were created."""
    effective = [s for s in chosen if s.effective_date is None or s.effective_date <= day]
    return sorted(effective, key=lambda s: (s.effective_date or dt.date.min, s.id))


def _cursor_scope(*parts: str) -> str:
    """What a cursor is bound to (the date or dates, the type, the scenarios), as a short digest: twenty
    scenario keys written out would make a cursor longer than the parameter takes."""
    return "p-" + hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:32]


def _page_size(limit: int | None) -> int:
    """The page size asked for (default PROJECTION_LIMIT), within 1 to PROJECTION_MAX_LIMIT."""
    size = PROJECTION_LIMIT if limit is None else limit
    if not 1 <= size <= PROJECTION_MAX_LIMIT:
        raise ValidationFailed(
            f"limit must be between 1 and {PROJECTION_MAX_LIMIT}",
            errors=[ErrorItem("query:limit", "out_of_range", f"1 to {PROJECTION_MAX_LIMIT}")],
        )
    return size


def _fields(
    metamodel: Metamodel, actor: Actor, type_def: BlockTypeDef, fields: Sequence[str] | None
) -> list[str] | None:
    if fields is None:
        return None
    readable = elements.ElementView.build(metamodel, actor, type_def)
    known = {*readable.head, *(p.name for p in readable.properties), *(e.name for e in readable.ends)}
    known.update(readable.tail)
    unknown = [name for name in fields if name not in known]
    if unknown:
        message = f"{type_def.name} has no field {', '.join(map(repr, unknown))}"
        raise ValidationFailed(message, errors=[ErrorItem("query:fields", "unknown_field", message)])
    return list(fields)


def _scenarios(
    db: Session, actor: Actor, keys: Sequence[str], pointer: str = "query:scenarios"
) -> list[Scenario]:
    if len(keys) > MOST_SCENARIOS:
        raise ValidationFailed(
            f"at most {MOST_SCENARIOS} scenarios",
            errors=[ErrorItem(pointer, "too_many", f"at most {MOST_SCENARIOS}")],
        )
    chosen: list[Scenario] = []
    for key in dict.fromkeys(keys):
        scenario = visible_scenario(db, actor, key)
        if scenario.state != "open":
            raise Conflict(
                f"scenario {key!r} is {scenario.state}: a merged one is in main already, a closed one "
                "is no plan",
                code="scenario_not_open",
            )
        chosen.append(scenario)
    return chosen


def _projected(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    type_def: BlockTypeDef,
    plan_sets: Sequence[list[_Plan]],
    fold: Folding,
    after: int,
) -> Iterator[tuple[int, list[dict[str, Any] | None]]]:
    """The type's elements after `after` by id, each as main has it with each set of plans applied in
    order (None where they delete it or it is not there), with every key the caller may read: main's
    stored elements are read once for every set."""
    whole = elements.ElementView.build(metamodel, actor, type_def)
    reader = elements.ElementReader(whole)
    created = sorted({i for plans in plan_sets for plan in plans for i in plan.created if i > after})
    while True:
        stored = elements.stored_ids_after(db, type_def.id, after, _BATCH)
        upper = stored[-1] if len(stored) == _BATCH else None
        new = [i for i in created if i > after and (upper is None or i <= upper)]
        ids = sorted({*stored, *new})
        if not ids:
            return
        presents = _presents(
            db, actor, metamodel, type_def, plan_sets, fold, whole, reader.read(db, stored), ids
        )
        for element_id in ids:
            states = [present.get(element_id) for present in presents]
            if any(state is not None for state in states):
                yield element_id, states
        if upper is None:
            return
        after = upper


def _presents(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    type_def: BlockTypeDef,
    plan_sets: Sequence[list[_Plan]],
    fold: Folding,
    whole: elements.ElementView,
    stored: list[dict[str, Any]],
    ids: list[int],
) -> list[dict[int, dict[str, Any]]]:
    """For each set of plans, the elements among `ids` by id as main has them (`stored`, read with
    `whole`) with the plans applied in order; those they delete, or that are not there, left out."""
    main = {item["id"][0]: item for item in stored}
    presents = []
    for plans in plan_sets:
        present = dict(main)  # the plans replace entries, never change main's items
        for plan in plans:
            _apply(db, actor, metamodel, type_def, plan, fold, whole, ids, present)
        presents.append(present)
    return presents


def _apply(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    type_def: BlockTypeDef,
    plan: _Plan,
    fold: Folding,
    view: elements.ElementView,
    ids: list[int],
    present: dict[int, dict[str, Any]],
) -> None:
    """One scenario's net changes of `ids` applied to `present` (element JSON by id), as its merge would
    apply them."""
    scenario = plan.scenario
    rows = changeset_rows(repository.change_rows(db, scenario.id, ids))
    if not rows:
        return
    wanted = set(ids)
    new = [i for i in plan.created if i in wanted]
    if new:
        for planned in asof.read_elements_as_of(
            db,
            metamodel,
            actor,
            type_def,
            new,
            scenario.base_revision,
            view=view,
            overlay=overlay_of(db, scenario.id, new),
        ):
            present[planned["id"][0]] = planned
    for net in fold.fold(rows):
        if net.type_name != type_def.name or net.element_id in new:
            continue
        item = present.get(net.element_id)
        if item is None:
            continue  # gone from main since the scenario's base: main has the last word
        if net.action == "deleted":
            del present[net.element_id]
        elif net.action == "updated":
            present[net.element_id] = _changed(item, net)


def _changed(item: dict[str, Any], net: NetChange) -> dict[str, Any]:
    changed = dict(item)
    for name, (_, planned) in net.values.items():
        if name in changed and name not in ("children",):
            changed[name] = list(planned)
    for name, ends in net.ends.items():
        if name not in changed or not (ends.added or ends.removed):
            continue
        kept = [entry for entry in changed[name] if entry.get("id") not in ends.removed]
        known = {entry.get("id") for entry in kept}
        changed[name] = kept + [
            {key: value for key, value in entry.items() if key in ("id", "name", "attributes")}
            for entry_id, entry in ends.added.items()
            if entry_id not in known
        ]
    return changed


def _running(item: dict[str, Any], at: dt.date) -> bool:
    """Whether the element's runtime period (if it has one) holds `at`."""
    for period in item.get("runtimePeriod") or []:
        if not isinstance(period, dict):
            continue
        start, end = period.get("start"), period.get("end")
        if start and dt.date.fromisoformat(str(start)) > at:
            return False
        if end and dt.date.fromisoformat(str(end)) < at:
            return False
    return True


def _shown(item: dict[str, Any], view: elements.ElementView) -> dict[str, Any]:
    """The keys of `view` (the fields asked for) of an element read with every key."""
    keys = [*view.head, *(p.name for p in view.properties), *(e.name for e in view.ends), *view.tail]
    return {key: item[key] for key in keys if key in item}


@dataclass(frozen=True)
class Projection:
    """What a list read or an iteraQL query projects to (`projection=` and `scenarios=`), checked."""

    at: dt.date
    scenario_keys: tuple[str, ...]

    @property
    def scope(self) -> str:
        """What a cursor of such a read belongs to: the date and the scenarios (in any order)."""
        return ",".join([self.at.isoformat(), *sorted(self.scenario_keys)])


def projection_of(
    db: Session, actor: Actor, at: dt.date, scenario_keys: Sequence[str], pointer: str = "query:scenarios"
) -> Projection:
    """The projection a read asks for, once its scenarios are checked: at most MOST_SCENARIOS (400 at
    `pointer`), each one `actor` may see (404) and open (409). Needs MASSDATA."""
    require_massdata(actor)
    chosen = _scenarios(db, actor, scenario_keys, pointer)
    return Projection(at, tuple(s.key for s in chosen))


class ProjectedState:
    """Elements as they will be on a date, as one actor may read them (every readable key): what
    `massdata.asof` filters, sorts and navigates for a list or query with `projection=`. Elements not
    there on the date (deleted by a scenario, runtime period ended or not begun) are never scanned nor
    loaded, so a relation step does not reach them."""

    def __init__(self, db: Session, actor: Actor, metamodel: Metamodel, projection: Projection) -> None:
        self.db, self.actor, self.metamodel, self.at = db, actor, metamodel, projection.at
        chosen = _scenarios(db, actor, projection.scenario_keys)
        self.effective = effective_on(chosen, self.at)
        self.fold = folding(db, actor, metamodel)
        self.plans: dict[str, list[_Plan]] = {}

    def _plans_of(self, type_def: BlockTypeDef) -> list[_Plan]:
        if type_def.name not in self.plans:
            self.plans[type_def.name] = [
                _Plan(s, repository.created_ids_of_type(self.db, s.id, type_def.name)) for s in self.effective
            ]
        return self.plans[type_def.name]

    def scan(self, type_def: BlockTypeDef) -> Iterable[list[dict[str, Any]]]:
        """The type's elements on the date, by id, a batch at a time."""
        plans = self._plans_of(type_def)
        batch: list[dict[str, Any]] = []
        walk = _projected(self.db, self.actor, self.metamodel, type_def, [plans], self.fold, 0)
        for _, (item,) in walk:
            if item is not None and _running(item, self.at):
                batch.append(item)
                if len(batch) == _BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def load(
        self, type_def: BlockTypeDef, ids: Sequence[int], view: elements.ElementView | None = None
    ) -> list[dict[str, Any]]:
        """Those of `ids` that are elements of the type there on the date, in that order (narrowed to
        `view`'s keys)."""
        plans = self._plans_of(type_def)
        whole = elements.ElementView.build(self.metamodel, self.actor, type_def)
        reader = elements.ElementReader(whole)
        found: list[dict[str, Any]] = []
        wanted = list(dict.fromkeys(ids))
        for start in range(0, len(wanted), _BATCH):
            chunk = wanted[start : start + _BATCH]
            ordered = sorted(chunk)
            (present,) = _presents(
                self.db,
                self.actor,
                self.metamodel,
                type_def,
                [plans],
                self.fold,
                whole,
                reader.read(self.db, ordered),
                ordered,
            )
            for element_id in chunk:
                item = present.get(element_id)
                if item is not None and _running(item, self.at):
                    found.append(item if view is None else _shown(item, view))
        return found


def states_of(
    actor: Actor, metamodel: Metamodel, projection: Projection
) -> Callable[[Session], ProjectedState]:
    """Builds the projected state in a session of the caller's (a stream's own)."""

    def state(db: Session) -> ProjectedState:
        return ProjectedState(db, actor, metamodel, projection)

    return state


class ProjectedLandscape:
    """The landscape on a date as an export reads it (a `massdata.transfer.export.Landscape`): main's
    newest revision, the chosen scenarios effective by then and the runtime periods, as `ProjectedState`
    has them, a batch at a time; the header's `projection` names the date and the scenarios applied."""

    scenario: dict[str, Any] | None = None

    def __init__(self, db: Session, actor: Actor, metamodel: Metamodel, projection: Projection) -> None:
        self.state = ProjectedState(db, actor, metamodel, projection)
        self.main = StoredLandscape(db)
        self.revision = self.main.revision
        self.projection: dict[str, Any] | None = {
            "at": projection.at.isoformat(),
            "scenarios": [s.key for s in self.state.effective],
        }

    def placements(self, type_def: BlockTypeDef) -> list[Placement]:
        """(id, parent id, position) of each element there on the date: a child's position is its place in
        its parent's `children`; roots (and children of a parent not there on the date) keep main's
        order of roots, new ones after them by id. Costs a projection of the type."""
        parent_of: dict[int, int | None] = {}
        order_of: dict[int, dict[int, int]] = {}  # parent id -> child id -> place
        for batch in self.state.scan(type_def):
            for item in batch:
                element_id = int(item["id"][0])
                parents = item.get("parent") or []
                parent_of[element_id] = int(parents[0]["id"]) if parents else None
                children = [int(child["id"]) for child in item.get("children") or []]
                if children:
                    order_of[element_id] = {child: place for place, child in enumerate(children)}
        root_places = {
            element_id: position
            for element_id, parent_id, position in self.main.placements(type_def)
            if parent_id is None and element_id in parent_of
        }
        last = 2**31 - 1
        placed: list[Placement] = []
        for element_id, parent_id in parent_of.items():
            if parent_id is None or parent_id not in parent_of:
                placed.append((element_id, None, root_places.get(element_id, last)))
            else:
                placed.append((element_id, parent_id, order_of.get(parent_id, {}).get(element_id, last)))
        return placed

    def read_batches(
        self, view: elements.ElementView, batches: Iterable[Sequence[int]]
    ) -> Iterator[list[dict[str, Any]]]:
        for ids in batches:
            yield self.state.load(view.type_def, ids, view)


def landscape_of(
    actor: Actor, metamodel: Metamodel, projection: Projection
) -> Callable[[Session], ProjectedLandscape]:
    """What an export of the landscape on a date reads in the session it streams from (opened later)."""

    def in_session(db: Session) -> ProjectedLandscape:
        return ProjectedLandscape(db, actor, metamodel, projection)

    return in_session
