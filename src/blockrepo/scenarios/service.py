"""Planning scenarios: create them, see who may see them, and read and write elements in them.

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

The rest of the feature builds on this module: `comparison` (the diff, its conflicts and resolutions),
`review` (reviewers, approvals, comments, merge rules) and `merging` (merge, sync, revert).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements import service as elements
from blockrepo.errors import (
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
from blockrepo.history.diff import element_changesets_of, newest_revision, revisions_since
from blockrepo.history.repository import ChangesetRow, Window
from blockrepo.history.service import PlannedChanges, changeset_json, property_visibility
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.scenarios import repository
from blockrepo.scenarios.models import (
    Scenario,
    ScenarioChange,
    ScenarioEvent,
)
from blockrepo.scenarios.schemas import (
    ApprovalOut,
    ReviewOut,
    ScenarioCreate,
    ScenarioOut,
    ShareIn,
    SharesIn,
    SharesOut,
)

# States a scenario is listed in by default; a merged or closed one is still readable by its key.
OPEN_STATES = ("open",)
ALL_STATES = ("open", "merged", "closed")
DIFF_LIMIT, DIFF_MAX_LIMIT = 100, 1000
RevisionCheck = Callable[[int], bool]


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def stamped(moment: dt.datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- the scenarios themselves --------------------------------------------------------------------------


MERGE = "MERGE_SCENARIOS"
APPROVE = "APPROVE_SCENARIOS"


def owns(actor: Actor, scenario: Scenario) -> bool:
    return actor.supervisor or scenario.owner_id == actor.user_id


def visible_scenario(db: Session, actor: Actor, key: str, *, lock: bool = False) -> Scenario:
    """The scenario of `key` if `actor` may see it (its owner, its reviewers, the members of the roles it
    is shared with, a supervisor, and once it is proposed for review whoever holds APPROVE_SCENARIOS); 404
    otherwise, so that a key tells nothing to whoever may not see it."""
    scenario = repository.scenario_keyed(db, key, lock=lock)
    if scenario is None or not (
        owns(actor, scenario)
        or (scenario.proposed_at is not None and actor.can(APPROVE))
        or scenario.id in repository.reviewed_by(db, actor.user_id)
        or repository.shared_access(db, scenario.id, actor.role_ids) is not None
    ):
        raise NotFound(f"there is no scenario {key!r}", code="unknown_scenario")
    return scenario


def can_see(db: Session, actor: Actor, key: str) -> bool:
    """Whether `actor` sees the scenario of `key` (`visible_scenario` without the 404)."""
    try:
        visible_scenario(db, actor, key)
    except NotFound:
        return False
    return True


def owned_scenario(db: Session, actor: Actor, key: str, doing: str) -> Scenario:
    """The scenario, locked, if `actor` owns it (or is a supervisor): its reviewers see it, nothing more."""
    scenario = visible_scenario(db, actor, key, lock=True)
    if not owns(actor, scenario):
        raise Forbidden(f"only the scenario's owner or a supervisor {doing}")
    return scenario


def open_scenario(scenario: Scenario) -> Scenario:
    if scenario.state != "open":
        raise Conflict(
            f"scenario {scenario.key!r} is {scenario.state}: it takes no more changes",
            code="scenario_not_open",
            extra={"state": scenario.state},
        )
    return scenario


def scenario_out(db: Session, scenario: Scenario, newest: int | None = None) -> ScenarioOut:
    counts = repository.change_counts(db, [scenario.id]).get(scenario.id, (0, 0))
    return summary_of(scenario, _behind(db, scenario, newest), counts, review_of(db, scenario))


def _behind(db: Session, scenario: Scenario, newest: int | None = None) -> int:
    """How many revisions main has had since the scenario's base (not numbers: on PostgreSQL a rolled-back
    write leaves its number unused)."""
    newest = newest_revision(db) if newest is None else newest
    return revisions_since(db, scenario.base_revision, newest)


def review_of(db: Session, scenario: Scenario) -> ReviewOut | None:
    if scenario.required_approvals is None or scenario.proposed_at is None:
        return None
    current = [a for a in repository.approvals(db, scenario.id) if a.version == scenario.version]
    return ReviewOut(
        reviewers=[r.login for r in repository.reviewers(db, scenario.id)],
        required_approvals=scenario.required_approvals,
        proposed_at=stamped(scenario.proposed_at) or "",
        approvals=[ApprovalOut(user=a.login, approved_at=stamped(a.approved_at) or "") for a in current],
        approved=len(current) >= scenario.required_approvals,
    )


def summary_of(
    scenario: Scenario, behind: int, counts: tuple[int, int], review: ReviewOut | None = None
) -> ScenarioOut:
    return ScenarioOut(
        review=review,
        key=scenario.key,
        name=scenario.name,
        description=scenario.description,
        effective_date=None if scenario.effective_date is None else scenario.effective_date.isoformat(),
        base_revision=scenario.base_revision,
        behind_main=behind,
        owner=scenario.owner_login,
        state=scenario.state,  # type: ignore[arg-type]
        created_at=stamped(scenario.created_at) or "",
        version=scenario.version,
        changes=counts[0],
        changed_elements=counts[1],
        merged_revision=scenario.merged_revision,
        merged_by=scenario.merged_by,
        merged_at=stamped(scenario.merged_at),
    )


def key_for(name: str) -> str:
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
            key=key_for(body.name),
            name=body.name,
            description=body.description,
            effective_date=_effective_date(body.effective_date),
            base_revision=base,
            owner_id=actor.user_id,
            owner_login=actor.login,
            state="open",
            created_at=utc_now(),
            version=0,
        ),
    )
    return summary_of(scenario, _behind(db, scenario, newest), (0, 0))


def list_scenarios(db: Session, actor: Actor, *, everyone: bool, include_ended: bool) -> list[ScenarioOut]:
    """The caller's scenarios, those it reviews and those shared with its roles (with `everyone`, a
    supervisor's view of all), newest first; merged and closed ones only with `include_ended`."""
    if everyone and not actor.supervisor:
        raise Forbidden("only a supervisor lists every account's scenarios")
    scenarios = repository.listed_scenarios(
        db,
        None if everyone else actor.user_id,
        ALL_STATES if include_ended else OPEN_STATES,
        proposed=actor.can(APPROVE),
        role_ids=actor.role_ids,
    )
    newest = newest_revision(db)
    counts = repository.change_counts(db, [s.id for s in scenarios])
    return [
        summary_of(s, _behind(db, s, newest), counts.get(s.id, (0, 0)), review_of(db, s)) for s in scenarios
    ]


