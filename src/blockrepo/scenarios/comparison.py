"""Comparing a planning scenario with main, its base or another scenario: the diff, its conflicts and their
resolutions."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import service as elements
from blockrepo.errors import (
    Conflict,
    ErrorItem,
    ValidationFailed,
)
from blockrepo.history import asof
from blockrepo.history.diff import EndChanges, Folding, NetChange, folding, newest_revision
from blockrepo.history.service import decode_cursor, encode_cursor, require_history
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.scenarios import repository
from blockrepo.scenarios.models import (
    Scenario,
    ScenarioResolution,
)
from blockrepo.scenarios.schemas import (
    ResolutionIn,
    ResolutionOut,
)
from blockrepo.scenarios.service import (
    DIFF_LIMIT,
    DIFF_MAX_LIMIT,
    changeset_rows,
    open_scenario,
    owned_scenario,
    scenario_out,
    seeing_all,
    stamped,
    utc_now,
    visible_scenario,
)

# How each kind of conflict may be settled: an element deleted in main, a relation to one, or what the
# metamodel no longer has cannot be kept; a name or a parent may be one of the settler's choosing.
TAKES = {
    "bothChanged": frozenset({"scenario", "main", "value"}),
    "deletedInMain": frozenset({"main"}),
    "changedInMain": frozenset({"scenario", "main"}),
    "relationToDeleted": frozenset({"main"}),
    "nameTaken": frozenset({"main", "value"}),
    "cycle": frozenset({"main", "value"}),
    "metamodelChanged": frozenset({"main"}),
}
# Where a diff compares a scenario: main as it is now, the scenario's own base, main as it stood at a
# revision or a time since the base, or another scenario (two plans side by side).
AGAINST = ("main", "base", "revision:<n>", "time:<ISO-8601>", "scenario:<key>")
# A scenario's key as `service.key_for` makes it (the parameter's own limit is 64 characters too).
_KEY = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
T = TypeVar("T")


# --- the diff ------------------------------------------------------------------------------------------


@dataclass
class _Resolutions:
    by_field: dict[tuple[int, str], ScenarioResolution]

    def of(self, element_id: int, field: str) -> ScenarioResolution | None:
        return self.by_field.get((element_id, field))


def _resolution_json(resolution: ScenarioResolution) -> dict[str, Any]:
    out: dict[str, Any] = {"take": resolution.take}
    if resolution.take == "value":
        out["value"] = resolution.value
    return out


@dataclass
class ElementDiff:
    """One element of a scenario compared with main (three ways) or with its base."""

    net: NetChange
    action: str
    fields: list[dict[str, Any]]
    conflicts: list[dict[str, Any]]

    @property
    def open_conflicts(self) -> list[dict[str, Any]]:
        return [c for c in self.conflicts if "resolution" not in c]

    def item(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "element": {"id": self.net.element_id, "type": self.net.type_name, "name": self.net.name},
            "action": self.action,
            "fields": self.fields,
        }
        if self.conflicts:
            item["conflicts"] = self.conflicts
        return item


def _conflict(kind: str, message: str, field: str, resolution: ScenarioResolution | None) -> dict[str, Any]:
    conflict: dict[str, Any] = {"kind": kind, "field": field, "message": message}
    if resolution is not None:
        conflict["resolution"] = _resolution_json(resolution)
    return conflict


def _compare(
    scenario_net: NetChange,
    main_net: NetChange | None,
    gone_from_main: set[int],
    resolutions: _Resolutions,
    *,
    against_main: bool,
) -> ElementDiff | None:
    action = scenario_net.action
    if action is None:
        return None  # created and deleted in the scenario: nothing to compare
    element_id = scenario_net.element_id
    fields: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    main_values = {} if main_net is None else main_net.values
    main_ends = {} if main_net is None else main_net.ends
    # An element deleted on either side conflicts as a whole (or not at all), never field by field.
    deleted_somewhere = action == "deleted" or (main_net is not None and main_net.action == "deleted")
    for name, (base, planned) in scenario_net.values.items():
        if base == planned or name == "children":
            continue
        entry: dict[str, Any] = {"field": name, "base": base, "scenario": planned}
        if against_main:
            main_side = main_values.get(name)
            main = base if main_side is None else main_side[1]
            entry["main"] = main
            if main == base:
                entry["state"] = "unchanged-in-main"
            elif main == planned or deleted_somewhere:
                entry["state"] = "changed"
            else:
                entry["state"] = "conflict"
                resolution = resolutions.of(element_id, name)
                if resolution is not None:
                    entry["resolution"] = _resolution_json(resolution)
                conflicts.append(
                    _conflict(
                        "bothChanged", f"{name} was changed in main and in the scenario", name, resolution
                    )
                )
        else:
            entry["state"] = "changed"
        fields.append(entry)
    for name, ends in scenario_net.ends.items():
        if name == "children" or not (ends.added or ends.removed):
            continue
        entry = {"field": name, "added": list(ends.added.values()), "removed": list(ends.removed.values())}
        if against_main:
            in_main = main_ends.get(name)
            touched = in_main is not None and bool(in_main.added or in_main.removed)
            entry["state"] = "changed" if touched else "unchanged-in-main"
            if in_main is not None and touched:
                entry["mainAdded"] = list(in_main.added.values())
                entry["mainRemoved"] = list(in_main.removed.values())
            dangling = [e for e in ends.added.values() if e["id"] in gone_from_main]
            for gone in dangling:
                field = f"{name}/{gone['id']}"
                resolution = resolutions.of(element_id, field)
                conflicts.append(
                    _conflict(
                        "relationToDeleted",
                        f"{name} relates to {gone.get('name', gone['id'])}, deleted in main",
                        field,
                        resolution,
                    )
                )
        else:
            entry["state"] = "changed"
        fields.append(entry)
    if against_main and main_net is not None:
        whole = resolutions.of(element_id, "*")
        # Relation ends alone changed on an element main deleted: the relation is the other element's
        # conflict (`relationToDeleted`), reported once, there.
        if action == "updated" and main_net.action == "deleted" and any("base" in field for field in fields):
            conflicts.append(
                _conflict("deletedInMain", "changed in the scenario, deleted in main", "*", whole)
            )
        elif action == "deleted" and main_net.action == "updated" and main_net.item() is not None:
            conflicts.append(
                _conflict("changedInMain", "deleted in the scenario, changed in main", "*", whole)
            )
    if action == "updated" and not fields:
        return None  # changed and changed back
    return ElementDiff(scenario_net, action, fields, conflicts)


def compared_elements(
    db: Session,
    metamodel: Metamodel,
    scenario: Scenario,
    fold: Folding,
    element_ids: list[int],
    *,
    against_main: bool,
    newest: int,
    now: bool = True,
) -> list[ElementDiff]:
    """The scenario's elements among `element_ids` compared, in id order: against main at `newest`
    (`against_main`), else against the base. What main's tables must decide (a name taken, a cycle, the
    metamodel) is compared only with main as it is `now`."""
    planned = _planned(
        db, scenario, fold, element_ids, asof.states_as_of(db, metamodel, element_ids, scenario.base_revision)
    )
    main_nets: dict[int, NetChange] = {}
    gone: set[int] = set()
    if against_main:
        main_nets = {
            net.element_id: net for net in fold.between(db, element_ids, scenario.base_revision, newest)
        }
        related = {
            entry["id"] for net in planned for ends in net.ends.values() for entry in ends.added.values()
        }
        alive = asof.states_as_of(db, metamodel, related, newest) if related else {}
        created_here = repository.created_element_ids(db, scenario.id) if related else set()
        gone = {i for i in related if i not in alive and i not in created_here}
    resolutions = _Resolutions({(r.element_id, r.field): r for r in repository.resolutions(db, scenario.id)})
    merged_view = (
        _merged_view_conflicts(db, metamodel, scenario, planned, resolutions) if against_main and now else {}
    )
    compared = []
    for net in planned:
        diff = _compare(net, main_nets.get(net.element_id), gone, resolutions, against_main=against_main)
        if diff is not None:
            diff.conflicts.extend(merged_view.get(net.element_id, ()))
            compared.append(diff)
    return compared


def _planned(
    db: Session, scenario: Scenario, fold: Folding, element_ids: list[int], base: Mapping[int, asof.StateAt]
) -> list[NetChange]:
    """The scenario's rows of `element_ids` folded as `fold`'s reader may see them (elements of types it
    may not read left out), each field compared with the scenario's base (`base`, its states there)."""
    rows = changeset_rows(repository.change_rows(db, scenario.id, element_ids))
    planned = [net for net in fold.fold(rows) if fold.visibility.can_read_type(net.type_name)]
    _from_base(planned, base)
    return planned


