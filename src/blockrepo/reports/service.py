"""Saved reports: who sees, changes and shares them, and what a report is checked against when saved.

A report is kept as its owner wrote it and run as the caller: `runnable` hands the route the list or query
to prepare with the caller's rights (`massdata.listing`), so a report shared with a role shows its members
what they may read and nothing more. Visibility follows planning scenarios' shares (`scenarios.service`):
the owner, the members of the roles it is shared with and supervisors see a report; anyone else gets 404,
so that an id tells nothing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import orjson
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.errors import (
    BadRequest,
    Conflict,
    ErrorItem,
    Forbidden,
    NotFound,
    UnknownType,
    ValidationFailed,
)
from blockrepo.massdata import listing
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.reports import repository
from blockrepo.reports.models import Report
from blockrepo.reports.schemas import (
    ReportCreate,
    ReportOut,
    ReportPatch,
    ReportShareIn,
    ReportSharesIn,
    ReportSharesOut,
)

MAX_REPORTS_PER_OWNER = 500
CONFIG_MAX_BYTES = 64 * 1024
# The members each kind is made of, by their names on the wire; the others must be left out.
MEMBERS = {
    "list": ("type", "filter", "sort", "fields"),
    "query": ("query", "sort", "fields"),
    "diagram": ("config",),
}
REQUIRED = {"list": "type", "query": "query", "diagram": "config"}
# Wire name -> column of the stored report.
COLUMNS = {
    "type": "type_name",
    "filter": "filter_text",
    "query": "query_text",
    "sort": "sort",
    "fields": "fields",
    "config": "config",
}


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def stamped(moment: dt.datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def owns(actor: Actor, report: Report) -> bool:
    return actor.supervisor or report.owner_id == actor.user_id


def _access(db: Session, actor: Actor, report: Report) -> str | None:
    """`own`, `edit`, `view`, or None for a caller who may not see the report."""
    if owns(actor, report):
        return "own"
    return repository.shared_access(db, report.id, actor.role_ids)


def _not_found(report_id: int) -> NotFound:
    return NotFound(f"there is no report {report_id}", code="unknown_report")


def visible_report(db: Session, actor: Actor, report_id: int, *, lock: bool = False) -> Report:
    """The report if `actor` may see it; 404 otherwise."""
    report = repository.report_by_id(db, report_id, lock=lock)
    if report is None or _access(db, actor, report) is None:
        raise _not_found(report_id)
    return report


def report_out(db: Session, actor: Actor, report: Report) -> ReportOut:
    access = _access(db, actor, report)
    assert access is not None  # only visible reports are answered
    return ReportOut(
        id=report.id,
        name=report.name,
        description=report.description,
        kind=report.kind,  # type: ignore[arg-type]  # one of the kinds: the service writes no other
        type_name=report.type_name,
        filter_text=report.filter_text,
        query=report.query_text,
        sort=report.sort,
        fields=report.fields,
        config=report.config,
        owner=report.owner_login,
        access=access,  # type: ignore[arg-type]
        created_at=stamped(report.created_at),
        created_by=report.created_by,
        updated_at=stamped(report.updated_at),
        updated_by=report.updated_by,
    )


def list_reports(db: Session, actor: Actor, *, everyone: bool) -> list[ReportOut]:
    """The caller's reports and those shared with its roles (with `everyone`, a supervisor's view of all),
    by id."""
    if everyone and not actor.supervisor:
        raise Forbidden("only a supervisor lists every account's reports")
    reports = repository.listed_reports(db, None if everyone else actor.user_id, actor.role_ids)
    return [report_out(db, actor, report) for report in reports]


@dataclasses.dataclass(frozen=True)
class Definition:
    """What a report is: its kind and the members of that kind, by their wire names."""

    kind: str
    members: dict[str, Any]


def _definition_of(report: Report) -> Definition:
    return Definition(report.kind, {wire: getattr(report, column) for wire, column in COLUMNS.items()})


def _given(body: ReportCreate | ReportPatch) -> dict[str, Any]:
    """The report members the body gives, by their wire names."""
    given = body.model_dump(by_alias=True, exclude_unset=True)
    return {wire: given[wire] for wire in COLUMNS if wire in given}


def _on_body(error: BadRequest) -> BadRequest:
    """A massdata problem located in the URL (`query:filter`) located in the report's body instead."""
    error.errors = [
        dataclasses.replace(item, pointer="/" + item.pointer.removeprefix("query:"))
        if item.pointer.startswith("query:")
        else item
        for item in error.errors
    ]
    return error


