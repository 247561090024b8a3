"""Routes of the massdata API (version 7.4): filtered and streamed reads, iteraQL queries, bulk writes,
export and import. Thin: the rules live in blockrepo.massdata."""

from __future__ import annotations

import datetime as dt
import io
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from blockrepo.api.body import is_json_media_type, parse_json
from blockrepo.api.context import (
    RequestContext,
    open_read_context,
    principal_of,
    read_context,
    request_context,
)
from blockrepo.api.cursors import MASSDATA
from blockrepo.api.element_answers import element_writer
from blockrepo.api.limits import PAGE_SIZE_BOUNDS
from blockrepo.api.parameters import (
    REVISION_OR_TIME,
    REVISION_OR_TIME_BRANCHES,
    REVISION_TEXT,
    AsOfQuery,
    ScenarioHeader,
    ScenarioQuery,
    scenario_named,
)
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import JsonResponse, aliased_json_response
from blockrepo.elements.service import Writer
from blockrepo.errors import BadRequest, ErrorItem, UnsupportedMediaType, ValidationFailed
from blockrepo.history.asof import Layer
from blockrepo.history.schemas import AS_OF_ATTRIBUTE_NAMES
from blockrepo.interpreter import collector_paused
from blockrepo.json_integers import integral_number_as_int
from blockrepo.massdata import asof as past
from blockrepo.massdata import bulk, listing
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.massdata.transfer.document import Document, parse_json_document
from blockrepo.massdata.transfer.export import LandscapeSource, stream_json
from blockrepo.massdata.transfer.importer import ImportReport, import_document, parse_mode
from blockrepo.massdata.transfer.plan import plan_export as export_plan
from blockrepo.massdata.transfer.xlsx import read_workbook, stream_xlsx
from blockrepo.massdata.transfer.xlsx_limits import XlsxLimits
from blockrepo.scenarios import bulk as scenario_bulk
from blockrepo.scenarios import projection as projections
from blockrepo.scenarios import service as scenarios

router = APIRouter(tags=["Massdata"])

NDJSON = "application/x-ndjson"
# Path segments beside `{type}` that route to other operations (GET export, POST import and query);
# reserved words, which no type may be called (metamodel.names).
_OTHER_OPERATIONS = ["export", "import", "query"]
TypeName = Annotated[
    str,
    Path(
        alias="type",
        description="persistent name of a building block type, e.g. `InformationSystem`",
        json_schema_extra={"not": {"enum": _OTHER_OPERATIONS}},
    ),
]

ELEMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Element",
    "description": "An element as `GET /api/element/{type}/{id}` returns it (narrowed to `fields`).",
    "additionalProperties": {"type": "array", "items": {}},
}
PAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "MassdataPage",
    "required": ["type", "items", "nextCursor"],
    "properties": {
        "type": {"type": "string"},
        "items": {"type": "array", "items": ELEMENT_SCHEMA},
        "nextCursor": {"type": ["string", "null"], "description": "pass as `cursor` for the next page"},
        "total": {"type": "integer", "description": "number of matches (only with `count=true`)"},
    },
}
QUERY_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "QueryResult",
    "required": ["query", "type", "items", "result", "nextCursor"],
    "properties": {
        "query": {"type": "string"},
        "type": {"type": "string", "description": "the type of the result (the last navigation step's)"},
        "items": {
            "type": "array",
            "items": ELEMENT_SCHEMA,
            "description": "the page of elements, under the same key as the list endpoint's",
        },
        "result": {
            "type": "array",
            # A title of its own: client generators name an array's item model by the object and the
            # title, and two arrays of one titled schema in one object would make one name twice.
            "items": {**ELEMENT_SCHEMA, "title": "ResultElement"},
            "description": "the same page again, under the key API 7.4 clients read",
        },
        "nextCursor": {"type": ["string", "null"], "description": "pass as `cursor` for the next page"},
        "total": {"type": "integer", "description": "number of matches (only with `count`)"},
    },
}
QUERY_RESULT_EXAMPLE = {
    "query": 'InformationSystem[@name.startsWith("ERP")];',
    "type": "InformationSystem",
    "items": [{"id": [128], "name": ["ERP"], "status": ["CURRENT"]}],
    "result": [{"id": [128], "name": ["ERP"], "status": ["CURRENT"]}],
    "nextCursor": None,
}
ITERAQL_HELP = (
    "iteraQL: `Type;` selects a type, `Type[predicate]` filters it, `Type/end[predicate]` navigates along "
    "relation ends (also `parent` and `children`), chainable. Predicates: `@property` compared with "
    '`= != < > <= >=` to a string ("x"), number, date (2025-01-31), date-time, `true`/`false` or `null`; '
    '`@property.contains("x")`, `.startsWith("x")`, `.endsWith("x")` (case-sensitive), '
    '`.containsIgnoreCase("x")` (A-Z match either case; other letters as written); `@"Annual costs"` '
    "for names with spaces; `@runtimePeriod.start` / `.end`; `count(end) > n`, `count(end[predicate]) >= n`, "
    "`count(@attribute)`, `count(children)`; combined with `&`, `|`, `!` and parentheses. Multi-valued "
    "properties match when any value does; `!=` is the negation of `=` (it matches empty properties). "
    "Relation ends and `@parent` compare with a name (string) or an id (integer). Syntax errors are 400 "
    "`query_syntax`, unknown names or wrong value kinds 400 `query_invalid`, both with the line and column."
)
LIST_EXAMPLE = {
    "type": "InformationSystem",
    "items": [{"id": [17], "name": ["ERP"], "status": ["CURRENT"]}],
    "nextCursor": "WyJJbmZvcm1hdGlvblN5c3RlbSIsImlkIixbMTddXQ",
    "total": 42,
}