def _from_base(planned: list[NetChange], base: Mapping[int, asof.StateAt]) -> None:
    """The scenario's rows folded give each field's value before its first change in the scenario; after a
    sync main's values at the (new) base are the base: values are compared with those, and relation
    entries count as added or removed only against the base's."""
    for net in planned:
        at_base = base.get(net.element_id)
        if at_base is None:
            continue  # created in the scenario
        for name, pair in net.values.items():
            pair[0] = list(at_base.state.get(name, []))
        for name, ends in net.ends.items():
            entries = {entry["id"]: entry for entry in at_base.state.get(name, [])}
            ends.added = {i: e for i, e in ends.added.items() if entries.get(i) != e}
            ends.removed = {i: e for i, e in ends.removed.items() if i in entries}


def _merged_view_conflicts(
    db: Session, metamodel: Metamodel, scenario: Scenario, planned: list[NetChange], resolutions: _Resolutions
) -> dict[int, list[dict[str, Any]]]:
    """What the scenario's changes would break in main as it is now, by element: a name another element
    of the type has taken (`nameTaken`), a parent that makes a cycle (`cycle`), an attribute, literal or
    type the metamodel no longer has (`metamodelChanged`)."""
    found: dict[int, list[dict[str, Any]]] = {}

    def add(element_id: int, kind: str, field: str, message: str) -> None:
        found.setdefault(element_id, []).append(
            _conflict(kind, message, field, resolutions.of(element_id, field))
        )

    names: dict[str, dict[str, int]] = {}
    new_parents: dict[int, int | None] = {}
    for net in planned:
        action = net.action
        if action is None or action == "deleted":
            continue
        type_def = metamodel.type_named(net.type_name)
        if type_def is None:
            add(net.element_id, "metamodelChanged", "*", f"the type {net.type_name} no longer exists")
            continue
        renamed = "name" in net.values and net.values["name"][0] != net.values["name"][1]
        if action == "created" or renamed:
            names.setdefault(net.type_name, {})[net.name] = net.element_id
        for name, (base, planned_value) in net.values.items():
            if base == planned_value or name in ("name", "description", "children"):
                continue
            if name == "parent":
                new_parents[net.element_id] = planned_value[0]["id"] if planned_value else None
                continue
            prop = type_def.property_named(name)
            if prop is None and name not in type_def.ends:
                add(net.element_id, "metamodelChanged", name, f"the attribute {name} no longer exists")
            elif prop is not None and prop.literals:
                gone = [v for v in planned_value if isinstance(v, str) and prop.literal_named(v) is None]
                if gone:
                    add(net.element_id, "metamodelChanged", name, f"{name} no longer has {', '.join(gone)}")
    for type_name, wanted in names.items():
        type_def = metamodel.type_named(type_name)
        assert type_def is not None
        merged_as = scenario.merged_ids or {}
        for name, holder in elements.ids_named(db, type_def, wanted).items():
            if holder not in (wanted[name], merged_as.get(str(wanted[name]))):
                add(wanted[name], "nameTaken", "name", f"main has another {type_name} named {name!r}")
    if new_parents:
        main_parents = elements.parents_of(db, [p for p in new_parents.values() if p is not None])
        for element_id, parent in new_parents.items():
            seen: set[int] = set()
            while parent is not None and parent not in seen:
                if parent == element_id:
                    add(element_id, "cycle", "parent", "the new parent is among the element's descendants")
                    break
                seen.add(parent)
                parent = new_parents[parent] if parent in new_parents else main_parents.get(parent)
    return found