def shares_of(db: Session, actor: Actor, key: str) -> SharesOut:
    """The roles the scenario is shared with, for whoever sees it."""
    scenario = visible_scenario(db, actor, key)
    return SharesOut(
        shares=[
            ShareIn(role=role, access="write" if access == "write" else "read")
            for role, access in repository.shares(db, scenario.id)
        ]
    )


def share(db: Session, actor: Actor, key: str, body: SharesIn) -> SharesOut:
    """Share the scenario with exactly the roles of `body` (its owner or a supervisor): their members see
    it, and with `write` write in it; an empty list shares it with none."""
    scenario = owned_scenario(db, actor, key, "shares it")
    names = [entry.role for entry in body.shares]
    found = repository.role_ids_named(db, names)
    problems = [
        ErrorItem(f"/shares/{index}/role", "unknown_role", f"no role {name!r}")
        for index, name in enumerate(names)
        if name not in found
    ] + [
        ErrorItem(f"/shares/{index}/role", "duplicate_role", f"{name!r} is named before")
        for index, name in enumerate(names)
        if name in names[:index]
    ]
    if problems:
        raise ValidationFailed("every role must exist and be named once", errors=problems)
    repository.set_shares(db, scenario.id, {found[entry.role]: entry.access for entry in body.shares})
    db.flush()
    return shares_of(db, actor, key)


def set_state(db: Session, actor: Actor, key: str, state: str) -> ScenarioOut:
    """Close an open scenario or reopen a closed one (a merged one stays merged)."""
    scenario = owned_scenario(db, actor, key, "closes or reopens it")
    if scenario.state == "merged":
        raise Conflict(f"scenario {key!r} is merged", code="scenario_not_open", extra={"state": "merged"})
    if scenario.state != state:
        record_event(db, actor, scenario, "closed" if state == "closed" else "reopened")
    scenario.state = state
    db.flush()
    return scenario_out(db, scenario)


def record_event(db: Session, actor: Actor, scenario: Scenario, kind: str, **detail: Any) -> None:
    """Record what happened to the scenario as a whole, for its webhooks (`scenarios.feed`)."""
    repository.add_event(
        db,
        ScenarioEvent(
            scenario_id=scenario.id, kind=kind, login=actor.login, detail=detail, created_at=utc_now()
        ),
    )


def seeing_all(actor: Actor) -> Actor:
    """The caller as a supervisor sees: checks and merges take all of a scenario into account."""
    return dataclasses.replace(actor, supervisor=True, restriction=None)


# --- elements in a scenario ----------------------------------------------------------------------------


