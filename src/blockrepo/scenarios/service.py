"""Planning scenarios: create them, work in them with the element API, compare them with main and merge them.

A scenario is main as of its base revision with the scenario's own change rows folded on top, in the very
shape of main's history (`scenarios.models.ScenarioChange`): reading an element in it is history's `asOf`
fold of main's rows up to the base followed by the scenario's rows, and a write in it is checked by the
write core against the stored elements and the actor's rights, then recorded as the changesets a write in
main would record (the element's own, and the mirrored ones of its neighbours and parents), without
touching main. Because both sides are change rows, the diff against main is two folds of the same kind:
the scenario's rows (base -> scenario) and main's rows since the base (base -> main), compared field by
field. The merge writes the scenario's net field state into main through the write core in one
transaction: creates, then updates, then deletes; relation ends as set additions and removals on main's
current ends, so two additions to the same end never conflict.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import service as elements
from blockrepo.errors import (
    BlockrepoError,
    Conflict,
    ErrorItem,
    Forbidden,
    HasChildren,
    NameConflict,
    NotFound,
    PreconditionFailed,
    ValidationFailed,
)
from blockrepo.history import asof
from blockrepo.history.diff import Folding, NetChange, element_changesets_of, folding, newest_revision
from blockrepo.history.repository import ChangesetRow
from blockrepo.history.service import changeset_json, decode_cursor, encode_cursor, property_visibility
from blockrepo.massdata import asof as past
from blockrepo.massdata import listing
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.scenarios import repository
from blockrepo.scenarios.models import (
    MergeRule,
    Scenario,
    ScenarioApproval,
    ScenarioChange,
    ScenarioComment,
    ScenarioResolution,
)
from blockrepo.scenarios.schemas import (
    ApprovalOut,
    CommentIn,
    CommentOut,
    MergeIn,
    MergeRuleIn,
    MergeRuleOut,
    ResolutionIn,
    ResolutionOut,
    ReviewIn,
    ReviewOut,
    ScenarioCreate,
    ScenarioOut,
)

# States a scenario is listed in by default; a merged or closed one is still readable by its key.
OPEN_STATES = ("open",)
ALL_STATES = ("open", "merged", "closed")
DIFF_LIMIT, DIFF_MAX_LIMIT = 100, 1000
RevisionCheck = Callable[[int], bool]
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
# Where a diff compares a scenario: main as it is now, or the scenario's own base.
AGAINST = ("main", "base")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _stamp(moment: dt.datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- the scenarios themselves --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewRules:
    """How merging is governed (settings): whether an owner may approve their own scenario, and whether
    main is protected (changed only by merging reviewed scenarios)."""

    self_approval: bool = False
    protected_main: bool = False


MERGE = "MERGE_SCENARIOS"
APPROVE = "APPROVE_SCENARIOS"


def _owns(actor: Actor, scenario: Scenario) -> bool:
    return actor.supervisor or scenario.owner_id == actor.user_id


def visible_scenario(db: Session, actor: Actor, key: str, *, lock: bool = False) -> Scenario:
    """The scenario of `key` if `actor` may see it (its owner, its reviewers, a supervisor, and once it is
    proposed for review whoever holds APPROVE_SCENARIOS); 404 otherwise, so that a key tells nothing to
    whoever may not see it."""
    scenario = repository.scenario_keyed(db, key, lock=lock)
    if scenario is None or not (
        _owns(actor, scenario)
        or (scenario.proposed_at is not None and actor.can(APPROVE))
        or scenario.id in repository.reviewed_by(db, actor.user_id)
    ):
        raise NotFound(f"there is no scenario {key!r}", code="unknown_scenario")
    return scenario


def _owned(db: Session, actor: Actor, key: str, doing: str) -> Scenario:
    """The scenario, locked, if `actor` owns it (or is a supervisor): its reviewers see it, nothing more."""
    scenario = visible_scenario(db, actor, key, lock=True)
    if not _owns(actor, scenario):
        raise Forbidden(f"only the scenario's owner or a supervisor {doing}")
    return scenario


def _open(scenario: Scenario) -> Scenario:
    if scenario.state != "open":
        raise Conflict(
            f"scenario {scenario.key!r} is {scenario.state}: it takes no more changes",
            code="scenario_not_open",
            extra={"state": scenario.state},
        )
    return scenario


def scenario_out(db: Session, scenario: Scenario, newest: int | None = None) -> ScenarioOut:
    counts = repository.change_counts(db, [scenario.id]).get(scenario.id, (0, 0))
    return _out(scenario, newest_revision(db) if newest is None else newest, counts, _review(db, scenario))


def _review(db: Session, scenario: Scenario) -> ReviewOut | None:
    if scenario.required_approvals is None or scenario.proposed_at is None:
        return None
    current = [a for a in repository.approvals(db, scenario.id) if a.version == scenario.version]
    return ReviewOut(
        reviewers=[r.login for r in repository.reviewers(db, scenario.id)],
        required_approvals=scenario.required_approvals,
        proposed_at=_stamp(scenario.proposed_at) or "",
        approvals=[ApprovalOut(user=a.login, approved_at=_stamp(a.approved_at) or "") for a in current],
        approved=len(current) >= scenario.required_approvals,
    )


def _out(
    scenario: Scenario, newest: int, counts: tuple[int, int], review: ReviewOut | None = None
) -> ScenarioOut:
    return ScenarioOut(
        review=review,
        key=scenario.key,
        name=scenario.name,
        description=scenario.description,
        effective_date=None if scenario.effective_date is None else scenario.effective_date.isoformat(),
        base_revision=scenario.base_revision,
        behind_main=max(0, newest - scenario.base_revision),
        owner=scenario.owner_login,
        state=scenario.state,  # type: ignore[arg-type]
        created_at=_stamp(scenario.created_at) or "",
        version=scenario.version,
        changes=counts[0],
        changed_elements=counts[1],
        merged_revision=scenario.merged_revision,
        merged_by=scenario.merged_by,
        merged_at=_stamp(scenario.merged_at),
    )


def _key_for(name: str) -> str:
    """A key people can read in a URL: the name's words, lower case, and a random tail that keeps keys of
    equally named scenarios apart (and unguessable)."""
    words = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-")
    return f"{words or 'scenario'}-{secrets.token_hex(3)}"


def _effective_date(raw: str | None) -> dt.date | None:
    if raw is None:
        return None
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ValidationFailed(
            "effectiveDate must be a date (YYYY-MM-DD)",
            errors=[ErrorItem("/effectiveDate", "invalid_date", f"not a date: {raw!r}")],
        ) from None


def create_scenario(db: Session, actor: Actor, body: ScenarioCreate) -> ScenarioOut:
    """A new open scenario owned by `actor`, based on main now or at `base` (a revision or a time)."""
    newest = newest_revision(db)
    base = newest
    if body.base is not None:
        if isinstance(body.base, bool):
            raise ValidationFailed("base must be a revision number or an ISO-8601 time")
        base = asof.resolve_as_of(db, str(body.base), "/base")
    scenario = repository.add_scenario(
        db,
        Scenario(
            key=_key_for(body.name),
            name=body.name,
            description=body.description,
            effective_date=_effective_date(body.effective_date),
            base_revision=base,
            owner_id=actor.user_id,
            owner_login=actor.login,
            state="open",
            created_at=_now(),
            version=0,
        ),
    )
    return _out(scenario, newest, (0, 0))


def list_scenarios(db: Session, actor: Actor, *, everyone: bool, include_ended: bool) -> list[ScenarioOut]:
    """The caller's scenarios (with `everyone`, a supervisor's view of all), newest first; merged and
    closed ones only with `include_ended`."""
    if everyone and not actor.supervisor:
        raise Forbidden("only a supervisor lists every account's scenarios")
    scenarios = repository.listed_scenarios(
        db,
        None if everyone else actor.user_id,
        ALL_STATES if include_ended else OPEN_STATES,
        proposed=actor.can(APPROVE),
    )
    newest = newest_revision(db)
    counts = repository.change_counts(db, [s.id for s in scenarios])
    return [_out(s, newest, counts.get(s.id, (0, 0)), _review(db, s)) for s in scenarios]


def set_state(db: Session, actor: Actor, key: str, state: str) -> ScenarioOut:
    """Close an open scenario or reopen a closed one (a merged one stays merged)."""
    scenario = _owned(db, actor, key, "closes or reopens it")
    if scenario.state == "merged":
        raise Conflict(f"scenario {key!r} is merged", code="scenario_not_open", extra={"state": "merged"})
    scenario.state = state
    db.flush()
    return scenario_out(db, scenario)


# --- elements in a scenario ----------------------------------------------------------------------------


def _changeset_rows(rows: Iterable[ScenarioChange]) -> list[ChangesetRow]:
    """A scenario's change rows in the shape of main's history rows, recorded at main's revision of then."""
    return [
        ChangesetRow(
            change_id=row.id,
            revision=row.main_revision,
            entity="element",
            operation=row.operation,
            type_name=row.type_name,
            element_id=row.element_id,
            element_name=row.element_name,
            subject=None,
            changes=list(row.changes),
            created_at=row.created_at,
            user_login=row.user_login,
            request_id=row.request_id,
        )
        for row in rows
    ]


