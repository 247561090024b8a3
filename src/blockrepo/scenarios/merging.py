"""Bringing a planning scenario into main (merge), up to date with main (sync), and undoing a merge."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.elements import service as elements
from blockrepo.errors import (
    BlockrepoError,
    Conflict,
    Forbidden,
)
from blockrepo.history import asof
from blockrepo.history.diff import NetChange, folding, newest_revision
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.scenarios import repository
from blockrepo.scenarios.comparison import ElementDiff, settled_comparison
from blockrepo.scenarios.models import (
    Scenario,
)
from blockrepo.scenarios.review import ReviewRules, evaluate_rules
from blockrepo.scenarios.schemas import (
    MergeIn,
    ScenarioOut,
)
from blockrepo.scenarios.service import (
    MERGE,
    body_of,
    element_states,
    key_for,
    open_scenario,
    owned_scenario,
    record_event,
    record_write,
    reference_id,
    reference_of,
    review_of,
    row_stamp,
    scenario_out,
    seeing_all,
    utc_now,
    visible_scenario,
)

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
    planned_states = element_states(db, metamodel, scenario, created_ids) if created_ids else {}
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
                body = body_of(state.state)
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
                    if any(reference_id(v) in planned_states for v in values if isinstance(v, dict))
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
                    body[name] = [reference_of(e) for e in entries]
                elif resolution is not None and resolution.take == "main":
                    continue
                elif resolution is not None and resolution.take == "value":
                    body[name] = resolution.value
                else:
                    value = field["scenario"]
                    body[name] = [reference_of(v) if isinstance(v, dict) and "id" in v else v for v in value]
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


def merge(
    writer: elements.Writer, key: str, body: MergeIn, rules: ReviewRules, limits: QueryLimits
) -> dict[str, Any]:
    """POST /api/scenarios/{key}/merge: the scenario's net changes written into main in one transaction
    (the caller's), or, with `dryRun`, what would be written. Open conflicts: 409 listing them. A merge
    needs MERGE_SCENARIOS; a scenario proposed for review (every one, where main is protected) needs its
    approvals of its current version."""
    db, actor, metamodel = writer.db, writer.actor, writer.metamodel
    scenario = open_scenario(visible_scenario(db, actor, key, lock=True))
    if not body.dry_run:
        if not actor.can(MERGE):
            raise Forbidden("merging a scenario needs the functional permission MERGE_SCENARIOS")
        review = review_of(db, scenario)
        if (review is not None or rules.protected_main) and not (review is not None and review.approved):
            raise Conflict(
                f"scenario {key!r} needs its reviewers' approvals of its current version before a merge"
                + (" (main is protected)" if rules.protected_main else ""),
                code="approval_required",
                extra={"review": None if review is None else review.model_dump(by_alias=True)},
            )
    newest = newest_revision(db)
    compared = settled_comparison(db, actor, metamodel, scenario, newest)
    results = evaluate_rules(db, actor, metamodel, scenario, limits)
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
    repository.mark_merged(db, scenario, None, actor.login, utc_now())
    record_event(db, actor, scenario, "merged", counts=counts)
    scenario.merged_ids = {str(old): new for old, new in created.items()}
    answer["created"] = [{"scenarioId": old, "id": new} for old, new in created.items()]
    return answer


def record_merge(db: Session, key: str, revision: int | None) -> None:
    """Name the revision of main that took a scenario's changes (once it is allocated, before commit)."""
    scenario = repository.scenario_keyed(db, key)
    if scenario is not None:
        scenario.merged_revision = revision
        db.flush()


# --- revert -------------------------------------------------------------------------------------------


def revert(writer: elements.Writer, key: str) -> ScenarioOut:
    """A new scenario, based on main now, that undoes what the merge of `key` brought into main: what it
    created goes, what it deleted comes back (under a new id), what it changed is set back (relation
    entries it added removed, those it removed added). Reviewed and merged like any scenario; a merged
    scenario only (409 otherwise)."""
    db, actor, metamodel = writer.db, writer.actor, writer.metamodel
    merged = owned_scenario(db, actor, key, "reverts it")
    if merged.state != "merged" or merged.merged_revision is None:
        raise Conflict(f"scenario {key!r} is not merged: there is nothing to revert", code="not_merged")
    newest = newest_revision(db)
    scenario = repository.add_scenario(
        db,
        Scenario(
            key=key_for(f"revert {merged.name}"),
            name=f"Revert of {merged.name}",
            description=f"Undoes the merge of scenario {key} (revision {merged.merged_revision}).",
            base_revision=newest,
            owner_id=actor.user_id,
            owner_login=actor.login,
            state="open",
            created_at=utc_now(),
            version=0,
        ),
    )
    fold = folding(db, seeing_all(actor), metamodel)
    nets = fold.of_revision(db, merged.merged_revision)
    now_states = asof.states_as_of(db, metamodel, [net.element_id for net in nets], newest)
    for net in nets:
        type_def = metamodel.type_named(net.type_name)
        if type_def is None:
            continue
        current = now_states.get(net.element_id)
        if net.action == "created" and current is not None and not current.state.get("children"):
            record_write(writer, scenario, type_def, net.element_id, "deleted", current.state, None)
        elif net.action == "deleted" and current is None:
            body = {name: base for name, (base, _) in net.values.items() if name != "children"}
            body.update(
                {name: list(ends.removed.values()) for name, ends in net.ends.items() if name != "children"}
            )
            after = dict(elements.validated_state(writer, type_def, body_of(body), None))
            record_write(
                writer, scenario, type_def, repository.reserve_element_ids(db, 1)[0], "created", None, after
            )
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
            record_write(writer, scenario, type_def, net.element_id, "updated", current.state, after)
    record_event(db, actor, merged, "reverted", by=scenario.key)
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
    scenario = open_scenario(owned_scenario(db, actor, key, "syncs it"))
    newest = newest_revision(db)
    compared = settled_comparison(db, actor, metamodel, scenario, newest)
    for diff in compared:
        for conflict in diff.conflicts:
            _settle(writer, scenario, diff.net, conflict, newest)
    repository.clear_resolutions(db, scenario.id)
    record_event(db, actor, scenario, "synced", fromBase=scenario.base_revision, toBase=newest)
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
    current = element_states(db, metamodel, scenario, [element_id]).get(element_id)
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
    record_write(writer, scenario, type_def, element_id, "updated", before, after)


def _record_neighbours(writer: elements.Writer, scenario: Scenario, neighbours: Sequence[Any]) -> None:
    common = row_stamp(writer, scenario)
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