def changeset_rows(rows: Iterable[ScenarioChange]) -> list[ChangesetRow]:
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
    return overlay_of(db, scenario.id, element_ids)


def overlay_of(db: Session, scenario_id: int, element_ids: Iterable[int]) -> asof.Overlay:
    rows = repository.change_rows(db, scenario_id, element_ids)

    def names_of(ids: set[int]) -> dict[int, str]:
        return repository.newest_names(db, scenario_id, ids)

    return asof.Overlay(changeset_rows(rows), names_of)


def element_states(
    db: Session, metamodel: Metamodel, scenario: Scenario, element_ids: Sequence[int]
) -> dict[int, asof.StateAt]:
    return asof.states_as_of(
        db, metamodel, element_ids, scenario.base_revision, _overlay(db, scenario, element_ids)
    )


def reading_layer(db: Session, actor: Actor, key: str) -> asof.Layer:
    """What list reads and queries fold on top of main to read in the scenario (`massdata`'s asOf path):
    main at the base, the elements the scenario created, its rows."""
    return _layer(visible_scenario(db, actor, key))


def exported_layer(db: Session, actor: Actor, key: str) -> tuple[asof.Layer, dict[str, Any]]:
    """What an export of the scenario reads (`reading_layer`), and how the export's header names it to an
    importer: its key, name and base revision."""
    scenario = visible_scenario(db, actor, key)
    return _layer(scenario), {"key": scenario.key, "name": scenario.name, "base": scenario.base_revision}


def _layer(scenario: Scenario) -> asof.Layer:
    scenario_id, base = scenario.id, scenario.base_revision

    def created(session: Session, type_name: str) -> list[int]:
        return repository.created_ids_of_type(session, scenario_id, type_name)

    def overlay(session: Session, ids: Sequence[int]) -> asof.Overlay:
        return overlay_of(session, scenario_id, ids)

    def changed(session: Session) -> list[int]:
        return repository.changed_element_ids(session, scenario_id)

    # Every change to the scenario's rows moves its version (a write, a resolution, a sync).
    identity = (scenario_id, scenario.key, scenario.created_at.isoformat(), scenario.version)
    return asof.Layer(base, created, overlay, identity, changed)


def read_element(
    db: Session, actor: Actor, metamodel: Metamodel, key: str, type_name: str, element_id: int
) -> dict[str, Any]:
    """GET /api/element/{type}/{id} in a scenario: the element as the scenario has it, as `actor` may see
    it (the same JSON as in main; `revision` counts its changesets in main up to the base and in the
    scenario). An element neither main (since the base) nor the scenario changed is read as main stores
    it; the others come from the scenario's fold (`asof.diverged`), kept between reads. Read sessions
    only: a write's answer is `_written`."""
    scenario = visible_scenario(db, actor, key)
    type_def = elements.resolve_type(metamodel, actor, type_name)
    reader = elements.reader_of(metamodel, actor, type_def)
    view = reader.view
    divergence = asof.diverged(db, metamodel, _layer(scenario))
    assert divergence is not None  # a scenario's layer names its changed elements
    if element_id in divergence.ids:
        folded = divergence.alive.get(element_id)
        alive = [] if folded is None or folded.type_name != type_name else [folded]
        found = asof.render_diverged(db, view, divergence, alive, scenario.base_revision)
    else:
        found = divergence.renamed(reader.read(db, [element_id]), view)
    if not found:
        raise NotFound(f"there is no {type_name} with id {element_id} in scenario {key!r}")
    return found[0]


def _written(writer: elements.Writer, scenario: Scenario, type_name: str, element_id: int) -> dict[str, Any]:
    """The answer to a write in the scenario: the element folded with the rows just written (never kept:
    the transaction may still roll back)."""
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name)
    found = asof.read_elements_as_of(
        writer.db,
        writer.metamodel,
        writer.actor,
        type_def,
        [element_id],
        scenario.base_revision,
        overlay=_overlay(writer.db, scenario, [element_id]),
    )
    if not found:
        raise NotFound(f"there is no {type_name} with id {element_id} in scenario {scenario.key!r}")
    return found[0]