def prepare(
    metamodel: Metamodel,
    actor: Actor,
    definition: Definition,
    limits: QueryLimits,
    *,
    cursor: str | None = None,
    on_body: bool = False,
) -> listing.Listing:
    """The list or query of a report, prepared with `actor`'s rights (MASSDATA, the types and attribute
    groups `actor` may read). With `on_body` (a save), problems point into the report's body and every
    field must be one `actor` sees; run by another, the fields the caller may not see are left out, as
    if the report had not named them (a filter naming them is still refused, as on a list)."""
    members = definition.members
    try:
        if not on_body and members["fields"] is not None:
            visible = _visible_fields(_prepared(metamodel, actor, definition, limits, None, None, on_body))
            members = members | {"fields": [name for name in members["fields"] if name in visible]}
        return _prepared(metamodel, actor, definition, limits, members["fields"], cursor, on_body)
    except UnknownType as unknown:
        if not on_body:
            raise
        raise ValidationFailed(
            unknown.detail, errors=[ErrorItem("/type", "unknown_type", unknown.detail)]
        ) from None
    except BadRequest as problem:
        raise _on_body(problem) if on_body else problem from None


def _visible_fields(prepared: listing.Listing) -> set[str]:
    view = prepared.view
    return {*view.head, *view.tail, *(p.name for p in view.properties), *(e.name for e in view.ends)}


def _prepared(
    metamodel: Metamodel,
    actor: Actor,
    definition: Definition,
    limits: QueryLimits,
    fields: list[str] | None,
    cursor: str | None,
    on_body: bool,
) -> listing.Listing:
    members = definition.members
    if definition.kind == "list":
        return listing.prepare_listing(
            metamodel,
            actor,
            members["type"],
            filter_text=members["filter"],
            sort=members["sort"],
            fields=fields,
            cursor=cursor,
            limits=limits,
        )
    return listing.prepare_query(
        metamodel,
        actor,
        members["query"],
        sort=members["sort"],
        fields=fields,
        cursor=cursor,
        limits=limits,
        pointer_of=listing.in_body if on_body else listing.in_url,
    )


def _config_problems(config: dict[str, Any]) -> list[ErrorItem]:
    """A diagram configuration as it can be stored and handed back: finite numbers, integers within 64
    bits (what the JSON column's encoder writes), at most CONFIG_MAX_BYTES as JSON."""
    try:
        json.dumps(config, allow_nan=False)
        encoded = orjson.dumps(config)
    except (ValueError, TypeError, RecursionError, orjson.JSONEncodeError):
        message = "config holds a number beyond 64-bit integers or doubles, or is nested too deep"
        return [ErrorItem("/config", "invalid_value", message)]
    if len(encoded) > CONFIG_MAX_BYTES:
        return [ErrorItem("/config", "too_large", f"config is at most {CONFIG_MAX_BYTES} bytes as JSON")]
    return []


def _checked(metamodel: Metamodel, actor: Actor, definition: Definition, limits: QueryLimits) -> None:
    """A definition as it may be saved: the members of its kind alone, the required one given, the
    configuration within its size, the list or query valid for `actor`; every shape problem in one 400."""
    kind, members = definition.kind, definition.members
    problems = [
        ErrorItem(f"/{wire}", "not_for_kind", f"a {kind} report has no {wire}")
        for wire, value in members.items()
        if value is not None and wire not in MEMBERS[kind]
    ]
    required = REQUIRED[kind]
    if members.get(required) is None or (
        isinstance(members[required], str) and not members[required].strip()
    ):
        problems.append(ErrorItem(f"/{required}", "mandatory", f"a {kind} report needs {required}"))
    config = members.get("config")
    if kind == "diagram" and config is not None:
        problems += _config_problems(config)
    if problems:
        raise ValidationFailed("; ".join(p.message for p in problems), errors=problems)
    if kind != "diagram":
        prepare(metamodel, actor, definition, limits, on_body=True)