def diff(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    key: str,
    *,
    against: str = "main",
    limit: int | None = None,
    cursor: str | None = None,
) -> dict[str, Any]:
    """GET /api/scenarios/{key}/diff: the scenario's elements, a page in id order, each with its fields at
    the base, in the scenario and (against main) in main with a state: `unchanged-in-main` (only the
    scenario changed it: it merges as it is), `changed` (main changed it too, to the same value, or a
    relation end both changed: they merge as sets) or `conflict` (settled by a resolution). The first page
    counts the elements by type and action and the open conflicts. Against `scenario:<key>` it compares
    the scenario with another one the caller may see (`compared_plans`: no conflicts there, nothing is
    merged); an unknown or hidden one is 404 like an unknown scenario."""
    scenario = visible_scenario(db, actor, key)
    newest = newest_revision(db)
    other = _other_plan(db, actor, against)
    target = None if other is not None else _compared_with(db, actor, scenario, against, newest)
    size = DIFF_LIMIT if limit is None else limit
    if not 1 <= size <= DIFF_MAX_LIMIT:
        raise ValidationFailed(
            f"limit must be between 1 and {DIFF_MAX_LIMIT}",
            errors=[ErrorItem("query:limit", "out_of_range", f"1 to {DIFF_MAX_LIMIT}")],
        )
    scope = f"s{scenario.id}-{against}"
    after = decode_cursor(cursor, scope)[0] if cursor is not None else 0
    fold = folding(db, actor, metamodel)
    first = cursor is None
    page: dict[str, Any] = {"scenario": scenario_out(db, scenario, newest).model_dump(by_alias=True)}
    if other is not None:
        page["against"] = {"scenario": other.key, "name": other.name, "baseRevision": other.base_revision}
        items, more, counts = _plans_page(db, metamodel, scenario, other, fold, after, size, first, newest)
    else:
        element_ids = [i for i in repository.changed_element_ids(db, scenario.id) if i > after]
        summary: dict[str, dict[str, int]] = {}
        conflicts = 0

        def count(compared: ElementDiff) -> None:
            nonlocal conflicts
            _count(summary, compared.net.type_name, compared.action)
            conflicts += len(compared.open_conflicts)

        found, more = _paged(
            element_ids,
            size,
            lambda batch: compared_elements(
                db,
                metamodel,
                scenario,
                fold,
                batch,
                against_main=target is not None,
                newest=newest if target is None else target,
                now=against == "main",
            ),
            count if first else None,
        )
        items = [compared.item() for compared in found]
        counts = {"summary": summary, "openConflicts": conflicts}
    if first:
        page.update(counts)
    page["items"] = items
    page["nextCursor"] = encode_cursor(scope, items[-1]["element"]["id"], 0) if more and items else None
    return page