ProjectionQuery = Annotated[
    str | None,
    Query(
        description="a date: the landscape as it will be then, with the `scenarios` effective by then "
        "(see below); empty: today",
        json_schema_extra={
            "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "maxLength": 0}]
        },
    ),
]
ScenariosQuery = Annotated[
    str | None,
    Query(
        alias="scenarios",
        max_length=2000,
        description="comma-separated keys of open planning scenarios the `projection` applies (at most 20)",
    ),
]


def _wants_ndjson(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return any(part.split(";", 1)[0].strip().lower() == NDJSON for part in accept.split(","))


def _limit(ctx: RequestContext, limit: int | None, pointer: str = "query:limit") -> int:
    if limit is None:
        return ctx.settings.page_size
    if not 1 <= limit <= ctx.settings.max_page_size:
        message = f"limit must be between 1 and {ctx.settings.max_page_size}"
        raise BadRequest(message, code="invalid_limit", errors=[ErrorItem(pointer, "invalid_limit", message)])
    return limit


@dataclass(frozen=True)
class _Moment:
    """What a read reads: today (no revision), main at a past revision, a planning scenario (main at its
    base with its `layer` on top), or the landscape projected to a date (`projection`)."""

    revision: int | None = None
    layer: Layer | None = None
    projection: projections.Projection | None = None

    @property
    def cursor_purpose(self) -> bytes:
        """What the read's cursors are sealed for: a projection's only open on the same projection."""
        if self.projection is None:
            return MASSDATA
        return MASSDATA + b"\0projection\0" + self.projection.scope.encode()


def _stream(ctx: RequestContext, prepared: listing.Listing, moment: _Moment) -> StreamingResponse:
    open_session = ctx.services.read_sessions
    lines: Iterator[bytes]
    if moment.projection is not None:
        projection = moment.projection
        projected = projections.states_of(ctx.actor, ctx.metamodel, projection)
        lines = past.stream_ndjson_of(open_session, projected, prepared, f"projected to {projection.at}")
    elif moment.revision is None:
        lines = listing.stream_ndjson(open_session, ctx.metamodel, ctx.actor, prepared)
    else:
        lines = past.stream_ndjson_as_of(
            open_session, ctx.metamodel, ctx.actor, prepared, moment.revision, moment.layer
        )
    return StreamingResponse(lines, media_type=NDJSON)


def _page(
    ctx: RequestContext, prepared: listing.Listing, moment: _Moment, limit: int, count: bool
) -> listing.Page:
    if moment.projection is not None:
        state = projections.ProjectedState(ctx.db, ctx.actor, ctx.metamodel, moment.projection)
        return past.read_page_of(state, prepared, limit=limit, count=count)
    if moment.revision is None:
        return listing.read_page(ctx.db, ctx.metamodel, ctx.actor, prepared, limit=limit, count=count)
    return past.read_page_as_of(
        ctx.db,
        ctx.metamodel,
        ctx.actor,
        prepared,
        moment.revision,
        limit=limit,
        count=count,
        layer=moment.layer,
    )


@dataclass(frozen=True)
class _Asked:
    """The members of a read that say what it reads, each with the pointer where the client gave it."""

    as_of: str | int | None
    scenario: str | None
    projection: str | None
    scenario_keys: list[str] | None
    pointer: Callable[[str], str] = listing.in_url


_DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def _projection_day(raw: str, pointer: str) -> dt.date:
    try:
        if _DAY.match(raw):
            return dt.date.fromisoformat(raw)
    except ValueError:
        pass
    message = "projection must be a date (YYYY-MM-DD)"
    raise ValidationFailed(message, errors=[ErrorItem(pointer, "invalid_date", message)])


def _moment(ctx: RequestContext, asked: _Asked) -> _Moment:
    """What the read reads (checked before any streaming starts): the date a `projection` names with its
    `scenarios`, the past revision an `asOf` names, the scenario a request names, or today. One of them:
    an empty `asOf` or `projection` is one not given; a problem points where the client gave it."""
    past_given = not (asked.as_of is None or asked.as_of == "")
    if asked.projection:
        clashes: list[ErrorItem] = []
        if past_given:
            clashes.append(
                ErrorItem(asked.pointer("asOf"), "not_with_projection", "leave out asOf or the projection")
            )
        if asked.scenario is not None:
            clashes.append(
                ErrorItem("query:scenario", "not_with_projection", "leave out the scenario or the projection")
            )
        if clashes:
            raise ValidationFailed(
                "a read has one moment: a projection goes with neither asOf nor a scenario", errors=clashes
            )
        day = _projection_day(asked.projection, asked.pointer("projection"))
        keys = asked.scenario_keys or []
        return _Moment(
            projection=projections.projection_of(ctx.db, ctx.actor, day, keys, asked.pointer("scenarios"))
        )
    if asked.scenario_keys:
        message = "scenarios apply to a projection: give projection (a date) too"
        raise ValidationFailed(
            message, errors=[ErrorItem(asked.pointer("scenarios"), "projection_required", message)]
        )
    if asked.scenario is not None:
        if past_given:
            raise ValidationFailed(
                "asOf and scenario cannot be combined: a scenario is read as it is now",
                errors=[
                    ErrorItem(asked.pointer("asOf"), "not_with_scenario", "leave out asOf or the scenario")
                ],
            )
        layer = scenarios.reading_layer(ctx.db, ctx.actor, asked.scenario)
        return _Moment(layer.base, layer)
    if not past_given:
        return _Moment()
    return _Moment(past.past_revision(ctx.db, ctx.actor, str(asked.as_of), asked.pointer("asOf")))


def _scenario_keys(raw: str | None) -> list[str] | None:
    """The keys of a comma-separated `scenarios` (None: not given)."""
    keys = [key.strip() for key in (raw or "").split(",") if key.strip()]
    return keys or None


PROJECTION_HELP = (
    "With `projection` (a date) and `scenarios` (keys of open planning scenarios) the answer is the "
    "landscape as it will be on that date, as `GET /api/projection` projects it: main now with the "
    "scenarios effective by then applied in date order, without the elements whose runtime period has "
    "ended by then or not begun. Filter, sort, cursor, `count` and the steps of a query apply to the "
    "projected elements (a step reaches only those there on the date); a cursor belongs to its date and "
    "scenarios. Not with `asOf` or `scenario`; `scenarios` only with `projection` (400). At most 20 "
    "scenarios, each visible to the caller (else 404) and open (else 409)."
)
AS_OF_HELP = (
    "With `asOf` (a revision number or an ISO-8601 time) the answer is the repository as it stood then, "
    "deleted elements included: filter, sort, cursor and `count` apply to that state, evaluated on the "
    "elements folded from history (cost in proportion to the type's history, not the page). Needs "
    "VIEW_HISTORY as well. " + AS_OF_ATTRIBUTE_NAMES
)


XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# The envelope of a JSON export as the importer reads it; the records are checked against the metamodel.
EXPORT_DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ExportDocument",
    "required": ["format"],
    "properties": {
        "format": {"const": "blockrepo-export"},
        "metamodel": {"type": ["object", "null"]},
        "elements": {
            "type": "object",
            "description": "type name -> records",
            "additionalProperties": {"type": "array", "items": {}},
        },
        "users": {"type": "array", "items": {}},
    },
}
# A JSON export of one new project, as `GET /api/massdata/export?types=Project` writes it; built-ins only, so
# that it imports into any repository.
IMPORT_EXAMPLE: dict[str, Any] = {
    "format": "blockrepo-export",
    "version": 1,
    "apiVersion": "7.4",
    "elements": {
        "Project": [
            {
                "name": "Warehouse automation",
                "description": "Conveyors and pick-by-light in the logistics center",
                "runtimePeriod": [{"start": "2027-01-01", "end": "2027-12-31"}],
            }
        ]
    },
}
XLSX_UPLOAD_SCHEMA: dict[str, Any] = {
    "type": "string",
    "format": "binary",
    "description": "An xlsx workbook as `GET /api/massdata/export?format=xlsx` writes it: one sheet per type "
    "(one row per element, one column per property, relation ends as `;`-separated names), one per "
    "relation type with attributes, and the metamodel in `_`-sheets.",
}
REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ImportReport",
    "required": ["created", "updated", "deleted", "failed", "errors"],
    "properties": {
        "created": {"type": "integer"},
        "updated": {"type": "integer", "description": "elements whose JSON the import changed"},
        "deleted": {"type": "integer"},
        "failed": {"type": "integer"},
        "errors": {"type": "array", "items": {"type": "object"}},
        "dryRun": {"type": "boolean"},
    },
}