def _overlay(db: Session, scenario: Scenario, element_ids: Iterable[int]) -> asof.Overlay:
    return _overlay_of(db, scenario.id, element_ids)


def _overlay_of(db: Session, scenario_id: int, element_ids: Iterable[int]) -> asof.Overlay:
    rows = repository.change_rows(db, scenario_id, element_ids)

    def names_of(ids: set[int]) -> dict[int, str]:
        return repository.newest_names(db, scenario_id, ids)

    return asof.Overlay(_changeset_rows(rows), names_of)


def _states(
    db: Session, metamodel: Metamodel, scenario: Scenario, element_ids: Sequence[int]
) -> dict[int, asof.StateAt]:
    return asof.states_as_of(
        db, metamodel, element_ids, scenario.base_revision, _overlay(db, scenario, element_ids)
    )


def reading_layer(db: Session, actor: Actor, key: str) -> asof.Layer:
    """What list reads and queries fold on top of main to read in the scenario (`massdata`'s asOf path):
    main at the base, the elements the scenario created, its rows."""
    scenario = visible_scenario(db, actor, key)
    scenario_id, base = scenario.id, scenario.base_revision

    def created(session: Session, type_name: str) -> list[int]:
        return repository.created_ids_of_type(session, scenario_id, type_name)

    def overlay(session: Session, ids: Sequence[int]) -> asof.Overlay:
        return _overlay_of(session, scenario_id, ids)

    return asof.Layer(base, created, overlay)


def read_element(
    db: Session, actor: Actor, metamodel: Metamodel, key: str, type_name: str, element_id: int
) -> dict[str, Any]:
    """GET /api/element/{type}/{id} in a scenario: the element as the scenario has it, as `actor` may see
    it (the same JSON as in main; `revision` counts its changesets in main up to the base and in the
    scenario)."""
    scenario = visible_scenario(db, actor, key)
    type_def = elements.resolve_type(metamodel, actor, type_name)
    found = asof.read_elements_as_of(
        db,
        metamodel,
        actor,
        type_def,
        [element_id],
        scenario.base_revision,
        overlay=_overlay(db, scenario, [element_id]),
    )
    if not found:
        raise NotFound(f"there is no {type_name} with id {element_id} in scenario {key!r}")
    return found[0]


def _record(
    writer: elements.Writer,
    scenario: Scenario,
    type_def: BlockTypeDef,
    element_id: int,
    operation: str,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
) -> bool:
    """Record one write in the scenario: the element's changeset and its neighbours'. False when it
    changes nothing."""
    own, neighbours = elements.planned_changesets(type_def, element_id, before, after)
    if not own and operation == "updated":
        return False
    common = _row_stamp(writer, scenario)
    state = after if after is not None else before
    assert state is not None
    rows = [
        {
            **common,
            "element_id": element_id,
            "type_name": type_def.name,
            "element_name": state["name"][0],
            "operation": operation,
            "changes": own,
        }
    ]
    # A neighbour's row carries its name as the scenario has it (a read takes the name of the newest
    # row): the entries a write resolves name the elements as main has them now.
    seen = (
        _states(writer.db, writer.metamodel, scenario, [n.element_id for n in neighbours])
        if neighbours
        else {}
    )
    for neighbour in neighbours:
        there = seen.get(neighbour.element_id)
        rows.append(
            {
                **common,
                "element_id": neighbour.element_id,
                "type_name": neighbour.type_name,
                "element_name": there.state["name"][0] if there is not None else neighbour.element_name,
                "operation": "updated",
                "changes": neighbour.changes,
            }
        )
    repository.add_changes(writer.db, rows)
    repository.bump_version(writer.db, scenario.id)
    return True