def record_write(
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
    return bool(record_writes(writer, scenario, type_def, [(element_id, operation, before, after)]))


# One write of an element in a scenario: its id, "created", "updated" or "deleted", its states before and
# after (None: not there).
PlannedWrite = tuple[int, str, Mapping[str, Any] | None, Mapping[str, Any] | None]


def record_writes(
    writer: elements.Writer, scenario: Scenario, type_def: BlockTypeDef, writes: Sequence[PlannedWrite]
) -> set[int]:
    """Record writes of elements of one type in the scenario, in order, as one write each records them
    (the element's changeset and its neighbours'), with one insert; the ids of those that changed
    something."""
    common = row_stamp(writer, scenario)
    rows: list[dict[str, Any]] = []
    neighbours: list[tuple[int, Any]] = []  # (index in rows, the neighbour's changeset)
    changed: set[int] = set()
    for element_id, operation, before, after in writes:
        own, theirs = elements.planned_changesets(type_def, element_id, before, after)
        if not own and operation == "updated":
            continue
        state = after if after is not None else before
        assert state is not None
        changed.add(element_id)
        rows.append(
            {
                **common,
                "element_id": element_id,
                "type_name": type_def.name,
                "element_name": state["name"][0],
                "operation": operation,
                "changes": own,
            }
        )
        for neighbour in theirs:
            neighbours.append((len(rows), neighbour))
            rows.append({})
    if not rows:
        return changed
    # A neighbour's row carries its name as the scenario has it (a read takes the name of the newest
    # row): the entries a write resolves name the elements as main has them now.
    seen = (
        element_states(writer.db, writer.metamodel, scenario, sorted({n.element_id for _, n in neighbours}))
        if neighbours
        else {}
    )
    for index, neighbour in neighbours:
        there = seen.get(neighbour.element_id)
        rows[index] = {
            **common,
            "element_id": neighbour.element_id,
            "type_name": neighbour.type_name,
            "element_name": there.state["name"][0] if there is not None else neighbour.element_name,
            "operation": "updated",
            "changes": neighbour.changes,
        }
    repository.add_changes(writer.db, rows)
    repository.bump_version(writer.db, scenario.id)
    return changed


def row_stamp(writer: elements.Writer, scenario: Scenario) -> dict[str, Any]:
    """What every row a write adds to the scenario shares: who, when, and main's revision of then."""
    return {
        "scenario_id": scenario.id,
        "main_revision": newest_revision(writer.db),
        "created_at": utc_now(),
        "user_login": writer.actor.login,
        "request_id": writer.changes.request_id,
    }


def writing_in(writer: elements.Writer, key: str) -> tuple[elements.Writer, Scenario]:
    """The writer as it writes in scenario `key` (a token bound to the scenario gets its writing rights
    there, `Actor.in_scenario`) and the open scenario, which it must be allowed to write in."""
    actor = writer.actor.in_scenario(key)
    bound = None if actor.restriction is None else actor.restriction.scenario
    if bound is not None:
        raise Forbidden(f"this token writes only in scenario {bound!r}", code="token_scenario")
    if actor is not writer.actor:
        writer = dataclasses.replace(writer, actor=actor)
    return writer, writable_scenario(writer, key)


def writable_scenario(writer: elements.Writer, key: str) -> Scenario:
    """The open scenario `key`, which the writer may write in: its owner, a supervisor, or a member of a
    role it is shared with for writing (404 / 403 / 409 otherwise)."""
    db, actor = writer.db, writer.actor
    scenario = visible_scenario(db, actor, key, lock=True)
    if not owns(actor, scenario) and repository.shared_access(db, scenario.id, actor.role_ids) != "write":
        raise Forbidden(
            "only the scenario's owner, a supervisor or the roles it is shared with for writing write in it"
        )
    return open_scenario(scenario)


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


def body_of(state: Mapping[str, Any]) -> dict[str, Any]:
    """A write body that sets every property of a state (references by id)."""
    body: dict[str, Any] = {}
    for key, values in state.items():
        if key in elements.READ_ONLY_KEYS:
            continue
        body[key] = [reference_of(v) if isinstance(v, dict) and "id" in v else v for v in values]
    return body


def reference_of(entry: Mapping[str, Any]) -> dict[str, Any]:
    reference: dict[str, Any] = {"id": entry["id"]}
    if "attributes" in entry:
        reference["attributes"] = entry["attributes"]
    return reference


def _in_main_at_base(db: Session, metamodel: Metamodel, scenario: Scenario, element_id: int) -> bool:
    return element_id in asof.states_as_of(db, metamodel, [element_id], scenario.base_revision)


def check_name(
    db: Session, scenario: Scenario, type_def: BlockTypeDef, name: str, element_id: int | None
) -> None:
    taken = repository.names_in_scenario(db, scenario.id, type_def.name).get(name)
    if taken is not None and taken != element_id:
        raise NameConflict(f"the scenario already has a {type_def.name} named {name!r}")


def reference_id(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, dict) and isinstance(value.get("id"), int) and not isinstance(value["id"], bool):
        return int(value["id"])
    return None


def checked_state(
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
        if (ref := reference_id(value)) is not None
    }
    wanted = referenced - elements.stored_ids(writer.db, referenced) if referenced else set()
    if not wanted:
        return dict(elements.validated_state(writer, type_def, body, element_id))
    planned = element_states(writer.db, writer.metamodel, scenario, sorted(wanted))
    kept, aside, errors = dict(body), {}, []
    for key, values in body.items():
        if not (key == "parent" or key in type_def.ends) or not isinstance(values, list):
            continue
        other_type = type_def.name if key == "parent" else type_def.ends[key].other_type
        keep, entries = [], []
        for index, value in enumerate(values):
            ref = reference_id(value)
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
    writer, scenario = writing_in(writer, key)
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name, "update")
    current = _check_precondition(
        type_name,
        element_id,
        element_states(writer.db, writer.metamodel, scenario, [element_id]).get(element_id),
        if_match,
    )
    before = current.state
    given = {k: v for k, v in body.items() if k not in elements.READ_ONLY_KEYS}
    if "id" in body and body["id"] != [element_id] and body["id"] != element_id:
        raise ValidationFailed(
            "id must match the path", errors=[ErrorItem("/id", "id_mismatch", "the id is the path's")]
        )
    if _in_main_at_base(writer.db, writer.metamodel, scenario, element_id):
        checked = checked_state(writer, scenario, type_def, {"name": before["name"], **given}, element_id)
    else:  # created in the scenario: checked as the creation it will be in main
        checked = checked_state(writer, scenario, type_def, {**body_of(before), **given}, None)
    after = dict(before)
    for name in given:
        if name in checked:
            after[name] = list(checked[name])
        else:
            after.pop(name, None)
    if after["name"] != before["name"]:
        check_name(writer.db, scenario, type_def, after["name"][0], element_id)
    record_write(writer, scenario, type_def, element_id, "updated", before, after)
    return _written(writer, scenario, type_name, element_id)