@router.get(
    "/api/massdata/export",
    operation_id="exportRepository",
    summary="Export the repository",
    description="The whole repository as the caller may read it (or the types in `types`): the metamodel it "
    "needs (attribute groups, types with their built-ins, relation types, attributes) and every element, "
    "streamed from one consistent snapshot. JSON: `{format, version, apiVersion, revision, metamodel, "
    "elements: {Type: [record…]}}`, one record per line in hierarchy order (parents before children, "
    "children in their order); a record holds `id`, `name`, `description`, `parent` (a name) and the "
    "non-empty attributes and source relation ends (names, or `{name, attributes}`). xlsx: one sheet per "
    "type, one per relation type with attributes, the metamodel in `_`-sheets (see docs/architecture.md). "
    "Properties and types the caller may not read are left out. Needs EXPORT. With `scenario` (or "
    "`Blockrepo-Scenario`) the file is that planning scenario's landscape as a read in it shows it (its "
    "new elements with their ids, its changes, its deletions gone): `revision` and `revisionMark` are "
    "main's at the scenario's base, and `scenario` names it (`key`, `name`, `base`; in xlsx the `_index` "
    "row `(scenario)`); a scenario the caller does not see is 404. With `projection` (a date) and "
    "`scenarios` (keys of open planning scenarios) the file is the landscape as it will be on that date, "
    "as `GET /api/projection` projects it: `revision` is main's newest, and `projection` names the date "
    "and the scenarios applied (`at`, `scenarios`; in xlsx the `_index` row `(projection)`); not with "
    "`scenario`, and `scenarios` only with `projection` (400). An export is never of the past: `asOf` "
    "is refused (400 `asof_unsupported`, with a scenario `not_with_scenario`); past states are read with "
    "`GET /api/massdata/{type}?asOf=…`.",
    response_class=Response,
    responses={
        200: {
            "description": "The export file",
            "content": {
                "application/json": {"schema": {"type": "object"}},
                XLSX: {"schema": {"type": "string", "format": "binary"}},
            },
        },
        **problem_responses(400, 401, 403, 404),
    },
)
def export_repository(
    ctx: Annotated[RequestContext, Depends(request_context)],
    format: Annotated[
        str, Query(description="json (default) or xlsx", json_schema_extra={"enum": ["json", "xlsx"]})
    ] = "json",
    types: Annotated[
        str | None, Query(description="comma-separated type names (default: every readable type)")
    ] = None,
    # Not offered (an export is always of the current state), so left out of the description; sent, it
    # is refused rather than ignored.
    as_of: Annotated[str | None, Query(alias="asOf", include_in_schema=False)] = None,
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
    projection: ProjectionQuery = None,
    scenario_keys: ScenariosQuery = None,
) -> Response:
    key = scenario_named(scenario, scenario_header)
    if key is not None and as_of is not None:
        raise ValidationFailed(
            "asOf and scenario cannot be combined: a scenario is read as it is now",
            errors=[ErrorItem("query:asOf", "not_with_scenario", "leave out asOf or the scenario")],
        )
    if as_of is not None:
        # Refused rather than ignored: a client must never take today's data for a past state.
        message = "an export is of the current state; read past states with GET /api/massdata/{type}?asOf="
        raise BadRequest(
            message, code="asof_unsupported", errors=[ErrorItem("query:asOf", "asof_unsupported", message)]
        )
    if format not in ("json", "xlsx"):
        raise BadRequest(
            "format is json or xlsx",
            code="validation_failed",
            errors=[ErrorItem("format", "wrong_value", "json or xlsx")],
        )
    names = [t.strip() for t in types.split(",") if t.strip()] if types else None
    plan = export_plan(ctx.metamodel, ctx.actor, names, mirrors=format == "xlsx")
    landscape: LandscapeSource | None = None
    keys = _scenario_keys(scenario_keys)
    if projection or keys:
        moment = _moment(ctx, _Asked(None, key, projection, keys))
        if moment.projection is not None:
            landscape = projections.landscape_of(ctx.actor, ctx.metamodel, moment.projection)
    elif key is not None:
        layer, named = scenarios.exported_layer(ctx.db, ctx.actor, key)
        landscape = past.scenario_landscape(ctx.metamodel, ctx.actor, layer, named)
    sessions = ctx.services.read_sessions
    if format == "json":
        return StreamingResponse(
            stream_json(sessions, plan, landscape),
            media_type="application/json",
            headers={"Content-Disposition": 'attachment; filename="blockrepo-export.json"'},
        )
    return StreamingResponse(
        stream_xlsx(sessions, plan, landscape=landscape),
        media_type=XLSX,
        headers={"Content-Disposition": 'attachment; filename="blockrepo-export.xlsx"'},
    )