def _row_stamp(writer: elements.Writer, scenario: Scenario) -> dict[str, Any]:
    """What every row a write adds to the scenario shares: who, when, and main's revision of then."""
    return {
        "scenario_id": scenario.id,
        "main_revision": newest_revision(writer.db),
        "created_at": _now(),
        "user_login": writer.actor.login,
        "request_id": writer.changes.request_id,
    }


def _writable(writer: elements.Writer, key: str) -> Scenario:
    return _open(_owned(writer.db, writer.actor, key, "writes in it"))


def _check_precondition(
    type_name: str, element_id: int, current: asof.StateAt | None, if_match: RevisionCheck | None
) -> asof.StateAt:
    if current is None or current.type_name != type_name:
        raise NotFound(f"there is no {type_name} with id {element_id} in the scenario")
    if if_match is not None and not if_match(current.changesets):
        raise PreconditionFailed(
            f"the element is at revision {current.changesets}; If-Match does not match",
            extra={"currentRevision": current.changesets},
        )
    return current


def _body_of(state: Mapping[str, Any]) -> dict[str, Any]:
    """A write body that sets every property of a state (references by id)."""
    body: dict[str, Any] = {}
    for key, values in state.items():
        if key in elements.READ_ONLY_KEYS:
            continue
        body[key] = [_reference(v) if isinstance(v, dict) and "id" in v else v for v in values]
    return body


def _reference(entry: Mapping[str, Any]) -> dict[str, Any]:
    reference: dict[str, Any] = {"id": entry["id"]}
    if "attributes" in entry:
        reference["attributes"] = entry["attributes"]
    return reference


def _in_main_at_base(db: Session, metamodel: Metamodel, scenario: Scenario, element_id: int) -> bool:
    return element_id in asof.states_as_of(db, metamodel, [element_id], scenario.base_revision)


def _check_name(
    db: Session, scenario: Scenario, type_def: BlockTypeDef, name: str, element_id: int | None
) -> None:
    taken = repository.names_in_scenario(db, scenario.id, type_def.name).get(name)
    if taken is not None and taken != element_id:
        raise NameConflict(f"the scenario already has a {type_def.name} named {name!r}")


def _reference_id(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, dict) and isinstance(value.get("id"), int) and not isinstance(value["id"], bool):
        return int(value["id"])
    return None


def _checked(
    writer: elements.Writer,
    scenario: Scenario,
    type_def: BlockTypeDef,
    body: dict[str, Any],
    element_id: int | None,
) -> dict[str, Any]:
    """`elements.service.validated_state` of the body, where references (by id) to elements main does not
    have (created in the scenario, or deleted in main since the base) are checked here (they exist in the
    scenario and are of the end's type) and kept aside from the write core's check."""
    referenced = {
        ref
        for key, values in body.items()
        if (key == "parent" or key in type_def.ends) and isinstance(values, list)
        for value in values
        if (ref := _reference_id(value)) is not None
    }
    wanted = referenced - elements.stored_ids(writer.db, referenced) if referenced else set()
    if not wanted:
        return dict(elements.validated_state(writer, type_def, body, element_id))
    planned = _states(writer.db, writer.metamodel, scenario, sorted(wanted))
    kept, aside, errors = dict(body), {}, []
    for key, values in body.items():
        if not (key == "parent" or key in type_def.ends) or not isinstance(values, list):
            continue
        other_type = type_def.name if key == "parent" else type_def.ends[key].other_type
        keep, entries = [], []
        for index, value in enumerate(values):
            ref = _reference_id(value)
            if ref is None or ref not in wanted:
                keep.append(value)
                continue
            state = planned.get(ref)
            if state is None or state.type_name != other_type:
                errors.append(
                    ErrorItem(f"/{key}/{index}", "unknown_target", f"the scenario has no {other_type} {ref}")
                )
            elif isinstance(value, dict) and value.get("attributes"):
                errors.append(
                    ErrorItem(
                        f"/{key}/{index}/attributes",
                        "not_yet",
                        "relation attributes to an element created in the scenario are set after the merge",
                    )
                )
            else:
                entries.append({"id": ref, "name": state.state["name"][0]})
        if entries:
            kept[key], aside[key] = keep, entries
    if errors:
        raise ValidationFailed(
            f"{len(errors)} problem(s): " + "; ".join(f"{e.pointer}: {e.message}" for e in errors),
            errors=errors,
        )
    checked = dict(elements.validated_state(writer, type_def, kept, element_id))
    for key, entries in aside.items():
        checked[key] = entries if key == "parent" else [*checked.get(key, []), *entries]
    return checked


def update_element(
    writer: elements.Writer,
    key: str,
    type_name: str,
    element_id: int,
    body: dict[str, Any],
    *,
    if_match: RevisionCheck | None = None,
) -> dict[str, Any]:
    """PUT / PATCH in a scenario: the properties in `body` change in the scenario only."""
    scenario = _writable(writer, key)
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name, "update")
    current = _check_precondition(
        type_name,
        element_id,
        _states(writer.db, writer.metamodel, scenario, [element_id]).get(element_id),
        if_match,
    )
    before = current.state
    given = {k: v for k, v in body.items() if k not in elements.READ_ONLY_KEYS}
    if "id" in body and body["id"] != [element_id] and body["id"] != element_id:
        raise ValidationFailed(
            "id must match the path", errors=[ErrorItem("/id", "id_mismatch", "the id is the path's")]
        )
    if _in_main_at_base(writer.db, writer.metamodel, scenario, element_id):
        checked = _checked(writer, scenario, type_def, {"name": before["name"], **given}, element_id)
    else:  # created in the scenario: checked as the creation it will be in main
        checked = _checked(writer, scenario, type_def, {**_body_of(before), **given}, None)
    after = dict(before)
    for name in given:
        if name in checked:
            after[name] = list(checked[name])
        else:
            after.pop(name, None)
    if after["name"] != before["name"]:
        _check_name(writer.db, scenario, type_def, after["name"][0], element_id)
    _record(writer, scenario, type_def, element_id, "updated", before, after)
    return read_element(writer.db, writer.actor, writer.metamodel, key, type_name, element_id)


