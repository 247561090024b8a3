"""Routes of the elements API (version 7.4): one building block at a time.

Thin: the rules live in blockrepo.elements.service."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Query, Request
from starlette.responses import Response

from blockrepo.api.body import read_json_object
from blockrepo.api.context import (
    AppServices,
    RequestContext,
    element_write_context,
    open_read_context,
    principal_of,
)
from blockrepo.api.element_answers import (
    element_response,
    element_writer,
    in_scenario,
    update_element,
    view_tag_of,
)
from blockrepo.api.etag import element_etag, if_match_check, not_modified
from blockrepo.api.parameters import REVISION_OR_TIME, ScenarioHeader, ScenarioQuery, given, scenario_named
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import JsonResponse
from blockrepo.elements import service
from blockrepo.elements.read import by_id as reading
from blockrepo.errors import ErrorItem, ValidationFailed
from blockrepo.history import asof
from blockrepo.history.schemas import AS_OF_DESCRIPTION
from blockrepo.scenarios import service as scenarios

router = APIRouter(tags=["Elements"])

TypeName = Annotated[
    str,
    Path(alias="type", description="persistent name of a building block type, e.g. `BusinessProcess`"),
]
ElementId = Annotated[int, Path(alias="id", ge=1, le=2**31 - 1, description="the element's id")]
IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        description='only act if the element is at this revision: `W/"3"`, `"3"`, `3` or `*`; else 412',
    ),
]

ELEMENT_EXAMPLE: dict[str, Any] = {
    "id": [4205],
    "type": ["BusinessProcess"],
    "revision": [3],
    "name": ["Order handling"],
    "description": ["From order to invoice"],
    "parent": [{"id": 4200, "name": "Sales"}],
    "children": [],
    "Criticality": ["high"],
    "informationSystems": [{"id": 17, "name": "ERP", "attributes": {"Share": [60]}}],
    "lastModificationTime": ["2026-11-22T09:30:00.123Z"],
    "lastModificationUser": ["system"],
}
ELEMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Element",
    "description": "Property name -> array of values. Read-only: id, type, revision, children, "
    "lastModificationTime, lastModificationUser. Relation ends and parent hold `{id, name}` objects "
    "(plus `attributes` on attributable relations). An empty property is `[]`.",
    "additionalProperties": {"type": "array", "items": {}},
}
WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "ElementWrite",
    "description": "Each key present replaces that property's whole value list; keys not present are kept; "
    "`[]` clears. Values: text/richtext -> string; number -> number within min/max; date -> "
    '"YYYY-MM-DD"; dateInterval -> {"start": date|null, "end": date|null}; boolean; enum -> literal name; '
    'responsibility -> user login. Relation ends and parent take ids, {"id": n} or {"name": "…"} '
    '(plus "attributes": {"Attr": [values]} on attributable relations). Read-only keys are ignored, but `id` '
    "must match the path.",
    "additionalProperties": {"type": "array", "items": {}},
}
# Request examples for a BusinessProcess of the demo ("Order handling", id 7; ERP is InformationSystem 128),
# so each can be sent as it stands (tests/api/test_request_examples.py does).
UPDATE_EXAMPLES: dict[str, Any] = {
    "attributes": {
        "summary": "Set the description and two attributes",
        "value": {
            "description": ["From order to invoice, for dealers and the online shop"],
            "Criticality": ["high"],
            "Tags": ["customer-facing", "strategic"],
        },
    },
    "relations": {
        "summary": "Replace a relation end and the parent, by id and by name",
        "value": {
            "parent": [{"name": "Order to cash"}],
            "informationSystems": [128, {"name": "Online Shop"}],
        },
    },
    "clear": {"summary": "Clear a property", "value": {"Criticality": []}},
}
CREATE_EXAMPLES: dict[str, Any] = {
    "full": {
        "summary": "A child process with attributes and relations, targets named or by id",
        "value": {
            "name": ["Returns handling"],
            "description": ["Taking back, inspecting and refunding returned bikes"],
            "parent": [{"name": "Order to cash"}],
            "Criticality": ["medium"],
            "Responsible": ["bernd"],
            "predecessors": [{"name": "Delivery"}],
            "informationSystems": [128, {"name": "Service Desk"}],
        },
    },
    "minimal": {"summary": "Only the required name", "value": {"name": ["Warranty claims"]}},
}
VALIDATION_EXAMPLE = {
    "type": "about:blank",
    "title": "Validation Failed",
    "status": 400,
    "detail": "2 problem(s): /Costs/0: expected a number, got a string; /parent/0: there is no element 99",
    "code": "validation_failed",
    "requestId": "5f0c3a",
    "errors": [
        {"pointer": "/Costs/0", "code": "wrong_type", "message": "expected a number, got a string"},
        {"pointer": "/parent/0", "code": "unknown_target", "message": "there is no element 99"},
    ],
}
ETAG_HEADER = {
    "ETag": {
        "description": 'the element\'s revision as a weak tag, e.g. `W/"3"`; for a caller who may not read '
        'every property of the type, followed by a digest of what the caller sees, e.g. `W/"3.1f0c…"` (send '
        "either form in `If-Match`: it compares the revision)",
        "schema": {"type": "string"},
    }
}


def _element_response(status: int, description: str, *, location: bool = False) -> dict[int | str, Any]:
    headers = dict(ETAG_HEADER)
    if location:
        headers["Location"] = {"description": "path of the new element", "schema": {"type": "string"}}
    return {
        status: {
            "description": description,
            "headers": headers,
            "content": {"application/json": {"schema": ELEMENT_SCHEMA, "example": ELEMENT_EXAMPLE}},
        }
    }


def _write_body(examples: dict[str, Any]) -> dict[str, Any]:
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": WRITE_SCHEMA, "examples": examples}},
        }
    }


async def json_body(request: Request) -> dict[str, Any]:
    """The request body as a JSON object (415 if not JSON, 400 if malformed)."""
    return await read_json_object(request)


@router.get(
    "/api/element/{type}/{id}",
    operation_id="getElement",
    summary="Read one element",
    description="The element as the caller may see it: properties in attribute groups the caller cannot "
    "read and relation ends to types the caller cannot read are left out. Answers `304` when "
    "`If-None-Match` names the current ETag (the revision and, for a caller who sees less than every "
    "property, what the caller sees: another caller's tag never gets a 304 for a body this caller would "
    "not get). With `asOf`, the element as it stood at that revision or "
    "time (rebuilt from history; deleted elements readable as they were; 404 if it did not exist then).",
    response_class=JsonResponse,
    responses={
        **_element_response(200, "The element"),
        304: {"description": "Not modified (If-None-Match matched)"},
        **problem_responses(400, 401, 403, 404),
    },
)
def get_element(
    request: Request,
    type_name: TypeName,
    element_id: ElementId,
    if_none_match: Annotated[str | None, Header(alias="If-None-Match")] = None,
    as_of: Annotated[
        str | None, Query(alias="asOf", description=AS_OF_DESCRIPTION, json_schema_extra=REVISION_OR_TIME)
    ] = None,
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> Response:
    # Most GETs never get here: `ElementReadLane` (api/lanes/read.py) answers them. This answers the rest
    # (`asOf`, a scenario, HEAD, an id out of range is a 400 from the parameter, errors, sessions that need
    # a write), in a worker thread: history replay may take long.
    as_of, key = given(as_of), scenario_named(scenario, scenario_header)
    if as_of is not None and key is not None:
        raise ValidationFailed(
            "asOf and scenario cannot be combined: a scenario is read as it is now",
            errors=[ErrorItem("query:asOf", "not_with_scenario", "leave out asOf or the scenario")],
        )
    services: AppServices = request.app.state.services
    with open_read_context(services, principal_of(request)) as ctx:
        type_def = reading.readable_type(ctx.metamodel, ctx.actor, type_name)
        view_tag = reading.view_tag(ctx.metamodel, ctx.actor, type_def)
        if key is not None:
            with services.read_sessions() as db:
                element = scenarios.read_element(db, ctx.actor, ctx.metamodel, key, type_name, element_id)
            view_tag = in_scenario(view_tag, key)
        elif as_of is None:
            element = reading.read_element(ctx.connection, ctx.metamodel, ctx.actor, type_name, element_id)
        else:
            with services.read_sessions() as db:
                element = asof.get_element_as_of(db, ctx.metamodel, ctx.actor, type_def, element_id, as_of)
    etag = element_etag(element["revision"][0], view_tag)
    if not_modified(if_none_match, etag):
        return Response(status_code=304, headers={"ETag": etag})
    return element_response(element, view_tag)


UPDATE_DESCRIPTION = (
    "Partial update: each key present replaces that property's whole value list, keys not present are kept, "
    "`[]` clears. Both ends of a changed relation change together (the other element gets a new revision "
    "too). A relation end whose other side holds one value (e.g. an information flow's `sourceSystem`) is "
    "not taken over: listing a flow that already has another source system is a `cardinality` error. A body "
    "that changes nothing writes nothing and keeps the revision. Every problem of the body is reported in "
    "one 400. With `If-Match`, a stale revision gets 412 and nothing changes."
)
UPDATE_RESPONSES: dict[int | str, Any] = {
    **_element_response(200, "The updated element with its new ETag"),
    **problem_responses(400, 401, 403, 404, 409, 412, 413, 415, examples={400: VALIDATION_EXAMPLE}),
}


def update_element_route(
    type_name: TypeName,
    element_id: ElementId,
    body: Annotated[dict[str, Any], Depends(json_body)],  # parsed before the write lock is taken
    ctx: Annotated[RequestContext, Depends(element_write_context)],
    if_match: IfMatch = None,
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> JsonResponse:
    key = scenario_named(scenario, scenario_header)
    if key is not None:
        element = scenarios.update_element(
            element_writer(ctx), key, type_name, element_id, body, if_match=if_match_check(if_match)
        )
        ctx.commit()
        return element_response(element, in_scenario(view_tag_of(ctx, element), key))
    return element_response(*update_element(ctx, type_name, element_id, body, if_match))


# PUT and PATCH are one operation (a partial update) under two methods; each keeps its own operation id.
for _method, _operation_id, _summary in (
    ("PUT", "updateElement", "Update an element (partial)"),
    ("PATCH", "patchElement", "Update an element (partial, same as PUT)"),
):
    router.add_api_route(
        "/api/element/{type}/{id}",
        update_element_route,
        methods=[_method],
        operation_id=_operation_id,
        summary=_summary,
        description=UPDATE_DESCRIPTION,
        response_class=JsonResponse,
        responses=UPDATE_RESPONSES,
        openapi_extra=_write_body(UPDATE_EXAMPLES),
    )


@router.post(
    "/api/element/{type}",
    operation_id="createElement",
    summary="Create an element",
    description="Creates an element from a body as for PUT; `name` is required and unique in the type "
    "(else 409 `name_conflict`), mandatory attributes need a value. A new child goes last among its "
    "siblings. Answers 201 with the element, its `Location` and `ETag`.",
    status_code=201,
    response_class=JsonResponse,
    responses={
        **_element_response(201, "The new element", location=True),
        **problem_responses(400, 401, 403, 404, 409, 413, 415, examples={400: VALIDATION_EXAMPLE}),
    },
    openapi_extra=_write_body(CREATE_EXAMPLES),
)
def post_element(
    type_name: TypeName,
    body: Annotated[dict[str, Any], Depends(json_body)],  # parsed before the write lock is taken
    ctx: Annotated[RequestContext, Depends(element_write_context)],
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> JsonResponse:
    key = scenario_named(scenario, scenario_header)
    if key is not None:
        element = scenarios.create_element(element_writer(ctx), key, type_name, body)
    else:
        element = service.create_element(element_writer(ctx), type_name, body)
    ctx.commit()
    location = f"/api/element/{element['type'][0]}/{element['id'][0]}"
    view_tag = view_tag_of(ctx, element)
    if key is not None:
        location += f"?scenario={key}"
        view_tag = in_scenario(view_tag, key)
    return element_response(element, view_tag, 201, {"Location": location})


@router.delete(
    "/api/element/{type}/{id}",
    operation_id="deleteElement",
    summary="Delete an element",
    description="Deletes the element and its relations (the elements at the other ends get a new revision "
    "and a history entry). An element with children gets 409 `has_children` unless `recursive=true`, which "
    "deletes the whole subtree. With `If-Match`, a stale revision gets 412.",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "Deleted"}, **problem_responses(400, 401, 403, 404, 409, 412)},
)
def delete_element(
    type_name: TypeName,
    element_id: ElementId,
    ctx: Annotated[RequestContext, Depends(element_write_context)],
    if_match: IfMatch = None,
    recursive: Annotated[bool, Query(description="also delete every descendant")] = False,
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> Response:
    key = scenario_named(scenario, scenario_header)
    if key is not None:
        scenarios.delete_element(
            element_writer(ctx), key, type_name, element_id, if_match=if_match_check(if_match)
        )
    else:
        service.delete_element(
            element_writer(ctx), type_name, element_id, recursive=recursive, if_match=if_match_check(if_match)
        )
    ctx.commit()
    return Response(status_code=204)