def create_element(writer: elements.Writer, key: str, type_name: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST in a scenario: a new element there, with an id from main's sequence (never another's)."""
    writer, scenario = writing_in(writer, key)
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name, "create")
    after = checked_state(writer, scenario, type_def, body, None)
    check_name(writer.db, scenario, type_def, after["name"][0], None)
    (element_id,) = repository.reserve_element_ids(writer.db, 1)
    record_write(writer, scenario, type_def, element_id, "created", None, after)
    return _written(writer, scenario, type_name, element_id)


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
    writer, scenario = writing_in(writer, key)
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name, "delete")
    current = _check_precondition(
        type_name,
        element_id,
        element_states(writer.db, writer.metamodel, scenario, [element_id]).get(element_id),
        if_match,
    )
    children = current.state.get("children") or []
    if children:
        raise HasChildren(
            f"{type_name} {element_id} has children in the scenario; delete them first",
            extra={"children": len(children)},
        )
    record_write(writer, scenario, type_def, element_id, "deleted", current.state, None)


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
    for row, changeset in zip(rows[:limit], changeset_rows(rows[:limit]), strict=True):
        if not visibility.can_read_type(row.type_name):
            continue
        shown = changeset_json(changeset, visibility)
        if shown is not None:
            revision = shown.pop("revision")
            items.append({"change": row.id, "mainRevision": revision, **shown, "viaScenario": scenario.key})
    more = len(rows) > limit
    return {"items": items, "nextAfter": rows[limit - 1].id if more else None}


def planned_history(
    db: Session, actor: Actor, key: str, *, element_id: int | None = None, type_name: str | None = None
) -> PlannedChanges:
    """The scenario's own changesets (of one element, or of a type) for a history read in it."""
    scenario = visible_scenario(db, actor, key)

    def fetch(window: Window) -> list[ChangesetRow]:
        rows = repository.changes_newest_first(
            db,
            scenario.id,
            element_id=element_id,
            type_name=type_name,
            from_revision=window.from_revision,
            to_revision=window.to_revision,
            from_time=window.from_time,
            to_time=window.to_time,
            after=window.after,
            limit=window.limit + 1,
        )
        return [dataclasses.replace(row, scenario=scenario.key, planned=True) for row in changeset_rows(rows)]

    def type_of(changed_id: int) -> str | None:
        return repository.element_type_in_scenario(db, scenario.id, changed_id)

    return PlannedChanges(scope=str(scenario.id), base=scenario.base_revision, fetch=fetch, type_of=type_of)


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
            key=key_for(name),
            name=name,
            description="",
            base_revision=newest,
            owner_id=writer.actor.user_id,
            owner_login=writer.actor.login,
            state="open",
            created_at=utc_now(),
            version=1,
        ),
    )
    stamp = row_stamp(writer, scenario)
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