def create_element(writer: elements.Writer, key: str, type_name: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST in a scenario: a new element there, with an id from main's sequence (never another's)."""
    scenario = _writable(writer, key)
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name, "create")
    after = _checked(writer, scenario, type_def, body, None)
    _check_name(writer.db, scenario, type_def, after["name"][0], None)
    element_id = repository.reserve_element_id(writer.db)
    _record(writer, scenario, type_def, element_id, "created", None, after)
    return read_element(writer.db, writer.actor, writer.metamodel, key, type_name, element_id)


def delete_element(
    writer: elements.Writer,
    key: str,
    type_name: str,
    element_id: int,
    *,
    if_match: RevisionCheck | None = None,
) -> None:
    """DELETE in a scenario: the element and its relations go, in the scenario only. An element with
    children in the scenario gets 409 `has_children` (delete them first)."""
    scenario = _writable(writer, key)
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name, "delete")
    current = _check_precondition(
        type_name,
        element_id,
        _states(writer.db, writer.metamodel, scenario, [element_id]).get(element_id),
        if_match,
    )
    children = current.state.get("children") or []
    if children:
        raise HasChildren(
            f"{type_name} {element_id} has children in the scenario; delete them first",
            extra={"children": len(children)},
        )
    _record(writer, scenario, type_def, element_id, "deleted", current.state, None)


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


def _compared(
    db: Session,
    metamodel: Metamodel,
    scenario: Scenario,
    fold: Folding,
    element_ids: list[int],
    *,
    against_main: bool,
    newest: int,
) -> list[ElementDiff]:
    """The scenario's elements among `element_ids` compared, in id order."""
    rows = _changeset_rows(repository.change_rows(db, scenario.id, element_ids))
    planned = [net for net in fold.fold(rows) if fold.visibility.can_read_type(net.type_name)]
    _from_base(planned, asof.states_as_of(db, metamodel, element_ids, scenario.base_revision))
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
        _merged_view_conflicts(db, metamodel, scenario, planned, resolutions) if against_main else {}
    )
    compared = []
    for net in planned:
        diff = _compare(net, main_nets.get(net.element_id), gone, resolutions, against_main=against_main)
        if diff is not None:
            diff.conflicts.extend(merged_view.get(net.element_id, ()))
            compared.append(diff)
    return compared


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
    counts the elements by type and action and the open conflicts."""
    scenario = visible_scenario(db, actor, key)
    if against not in AGAINST:
        raise ValidationFailed(
            f"against must be one of {', '.join(AGAINST)}",
            errors=[ErrorItem("query:against", "invalid_value", f"not one of {', '.join(AGAINST)}")],
        )
    size = DIFF_LIMIT if limit is None else limit
    if not 1 <= size <= DIFF_MAX_LIMIT:
        raise ValidationFailed(
            f"limit must be between 1 and {DIFF_MAX_LIMIT}",
            errors=[ErrorItem("query:limit", "out_of_range", f"1 to {DIFF_MAX_LIMIT}")],
        )
    scope = f"s{scenario.id}-{against}"
    after = decode_cursor(cursor, scope)[0] if cursor is not None else 0
    newest = newest_revision(db)
    fold = folding(db, actor, metamodel)
    element_ids = [i for i in repository.changed_element_ids(db, scenario.id) if i > after]
    page: dict[str, Any] = {"scenario": scenario_out(db, scenario, newest).model_dump(by_alias=True)}
    items: list[dict[str, Any]] = []
    more = False
    summary: dict[str, dict[str, int]] = {}
    conflicts = 0
    for start in range(0, len(element_ids), DIFF_MAX_LIMIT):
        batch = element_ids[start : start + DIFF_MAX_LIMIT]
        for compared in _compared(
            db, metamodel, scenario, fold, batch, against_main=against == "main", newest=newest
        ):
            if cursor is None:
                counts = summary.setdefault(compared.net.type_name, {})
                counts[compared.action] = counts.get(compared.action, 0) + 1
                conflicts += len(compared.open_conflicts)
            if len(items) < size:
                items.append(compared.item())
            else:
                more = True
                if cursor is not None:
                    break
        if more and cursor is not None:
            break
    if cursor is None:
        page["summary"] = summary
        page["openConflicts"] = conflicts
    page["items"] = items
    page["nextCursor"] = encode_cursor(scope, items[-1]["element"]["id"], 0) if more and items else None
    return page


# --- resolutions ---------------------------------------------------------------------------------------


def resolve(db: Session, actor: Actor, metamodel: Metamodel, key: str, body: ResolutionIn) -> ResolutionOut:
    """Settle one open or settled conflict of the scenario (it must be a conflict now)."""
    scenario = _open(_owned(db, actor, key, "settles its conflicts"))
    found = _compared(
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
    now = _now()
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
        resolved_at=_stamp(resolution.resolved_at) or "",
    )


def list_resolutions(db: Session, actor: Actor, key: str) -> list[ResolutionOut]:
    scenario = visible_scenario(db, actor, key)
    return [_resolution_out(r) for r in repository.resolutions(db, scenario.id)]


# --- the merge -----------------------------------------------------------------------------------------


@dataclass
class _Step:
    operation: str  # create, update, delete
    type_def: BlockTypeDef
    element_id: int
    name: str
    body: dict[str, Any]


def _entries_after(main: list[Any], added: Iterable[Any], removed: Iterable[Any]) -> list[Any]:
    """Main's entries of an end with the scenario's additions and removals applied, by related id."""
    removed_ids = {entry["id"] for entry in removed}
    entries = {entry["id"]: entry for entry in main if entry["id"] not in removed_ids}
    for entry in added:
        entries[entry["id"]] = entry
    return list(entries.values())


def _plan(
    db: Session, metamodel: Metamodel, scenario: Scenario, compared: list[ElementDiff], newest: int
) -> list[_Step]:
    """The writes that bring the scenario's net field state into main: creates, updates, deletes."""
    creates, links, updates, deletes = [], [], [], []
    resolutions = {(r.element_id, r.field): r for r in repository.resolutions(db, scenario.id)}
    created_ids = [d.net.element_id for d in compared if d.action == "created"]
    planned_states = _states(db, metamodel, scenario, created_ids) if created_ids else {}
    in_main = [d.net.element_id for d in compared if d.action != "created"]
    main_states = asof.states_as_of(db, metamodel, in_main, newest) if in_main else {}
    for compared_element in compared:
        net = compared_element.net
        type_def = metamodel.type_named(net.type_name)
        whole = resolutions.get((net.element_id, "*"))
        if type_def is None:
            continue  # its type is gone: settled as main has it (an open conflict stops the merge)
        if compared_element.action == "created":
            state = planned_states.get(net.element_id)
            if state is not None:
                body = _body_of(state.state)
                for (element_id, settled_field), settled in resolutions.items():
                    if element_id != net.element_id:
                        continue
                    end, _, gone = settled_field.rpartition("/")
                    if end:  # a relation to an element main deleted: left out
                        body[end] = [e for e in body.get(end, []) if str(e["id"]) != gone]
                    elif settled.take == "main":
                        body.pop(settled_field, None)
                    elif settled.take == "value":
                        body[settled_field] = settled.value
                # References to other elements the scenario created wait until all of them exist.
                later = {
                    key: values
                    for key, values in body.items()
                    if any(_reference_id(v) in planned_states for v in values if isinstance(v, dict))
                }
                creates.append(
                    _Step(
                        "create", type_def, net.element_id, net.name, {**body, **{key: [] for key in later}}
                    )
                )
                if later:
                    links.append(_Step("update", type_def, net.element_id, net.name, later))
        elif compared_element.action == "deleted":
            gone_already = net.element_id not in main_states
            if not gone_already and (whole is None or whole.take == "scenario"):
                deletes.append(_Step("delete", type_def, net.element_id, net.name, {}))
        else:
            if whole is not None and whole.take == "main":
                continue
            main_state = main_states.get(net.element_id)
            if main_state is None:
                continue  # gone from main, settled as main has it
            body = {}
            for field in compared_element.fields:
                name = field["field"]
                resolution = resolutions.get((net.element_id, name))
                if "added" in field:
                    dropped = {
                        int(c["field"].split("/")[-1])
                        for c in compared_element.conflicts
                        if c["kind"] == "relationToDeleted" and c["field"].startswith(f"{name}/")
                    }
                    added = [e for e in field["added"] if e["id"] not in dropped]
                    entries = _entries_after(main_state.state.get(name, []), added, field["removed"])
                    body[name] = [_reference(e) for e in entries]
                elif resolution is not None and resolution.take == "main":
                    continue
                elif resolution is not None and resolution.take == "value":
                    body[name] = resolution.value
                else:
                    value = field["scenario"]
                    body[name] = [_reference(v) if isinstance(v, dict) and "id" in v else v for v in value]
            if body:
                updates.append(_Step("update", type_def, net.element_id, net.name, body))
    return [*creates, *links, *updates, *deletes]