def _may_import(request: Request) -> None:
    """403 for a caller without IMPORT, before a byte of the body is read: the body may be 200 MiB, and
    reading and parsing it is the expensive part. A short read of the acting user's rights, as GET by id
    makes on the event loop (the service checks IMPORT again in the request's transaction)."""
    with open_read_context(request.app.state.services, principal_of(request)) as read:
        listing.require_massdata(read.actor, "IMPORT")


def _parse_json_import(handed_over: list[bytearray]) -> Document:
    with collector_paused():  # the document's objects all live on: nothing for a collection to free
        return parse_json_document(handed_over.pop())


async def _import_document(request: Request) -> Document:
    _may_import(request)
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    # Only the declared types, refused before the body is read: text/plain, a form or octet-stream is what
    # a page of another site can send without asking first (CSRF), whatever the bytes look like.
    if not is_json_media_type(media_type) and media_type != XLSX:
        raise UnsupportedMediaType(f"send an export as application/json or {XLSX}")
    # Read past Starlette's cache (`request.body()` keeps the bytes until the response is sent): an
    # import's body can be 200 MiB, and once it is parsed only the document is needed.
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
    if media_type == XLSX:
        source = io.BytesIO(raw)
        del raw  # the stream holds its own copy
        limits = XlsxLimits.from_settings(request.app.state.services.settings)
        return await run_in_threadpool(read_workbook, source, limits)
    # Parsed in a worker thread: a 27 MB document held the event loop, and so every other request of the
    # process, for a second. The body is handed over in a list the parser empties, so that this frame does
    # not keep it alive: the document's records are views of it, and it goes with the last of them.
    handed_over = [raw]
    del raw
    return await run_in_threadpool(_parse_json_import, handed_over)


