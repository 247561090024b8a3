"""A scenario's own changesets after a position: the live change stream and the webhooks of a scenario."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Set
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.errors import ErrorItem, ValidationFailed
from blockrepo.history.service import (
    changeset_json,
    format_timestamp,
    property_visibility,
    require_history,
    revision_number,
)
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.scenarios import repository
from blockrepo.scenarios.models import ScenarioEvent
from blockrepo.scenarios.service import changeset_rows, visible_scenario

# Change rows (and events) read per batch.
STREAM_BATCH = 500
# The webhook event types of what happens to a scenario as a whole (`scenario.<kind>`).
EVENT_TYPES = (
    "scenario.proposed",
    "scenario.approved",
    "scenario.commented",
    "scenario.synced",
    "scenario.merged",
    "scenario.closed",
    "scenario.reopened",
    "scenario.reverted",
)


@dataclass(frozen=True)
class ScenarioBatch:
    """Changesets to send in order; `after`, the newest change row read (sent or passed over: the stream's
    position); whether more may be read at once (the batch was full)."""

    items: list[dict[str, Any]]
    after: int
    more: bool


def stream_start(db: Session, actor: Actor, key: str, last_event_id: str | None) -> int:
    """The change row a stream in the scenario starts after: `Last-Event-ID` (a reconnecting client's, a
    `scenarioChange` number), else the scenario's newest (only what is written from now on). 404 for a
    scenario the reader does not see."""
    require_history(actor)
    scenario = visible_scenario(db, actor, key)
    if last_event_id is not None and last_event_id.strip():
        text = last_event_id.strip()
        if not (text.isascii() and text.isdigit()):
            raise ValidationFailed(
                "Last-Event-ID must be a scenario change number (0 or more)",
                errors=[ErrorItem("header:Last-Event-ID", "invalid_revision", f"not a number: {text!r}")],
            )
        return revision_number(text, "header:Last-Event-ID")
    return repository.newest_change_id(db, scenario.id)


def stream_batch(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    key: str,
    after: int,
    *,
    type_name: str | None = None,
    operations: Set[str] | None = None,
) -> ScenarioBatch:
    """The scenario's changesets written after change row `after` that the reader may see (rights and
    visibility read now, so a reader who loses the scenario gets a 404) and the filter lets through, in
    the shape history in the scenario gives them (`scenarioChange`, `viaScenario`)."""
    require_history(actor)
    scenario = visible_scenario(db, actor, key)
    visibility = property_visibility(db, actor, metamodel)
    rows = repository.change_page(db, scenario.id, None, after, STREAM_BATCH + 1)
    more = len(rows) > STREAM_BATCH
    rows = rows[:STREAM_BATCH]
    items = []
    for row in changeset_rows(rows):
        if (type_name is not None and row.type_name != type_name) or (
            operations is not None and row.operation not in operations
        ):
            continue
        if not visibility.can_read_type(row.type_name):
            continue
        shown = changeset_json(dataclasses.replace(row, scenario=scenario.key, planned=True), visibility)
        if shown is not None:
            items.append(shown)
    return ScenarioBatch(items, rows[-1].id if rows else after, more)


def events_after(db: Session, actor: Actor, key: str, after: int) -> tuple[list[dict[str, Any]], int]:
    """What happened to the scenario as a whole after event `after` (proposed, approved, commented on,
    synced, merged, closed, reopened, reverted), oldest first, and the newest event read; 404 for a reader
    who does not see the scenario."""
    scenario = visible_scenario(db, actor, key)
    rows = repository.events_after(db, scenario.id, after, STREAM_BATCH)
    return [_event_json(row, key) for row in rows], (rows[-1].id if rows else after)


def _event_json(row: ScenarioEvent, key: str) -> dict[str, Any]:
    return {
        "type": f"scenario.{row.kind}",
        "timestamp": format_timestamp(row.created_at),
        "user": row.login,
        "scenario": key,
        "scenarioEvent": row.id,
        **row.detail,
    }


def newest_event_ids(db: Session, scenario_ids: Iterable[int]) -> dict[int, int]:
    """The newest event of each scenario that has one (what a webhook's cursor is compared with)."""
    return repository.newest_event_ids(db, scenario_ids)


def newest_event_id(db: Session, scenario_id: int) -> int:
    return repository.newest_event_ids(db, [scenario_id]).get(scenario_id, 0)


def scenario_id_of(db: Session, actor: Actor, key: str) -> int:
    """The id of the scenario of `key` if `actor` sees it (404 otherwise), as a webhook keeps it."""
    return visible_scenario(db, actor, key).id


def scenario_key(db: Session, scenario_id: int) -> str | None:
    return repository.scenario_key(db, scenario_id)


def newest_change_ids(db: Session, scenario_ids: Iterable[int]) -> dict[int, int]:
    """The newest change row of each scenario that has one (what a webhook's cursor is compared with)."""
    return repository.newest_change_ids(db, scenario_ids)


def newest_change_id(db: Session, scenario_id: int) -> int:
    return repository.newest_change_id(db, scenario_id)