def _remap(value: Any, ids: Mapping[int, int]) -> Any:
    """References to elements created in the scenario, pointed at the ids main gave them."""
    if isinstance(value, list):
        return [_remap(v, ids) for v in value]
    if isinstance(value, dict) and "id" in value and value["id"] in ids:
        return {**value, "id": ids[value["id"]]}
    return value


# Updates of one type a merge hands the write core at once.
MERGE_CHUNK = 1000


def _refused(step: _Step, error: BlockrepoError) -> Conflict:
    return Conflict(
        f"the merge cannot {step.operation} {step.type_def.name} {step.element_id} ({step.name}): "
        + error.detail,
        code="merge_refused",
        errors=error.errors,
        extra={
            "element": {"id": step.element_id, "type": step.type_def.name, "name": step.name},
            "operation": step.operation,
            "reason": error.instance_code,
        },
    )


def _apply(writer: elements.Writer, steps: Sequence[_Step]) -> dict[int, int]:
    """Write the steps into main, updates of a type in chunks; a step the write core refuses fails the
    whole merge (409 naming it)."""
    created: dict[int, int] = {}
    index = 0
    while index < len(steps):
        step = steps[index]
        if step.operation == "update":
            chunk = [step]
            while (
                index + len(chunk) < len(steps)
                and len(chunk) < MERGE_CHUNK
                and steps[index + len(chunk)].operation == "update"
                and steps[index + len(chunk)].type_def.id == step.type_def.id
            ):
                chunk.append(steps[index + len(chunk)])
            by_target = {created.get(s.element_id, s.element_id): s for s in chunk}
            updates = [
                (target, {key: _remap(value, created) for key, value in s.body.items()})
                for target, s in by_target.items()
            ]
            try:
                elements.update_elements(writer, step.type_def.name, updates)
            except BlockrepoError as error:
                if error.status >= 500:
                    raise
                raise _refused(by_target.get(error.extra.get("elementId", -1), step), error) from error
            index += len(chunk)
            continue
        body = {key: _remap(value, created) for key, value in step.body.items()}
        try:
            if step.operation == "create":
                element = elements.create_element(writer, step.type_def.name, body)
                created[step.element_id] = int(element["id"][0])
            else:
                elements.delete_element(writer, step.type_def.name, step.element_id)
        except BlockrepoError as error:
            if error.status >= 500:
                raise
            raise _refused(step, error) from error
        index += 1
    return created


def _settled_comparison(
    db: Session, actor: Actor, metamodel: Metamodel, scenario: Scenario, newest: int
) -> list[ElementDiff]:
    """Every element of the scenario compared with main as a supervisor sees it (a merge or a sync takes
    all of the scenario; the writes check the caller's own rights); 409 listing the open conflicts."""
    fold = folding(db, _seeing_all(actor), metamodel)
    compared: list[ElementDiff] = []
    element_ids = repository.changed_element_ids(db, scenario.id)
    for start in range(0, len(element_ids), DIFF_MAX_LIMIT):
        batch = element_ids[start : start + DIFF_MAX_LIMIT]
        compared.extend(_compared(db, metamodel, scenario, fold, batch, against_main=True, newest=newest))
    conflicts = [{"element": d.item()["element"], **c} for d in compared for c in d.open_conflicts]
    if conflicts:
        raise Conflict(
            f"scenario {scenario.key!r} has {len(conflicts)} open conflict(s); settle each with a resolution",
            code="scenario_conflicts",
            extra={"conflicts": conflicts},
        )
    return compared