@router.post(
    "/api/massdata/import",
    operation_id="importRepository",
    summary="Import an export",
    description="Imports a JSON or xlsx export, all or nothing, as one revision. The metamodel the file "
    "needs "
    "is created where missing (needs EDIT_METAMODEL / ADMIN_ATTRIBUTES then); elements are matched by name "
    "in their type: known ones are updated (a record is the element's whole state), the others created; "
    "with `mode=cud` the elements of the file's types that the file does not hold are deleted. Relations of "
    "the file's elements are replaced by the file's. Every problem is reported in one 400 (`errors[]` with "
    "pointers like `/elements/InformationSystem/3/Costs/0`, and `report`); nothing is written then. "
    "`dryRun=true` validates and reports without writing. Bodies up to 20 times the body limit (200 MiB "
    "by default). Needs IMPORT (checked before the body is read: 403 without it) and create, update "
    "(cud: delete) on the file's types. An xlsx is checked before it is read: at most "
    "{setting:import_xlsx_max_unzipped_bytes} unzipped, each part at most "
    "{setting:import_xlsx_max_compression_ratio} times its compressed size, {setting:import_xlsx_max_sheets} "
    "sheets, rows up to {setting:import_xlsx_max_rows}, columns up to {setting:import_xlsx_max_columns}, "
    "{setting:import_xlsx_max_cells} cells spanned (each sheet's last row times its widest column) and "
    "{setting:import_xlsx_max_shared_strings} shared strings; beyond any of them 413 `payload_too_large` "
    "with `limit: {name, value}` naming the setting.",
    response_class=JsonResponse,
    responses={
        200: {
            "description": "What was (or would be) imported",
            "content": {"application/json": {"schema": REPORT_SCHEMA}},
        },
        **problem_responses(400, 401, 403, 404, 409, 413, 415),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": EXPORT_DOCUMENT_SCHEMA, "example": IMPORT_EXAMPLE},
                # A binary upload has no example a description could hold: its schema says what to send.
                XLSX: {"schema": XLSX_UPLOAD_SCHEMA},
            },
        }
    },
)
def import_repository(
    # The file is read and parsed before the context takes the write lock (dependencies are solved in
    # this order): an upload of 200 MiB would otherwise hold up every other write while it arrives.
    document: Annotated[Document, Depends(_import_document)],
    ctx: Annotated[RequestContext, Depends(request_context)],
    mode: Annotated[
        str, Query(description="additive (default) or cud", json_schema_extra={"enum": ["additive", "cud"]})
    ] = "additive",
    dry_run: Annotated[bool, Query(alias="dryRun", description="validate and report only")] = False,
    new_scenario: Annotated[
        str | None,
        Query(
            alias="newScenario",
            max_length=255,
            description="land the import in a new planning scenario of this name, for review, instead of "
            "main (the file may not need attributes, types or accounts main lacks)",
        ),
    ] = None,
) -> JsonResponse:
    def run_import() -> ImportReport:
        return import_document(
            ctx.db,
            ctx.metamodel,
            ctx.actor,
            ctx.changes,
            document,
            mode=parse_mode(mode),
            hash_password=ctx.services.passwords.hash,
            list_rows=dry_run,
        )

    with collector_paused():
        if new_scenario and not dry_run:
            report, scenario = scenarios.into_new_scenario(element_writer(ctx), new_scenario, run_import)
            ctx.commit()
            return JsonResponse(
                {**report.as_json(), "scenario": scenario.model_dump(mode="json", by_alias=True)}
            )
        report = run_import()
        report.dry_run = dry_run
        if not dry_run:
            ctx.commit()
    return JsonResponse(report.as_json())


@router.get(
    "/api/massdata/{type}",
    operation_id="listElements",
    summary="List, filter and stream the elements of a type",
    description="The elements of one type, filtered by an iteraQL predicate (`filter`, the inside of "
    "`[...]`), sorted by `sort` (`name,-id`; id, name, description, revision, lastModificationTime, "
    "lastModificationUser and any attribute, enumerations by literal order, empty values last) and "
    "paginated by an opaque keyset `cursor` that stays correct while others insert or delete. `fields` "
    "limits the properties returned (`id` is always there). With `Accept: application/x-ndjson` every "
    "match is streamed, one element per line, from one consistent snapshot (`limit` and `count` do not "
    "apply; a `cursor` resumes). Needs MASSDATA and read on the type.\n\n"
    + AS_OF_HELP
    + "\n\n"
    + PROJECTION_HELP
    + "\n\n"
    + ITERAQL_HELP,
    response_class=JsonResponse,
    responses={
        200: {
            "description": "A page of elements, or (NDJSON) every match",
            "content": {
                "application/json": {"schema": PAGE_SCHEMA, "example": LIST_EXAMPLE},
                NDJSON: {"schema": {"type": "string"}},
            },
        },
        **problem_responses(400, 401, 403, 404),
    },
)
def list_elements(
    request: Request,
    type_name: TypeName,
    ctx: Annotated[RequestContext, Depends(request_context)],
    filter: Annotated[
        str | None, Query(description='iteraQL predicate, e.g. `@status = "CURRENT" & count(projects) > 0`')
    ] = None,
    fields: Annotated[str | None, Query(description="comma-separated property names to return")] = None,
    sort: Annotated[
        str | None, Query(description="comma-separated keys, `-` for descending; default `id`")
    ] = None,
    limit: Annotated[
        int | None,
        Query(
            description="page size, 1 to {setting:max_page_size} (default {setting:page_size})",
            json_schema_extra=PAGE_SIZE_BOUNDS,
        ),
    ] = None,
    cursor: Annotated[str | None, Query(description="`nextCursor` of the previous page")] = None,
    count: Annotated[bool, Query(description="also return `total`, the number of matches")] = False,
    as_of: AsOfQuery = None,
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
    projection: ProjectionQuery = None,
    scenario_keys: ScenariosQuery = None,
) -> Response:
    asked = _Asked(
        as_of, scenario_named(scenario, scenario_header), projection, _scenario_keys(scenario_keys)
    )
    moment = _moment(ctx, asked)
    prepared = listing.prepare_listing(
        ctx.metamodel,
        ctx.actor,
        type_name,
        filter_text=filter,
        sort=sort,
        fields=fields,
        cursor=ctx.services.cursors.open(moment.cursor_purpose, cursor, "query:cursor"),
        limits=QueryLimits.from_settings(ctx.settings),
    )
    if _wants_ndjson(request):
        return _stream(ctx, prepared, moment)
    page = _page(ctx, prepared, moment, _limit(ctx, limit), count)
    body: dict[str, Any] = {
        "type": prepared.type_def.name,
        "items": page.items,
        "nextCursor": ctx.services.cursors.seal(moment.cursor_purpose, page.next_cursor),
    }
    if page.total is not None:
        body["total"] = page.total
    return JsonResponse(body)