def _plans_page(
    db: Session,
    metamodel: Metamodel,
    here: Scenario,
    there: Scenario,
    fold: Folding,
    after: int,
    size: int,
    first: bool,
    newest: int,
) -> tuple[list[dict[str, Any]], bool, dict[str, Any]]:
    """A page of two plans compared (`compared_plans`) over the elements either changed after `after`,
    whether more follow, and (on the `first` page) what each plan does, by type and action."""
    summary: dict[str, dict[str, int]] = {}
    other_summary: dict[str, dict[str, int]] = {}

    def count(compared: PlansCompared) -> None:
        _count(summary, compared.type_name, compared.action)
        _count(other_summary, compared.type_name, compared.other_action)

    changed = {*repository.changed_element_ids(db, here.id), *repository.changed_element_ids(db, there.id)}
    found, more = _paged(
        sorted(i for i in changed if i > after),
        size,
        lambda batch: compared_plans(db, metamodel, here, there, fold, batch, newest),
        count if first else None,
    )
    return [compared.item() for compared in found], more, {"summary": summary, "otherSummary": other_summary}


def _count(summary: dict[str, dict[str, int]], type_name: str, action: str) -> None:
    counts = summary.setdefault(type_name, {})
    counts[action] = counts.get(action, 0) + 1


def _paged(
    element_ids: list[int],
    size: int,
    compare: Callable[[list[int]], Iterable[T]],
    count: Callable[[T], None] | None,
) -> tuple[list[T], bool]:
    """The first `size` of the elements compared (in batches, in id order) and whether more follow. With
    `count` (a first page) every element is compared and counted; without, comparing stops past the page."""
    found: list[T] = []
    more = False
    for start in range(0, len(element_ids), DIFF_MAX_LIMIT):
        for compared in compare(element_ids[start : start + DIFF_MAX_LIMIT]):
            if count is not None:
                count(compared)
            if len(found) < size:
                found.append(compared)
            elif count is None:
                return found, True
            else:
                more = True
    return found, more