def merge(
    writer: elements.Writer, key: str, body: MergeIn, rules: ReviewRules, limits: QueryLimits
) -> dict[str, Any]:
    """POST /api/scenarios/{key}/merge: the scenario's net changes written into main in one transaction
    (the caller's), or, with `dryRun`, what would be written. Open conflicts: 409 listing them. A merge
    needs MERGE_SCENARIOS; a scenario proposed for review (every one, where main is protected) needs its
    approvals of its current version."""
    db, actor, metamodel = writer.db, writer.actor, writer.metamodel
    scenario = _open(visible_scenario(db, actor, key, lock=True))
    if not body.dry_run:
        if not actor.can(MERGE):
            raise Forbidden("merging a scenario needs the functional permission MERGE_SCENARIOS")
        review = _review(db, scenario)
        if (review is not None or rules.protected_main) and not (review is not None and review.approved):
            raise Conflict(
                f"scenario {key!r} needs its reviewers' approvals of its current version before a merge"
                + (" (main is protected)" if rules.protected_main else ""),
                code="approval_required",
                extra={"review": None if review is None else review.model_dump(by_alias=True)},
            )
    newest = newest_revision(db)
    compared = _settled_comparison(db, actor, metamodel, scenario, newest)
    results = _evaluate(db, actor, metamodel, scenario, limits)
    failed = [r for r in results if r["rule"]["required"] and not r["passed"]]
    if failed and not body.dry_run:
        raise Conflict(
            f"scenario {key!r} breaks {len(failed)} required rule(s): "
            + "; ".join(r["rule"]["name"] for r in failed),
            code="checks_failed",
            extra={"checks": failed},
        )
    steps = _plan(db, metamodel, scenario, compared, newest)
    planned = [
        {
            "operation": step.operation,
            "element": {"id": step.element_id, "type": step.type_def.name, "name": step.name},
            "fields": sorted(step.body),
        }
        for step in steps
    ]
    counts = {
        operation: sum(1 for s in steps if s.operation == operation)
        for operation in ("create", "update", "delete")
    }
    answer: dict[str, Any] = {"dryRun": body.dry_run, "counts": counts, "steps": planned, "checks": results}
    if body.dry_run:
        return answer
    created = _apply(writer, steps)
    repository.mark_merged(db, scenario, None, actor.login, _now())
    scenario.merged_ids = {str(old): new for old, new in created.items()}
    answer["created"] = [{"scenarioId": old, "id": new} for old, new in created.items()]
    return answer


def record_merge(db: Session, key: str, revision: int | None) -> None:
    """Name the revision of main that took a scenario's changes (once it is allocated, before commit)."""
    scenario = repository.scenario_keyed(db, key)
    if scenario is not None:
        scenario.merged_revision = revision
        db.flush()


# --- the scenario's own history ----------------------------------------------------------------------


def changes(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    key: str,
    *,
    element_id: int | None = None,
    after: int = 0,
    limit: int = DIFF_LIMIT,
) -> dict[str, Any]:
    """The changesets written in the scenario, oldest first: who changed what and when, as history shows
    main's (what the caller may not read left out), each with `mainRevision`, main's revision then. A
    merge keeps them: they are the original authors and times of what it brought into main."""
    scenario = visible_scenario(db, actor, key)
    if not 1 <= limit <= DIFF_MAX_LIMIT:
        raise ValidationFailed(
            f"limit must be between 1 and {DIFF_MAX_LIMIT}",
            errors=[ErrorItem("query:limit", "out_of_range", f"1 to {DIFF_MAX_LIMIT}")],
        )
    visibility = property_visibility(db, actor, metamodel)
    rows = repository.change_page(db, scenario.id, element_id, after, limit + 1)
    items = []
    for row, changeset in zip(rows[:limit], _changeset_rows(rows[:limit]), strict=True):
        if not visibility.can_read_type(row.type_name):
            continue
        shown = changeset_json(changeset, visibility)
        if shown is not None:
            revision = shown.pop("revision")
            items.append({"change": row.id, "mainRevision": revision, **shown, "viaScenario": scenario.key})
    more = len(rows) > limit
    return {"items": items, "nextAfter": rows[limit - 1].id if more else None}


# --- checks before a merge ----------------------------------------------------------------------------

CHECK_SAMPLE = 100  # elements named per broken rule


def _seeing_all(actor: Actor) -> Actor:
    """The caller as a supervisor sees: checks and merges take all of a scenario into account."""
    return dataclasses.replace(actor, supervisor=True, restriction=None)


def _rule_out(rule: MergeRule) -> MergeRuleOut:
    return MergeRuleOut(
        id=rule.id,
        name=rule.name,
        query=rule.query,
        required=rule.required,
        created_by=rule.created_by,
        created_at=_stamp(rule.created_at) or "",
    )


def list_rules(db: Session) -> list[MergeRuleOut]:
    return [_rule_out(rule) for rule in repository.merge_rules(db)]


def create_rule(
    db: Session, actor: Actor, metamodel: Metamodel, body: MergeRuleIn, limits: QueryLimits
) -> MergeRuleOut:
    """A check every scenario is held to (a supervisor's to set): the query must parse and name what the
    metamodel has (400 at `/query` otherwise); names are unique (409)."""
    if not actor.supervisor:
        raise Forbidden("only a supervisor sets the rules scenarios must pass")
    listing.prepare_query(metamodel, actor, body.query, limits=limits, pointer_of=lambda _: "/query")
    if repository.merge_rule_named(db, body.name) is not None:
        raise Conflict(f"there is a rule named {body.name!r}", code="name_conflict")
    rule = repository.add_merge_rule(
        db,
        MergeRule(
            name=body.name,
            query=body.query,
            required=body.required,
            created_by=actor.login,
            created_at=_now(),
        ),
    )
    return _rule_out(rule)


def delete_rule(db: Session, actor: Actor, rule_id: int) -> None:
    if not actor.supervisor:
        raise Forbidden("only a supervisor sets the rules scenarios must pass")
    if not repository.remove_merge_rule(db, rule_id):
        raise NotFound(f"there is no rule {rule_id}")