QUERY_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "QueryRequest",
    "required": ["query"],
    "properties": {
        "query": {"type": "string", "example": 'InformationSystem[@status = "CURRENT"]/businessProcesses;'},
        "fields": {"type": "array", "items": {"type": "string"}},
        "sort": {"type": ["string", "null"], "example": "name"},
        "limit": {"type": "integer", **PAGE_SIZE_BOUNDS},
        "cursor": {"type": ["string", "null"]},
        "count": {"type": ["boolean", "null"]},
        "asOf": {
            "anyOf": [*REVISION_OR_TIME_BRANCHES, REVISION_TEXT, {"type": "null"}],
            "description": "a revision number or an ISO-8601 time: query the state as it was then; null or "
            "empty: today",
            "example": 1,
        },
        "projection": {
            "type": ["string", "null"],
            "format": "date",
            "description": "a date: query the landscape as it will be then (with `scenarios`); null: today",
            "example": "2027-07-01",
        },
        "scenarios": {
            "type": ["array", "null"],
            "items": {"type": "string", "maxLength": 64},
            "maxItems": projections.MOST_SCENARIOS,
            "description": "keys of open planning scenarios the projection applies (only with `projection`)",
        },
    },
    "additionalProperties": False,
}


async def _query_body(request: Request) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "")
    raw = await request.body()
    if content_type.split(";", 1)[0].strip().lower() == "text/plain":
        try:
            return {"query": raw.decode("utf-8")}
        except UnicodeDecodeError:
            raise BadRequest("the query must be UTF-8 text", code="malformed_body") from None
    if not is_json_media_type(content_type):
        raise UnsupportedMediaType("send the query as application/json or text/plain")
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", code="validation_failed")
    return body


def _query_request(body: dict[str, Any]) -> dict[str, Any]:
    """Check the members of a query body; every problem in one 400."""
    errors: list[ErrorItem] = []
    whole = ("limit", "asOf")  # as the published schema's `integer` reads them: 7.0 is 7
    body = {key: integral_number_as_int(value) if key in whole else value for key, value in body.items()}
    checks: dict[str, tuple[type | tuple[type, ...], str]] = {
        "query": (str, "a string"),
        "sort": (str, "a string"),
        "cursor": (str, "a string"),
        "count": (bool, "true or false"),
        "projection": (str, "a date (YYYY-MM-DD)"),
    }
    for key, value in body.items():
        if key == "fields":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                errors.append(ErrorItem("/fields", "wrong_type", "fields must be an array of strings"))
        elif key == "limit":
            if isinstance(value, bool) or not isinstance(value, int):
                errors.append(ErrorItem("/limit", "wrong_type", "limit must be an integer"))
        elif key == "projection" and value == "":
            # The schema's `format: date` has no empty branch (unlike `asOf`'s): null is today.
            errors.append(ErrorItem("/projection", "invalid_date", "projection must be a date or null"))
        elif key == "scenarios":
            if value is not None and (
                not isinstance(value, list) or not all(isinstance(v, str) for v in value)
            ):
                errors.append(ErrorItem("/scenarios", "wrong_type", "scenarios must be an array of keys"))
        elif key == "asOf":
            if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
                message = "asOf must be a revision number or an ISO-8601 time"
                errors.append(ErrorItem("/asOf", "wrong_type", message))
        elif key in checks:
            expected, words = checks[key]
            if value is not None and not isinstance(value, expected):
                errors.append(ErrorItem(f"/{key}", "wrong_type", f"{key} must be {words}"))
        else:
            errors.append(ErrorItem(f"/{key}", "unknown_property", f"a query has no member {key!r}"))
    if not isinstance(body.get("query"), str):
        errors.append(ErrorItem("/query", "mandatory", "query (an iteraQL string) is mandatory"))
    if errors:
        raise BadRequest(
            "; ".join(f"{e.pointer}: {e.message}" for e in errors), code="validation_failed", errors=errors
        )
    return body


def _from_url(body: dict[str, Any], **given: Any) -> dict[str, Any]:
    """The query members given in the URL; 400 for one the body gives as well. An empty one is one not
    given, as an empty `cursor=` or `asOf=` is on the list endpoint."""
    given = {name: value for name, value in given.items() if value is not None and value != ""}
    twice = [name for name in given if name in body]
    if twice:
        errors = [
            ErrorItem(
                f"query:{name}", "given_twice", f"{name} is given in the URL and in the body; give it once"
            )
            for name in twice
        ]
        raise BadRequest("; ".join(e.message for e in errors), code="validation_failed", errors=errors)
    return given


