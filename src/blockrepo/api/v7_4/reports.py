"""Routes of the report API: saved list filters, iteraQL queries and diagram configurations, shared with
roles and run as the caller. Thin: the rules live in blockrepo.reports."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request
from fastapi.openapi.models import Example
from starlette.responses import Response, StreamingResponse

from blockrepo.api.body import require_json_body
from blockrepo.api.context import RequestContext, read_context, request_context
from blockrepo.api.cursors import MASSDATA
from blockrepo.api.limits import PAGE_SIZE_BOUNDS
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import JsonResponse, aliased_json_response, model_response
from blockrepo.api.v7_4.massdata import NDJSON, PAGE_SCHEMA, QUERY_RESULT_SCHEMA
from blockrepo.errors import BadRequest, ErrorItem
from blockrepo.massdata import listing
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.reports import service
from blockrepo.reports.schemas import (
    LIST_EXAMPLE,
    ReportCreate,
    ReportOut,
    ReportPatch,
    ReportSharesIn,
    ReportSharesOut,
)

router = APIRouter(prefix="/api/reports", tags=["reports"])

ReportId = Annotated[int, Path(alias="id", ge=1, le=2**31 - 1, description="the report's id")]
JSON_BODY = [Depends(require_json_body)]

# Request examples (tests/api/test_request_examples.py sends each to a demo repository).
CREATE_EXAMPLES: dict[str, Example] = {
    "list": {"summary": "A filtered, sorted list of one type", "value": LIST_EXAMPLE},
    "query": {
        "summary": "An iteraQL query",
        "value": {
            "name": "Processes of current systems",
            "kind": "query",
            "query": 'InformationSystem[@status = "CURRENT"]/businessProcesses;',
            "sort": "name",
        },
    },
    "diagram": {
        "summary": "A diagram of the web interface",
        "value": {
            "name": "Capability map",
            "kind": "diagram",
            "config": {"diagram": "landscape", "hierarchy": "BusinessCapability", "colour": "status"},
        },
    },
}
PATCH_EXAMPLES: dict[str, Example] = {
    "rename": {"summary": "A new name and description", "value": {"name": "Systems", "description": "All"}},
    "filter": {"summary": "Another filter", "value": {"filter": '@status = "PLANNED"'}},
}
SHARE_EXAMPLES: dict[str, Example] = {
    "team": {
        "summary": "The editors change it, the readers run it",
        "value": {
            "shares": [{"role": "Business editor", "access": "edit"}, {"role": "Reader", "access": "view"}]
        },
    },
    "none": {"summary": "Shared with no role", "value": {"shares": []}},
}
RUN_SCHEMA: dict[str, Any] = {
    "title": "ReportResult",
    "description": "a list report's page as `GET /api/massdata/{type}` answers it, a query report's as "
    "`POST /api/massdata/query` does",
    "anyOf": [PAGE_SCHEMA, QUERY_RESULT_SCHEMA],
}


def _errors(*statuses: int) -> dict[int | str, Any]:
    return problem_responses(*sorted({401, 403, *statuses}))


def _limits(ctx: RequestContext) -> QueryLimits:
    return QueryLimits.from_settings(ctx.settings)


@router.post(
    "",
    operation_id="createReport",
    status_code=201,
    response_model=ReportOut,
    responses=_errors(400, 409, 415),
    dependencies=JSON_BODY,
    summary="Save a report",
)
def create_report(
    body: Annotated[ReportCreate, Body(openapi_examples=CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> Response:
    """A `list` report (`type`, an iteraQL `filter`, `sort`, `fields`), a `query` report (`query`, `sort`,
    `fields`) or a `diagram` report (`config`, the web interface's diagram configuration, at most 64 KiB
    as JSON). The filter or query is checked now, with the caller's rights, and refused as the massdata
    routes refuse it (400 `query_syntax` or `query_invalid` with the line and column). At most 500 reports
    per owner (409 `too_many_reports`). Needs MASSDATA."""
    report = service.create_report(ctx.db, ctx.actor, ctx.metamodel, body, _limits(ctx))
    ctx.commit()
    return model_response(report, status_code=201, headers={"Location": f"/api/reports/{report.id}"})


@router.get(
    "",
    operation_id="listReports",
    response_model=list[ReportOut],
    responses=_errors(),
    summary="The caller's reports and those shared with its roles",
)
def list_reports(
    everyone: Annotated[bool, Query(description="every account's reports (a supervisor only)")] = False,
    ctx: RequestContext = Depends(read_context),
) -> Response:
    """By id; `access` says what the caller may do with each."""
    return model_response(service.list_reports(ctx.db, ctx.actor, everyone=everyone))


@router.get(
    "/{id}",
    operation_id="getReport",
    response_model=ReportOut,
    responses=_errors(404),
    summary="One report",
)
def get_report(report_id: ReportId, ctx: RequestContext = Depends(read_context)) -> Response:
    """Its owner, the members of the roles it is shared with and supervisors see a report; anyone else
    gets 404."""
    return model_response(
        service.report_out(ctx.db, ctx.actor, service.visible_report(ctx.db, ctx.actor, report_id))
    )


@router.patch(
    "/{id}",
    operation_id="updateReport",
    response_model=ReportOut,
    responses=_errors(400, 404, 415),
    dependencies=JSON_BODY,
    summary="Change a report",
)
def update_report(
    report_id: ReportId,
    body: Annotated[ReportPatch, Body(openapi_examples=PATCH_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> Response:
    """Its owner, members of roles it is shared with for `edit`, and supervisors (403 for a `view` share).
    The members given replace the stored ones and the result is checked as a new report is; a new `kind`
    drops the members of the former kind that are not given. Needs MASSDATA."""
    report = service.update_report(ctx.db, ctx.actor, ctx.metamodel, report_id, body, _limits(ctx))
    ctx.commit()
    return model_response(report)


@router.delete(
    "/{id}",
    operation_id="deleteReport",
    status_code=204,
    responses=_errors(404),
    summary="Delete a report",
)
def delete_report(report_id: ReportId, ctx: RequestContext = Depends(request_context)) -> Response:
    """Its owner or a supervisor (403 for those it is shared with)."""
    service.delete_report(ctx.db, ctx.actor, report_id)
    ctx.commit()
    return Response(status_code=204)


@router.get(
    "/{id}/shares",
    operation_id="listReportShares",
    response_model=ReportSharesOut,
    responses=_errors(404),
    summary="The roles a report is shared with",
)
def list_report_shares(report_id: ReportId, ctx: RequestContext = Depends(read_context)) -> Response:
    """For whoever sees the report."""
    return model_response(service.shares_of(ctx.db, ctx.actor, report_id))


@router.put(
    "/{id}/shares",
    operation_id="shareReport",
    response_model=ReportSharesOut,
    responses=_errors(400, 404, 415),
    dependencies=JSON_BODY,
    summary="Share a report with roles",
)
def share_report(
    report_id: ReportId,
    body: Annotated[ReportSharesIn, Body(openapi_examples=SHARE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> Response:
    """Replaces the roles the report is shared with (its owner or a supervisor; 403 otherwise). Members of
    a role see and run the report; with `edit` they also change it."""
    shares = service.share(ctx.db, ctx.actor, report_id, body)
    ctx.commit()
    return model_response(shares)


def _limit(ctx: RequestContext, limit: int | None) -> int:
    if limit is None:
        return ctx.settings.page_size
    if not 1 <= limit <= ctx.settings.max_page_size:
        message = f"limit must be between 1 and {ctx.settings.max_page_size}"
        raise BadRequest(
            message, code="invalid_limit", errors=[ErrorItem("query:limit", "invalid_limit", message)]
        )
    return limit


@router.get(
    "/{id}/run",
    operation_id="runReport",
    summary="Run a list or query report",
    description="Runs the report as the caller, not as its owner: the caller's rights apply (MASSDATA, the "
    "types and attribute groups it may read), so hidden values never show, and a filter or query naming "
    "what the caller may not read is refused as the massdata routes refuse it. A list report answers as "
    "`GET /api/massdata/{type}`, a query report as `POST /api/massdata/query`, paginated by `limit` and "
    "`cursor`; with `Accept: application/x-ndjson` every match is streamed. A diagram report does not "
    "run (409 `report_not_runnable`): the web interface draws it.",
    response_class=JsonResponse,
    responses={
        200: {
            "description": "A page of elements, or (NDJSON) every match",
            "content": {"application/json": {"schema": RUN_SCHEMA}, NDJSON: {"schema": {"type": "string"}}},
        },
        **_errors(400, 404, 409),
    },
)
def run_report(
    request: Request,
    report_id: ReportId,
    ctx: Annotated[RequestContext, Depends(read_context)],
    limit: Annotated[
        int | None,
        Query(
            description="page size, 1 to {setting:max_page_size} (default {setting:page_size})",
            json_schema_extra=PAGE_SIZE_BOUNDS,
        ),
    ] = None,
    cursor: Annotated[str | None, Query(description="`nextCursor` of the previous page")] = None,
    count: Annotated[bool, Query(description="also return `total`, the number of matches")] = False,
) -> Response:
    opened = ctx.services.cursors.open(MASSDATA, cursor, "query:cursor")
    report, prepared = service.runnable(ctx.db, ctx.actor, ctx.metamodel, report_id, _limits(ctx), opened)
    accept = request.headers.get("accept", "")
    if any(part.split(";", 1)[0].strip().lower() == NDJSON for part in accept.split(",")):
        lines = listing.stream_ndjson(ctx.services.read_sessions, ctx.metamodel, ctx.actor, prepared)
        return StreamingResponse(lines, media_type=NDJSON)
    page = listing.read_page(
        ctx.db, ctx.metamodel, ctx.actor, prepared, limit=_limit(ctx, limit), count=count
    )
    answer: dict[str, Any] = {} if report.query is None else {"query": report.query}
    answer |= {
        "type": prepared.type_def.name,
        "items": page.items,
        "nextCursor": ctx.services.cursors.seal(MASSDATA, page.next_cursor),
    }
    if page.total is not None:
        answer["total"] = page.total
    if report.query is None:
        return JsonResponse(answer)
    return aliased_json_response(answer, "items", "result")