def _evaluate(
    db: Session, actor: Actor, metamodel: Metamodel, scenario: Scenario, limits: QueryLimits
) -> list[dict[str, Any]]:
    """Every rule run on the scenario as it stands (main at its base and its own changes), as a supervisor
    sees it; the elements breaking each, as far as `actor` may read their type."""
    everything = _seeing_all(actor)
    layer = reading_layer(db, actor, scenario.key)
    results = []
    for rule in repository.merge_rules(db):
        try:
            prepared = listing.prepare_query(
                metamodel, everything, rule.query, sort="id", fields=["name"], limits=limits
            )
        except BlockrepoError as error:  # the metamodel changed since the rule was written
            results.append(
                {"rule": _rule_out(rule).model_dump(by_alias=True), "passed": False, "error": error.detail}
            )
            continue
        page = past.read_page_as_of(
            db, metamodel, everything, prepared, layer.base, limit=CHECK_SAMPLE, count=True, layer=layer
        )
        readable = actor.supervisor or actor.can_type(prepared.type_def.id, "read")
        results.append(
            {
                "rule": _rule_out(rule).model_dump(by_alias=True),
                "passed": page.total == 0,
                "count": page.total,
                "violations": [
                    {"id": item["id"][0], "type": prepared.type_def.name, "name": item["name"][0]}
                    for item in page.items
                ]
                if readable
                else [],
            }
        )
    return results


def checks(db: Session, actor: Actor, metamodel: Metamodel, key: str, limits: QueryLimits) -> dict[str, Any]:
    """GET /api/scenarios/{key}/checks: each rule's result on the scenario; `mergeable` is false while a
    required one fails."""
    scenario = visible_scenario(db, actor, key)
    results = _evaluate(db, actor, metamodel, scenario, limits)
    blocking = [r for r in results if r["rule"]["required"] and not r["passed"]]
    return {"checks": results, "mergeable": not blocking}


# --- a write that lands in a new scenario -------------------------------------------------------------

T = TypeVar("T")


def into_new_scenario(writer: elements.Writer, name: str, write: Callable[[], T]) -> tuple[T, ScenarioOut]:
    """Run `write` (an import) as it would run in main, then keep what it recorded as the changes of a new
    scenario named `name`, based on main now, for review; main is left as it was (the write runs inside
    a savepoint that is rolled back once its change rows are read). A write that needs the metamodel or
    the accounts changed (shared by every scenario) is refused with 409 `needs_main_changes`."""
    db, changes = writer.db, writer.changes
    newest = newest_revision(db)
    savepoint = db.begin_nested()
    try:
        result = write()
        if changes.metamodel_changed or changes.access_changed:
            raise Conflict(
                "the file needs attributes, types or accounts main does not have yet: import those into main "
                "first (a scenario shares main's metamodel and accounts)",
                code="needs_main_changes",
            )
        revision = changes.flush(db)
        rows = [] if revision is None else element_changesets_of(db, revision)
    finally:
        savepoint.rollback()
    created = [row.element_id for row in rows if row.operation == "created" and row.element_id is not None]
    if created:
        repository.keep_element_ids(db, max(created))
    scenario = repository.add_scenario(
        db,
        Scenario(
            key=_key_for(name),
            name=name,
            description="",
            base_revision=newest,
            owner_id=writer.actor.user_id,
            owner_login=writer.actor.login,
            state="open",
            created_at=_now(),
            version=1,
        ),
    )
    stamp = _row_stamp(writer, scenario)
    repository.add_changes(
        db,
        [
            {
                **stamp,
                "element_id": row.element_id,
                "type_name": row.type_name,
                "element_name": row.element_name or "",
                "operation": row.operation,
                "changes": row.changes,
            }
            for row in rows
            if row.element_id is not None and row.type_name is not None
        ],
    )
    return result, scenario_out(db, scenario, newest)


# --- revert -------------------------------------------------------------------------------------------


def revert(writer: elements.Writer, key: str) -> ScenarioOut:
    """A new scenario, based on main now, that undoes what the merge of `key` brought into main: what it
    created goes, what it deleted comes back (under a new id), what it changed is set back (relation
    entries it added removed, those it removed added). Reviewed and merged like any scenario; a merged
    scenario only (409 otherwise)."""
    db, actor, metamodel = writer.db, writer.actor, writer.metamodel
    merged = _owned(db, actor, key, "reverts it")
    if merged.state != "merged" or merged.merged_revision is None:
        raise Conflict(f"scenario {key!r} is not merged: there is nothing to revert", code="not_merged")
    newest = newest_revision(db)
    scenario = repository.add_scenario(
        db,
        Scenario(
            key=_key_for(f"revert {merged.name}"),
            name=f"Revert of {merged.name}",
            description=f"Undoes the merge of scenario {key} (revision {merged.merged_revision}).",
            base_revision=newest,
            owner_id=actor.user_id,
            owner_login=actor.login,
            state="open",
            created_at=_now(),
            version=0,
        ),
    )
    fold = folding(db, _seeing_all(actor), metamodel)
    nets = fold.of_revision(db, merged.merged_revision)
    now_states = asof.states_as_of(db, metamodel, [net.element_id for net in nets], newest)
    for net in nets:
        type_def = metamodel.type_named(net.type_name)
        if type_def is None:
            continue
        current = now_states.get(net.element_id)
        if net.action == "created" and current is not None and not current.state.get("children"):
            _record(writer, scenario, type_def, net.element_id, "deleted", current.state, None)
        elif net.action == "deleted" and current is None:
            body = {name: base for name, (base, _) in net.values.items() if name != "children"}
            body.update(
                {name: list(ends.removed.values()) for name, ends in net.ends.items() if name != "children"}
            )
            after = dict(elements.validated_state(writer, type_def, _body_of(body), None))
            _record(writer, scenario, type_def, repository.reserve_element_id(db), "created", None, after)
        elif net.action == "updated" and current is not None:
            after = dict(current.state)
            for name, (base, _) in net.values.items():
                if name != "children":
                    after[name] = base
            for name, ends in net.ends.items():
                if name == "children":
                    continue
                entries = _entries_after(after.get(name, []), ends.removed.values(), ends.added.values())
                after[name] = entries
            _record(writer, scenario, type_def, net.element_id, "updated", current.state, after)
    db.flush()
    db.refresh(scenario)
    return scenario_out(db, scenario, newest)


# --- sync ---------------------------------------------------------------------------------------------


