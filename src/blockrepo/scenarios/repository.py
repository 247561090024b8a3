"""All SQL of planning scenarios: the scenarios, their change rows and resolutions, and the ids they take."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, text, update
from sqlalchemy.orm import Session

from blockrepo.access.models import Role, User
from blockrepo.scenarios.models import (
    MergeRule,
    Scenario,
    ScenarioApproval,
    ScenarioChange,
    ScenarioComment,
    ScenarioEvent,
    ScenarioResolution,
    ScenarioReviewer,
    ScenarioShare,
)


def add_scenario(db: Session, scenario: Scenario) -> Scenario:
    db.add(scenario)
    db.flush()
    return scenario


def scenario_keyed(db: Session, key: str, *, lock: bool = False) -> Scenario | None:
    """The scenario of `key`; with `lock`, its row locked until the transaction ends (writes in one
    scenario take their turns; a merge waits for the write before it)."""
    statement = select(Scenario).where(Scenario.key == key)
    return db.scalar(statement.with_for_update() if lock else statement)


def listed_scenarios(
    db: Session,
    owner_id: int | None,
    states: Sequence[str],
    *,
    proposed: bool = False,
    role_ids: Iterable[int] = (),
) -> list[Scenario]:
    """Scenarios in `states`, of one owner, those it reviews and those shared with any of `role_ids` (with
    `proposed`, every one proposed for review; every owner's with None), newest first."""
    statement = select(Scenario).where(Scenario.state.in_(states))
    if owner_id is not None:
        reviewing = select(ScenarioReviewer.scenario_id).where(ScenarioReviewer.user_id == owner_id)
        mine = (Scenario.owner_id == owner_id) | Scenario.id.in_(reviewing)
        if roles := sorted(set(role_ids)):
            mine = mine | Scenario.id.in_(
                select(ScenarioShare.scenario_id).where(ScenarioShare.role_id.in_(roles))
            )
        statement = statement.where(mine | Scenario.proposed_at.is_not(None) if proposed else mine)
    return list(db.scalars(statement.order_by(Scenario.id.desc())))


def change_counts(db: Session, scenario_ids: Sequence[int]) -> dict[int, tuple[int, int]]:
    """(change rows, elements changed) of each scenario, by id."""
    if not scenario_ids:
        return {}
    statement = (
        select(
            ScenarioChange.scenario_id,
            func.count(ScenarioChange.id),
            func.count(ScenarioChange.element_id.distinct()),
        )
        .where(ScenarioChange.scenario_id.in_(scenario_ids))
        .group_by(ScenarioChange.scenario_id)
    )
    return {int(row[0]): (int(row[1]), int(row[2])) for row in db.execute(statement)}


def add_changes(db: Session, rows: Sequence[dict[str, Any]]) -> None:
    if rows:
        db.execute(insert(ScenarioChange), list(rows))


def bump_version(db: Session, scenario_id: int) -> None:
    db.execute(update(Scenario).where(Scenario.id == scenario_id).values(version=Scenario.version + 1))


def change_rows(
    db: Session, scenario_id: int, element_ids: Iterable[int] | None = None
) -> list[ScenarioChange]:
    """The change rows of a scenario (of some elements only), by element, oldest first."""
    statement = select(ScenarioChange).where(ScenarioChange.scenario_id == scenario_id)
    if element_ids is not None:
        statement = statement.where(ScenarioChange.element_id.in_(sorted(set(element_ids))))
    return list(db.scalars(statement.order_by(ScenarioChange.element_id, ScenarioChange.id)))


def changed_element_ids(db: Session, scenario_id: int) -> list[int]:
    statement = (
        select(ScenarioChange.element_id)
        .where(ScenarioChange.scenario_id == scenario_id)
        .distinct()
        .order_by(ScenarioChange.element_id)
    )
    return [int(element_id) for element_id in db.scalars(statement)]


def newest_names(db: Session, scenario_id: int, element_ids: Iterable[int]) -> dict[int, str]:
    """The name the scenario's newest row of each of `element_ids` gives it (those it wrote)."""
    newest = (
        select(func.max(ScenarioChange.id))
        .where(
            ScenarioChange.scenario_id == scenario_id, ScenarioChange.element_id.in_(sorted(set(element_ids)))
        )
        .group_by(ScenarioChange.element_id)
    )
    statement = select(ScenarioChange.element_id, ScenarioChange.element_name).where(
        ScenarioChange.id.in_(newest)
    )
    return {int(element_id): name for element_id, name in db.execute(statement)}


def created_element_ids(db: Session, scenario_id: int) -> set[int]:
    statement = select(ScenarioChange.element_id).where(
        ScenarioChange.scenario_id == scenario_id, ScenarioChange.operation == "created"
    )
    return {int(element_id) for element_id in db.scalars(statement)}


def names_in_scenario(db: Session, scenario_id: int, type_name: str) -> dict[str, int]:
    """The newest name of each element of a type the scenario wrote (name -> id), deleted ones included."""
    newest = (
        select(func.max(ScenarioChange.id))
        .where(ScenarioChange.scenario_id == scenario_id, ScenarioChange.type_name == type_name)
        .group_by(ScenarioChange.element_id)
    )
    statement = select(
        ScenarioChange.element_name, ScenarioChange.element_id, ScenarioChange.operation
    ).where(ScenarioChange.id.in_(newest))
    return {
        name: int(element_id)
        for name, element_id, operation in db.execute(statement)
        if operation != "deleted"
    }


def resolutions(db: Session, scenario_id: int) -> list[ScenarioResolution]:
    statement = select(ScenarioResolution).where(ScenarioResolution.scenario_id == scenario_id)
    return list(db.scalars(statement))


def set_resolution(db: Session, resolution: ScenarioResolution) -> None:
    db.merge(resolution)
    db.flush()


def remove_resolution(db: Session, scenario_id: int, element_id: int, field: str) -> bool:
    result = db.execute(
        delete(ScenarioResolution).where(
            ScenarioResolution.scenario_id == scenario_id,
            ScenarioResolution.element_id == element_id,
            ScenarioResolution.field == field,
        )
    )
    return bool(getattr(result, "rowcount", 0))


def mark_merged(db: Session, scenario: Scenario, revision: int | None, login: str, now: dt.datetime) -> None:
    scenario.state = "merged"
    scenario.merged_revision = revision
    scenario.merged_by = login
    scenario.merged_at = now
    db.flush()


def reserve_element_ids(db: Session, count: int) -> list[int]:
    """`count` element ids from main's own sequence, so that an element created in a scenario keeps an id
    no element of main or of another scenario ever gets. SQLite: AUTOINCREMENT's counter moved past them
    (the write transaction is the only writer); PostgreSQL: the id sequence."""
    if count <= 0:
        return []
    connection = db.connection()
    if connection.dialect.name == "postgresql":
        statement = text(
            "SELECT nextval(pg_get_serial_sequence('element', 'id')) FROM generate_series(1, :n)"
        )
        return [int(value) for value in db.execute(statement, {"n": count}).scalars()]
    next_id = int(
        db.execute(
            text(
                "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'element'), 0), "
                "coalesce((SELECT max(id) FROM element), 0)) + 1"
            )
        ).scalar_one()
    )
    keep_element_ids(db, next_id + count - 1)
    return list(range(next_id, next_id + count))


def shares(db: Session, scenario_id: int) -> list[tuple[str, str]]:
    """The roles a scenario is shared with, by name, and the access each gives."""
    statement = (
        select(Role.name, ScenarioShare.access)
        .join(Role, Role.id == ScenarioShare.role_id)
        .where(ScenarioShare.scenario_id == scenario_id)
        .order_by(Role.name)
    )
    return [(name, access) for name, access in db.execute(statement)]


def set_shares(db: Session, scenario_id: int, chosen: Mapping[int, str]) -> None:
    """Share the scenario with exactly these roles (role id -> access)."""
    db.execute(delete(ScenarioShare).where(ScenarioShare.scenario_id == scenario_id))
    if chosen:
        db.execute(
            insert(ScenarioShare),
            [
                {"scenario_id": scenario_id, "role_id": role_id, "access": access}
                for role_id, access in sorted(chosen.items())
            ],
        )


def shared_access(db: Session, scenario_id: int, role_ids: Iterable[int]) -> str | None:
    """The widest access the scenario is shared with to any of `role_ids` (None: not shared with them)."""
    roles = sorted(set(role_ids))
    if not roles:
        return None
    granted = set(
        db.scalars(
            select(ScenarioShare.access).where(
                ScenarioShare.scenario_id == scenario_id, ScenarioShare.role_id.in_(roles)
            )
        )
    )
    return "write" if "write" in granted else "read" if granted else None


def role_ids_named(db: Session, names: Iterable[str]) -> dict[str, int]:
    return {
        name: int(role_id)
        for name, role_id in db.execute(select(Role.name, Role.id).where(Role.name.in_(sorted(set(names)))))
    }


def user_ids_named(db: Session, logins: Iterable[str]) -> dict[str, int]:
    """login -> id of the enabled accounts among `logins`."""
    statement = select(User.login, User.id).where(User.login.in_(sorted(set(logins))), User.enabled.is_(True))
    return {login: int(user_id) for login, user_id in db.execute(statement)}


def reviewers(db: Session, scenario_id: int) -> list[ScenarioReviewer]:
    statement = select(ScenarioReviewer).where(ScenarioReviewer.scenario_id == scenario_id)
    return list(db.scalars(statement.order_by(ScenarioReviewer.login)))


def reviewed_by(db: Session, user_id: int) -> list[int]:
    """Ids of the scenarios `user_id` is asked to review."""
    statement = select(ScenarioReviewer.scenario_id).where(ScenarioReviewer.user_id == user_id)
    return [int(scenario_id) for scenario_id in db.scalars(statement)]


def set_reviewers(db: Session, scenario_id: int, chosen: dict[str, int]) -> None:
    db.execute(delete(ScenarioReviewer).where(ScenarioReviewer.scenario_id == scenario_id))
    db.add_all(
        ScenarioReviewer(scenario_id=scenario_id, user_id=i, login=login) for login, i in chosen.items()
    )
    db.flush()


def approvals(db: Session, scenario_id: int) -> list[ScenarioApproval]:
    statement = select(ScenarioApproval).where(ScenarioApproval.scenario_id == scenario_id)
    return list(db.scalars(statement.order_by(ScenarioApproval.approved_at)))


def set_approval(db: Session, approval: ScenarioApproval) -> None:
    db.merge(approval)
    db.flush()


def add_comment(db: Session, comment: ScenarioComment) -> ScenarioComment:
    db.add(comment)
    db.flush()
    return comment


def comments(db: Session, scenario_id: int) -> list[ScenarioComment]:
    statement = select(ScenarioComment).where(ScenarioComment.scenario_id == scenario_id)
    return list(db.scalars(statement.order_by(ScenarioComment.id)))


def clear_resolutions(db: Session, scenario_id: int) -> None:
    db.execute(delete(ScenarioResolution).where(ScenarioResolution.scenario_id == scenario_id))


def remove_element_rows(db: Session, scenario_id: int, element_id: int) -> None:
    """Every row the scenario holds of one element (rows it mirrored onto other elements stay theirs)."""
    db.execute(
        delete(ScenarioChange).where(
            ScenarioChange.scenario_id == scenario_id, ScenarioChange.element_id == element_id
        )
    )


def newest_change_id(db: Session, scenario_id: int) -> int:
    """The scenario's newest change row (0 when it has none)."""
    newest = db.scalar(select(func.max(ScenarioChange.id)).where(ScenarioChange.scenario_id == scenario_id))
    return int(newest or 0)


def newest_change_ids(db: Session, scenario_ids: Iterable[int]) -> dict[int, int]:
    """The newest change row of each of the scenarios that have one."""
    statement = (
        select(ScenarioChange.scenario_id, func.max(ScenarioChange.id))
        .where(ScenarioChange.scenario_id.in_(sorted(set(scenario_ids))))
        .group_by(ScenarioChange.scenario_id)
    )
    return {int(scenario_id): int(newest) for scenario_id, newest in db.execute(statement)}


def scenario_key(db: Session, scenario_id: int) -> str | None:
    return db.scalar(select(Scenario.key).where(Scenario.id == scenario_id))


def add_event(db: Session, event: ScenarioEvent) -> None:
    """Record a scenario event once the scenario's row is locked (a no-op on SQLite, whose writes take
    turns anyway): event ids then follow commit order within the scenario, which a reader after an id
    relies on."""
    db.execute(select(Scenario.id).where(Scenario.id == event.scenario_id).with_for_update())
    db.add(event)
    db.flush()


def events_after(db: Session, scenario_id: int, after: int, limit: int) -> list[ScenarioEvent]:
    statement = (
        select(ScenarioEvent)
        .where(ScenarioEvent.scenario_id == scenario_id, ScenarioEvent.id > after)
        .order_by(ScenarioEvent.id)
        .limit(limit)
    )
    return list(db.scalars(statement))


def newest_event_ids(db: Session, scenario_ids: Iterable[int]) -> dict[int, int]:
    statement = (
        select(ScenarioEvent.scenario_id, func.max(ScenarioEvent.id))
        .where(ScenarioEvent.scenario_id.in_(sorted(set(scenario_ids))))
        .group_by(ScenarioEvent.scenario_id)
    )
    return {int(scenario_id): int(newest) for scenario_id, newest in db.execute(statement)}


def change_page(
    db: Session, scenario_id: int, element_id: int | None, after: int, limit: int
) -> list[ScenarioChange]:
    """A page of the scenario's change rows (of one element), in the order they were written."""
    statement = select(ScenarioChange).where(
        ScenarioChange.scenario_id == scenario_id, ScenarioChange.id > after
    )
    if element_id is not None:
        statement = statement.where(ScenarioChange.element_id == element_id)
    return list(db.scalars(statement.order_by(ScenarioChange.id).limit(limit)))


def changes_newest_first(
    db: Session,
    scenario_id: int,
    *,
    element_id: int | None = None,
    type_name: str | None = None,
    from_revision: int | None = None,
    to_revision: int | None = None,
    from_time: dt.datetime | None = None,
    to_time: dt.datetime | None = None,
    after: tuple[int, int] | None = None,
    limit: int,
) -> list[ScenarioChange]:
    """The scenario's change rows (of one element, or of a type) newest first by (main's revision when
    made, id), from after keyset position `after`, within the bounds (inclusive) history reads take."""
    statement = select(ScenarioChange).where(ScenarioChange.scenario_id == scenario_id)
    if element_id is not None:
        statement = statement.where(ScenarioChange.element_id == element_id)
    if type_name is not None:
        statement = statement.where(ScenarioChange.type_name == type_name)
    if from_revision is not None:
        statement = statement.where(ScenarioChange.main_revision >= from_revision)
    if to_revision is not None:
        statement = statement.where(ScenarioChange.main_revision <= to_revision)
    if from_time is not None:
        statement = statement.where(ScenarioChange.created_at >= from_time)
    if to_time is not None:
        statement = statement.where(ScenarioChange.created_at <= to_time)
    if after is not None:
        revision, change_id = after
        statement = statement.where(
            or_(
                ScenarioChange.main_revision < revision,
                and_(ScenarioChange.main_revision == revision, ScenarioChange.id < change_id),
            )
        )
    ordered = statement.order_by(ScenarioChange.main_revision.desc(), ScenarioChange.id.desc())
    return list(db.scalars(ordered.limit(limit)))


def element_type_in_scenario(db: Session, scenario_id: int, element_id: int) -> str | None:
    """The type the scenario's change rows know an element by (None: the scenario has none of it)."""
    return db.scalar(
        select(ScenarioChange.type_name)
        .where(ScenarioChange.scenario_id == scenario_id, ScenarioChange.element_id == element_id)
        .limit(1)
    )


def created_ids_of_type(db: Session, scenario_id: int, type_name: str) -> list[int]:
    statement = select(ScenarioChange.element_id).where(
        ScenarioChange.scenario_id == scenario_id,
        ScenarioChange.type_name == type_name,
        ScenarioChange.operation == "created",
    )
    return sorted(int(element_id) for element_id in db.scalars(statement))


def merge_rules(db: Session) -> list[MergeRule]:
    return list(db.scalars(select(MergeRule).order_by(MergeRule.id)))


def merge_rule_named(db: Session, name: str) -> MergeRule | None:
    return db.scalar(select(MergeRule).where(MergeRule.name == name))


def add_merge_rule(db: Session, rule: MergeRule) -> MergeRule:
    db.add(rule)
    db.flush()
    return rule


def remove_merge_rule(db: Session, rule_id: int) -> bool:
    return bool(getattr(db.execute(delete(MergeRule).where(MergeRule.id == rule_id)), "rowcount", 0))


def keep_element_ids(db: Session, largest: int) -> None:
    """Element ids up to `largest` stay used after a rollback undid the elements that had them (SQLite's
    AUTOINCREMENT counter is rolled back with them; PostgreSQL's sequence is not)."""
    if db.connection().dialect.name != "sqlite":
        return
    moved = db.execute(
        text("UPDATE sqlite_sequence SET seq = max(seq, :id) WHERE name = 'element'"), {"id": largest}
    )
    if not getattr(moved, "rowcount", 0):
        db.execute(text("INSERT INTO sqlite_sequence (name, seq) VALUES ('element', :id)"), {"id": largest})