def _compared_with(db: Session, actor: Actor, scenario: Scenario, against: str, newest: int) -> int | None:
    """The revision of main the diff compares with (None: the base). A revision or a time is history:
    it needs VIEW_HISTORY, and must be at or after the base (before it, main's changes are not the
    scenario's concern)."""
    if against == "main":
        return newest
    if against == "base":
        return None
    kind, _, moment = against.partition(":")
    if kind not in ("revision", "time") or not moment or (kind == "revision") != moment.isdigit():
        raise _bad_against()
    require_history(actor)
    revision = asof.resolve_as_of(db, moment, "query:against")
    if revision < scenario.base_revision:
        raise ValidationFailed(
            f"revision {revision} is before the scenario's base {scenario.base_revision}",
            errors=[ErrorItem("query:against", "before_base", f"the base is {scenario.base_revision}")],
        )
    return revision


def _bad_against() -> ValidationFailed:
    return ValidationFailed(
        f"against must be one of {', '.join(AGAINST)}",
        errors=[ErrorItem("query:against", "invalid_value", f"not one of {', '.join(AGAINST)}")],
    )


def _other_plan(db: Session, actor: Actor, against: str) -> Scenario | None:
    """The scenario `scenario:<key>` names (None: `against` names no scenario); 400 for a key no scenario
    can have, 404 for one the caller may not see, as for any unknown scenario."""
    kind, colon, key = against.partition(":")
    if kind != "scenario" or not colon:
        return None
    if not _KEY.fullmatch(key):
        raise ValidationFailed(
            "against=scenario:<key> needs a scenario's key",
            errors=[ErrorItem("query:against", "invalid_value", f"not a scenario's key: {key!r}")],
        )
    return visible_scenario(db, actor, key)


# --- two plans side by side ----------------------------------------------------------------------------

# How two plans hold a field (or an element): alike, changed by one of them only (`onlyHere`: the scenario
# of the path, `onlyThere`: the other one), or each its own way.
SAME, ONLY_HERE, ONLY_THERE, DIFFERS = "same", "onlyHere", "onlyThere", "differs"
# The action of a plan that leaves an element as its base has it (or without it, created by the other).
UNCHANGED = "unchanged"


@dataclass
class PlansCompared:
    """One element as two scenarios plan it: what each does to it (`action`: the path's scenario,
    `other_action`: the one compared with) and its fields either changed."""

    element_id: int
    type_name: str
    name: str
    action: str
    other_action: str
    fields: list[dict[str, Any]]

    @property
    def state(self) -> str:
        if self.action == UNCHANGED:
            return ONLY_THERE
        if self.other_action == UNCHANGED:
            return ONLY_HERE
        alike = self.action == self.other_action and all(f["state"] == SAME for f in self.fields)
        return SAME if alike else DIFFERS

    def item(self) -> dict[str, Any]:
        return {
            "element": {"id": self.element_id, "type": self.type_name, "name": self.name},
            "action": self.action,
            "otherAction": self.other_action,
            "state": self.state,
            "fields": self.fields,
        }


def _changed_values(net: NetChange | None) -> dict[str, list[list[Any]]]:
    if net is None or net.action is None:
        return {}
    return {name: pair for name, pair in net.values.items() if pair[0] != pair[1] and name != "children"}


def _changed_ends(net: NetChange | None) -> dict[str, EndChanges]:
    if net is None or net.action is None:
        return {}
    return {name: e for name, e in net.ends.items() if name != "children" and (e.added or e.removed)}


def _plan_action(net: NetChange | None, changed: bool) -> str:
    """What a plan does to an element as the reader sees it: an update of nothing it may read is none."""
    if net is None or net.action is None or (net.action == "updated" and not changed):
        return UNCHANGED
    return net.action


def _comparable(values: list[Any]) -> list[Any]:
    """Values as two plans are compared: a related element (a parent) by its id, not by the name a row
    gave it then."""
    return [
        (value["id"], value.get("attributes")) if isinstance(value, dict) and "id" in value else value
        for value in values
    ]