@router.post(
    "/api/massdata/query",
    operation_id="queryElements",
    summary="Run an iteraQL query",
    description="Runs an iteraQL query in the database and returns the elements of its last step's type, "
    "paginated like the list endpoint (`limit`, `cursor`, `sort`, `fields`, `count`). The body is a JSON "
    "object or the bare query as `text/plain`; `fields`, `limit`, `sort`, `cursor`, `count` and `asOf` may "
    "also be given in the URL, for either body (not in both places: 400 with `given_twice` in `errors[]`), "
    "and are checked as the body's members are. The page is under `items`, as the list endpoint's, and "
    "under `result` too, the key API 7.4 clients read (the same elements under both). With `Accept: "
    "application/x-ndjson` every match is streamed. Needs MASSDATA and read on every type the query "
    "passes.\n\n" + AS_OF_HELP + "\n\n" + PROJECTION_HELP + " In the body `scenarios` is an array of keys."
    "\n\n" + ITERAQL_HELP,
    response_class=JsonResponse,
    responses={
        200: {
            "description": "The selected elements",
            "content": {
                "application/json": {"schema": QUERY_RESULT_SCHEMA, "example": QUERY_RESULT_EXAMPLE},
                NDJSON: {"schema": {"type": "string"}},
            },
        },
        **problem_responses(400, 401, 403, 413, 415),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": QUERY_BODY_SCHEMA,
                    "examples": {
                        "today": {
                            "summary": "A query of today's landscape",
                            "value": {"query": "BusinessProcess[count(informationSystems) > 2]", "limit": 50},
                        },
                        "projection": {
                            "summary": "A query of the landscape as it will be on a date",
                            "value": {
                                "query": 'InformationSystem[@status = "CURRENT"]/businessProcesses;',
                                "projection": "2027-07-01",
                                "scenarios": [],
                            },
                        },
                    },
                },
                "text/plain": {
                    "schema": {"type": "string"},
                    "example": 'InformationSystem[@name.startsWith("ERP")];',
                },
            },
        }
    },
)
def run_query(
    request: Request,
    ctx: Annotated[RequestContext, Depends(read_context)],
    raw_body: Annotated[dict[str, Any], Depends(_query_body)],
    fields: Annotated[
        str | None,
        Query(
            description="comma-separated property names to return, as the body's `fields` (for a "
            "`text/plain` query, which has no other place for them)"
        ),
    ] = None,
    limit: Annotated[
        int | None,
        Query(
            description="page size, 1 to {setting:max_page_size} (default {setting:page_size}), as the "
            "body's `limit`",
            json_schema_extra=PAGE_SIZE_BOUNDS,
        ),
    ] = None,
    sort: Annotated[
        str | None, Query(description="comma-separated keys, `-` for descending, as the body's `sort`")
    ] = None,
    cursor: Annotated[
        str | None, Query(description="`nextCursor` of the previous page, as the body's")
    ] = None,
    count: Annotated[
        bool | None, Query(description="also return `total`, the number of matches, as the body's `count`")
    ] = None,
    as_of: Annotated[
        str | None,
        Query(
            alias="asOf",
            description="a revision number or an ISO-8601 time, as the body's `asOf`; empty: today",
            json_schema_extra=REVISION_OR_TIME,
        ),
    ] = None,
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> Response:
    body = _query_request(raw_body)
    in_url = _from_url(body, fields=fields, limit=limit, sort=sort, cursor=cursor, count=count, asOf=as_of)
    body.update(in_url)
    text = body["query"]

    # A problem points at where its member came from: the URL (`query:cursor`) or the body (`/cursor`).
    def pointer(name: str) -> str:
        return listing.in_url(name) if name in in_url else listing.in_body(name)

    keys = body.get("scenarios")
    asked = _Asked(
        body.get("asOf"),
        scenario_named(scenario, scenario_header),
        body.get("projection"),
        [key for key in keys if key] if keys else None,
        pointer,
    )
    moment = _moment(ctx, asked)
    prepared = listing.prepare_query(
        ctx.metamodel,
        ctx.actor,
        text,
        sort=body.get("sort"),
        fields=body.get("fields"),
        cursor=ctx.services.cursors.open(moment.cursor_purpose, body.get("cursor"), pointer("cursor")),
        limits=QueryLimits.from_settings(ctx.settings),
        pointer_of=pointer,
    )
    if _wants_ndjson(request):
        return _stream(ctx, prepared, moment)
    limit = _limit(ctx, body.get("limit"), pointer("limit"))
    page = _page(ctx, prepared, moment, limit, bool(body.get("count")))
    answer: dict[str, Any] = {
        "query": text,
        "type": prepared.type_def.name,
        "items": page.items,
        "nextCursor": ctx.services.cursors.seal(moment.cursor_purpose, page.next_cursor),
    }
    if page.total is not None:
        answer["total"] = page.total
    return aliased_json_response(answer, "items", "result")


BULK_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "BulkWrite",
    "required": ["elements"],
    "properties": {
        "elements": {
            "type": "array",
            "items": {"type": "object", "additionalProperties": {"type": "array", "items": {}}},
            # More than the setting is answered 413 (too large), not 400, so the limit is no `maxItems`.
            "description": "element bodies as for PUT/POST /api/element; with `id` an update, else a create. "
            "At most {setting:bulk_max_elements} elements, else 413 `payload_too_large`.",
        },
        "mode": {"type": "string", "enum": ["atomic", "perItem"], "default": "atomic"},
        "dryRun": {"type": "boolean", "default": False},
        "match": {"type": "string", "enum": ["id", "name"], "default": "id"},
    },
    "additionalProperties": False,
}
BULK_RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "BulkResult",
    "required": ["created", "updated", "failed", "results"],
    "properties": {
        "created": {"type": "integer"},
        "updated": {"type": "integer"},
        "failed": {"type": "integer"},
        "dryRun": {"type": "boolean"},
        "results": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["index", "status", "id", "errors"],
                "properties": {
                    "index": {"type": "integer"},
                    "status": {"type": "integer", "enum": [200, 201, 400, 403, 404, 409]},
                    "id": {"type": ["integer", "null"]},
                    "errors": {"type": "array", "items": {"type": "object"}},
                },
            },
        },
    },
}
# For BusinessProcess in the demo (Dunning is id 16): tests/api/test_request_examples.py sends it unchanged.
BULK_EXAMPLE = {
    "mode": "atomic",
    "match": "name",
    "elements": [
        {
            "name": ["Returns handling"],
            "description": ["Taking back returned bikes"],
            "parent": [{"name": "Order to cash"}],
        },
        {
            "name": ["Return inspection"],
            "parent": [{"name": "Returns handling"}],
            "informationSystems": [{"name": "Service Desk"}],
        },
        {"id": [16], "Criticality": ["medium"]},
    ],
}