def sync(writer: elements.Writer, key: str) -> ScenarioOut:
    """Rebase the scenario onto main as it is now: main's changes since the base fold in, and each settled
    conflict becomes the scenario's own change as its resolution says (main's value, another value, or
    the scenario's, which stands); the resolutions are then spent and the base is main's newest revision.
    Open conflicts: 409 listing them (settle them first; nothing of the scenario is lost)."""
    db, actor, metamodel = writer.db, writer.actor, writer.metamodel
    scenario = _open(_owned(db, actor, key, "syncs it"))
    newest = newest_revision(db)
    compared = _settled_comparison(db, actor, metamodel, scenario, newest)
    for diff in compared:
        for conflict in diff.conflicts:
            _settle(writer, scenario, diff.net, conflict, newest)
    repository.clear_resolutions(db, scenario.id)
    scenario.base_revision = newest
    repository.bump_version(db, scenario.id)
    db.flush()
    db.refresh(scenario)
    return scenario_out(db, scenario, newest)


def _settle(
    writer: elements.Writer, scenario: Scenario, net: NetChange, conflict: dict[str, Any], newest: int
) -> None:
    """Turn one settled conflict into the scenario's own rows, relative to main's newest revision."""
    db, metamodel = writer.db, writer.metamodel
    take, field = conflict["resolution"]["take"], conflict["field"]
    element_id, kind = net.element_id, conflict["kind"]
    type_def = metamodel.type_named(net.type_name)
    if take == "scenario" or type_def is None:
        return  # the scenario's change stands on the new base (a type gone is settled as main has it)
    main = asof.states_as_of(db, metamodel, [element_id], newest).get(element_id)
    if kind in ("deletedInMain", "changedInMain"):
        # Taking main: the element is as main has it; the scenario's own rows of it go. A deletion in the
        # scenario had taken it out of its neighbours' ends there: it comes back into them.
        repository.remove_element_rows(db, scenario.id, element_id)
        if kind == "changedInMain" and main is not None:
            _, neighbours = elements.planned_changesets(type_def, element_id, None, main.state)
            _record_neighbours(writer, scenario, neighbours)
        return
    current = _states(db, metamodel, scenario, [element_id]).get(element_id)
    if current is None:
        return
    before, after = current.state, dict(current.state)
    if kind == "relationToDeleted":
        end, _, gone = field.rpartition("/")
        after[end] = [entry for entry in before.get(end, []) if str(entry["id"]) != gone]
    elif take == "main":
        after[field] = list(main.state.get(field, [])) if main is not None else []
    else:
        chosen = elements.validated_state(
            writer, type_def, {"name": before["name"], field: conflict["resolution"]["value"]}, element_id
        )
        after[field] = list(chosen.get(field, []))
    _record(writer, scenario, type_def, element_id, "updated", before, after)


def _record_neighbours(writer: elements.Writer, scenario: Scenario, neighbours: Sequence[Any]) -> None:
    common = _row_stamp(writer, scenario)
    repository.add_changes(
        writer.db,
        [
            {
                **common,
                "element_id": n.element_id,
                "type_name": n.type_name,
                "element_name": n.element_name,
                "operation": "updated",
                "changes": n.changes,
            }
            for n in neighbours
        ],
    )


# --- review --------------------------------------------------------------------------------------------


def propose(db: Session, actor: Actor, key: str, body: ReviewIn) -> ScenarioOut:
    """Propose the scenario for review by `reviewers` (enabled accounts), of whom `requiredApprovals` must
    approve its current version before a merge; proposing again replaces the reviewers and the number."""
    scenario = _open(_owned(db, actor, key, "proposes it for review"))
    found = repository.user_ids_named(db, body.reviewers)
    unknown = [login for login in body.reviewers if login not in found]
    if unknown:
        raise ValidationFailed(
            f"no enabled account {', '.join(map(repr, unknown))}",
            errors=[
                ErrorItem(
                    f"/reviewers/{body.reviewers.index(login)}", "unknown_user", f"no account {login!r}"
                )
                for login in unknown
            ],
        )
    if body.required_approvals > len(found):
        raise ValidationFailed(
            "requiredApprovals is more than there are reviewers",
            errors=[ErrorItem("/requiredApprovals", "out_of_range", f"at most {len(found)}")],
        )
    repository.set_reviewers(db, scenario.id, found)
    scenario.required_approvals = body.required_approvals
    scenario.proposed_at = _now()
    db.flush()
    return scenario_out(db, scenario)


def approve(db: Session, actor: Actor, key: str, rules: ReviewRules) -> ScenarioOut:
    """Approve the scenario as it is now: a reviewer, or whoever holds APPROVE_SCENARIOS. Its owner only
    where self-approval is allowed. A later change of the scenario makes the approval lapse."""
    scenario = _open(visible_scenario(db, actor, key, lock=True))
    if scenario.required_approvals is None:
        raise Conflict(f"scenario {key!r} is not proposed for review", code="not_in_review")
    if scenario.owner_id == actor.user_id and not rules.self_approval:
        raise Forbidden("the owner of a scenario does not approve it", code="self_approval")
    reviewer = any(r.user_id == actor.user_id for r in repository.reviewers(db, scenario.id))
    if not (reviewer or actor.can(APPROVE)):
        raise Forbidden("only the scenario's reviewers, or holders of APPROVE_SCENARIOS, approve it")
    repository.set_approval(
        db,
        ScenarioApproval(
            scenario_id=scenario.id,
            user_id=actor.user_id,
            login=actor.login,
            version=scenario.version,
            approved_at=_now(),
        ),
    )
    return scenario_out(db, scenario)


def comment(db: Session, actor: Actor, key: str, body: CommentIn) -> CommentOut:
    """A comment on the scenario, one of its elements, or a field of one, by whoever sees the scenario."""
    scenario = visible_scenario(db, actor, key)
    if body.field is not None and body.element is None:
        raise ValidationFailed(
            "a comment on a field names its element",
            errors=[ErrorItem("/element", "required", "the element the field belongs to")],
        )
    return _comment_out(
        repository.add_comment(
            db,
            ScenarioComment(
                scenario_id=scenario.id,
                element_id=body.element,
                field=body.field,
                author=actor.login,
                text=body.text,
                created_at=_now(),
            ),
        )
    )


def _comment_out(comment: ScenarioComment) -> CommentOut:
    return CommentOut(
        id=comment.id,
        element=comment.element_id,
        field=comment.field,
        author=comment.author,
        text=comment.text,
        created_at=_stamp(comment.created_at) or "",
    )


def list_comments(db: Session, actor: Actor, key: str) -> list[CommentOut]:
    scenario = visible_scenario(db, actor, key)
    return [_comment_out(c) for c in repository.comments(db, scenario.id)]