def _relations(ends: EndChanges) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """A relation end's entries added and removed, by related id with their relation attributes (the
    related element's name is how a row named it then, not a difference between plans)."""
    return (
        {i: entry.get("attributes") for i, entry in ends.added.items()},
        {i: entry.get("attributes") for i, entry in ends.removed.items()},
    )


def compared_plans(
    db: Session,
    metamodel: Metamodel,
    here: Scenario,
    there: Scenario,
    fold: Folding,
    element_ids: list[int],
    newest: int,
) -> list[PlansCompared]:
    """Two scenarios' elements among `element_ids` compared, in id order ("option A against option B"):
    every element either changed, with each field either changed as `base` (its value at `here`'s base),
    `scenario` (in `here`) and `other` (in `there`), and a state: `same` (the plans agree), `onlyHere` or
    `onlyThere` (only one plan changed it, the other keeps its base's value) or `differs` (each changed it
    its own way). Relation ends come as each plan's entries added and removed (`added`/`removed`,
    `otherAdded`/`otherRemoved`), `same` when both add and remove the same entries. The element's
    `state` says the same of it as a whole.

    Each plan is compared as it sees itself: main at its own base with its own rows. With two different
    bases `base` is `here`'s, a plan's changes are those against its own base (what main changed between
    the two bases is neither plan's change: a field no plan changed is not listed, even if the bases
    differ on it), and a field only `here` changed shows `there`'s base value as `other`. Conflicts and
    resolutions belong to a plan against main, never to two plans: there are none here. What `fold`'s
    reader may not read is left out, as in every diff."""
    at_base = asof.states_as_of(db, metamodel, element_ids, here.base_revision)
    at_other_base = (
        at_base
        if there.base_revision == here.base_revision
        else asof.states_as_of(db, metamodel, element_ids, there.base_revision)
    )
    mine = {net.element_id: net for net in _planned(db, here, fold, element_ids, at_base)}
    theirs = {net.element_id: net for net in _planned(db, there, fold, element_ids, at_other_base)}
    visibility = fold.visibility

    def unchanged(states: Mapping[int, asof.StateAt], element_id: int, name: str) -> list[Any]:
        """A field as a plan that did not change it has it: as at its base (relation attributes the reader
        may not read left out, their names as they are today)."""
        state = states.get(element_id)
        values = [] if state is None else state.state.get(name, [])
        return [visibility.trim_relation_value(value, newest + 1) for value in values]

    compared: list[PlansCompared] = []
    for element_id in element_ids:
        here_net, there_net = mine.get(element_id), theirs.get(element_id)
        if here_net is None and there_net is None:
            continue  # neither plan changed it, or the reader may not read its type
        here_values, there_values = _changed_values(here_net), _changed_values(there_net)
        here_ends, there_ends = _changed_ends(here_net), _changed_ends(there_net)
        action = _plan_action(here_net, bool(here_values or here_ends))
        other_action = _plan_action(there_net, bool(there_values or there_ends))
        if action == other_action == UNCHANGED:
            continue
        fields: list[dict[str, Any]] = []
        for name in dict.fromkeys([*here_values, *there_values]):
            mine_pair, theirs_pair = here_values.get(name), there_values.get(name)
            planned = unchanged(at_base, element_id, name) if mine_pair is None else mine_pair[1]
            other = unchanged(at_other_base, element_id, name) if theirs_pair is None else theirs_pair[1]
            if _comparable(planned) == _comparable(other):
                state = SAME
            else:
                state = ONLY_HERE if theirs_pair is None else ONLY_THERE if mine_pair is None else DIFFERS
            base = unchanged(at_base, element_id, name) if mine_pair is None else mine_pair[0]
            fields.append({"field": name, "base": base, "scenario": planned, "other": other, "state": state})
        for name in dict.fromkeys([*here_ends, *there_ends]):
            mine_ends, theirs_ends = here_ends.get(name, EndChanges()), there_ends.get(name, EndChanges())
            if name not in there_ends:
                state = ONLY_HERE
            elif name not in here_ends:
                state = ONLY_THERE
            else:
                state = SAME if _relations(mine_ends) == _relations(theirs_ends) else DIFFERS
            fields.append(
                {
                    "field": name,
                    "added": list(mine_ends.added.values()),
                    "removed": list(mine_ends.removed.values()),
                    "otherAdded": list(theirs_ends.added.values()),
                    "otherRemoved": list(theirs_ends.removed.values()),
                    "state": state,
                }
            )
        known = here_net if here_net is not None else there_net
        assert known is not None
        if here_net is None and element_id in at_base:
            named = str(at_base[element_id].state["name"][0])  # as the path's scenario names it
        else:
            named = known.name
        compared.append(PlansCompared(element_id, known.type_name, named, action, other_action, fields))
    return compared