async def _json_object(request: Request) -> dict[str, Any]:
    if not is_json_media_type(request.headers.get("content-type")):
        raise UnsupportedMediaType("the body must be application/json")
    raw = await request.body()
    # Decoding 10,000 elements makes a quarter of a million objects that all live on: collections
    # meanwhile would only traverse and promote them.
    with collector_paused():
        body = parse_json(raw)
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object", code="validation_failed")
    return body


@router.post(
    "/api/massdata/{type}",
    operation_id="bulkWriteElements",
    summary="Create and update many elements of a type",
    description="Each element body is written as `PUT`/`POST /api/element` would write it: with `id` it "
    'updates that element (partially), without one it creates an element, unless `match: "name"` finds '
    "an element of that name to update. Relation ends and `parent` may name elements that earlier items "
    'of the same request create (`{"name": …}`). `mode: "atomic"` (default) writes all or nothing: any '
    "failure answers 400 with every item's problems (`errors[].pointer` like `/elements/3/Costs/0`, and "
    "`results`) and writes nothing; 403 instead when an item is refused for want of a right (a type "
    "action, or a property in an attribute group the caller may not write). "
    '`mode: "perItem"` writes the good items and reports each one '
    "(`status` 201 created, 200 updated, 400, 403, 404, 409). `dryRun: true` validates and reports without "
    "writing. At most {setting:bulk_max_elements} elements per request (else 413). The whole request is "
    "one revision in "
    "history, recorded per element as single writes are. Names resolve against the repository as it was "
    "before the request plus the elements earlier items create. Needs MASSDATA, read on the type and "
    "create/update as used. With `scenario` (or `Blockrepo-Scenario`) the items are written in that "
    "planning scenario only, each checked as its own write there would be, against the scenario as it "
    "was before the request; ids of created elements come from main's sequence.",
    response_class=JsonResponse,
    responses={
        200: {
            "description": "What was (or, with dryRun, would be) written",
            "content": {"application/json": {"schema": BULK_RESULT_SCHEMA}},
        },
        **problem_responses(400, 401, 403, 404, 409, 413, 415),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": BULK_BODY_SCHEMA, "example": BULK_EXAMPLE}},
        }
    },
)
def bulk_write(
    type_name: TypeName,
    body: Annotated[dict[str, Any], Depends(_json_object)],  # read before the write lock is taken
    ctx: Annotated[RequestContext, Depends(request_context)],
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> JsonResponse:
    request = bulk.parse_request(body, ctx.settings.bulk_max_elements)
    key = scenario_named(scenario, scenario_header)
    writer = Writer(ctx.db, ctx.metamodel, ctx.actor, ctx.changes)
    with collector_paused():
        if key is None:
            outcome = bulk.bulk_write(writer, type_name, request)
        else:
            outcome = scenario_bulk.bulk_write(writer, key, type_name, request)
        if not request.dry_run:
            ctx.commit()
    return JsonResponse(outcome.as_json())


@router.delete(
    "/api/massdata/{type}",
    operation_id="bulkDeleteElements",
    summary="Delete many elements of a type",
    description="Deletes the elements `ids` of the type and their relations, all or nothing (the elements "
    "at the other ends get a new revision and a history entry). An id that names no element of the type "
    "gets 404, an element with children that are not deleted too gets 409 `has_children` unless "
    "`recursive=true`. At most {setting:bulk_max_elements} ids (else 413). Needs MASSDATA and delete on "
    "the type.",
    response_class=JsonResponse,
    responses={
        200: {
            "description": "How many elements were deleted (with recursive, descendants included)",
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["deleted"],
                        "properties": {"deleted": {"type": "integer"}},
                    }
                }
            },
        },
        **problem_responses(400, 401, 403, 404, 409, 413, 415),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": {
                        "type": "object",
                        "required": ["ids"],
                        "properties": {
                            "ids": {
                                "type": "array",
                                "items": {"type": "integer", "minimum": 1, "maximum": 2**31 - 1},
                                # More ids than the setting get 413 (too large), as for bulk writes.
                                "description": "at most {setting:bulk_max_elements} ids, else 413 "
                                "`payload_too_large`",
                            }
                        },
                        "additionalProperties": False,
                    },
                    "example": {"ids": [16, 37]},
                }
            },
        }
    },
)
def bulk_delete(
    type_name: TypeName,
    body: Annotated[dict[str, Any], Depends(_json_object)],  # read before the write lock is taken
    ctx: Annotated[RequestContext, Depends(request_context)],
    recursive: Annotated[bool, Query(description="also delete every descendant")] = False,
) -> JsonResponse:
    ids = bulk.parse_delete(body, ctx.settings.bulk_max_elements)
    with collector_paused():
        deleted = bulk.bulk_delete(
            Writer(ctx.db, ctx.metamodel, ctx.actor, ctx.changes), type_name, ids, recursive=recursive
        )
        ctx.commit()
    return JsonResponse({"deleted": deleted})
