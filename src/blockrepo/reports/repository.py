"""All SQL of saved reports: the reports, their shares and the roles they name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session

from blockrepo.access.models import Role
from blockrepo.reports.models import Report, ReportShare


def add_report(db: Session, report: Report) -> Report:
    db.add(report)
    db.flush()
    return report


def report_by_id(db: Session, report_id: int, *, lock: bool = False) -> Report | None:
    statement = select(Report).where(Report.id == report_id)
    return db.scalar(statement.with_for_update() if lock else statement)


def count_owned(db: Session, owner_id: int) -> int:
    return int(db.scalar(select(func.count()).select_from(Report).where(Report.owner_id == owner_id)) or 0)


def listed_reports(db: Session, owner_id: int | None, role_ids: Iterable[int] = ()) -> list[Report]:
    """The reports of one owner and those shared with any of `role_ids` (every report with None), by id."""
    statement = select(Report)
    if owner_id is not None:
        mine = Report.owner_id == owner_id
        if roles := sorted(set(role_ids)):
            mine = mine | Report.id.in_(select(ReportShare.report_id).where(ReportShare.role_id.in_(roles)))
        statement = statement.where(mine)
    return list(db.scalars(statement.order_by(Report.id)))


def delete_report(db: Session, report_id: int) -> None:
    db.execute(delete(ReportShare).where(ReportShare.report_id == report_id))
    db.execute(delete(Report).where(Report.id == report_id))


def shares(db: Session, report_id: int) -> list[tuple[str, str]]:
    """The roles a report is shared with, by name, and the access each gives."""
    statement = (
        select(Role.name, ReportShare.access)
        .join(Role, Role.id == ReportShare.role_id)
        .where(ReportShare.report_id == report_id)
        .order_by(Role.name)
    )
    return [(name, access) for name, access in db.execute(statement)]


def set_shares(db: Session, report_id: int, chosen: Mapping[int, str]) -> None:
    """Share the report with exactly these roles (role id -> access)."""
    db.execute(delete(ReportShare).where(ReportShare.report_id == report_id))
    if chosen:
        db.execute(
            insert(ReportShare),
            [
                {"report_id": report_id, "role_id": role_id, "access": access}
                for role_id, access in sorted(chosen.items())
            ],
        )


def shared_access(db: Session, report_id: int, role_ids: Iterable[int]) -> str | None:
    """The widest access the report is shared with to any of `role_ids` (None: not shared with them)."""
    roles = sorted(set(role_ids))
    if not roles:
        return None
    granted = set(
        db.scalars(
            select(ReportShare.access).where(
                ReportShare.report_id == report_id, ReportShare.role_id.in_(roles)
            )
        )
    )
    return "edit" if "edit" in granted else "view" if granted else None


def role_ids_named(db: Session, names: Iterable[str]) -> dict[str, int]:
    return {
        name: int(role_id)
        for name, role_id in db.execute(select(Role.name, Role.id).where(Role.name.in_(sorted(set(names)))))
    }