def create_report(
    db: Session, actor: Actor, metamodel: Metamodel, body: ReportCreate, limits: QueryLimits
) -> ReportOut:
    """A new report of `actor`'s, its list or query checked with `actor`'s rights. Needs MASSDATA."""
    listing.require_massdata(actor)
    members = {wire: None for wire in COLUMNS} | _given(body)
    _checked(metamodel, actor, Definition(body.kind, members), limits)
    if repository.count_owned(db, actor.user_id) >= MAX_REPORTS_PER_OWNER:
        raise Conflict(
            f"an account owns at most {MAX_REPORTS_PER_OWNER} reports: delete one first",
            code="too_many_reports",
        )
    now = utc_now()
    report = Report(
        name=body.name,
        description=body.description or "",
        kind=body.kind,
        owner_id=actor.user_id,
        owner_login=actor.login,
        created_at=now,
        created_by=actor.login,
        updated_at=now,
        updated_by=actor.login,
        **{COLUMNS[wire]: value for wire, value in members.items()},
    )
    repository.add_report(db, report)
    return report_out(db, actor, report)


def update_report(
    db: Session, actor: Actor, metamodel: Metamodel, report_id: int, body: ReportPatch, limits: QueryLimits
) -> ReportOut:
    """Change the members `body` gives (the owner, `edit` shares, supervisors); the result is checked as a
    new report is, with `actor`'s rights."""
    report = visible_report(db, actor, report_id, lock=True)
    if _access(db, actor, report) == "view":
        raise Forbidden("the report is shared with you to view: only its owner and editors change it")
    listing.require_massdata(actor)
    definition = _definition_of(report)
    kind = body.kind or report.kind
    members = definition.members if kind == report.kind else {wire: None for wire in COLUMNS}
    members = members | _given(body)
    _checked(metamodel, actor, Definition(kind, members), limits)
    if "name" in body.model_fields_set and body.name is not None:
        report.name = body.name
    if "description" in body.model_fields_set:
        report.description = body.description or ""
    report.kind = kind
    for wire, value in members.items():
        setattr(report, COLUMNS[wire], value)
    report.updated_at = utc_now()
    report.updated_by = actor.login
    db.flush()
    return report_out(db, actor, report)


def owned_report(db: Session, actor: Actor, report_id: int, doing: str) -> Report:
    report = visible_report(db, actor, report_id, lock=True)
    if not owns(actor, report):
        raise Forbidden(f"only the report's owner or a supervisor {doing}")
    return report


def delete_report(db: Session, actor: Actor, report_id: int) -> None:
    """Delete the report (its owner or a supervisor)."""
    report = owned_report(db, actor, report_id, "deletes it")
    repository.delete_report(db, report.id)
    db.flush()


def shares_of(db: Session, actor: Actor, report_id: int) -> ReportSharesOut:
    """The roles the report is shared with, for whoever sees it."""
    report = visible_report(db, actor, report_id)
    return ReportSharesOut(
        shares=[
            ReportShareIn(role=role, access="edit" if access == "edit" else "view")
            for role, access in repository.shares(db, report.id)
        ]
    )


def share(db: Session, actor: Actor, report_id: int, body: ReportSharesIn) -> ReportSharesOut:
    """Share the report with exactly the roles of `body` (its owner or a supervisor): their members see and
    run it, and with `edit` change it; an empty list shares it with none."""
    report = owned_report(db, actor, report_id, "shares it")
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
    repository.set_shares(db, report.id, {found[entry.role]: entry.access for entry in body.shares})
    db.flush()
    return shares_of(db, actor, report_id)


def runnable(
    db: Session, actor: Actor, metamodel: Metamodel, report_id: int, limits: QueryLimits, cursor: str | None
) -> tuple[ReportOut, listing.Listing]:
    """The report and its list or query prepared for `actor` (the caller, not the owner): 409
    `report_not_runnable` for a diagram, which only the web interface draws."""
    report = visible_report(db, actor, report_id)
    if report.kind == "diagram":
        message = "a diagram report is drawn by the web interface; only list and query reports run"
        raise Conflict(message, code="report_not_runnable")
    return report_out(db, actor, report), prepare(
        metamodel, actor, _definition_of(report), limits, cursor=cursor
    )
