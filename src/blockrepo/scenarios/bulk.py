"""Bulk writes of one type inside a planning scenario (`POST /api/massdata/{type}?scenario=`).

The same request and answer as in main (`massdata.bulk`): items created or updated, matched by id or name,
atomic or per item, a dry run. Each item is checked as its own write in the scenario would check it
(`service.update_element` / `create_element`): against the element as the scenario has it, with the write
core's validation run once over all items (rules across items included), names unique in the scenario;
the rows they record are those single writes would record, inserted at once. Items are checked against
the scenario as it was before the request: one item's relation to another item's element is recorded on
both, as in main.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from blockrepo.elements import service as elements
from blockrepo.elements.values import NAME_MAX_LENGTH
from blockrepo.errors import BlockrepoError, ErrorItem, Forbidden, NameConflict, NotFound, ValidationFailed
from blockrepo.history.asof import StateAt
from blockrepo.massdata.bulk import BulkOutcome, BulkRequest, element_id_of, refused
from blockrepo.massdata.listing import require_massdata
from blockrepo.metamodel.snapshot import BlockTypeDef
from blockrepo.name_normalization import InvalidName, normalized_name
from blockrepo.scenarios import repository
from blockrepo.scenarios.models import Scenario
from blockrepo.scenarios.service import (
    PlannedWrite,
    body_of,
    checked_state,
    element_states,
    record_writes,
    reference_id,
    writing_in,
)


@dataclass
class _Item:
    index: int
    body: dict[str, Any] | None
    element_id: int | None = None
    before: StateAt | None = None
    after: dict[str, Any] | None = None
    error: BlockrepoError | None = None
    errors: list[ErrorItem] = field(default_factory=list)

    def fail(self, error: BlockrepoError) -> None:
        if self.error is None:
            self.error, self.errors = error, list(error.errors)

    def result(self, dry_run: bool) -> dict[str, Any]:
        status = self.error.status if self.error is not None else 201 if self.before is None else 200
        shown = None if self.error is None and self.before is None and dry_run else self.element_id
        return {
            "index": self.index,
            "status": status,
            "id": shown,
            "errors": [e.as_dict() for e in self.errors],
        }


def bulk_write(writer: elements.Writer, key: str, type_name: str, request: BulkRequest) -> BulkOutcome:
    """Create and update many elements of one type in scenario `key`; see the module docstring. Needs
    MASSDATA and the right to write in the scenario."""
    writer, scenario = writing_in(writer, key)
    require_massdata(writer.actor)
    type_def = elements.resolve_type(writer.metamodel, writer.actor, type_name)
    items = [_Item(i, raw if isinstance(raw, dict) else None) for i, raw in enumerate(request.elements)]
    for item in items:
        if item.body is None:
            item.fail(_invalid("", "wrong_type", "an element is a JSON object"))
    _assign_targets(writer, scenario, type_def, items, request.match)
    _check(writer, scenario, type_def, [item for item in items if item.error is None])
    failed = [item for item in items if item.error is not None]
    if request.mode == "atomic" and failed:
        raise refused(
            len(items),
            [(item.index, item.error, item.errors) for item in failed],
            [item.result(request.dry_run) for item in items],
        )
    good = [item for item in items if item.error is None]
    creates = [item for item in good if item.before is None]
    if not request.dry_run:
        for item, new_id in zip(
            creates, repository.reserve_element_ids(writer.db, len(creates)), strict=True
        ):
            item.element_id = new_id
        writes: list[PlannedWrite] = []
        for item in good:
            assert item.element_id is not None and item.after is not None
            before = None if item.before is None else item.before.state
            writes.append((item.element_id, "updated" if before else "created", before, item.after))
        record_writes(writer, scenario, type_def, writes)
    return BulkOutcome(
        created=len(creates),
        updated=len(good) - len(creates),
        failed=len(failed),
        results=[item.result(request.dry_run) for item in items],
        dry_run=request.dry_run,
    )


def _invalid(pointer: str, code: str, message: str) -> ValidationFailed:
    return ValidationFailed(message, errors=[ErrorItem(pointer, code, message)])


def _assign_targets(
    writer: elements.Writer, scenario: Scenario, type_def: BlockTypeDef, items: list[_Item], match: str
) -> None:
    """Which element each item updates (its `id`, or the element of its name in the scenario) and how the
    scenario has it; then whether the actor may create or update each."""
    by_name: dict[str, list[_Item]] = {}
    for item in items:
        if item.body is None:
            continue
        if "id" in item.body:
            item.element_id = element_id_of(item.body["id"])
            if item.element_id is None:
                item.fail(_invalid("/id", "wrong_type", "id is a positive integer (or [n])"))
        elif match == "name":
            raw = item.body.get("name")
            if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], str):
                with suppress(InvalidName):
                    by_name.setdefault(normalized_name(raw[0], NAME_MAX_LENGTH), []).append(item)
    # Candidates by name: main's elements of the name now, and those the scenario named so.
    named = dict(elements.ids_named(writer.db, type_def, by_name))
    in_scenario = repository.names_in_scenario(writer.db, scenario.id, type_def.name)
    candidates = {*named.values(), *(in_scenario[n] for n in by_name if n in in_scenario)}
    targets = {item.element_id for item in items if item.element_id is not None}
    states = element_states(writer.db, writer.metamodel, scenario, sorted(targets | candidates))
    of_type = {i: s for i, s in states.items() if s.type_name == type_def.name}
    names = {state.state["name"][0]: i for i, state in of_type.items()}
    for name, matched in by_name.items():
        for item in matched:
            item.element_id = names.get(name)
    seen: dict[int, int] = {}
    for item in items:
        if item.error is not None or item.element_id is None:
            continue
        item.before = of_type.get(item.element_id)
        if item.before is None:
            message = f"the scenario has no {type_def.name} with id {item.element_id}"
            item.fail(NotFound(message, errors=[ErrorItem("/id", "not_found", message)]))
        elif item.element_id in seen:
            message = f"element {item.element_id} is already written by item {seen[item.element_id]}"
            item.fail(_invalid("/id", "duplicate", message))
        else:
            seen[item.element_id] = item.index
    for item in items:
        if item.error is None:
            action = "create" if item.before is None else "update"
            if not writer.actor.can_type(type_def.id, action):
                message = f"you may not {action} {type_def.name} elements"
                item.fail(Forbidden(message, errors=[ErrorItem("", "forbidden", message)]))


def _check(writer: elements.Writer, scenario: Scenario, type_def: BlockTypeDef, items: list[_Item]) -> None:
    """Each item's state after its write, or its error: the bodies a single write in the scenario checks,
    validated in one pass; a body naming elements main lacks (created in the scenario, or deleted in main
    since the base) is checked on its own, as a single write checks it."""
    created_here = repository.created_element_ids(writer.db, scenario.id)
    bodies: list[tuple[dict[str, Any], int | None]] = []
    for item in items:
        assert item.body is not None
        given = {k: v for k, v in item.body.items() if k not in elements.READ_ONLY_KEYS}
        if item.before is None:
            bodies.append((given, None))
        elif item.element_id in created_here:  # checked as the creation it will be in main
            bodies.append(({**body_of(item.before.state), **given}, None))
        else:
            bodies.append(({"name": item.before.state["name"], **given}, item.element_id))
    referenced = {ref for body, _ in bodies for ref in _references(type_def, body)}
    lacking = referenced - elements.stored_ids(writer.db, referenced) if referenced else set()
    alone = [bool(lacking & set(_references(type_def, body))) for body, _ in bodies]
    together = [pair for pair, single in zip(bodies, alone, strict=True) if not single]
    checked = iter(elements.validated_states(writer, type_def, together))
    for item, (body, element_id), single in zip(items, bodies, alone, strict=True):
        if single:
            try:
                state: Mapping[str, Any] | BlockrepoError = checked_state(
                    writer, scenario, type_def, body, element_id
                )
            except BlockrepoError as error:
                state = error
        else:
            state = next(checked)
        if isinstance(state, BlockrepoError):
            item.fail(state)
            continue
        if item.before is None:
            item.after = dict(state)
            continue
        item.after = dict(item.before.state)
        for name in item.body or {}:
            if name in elements.READ_ONLY_KEYS:
                continue
            if name in state:
                item.after[name] = list(state[name])
            else:
                item.after.pop(name, None)
    _check_names(writer, scenario, type_def, items)


def _check_names(
    writer: elements.Writer, scenario: Scenario, type_def: BlockTypeDef, items: list[_Item]
) -> None:
    """A name the scenario gave another element of the type is taken (main's names the validation saw)."""
    taken = repository.names_in_scenario(writer.db, scenario.id, type_def.name)
    for item in items:
        if item.error is not None or item.after is None:
            continue
        name = item.after["name"][0]
        if item.before is not None and item.before.state["name"][0] == name:
            continue
        holder = taken.get(name)
        if holder is not None and holder != item.element_id:
            message = f"the scenario already has a {type_def.name} named {name!r}"
            item.fail(NameConflict(message, errors=[ErrorItem("/name/0", "name_conflict", message)]))
        else:
            taken[name] = item.element_id or -item.index - 1  # later items may not take it either


def _references(type_def: BlockTypeDef, body: dict[str, Any]) -> Iterable[int]:
    for key, values in body.items():
        if (key == "parent" or key in type_def.ends) and isinstance(values, list):
            for value in values:
                ref = reference_id(value)
                if ref is not None:
                    yield ref