# --- resolutions ---------------------------------------------------------------------------------------


def resolve(db: Session, actor: Actor, metamodel: Metamodel, key: str, body: ResolutionIn) -> ResolutionOut:
    """Settle one open or settled conflict of the scenario (it must be a conflict now)."""
    scenario = open_scenario(owned_scenario(db, actor, key, "settles its conflicts"))
    found = compared_elements(
        db,
        metamodel,
        scenario,
        folding(db, actor, metamodel),
        [body.element],
        against_main=True,
        newest=newest_revision(db),
    )
    kinds = {c["field"]: (c["kind"], diff.action) for diff in found for c in diff.conflicts}
    if body.field not in kinds:
        raise ValidationFailed(
            f"element {body.element} has no conflict at {body.field!r}",
            errors=[ErrorItem("/field", "no_conflict", "not a conflict of the scenario now")],
        )
    kind, action = kinds[body.field]
    allowed = TAKES[kind] - ({"main"} if kind == "nameTaken" and action == "created" else set())
    if body.take not in allowed:
        raise ValidationFailed(
            f"a {kind} conflict is settled by taking {' or '.join(sorted(allowed))}",
            errors=[ErrorItem("/take", "take_not_allowed", f"one of {', '.join(sorted(allowed))}")],
        )
    if body.take == "value" and body.value is None:
        raise ValidationFailed(
            'take "value" needs `value`',
            errors=[ErrorItem("/value", "value_required", "the field's values, as a write sends them")],
        )
    now = utc_now()
    resolution = ScenarioResolution(
        scenario_id=scenario.id,
        element_id=body.element,
        field=body.field,
        take=body.take,
        value=body.value if body.take == "value" else None,
        resolved_by=actor.login,
        resolved_at=now,
    )
    repository.set_resolution(db, resolution)
    repository.bump_version(db, scenario.id)
    return _resolution_out(resolution)


def _resolution_out(resolution: ScenarioResolution) -> ResolutionOut:
    return ResolutionOut(
        element=resolution.element_id,
        field=resolution.field,
        take=resolution.take,
        value=resolution.value,
        resolved_by=resolution.resolved_by,
        resolved_at=stamped(resolution.resolved_at) or "",
    )


def list_resolutions(db: Session, actor: Actor, key: str) -> list[ResolutionOut]:
    scenario = visible_scenario(db, actor, key)
    return [_resolution_out(r) for r in repository.resolutions(db, scenario.id)]


def settled_comparison(
    db: Session, actor: Actor, metamodel: Metamodel, scenario: Scenario, newest: int
) -> list[ElementDiff]:
    """Every element of the scenario compared with main as a supervisor sees it (a merge or a sync takes
    all of the scenario; the writes check the caller's own rights); 409 listing the open conflicts."""
    fold = folding(db, seeing_all(actor), metamodel)
    compared: list[ElementDiff] = []
    element_ids = repository.changed_element_ids(db, scenario.id)
    for start in range(0, len(element_ids), DIFF_MAX_LIMIT):
        batch = element_ids[start : start + DIFF_MAX_LIMIT]
        compared.extend(
            compared_elements(db, metamodel, scenario, fold, batch, against_main=True, newest=newest)
        )
    conflicts = [{"element": d.item()["element"], **c} for d in compared for c in d.open_conflicts]
    if conflicts:
        raise Conflict(
            f"scenario {scenario.key!r} has {len(conflicts)} open conflict(s); settle each with a resolution",
            code="scenario_conflicts",
            extra={"conflicts": conflicts},
        )
    return compared
