"""Routes of the ArchiMate exchange (blockrepo's own, API.md section 11): the repository as an Open Group
exchange file (or Archi's CSV files), and such a file imported. Thin: the rules live in
blockrepo.massdata.transfer.archimate."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response, StreamingResponse

from blockrepo.api.context import RequestContext, open_read_context, principal_of, request_context
from blockrepo.api.element_answers import element_writer
from blockrepo.api.parameters import AsOfQuery, ScenarioHeader, ScenarioQuery, scenario_named
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import JsonResponse
from blockrepo.errors import BadRequest, ErrorItem, UnsupportedMediaType, ValidationFailed
from blockrepo.interpreter import collector_paused
from blockrepo.massdata import asof as past
from blockrepo.massdata import listing
from blockrepo.massdata.transfer.archimate.csv_files import read_archi_csv_zip
from blockrepo.massdata.transfer.archimate.export import export_archi_csv, stream_archimate
from blockrepo.massdata.transfer.archimate.importer import MappingReport, import_model
from blockrepo.massdata.transfer.archimate.mapping import ArchimateMapping, load_mapping
from blockrepo.massdata.transfer.archimate.model import ArchimateModel
from blockrepo.massdata.transfer.archimate.reader import read_exchange
from blockrepo.massdata.transfer.export import LandscapeSource
from blockrepo.massdata.transfer.importer import ImportReport
from blockrepo.massdata.transfer.plan import ExportPlan, plan_export
from blockrepo.scenarios import service as scenarios

router = APIRouter(tags=["exchange"])
XML = "application/xml"
ZIP = "application/zip"
_XML_TYPES = frozenset({XML, "text/xml"})
CHUNK_BYTES = 1 << 16

REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ArchimateImportReport",
    "required": ["created", "updated", "deleted", "failed", "errors", "mapping"],
    "properties": {
        "created": {"type": "integer"},
        "updated": {"type": "integer"},
        "deleted": {"type": "integer"},
        "failed": {"type": "integer"},
        "errors": {"type": "array", "items": {"type": "object"}},
        "dryRun": {"type": "boolean"},
        "rows": {"type": "array", "items": {"type": "object"}},
        "rowsLeftOut": {"type": "integer"},
        "mapping": {
            "type": "object",
            "description": "what the file held and what became of it: `format`, `elementsRead`, "
            "`relationshipsRead`, `viewsIgnored`, `mapped` (records by building block type), `relations` "
            "(entries by relation type, and `parent`), `notMapped` (each element or relationship left out: "
            "`identifier`, `type`, `name`, `reason`) and `propertiesNotMapped`, with their counts",
        },
    },
}
REPORT_EXAMPLE = {
    "created": 2,
    "updated": 0,
    "deleted": 0,
    "failed": 0,
    "errors": [],
    "mapping": {
        "format": "3.1",
        "elementsRead": 3,
        "relationshipsRead": 1,
        "viewsIgnored": 0,
        "mapped": {"BusinessProcess": 1, "BusinessUnit": 1},
        "relations": {},
        "notMapped": [
            {
                "identifier": "id-52b86b7b",
                "type": "Assignment",
                "name": "",
                "reason": "no relation type joins a BusinessUnit and a BusinessProcess as Assignment",
            }
        ],
        "notMappedCount": 1,
        "propertiesNotMapped": [],
        "propertiesNotMappedCount": 0,
    },
}


# An exchange file with two systems and the flow between them, as Archi writes one.
IMPORT_EXAMPLE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" identifier="id-model">\n'
    '  <name xml:lang="en">From Archi</name>\n'
    "  <elements>\n"
    '    <element identifier="id-ticketing" xsi:type="ApplicationComponent">'
    '<name xml:lang="en">Ticketing</name></element>\n'
    '    <element identifier="id-crm" xsi:type="ApplicationComponent">'
    '<name xml:lang="en">CRM</name></element>\n'
    "  </elements>\n"
    "  <relationships>\n"
    '    <relationship identifier="id-flow" source="id-ticketing" target="id-crm" xsi:type="Flow">'
    '<name xml:lang="en">Tickets to CRM</name></relationship>\n'
    "  </relationships>\n"
    "</model>\n"
)


def _spooled(chunks: Iterator[bytes]) -> IO[bytes]:
    # Written whole before the first byte goes out: a failure is an error response, not a cut file, and a
    # slow download holds no snapshot open.
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `_sent`)
    try:
        for chunk in chunks:
            spool.write(chunk)
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def _spooled_zip(
    ctx: RequestContext,
    plan: ExportPlan,
    mapping: ArchimateMapping,
    revision: int | None,
    landscape: LandscapeSource | None,
) -> IO[bytes]:
    # Archi's CSV files zipped into a temporary file, as `_spooled` writes the exchange file.
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `_sent`)
    try:
        export_archi_csv(
            ctx.services.read_sessions, plan, mapping, ctx.actor, spool, as_of=revision, landscape=landscape
        )
        spool.seek(0)
    except BaseException:
        spool.close()
        raise
    return spool


def _sent(spool: IO[bytes]) -> Iterator[bytes]:
    with spool:
        while chunk := spool.read(CHUNK_BYTES):
            yield chunk


@router.get(
    "/api/exchange/archimate",
    operation_id="exportArchimate",
    summary="Export as an ArchiMate model",
    description="The repository as the caller may read it (or the types in `types`; as it stood at "
    "`asOf`) as an ArchiMate 3.1 Model Exchange File (The Open Group's `archimate3_Diagram.xsd`): building "
    "blocks as elements and relations as relationships by the mapping in force (docs/guide/archimate.md), "
    "hierarchies as composition and as folders of the organization, attributes as typed properties, "
    "information flows as flow relationships, and two views (information flows; systems by domain). "
    "`format=csv`: Archi's three CSV files in a zip. Identifiers are `br-<type>-<id>`, so that a file "
    "imported back updates the elements it came from. Needs EXPORT (and VIEW_HISTORY with `asOf`). With "
    "`scenario` (or `Blockrepo-Scenario`) the model is that planning scenario's landscape as a read in it "
    "shows it; the model's properties give main's revision at the scenario's base and `blockrepo scenario`"
    " its key (a scenario the caller does not see is 404; `asOf` with it is 400 `not_with_scenario`). Not "
    "part of LUY 7.4 (API.md section 11).",
    response_class=Response,
    responses={
        200: {
            "description": "The model",
            "content": {
                XML: {"schema": {"type": "string"}},
                ZIP: {"schema": {"type": "string", "format": "binary"}},
            },
        },
        **problem_responses(400, 401, 403, 404),
    },
)
def export_archimate(
    ctx: Annotated[RequestContext, Depends(request_context)],
    types: Annotated[
        str | None, Query(description="comma-separated type names (default: every readable type)")
    ] = None,
    as_of: AsOfQuery = None,
    format: Annotated[
        str, Query(description="xml (default) or csv", json_schema_extra={"enum": ["xml", "csv"]})
    ] = "xml",
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> Response:
    key = scenario_named(scenario, scenario_header)
    if key is not None and as_of:
        raise ValidationFailed(
            "asOf and scenario cannot be combined: a scenario is read as it is now",
            errors=[ErrorItem("query:asOf", "not_with_scenario", "leave out asOf or the scenario")],
        )
    if format not in ("xml", "csv"):
        raise BadRequest(
            "format is xml or csv", code="validation_failed", errors=[ErrorItem("format", "wrong_value", "")]
        )
    names = [t.strip() for t in types.split(",") if t.strip()] if types else None
    plan = plan_export(ctx.metamodel, ctx.actor, names)
    revision = past.past_revision(ctx.db, ctx.actor, as_of) if as_of else None
    landscape = None
    if key is not None:
        layer, named = scenarios.exported_layer(ctx.db, ctx.actor, key)
        landscape = past.scenario_landscape(ctx.metamodel, ctx.actor, layer, named)
    mapping = load_mapping(ctx.settings.archimate_mapping)
    if format == "csv":
        return StreamingResponse(
            _sent(_spooled_zip(ctx, plan, mapping, revision, landscape)),
            media_type=ZIP,
            headers={"Content-Disposition": 'attachment; filename="blockrepo-archimate-csv.zip"'},
        )
    chunks = stream_archimate(
        ctx.services.read_sessions, plan, mapping, ctx.actor, as_of=revision, landscape=landscape
    )
    return StreamingResponse(
        _sent(_spooled(chunks)),
        media_type=XML,
        headers={"Content-Disposition": 'attachment; filename="blockrepo-archimate.xml"'},
    )


def _may_import(request: Request) -> None:
    """403 for a caller without IMPORT, before a byte of the body is read (as the massdata import)."""
    with open_read_context(request.app.state.services, principal_of(request)) as read:
        listing.require_massdata(read.actor, "IMPORT")


async def _model(request: Request) -> ArchimateModel:
    _may_import(request)
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type not in _XML_TYPES and media_type != ZIP:
        raise UnsupportedMediaType(f"send an exchange file as {XML} or Archi's CSV files as {ZIP}")
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
    limit = request.app.state.services.settings.import_archimate_max_concepts
    # Parsed in a worker thread, from the bytes as they arrived (no copy: a model's file may be 200 MiB);
    # handed over in a list the reader empties, so that the body goes once the model is read.
    handed_over = [raw]
    del raw
    reader = read_archi_csv_zip if media_type == ZIP else read_exchange
    return await run_in_threadpool(_read_handed_over, reader, handed_over, limit)


def _read_handed_over(
    reader: Callable[[bytes | bytearray, int], ArchimateModel], handed_over: list[bytearray], limit: int
) -> ArchimateModel:
    return reader(handed_over.pop(), limit)


@router.post(
    "/api/exchange/archimate",
    operation_id="importArchimate",
    summary="Import an ArchiMate model",
    description="Imports an ArchiMate Model Exchange File (3.0/3.1, or 2.1; as Archi and other tools write "
    "it) or a zip of Archi's CSV files (elements, relations, properties), all or nothing, as one revision. "
    "Elements become building blocks by the mapping in force (docs/guide/archimate.md), properties the "
    "attributes of the same name, relationships relation ends (composition between two of one type: the "
    "parent; a flow between two systems: an information flow). Elements are created or updated: by the "
    "identifiers of a blockrepo export where the file is this repository's, by the identifiers an earlier "
    "import of the same model remembered, else by name; attributes the "
    "file holds no property for are kept. Whatever is not mapped is listed in `mapping.notMapped` (never "
    "dropped silently). `dryRun=true` reports without writing. Needs IMPORT (checked before the body is "
    "read) and create and update on the types. Not part of LUY 7.4 (API.md section 11).",
    response_class=JsonResponse,
    responses={
        200: {
            "description": "What was (or would be) imported, and the mapping report",
            "content": {"application/json": {"schema": REPORT_SCHEMA, "example": REPORT_EXAMPLE}},
        },
        **problem_responses(400, 401, 403, 404, 409, 413, 415),
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                XML: {
                    "schema": {"type": "string", "description": "an ArchiMate Model Exchange File"},
                    "example": IMPORT_EXAMPLE,
                },
                # A zip has no example a description could hold: its schema says what to send.
                ZIP: {
                    "schema": {
                        "type": "string",
                        "format": "binary",
                        "description": "a zip of Archi's CSV export: elements.csv, relations.csv and "
                        "properties.csv (Archi's prefix before each name is allowed)",
                    }
                },
            },
        }
    },
)
def import_archimate(
    # Read and parsed before the context takes the write lock (dependencies are solved in this order).
    model: Annotated[ArchimateModel, Depends(_model)],
    ctx: Annotated[RequestContext, Depends(request_context)],
    dry_run: Annotated[bool, Query(alias="dryRun", description="validate and report only")] = False,
    new_scenario: Annotated[
        str | None,
        Query(
            alias="newScenario",
            max_length=255,
            description="land the import in a new planning scenario of this name, for review, instead of "
            "main (the model may not need attributes, types or accounts main lacks)",
        ),
    ] = None,
) -> JsonResponse:
    mapping = load_mapping(ctx.settings.archimate_mapping)

    def run_import() -> tuple[ImportReport, MappingReport]:
        return import_model(
            ctx.db,
            ctx.metamodel,
            ctx.actor,
            ctx.changes,
            mapping,
            model,
            hash_password=ctx.services.passwords.hash,
            list_rows=dry_run,
        )

    with collector_paused():
        if new_scenario and not dry_run:
            (report, mapped), scenario = scenarios.into_new_scenario(
                element_writer(ctx), new_scenario, run_import
            )
            ctx.commit()
            landed = scenario.model_dump(mode="json", by_alias=True)
            return JsonResponse({**report.as_json(), "mapping": mapped.as_json(), "scenario": landed})
        report, mapped = run_import()
        report.dry_run = dry_run
        if not dry_run:
            ctx.commit()
    return JsonResponse({**report.as_json(), "mapping": mapped.as_json()})
