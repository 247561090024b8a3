"""Routes of the metamodel API (version 7.4): read the metamodel, edit types and relation types."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Response
from fastapi.openapi.models import Example
from starlette.responses import Response as StarletteResponse

from blockrepo.api.body import require_json_body
from blockrepo.api.context import RequestContext, races_as_conflicts, request_context
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import model_response
from blockrepo.elements.edits import metamodel as metamodel_edits
from blockrepo.metamodel import service
from blockrepo.metamodel.schemas import (
    BlockTypeCreate,
    BlockTypeOut,
    BlockTypeUpdate,
    MetamodelOut,
    RelationTypeCreate,
    RelationTypeOut,
    RelationTypeUpdate,
)
from blockrepo.metamodel.snapshot import Metamodel

router = APIRouter(prefix="/api/metamodel", dependencies=[Depends(races_as_conflicts)], tags=["metamodel"])

READ_ERRORS = problem_responses(401, 403, 404)
WRITE_ERRORS = problem_responses(400, 401, 403, 404, 409, 415)

# Request examples fit the default metamodel and the demo (tests/api/test_request_examples.py sends them).
TYPE_CREATE_EXAMPLES: dict[str, Example] = {
    "hierarchical": {
        "summary": "A hierarchical type (sites inside sites)",
        "value": {
            "name": "DataCenter",
            "displayName": "Data Center",
            "abbreviation": "DC",
            "description": "A site that runs infrastructure",
            "hierarchical": True,
        },
    },
    "minimal": {"summary": "Only the persistent name", "value": {"name": "Capability"}},
}
TYPE_UPDATE_EXAMPLES: dict[str, Example] = {
    "labels": {
        "summary": "New display name, abbreviation and description (absent keys stay)",
        "value": {
            "displayName": "Application",
            "abbreviation": "APP",
            "description": "A software system that supports the business",
        },
    },
    "hide": {"summary": "Hide the type from the interface's menus", "value": {"hidden": True}},
}
RELATION_TYPE_CREATE_EXAMPLES: dict[str, Example] = {
    "relation": {
        "summary": "Projects change business functions; a function has at most one project",
        "value": {
            "name": "Project_BusinessFunction",
            "description": "Which functions a project changes",
            "source": "Project",
            "sourceEnd": "businessFunctions",
            "target": "BusinessFunction",
            "targetEnd": "projects",
            "sourceMultiple": True,
            "targetMultiple": False,
            "attributable": False,
        },
    },
    "attributable": {
        "summary": "An attributable relation with the default name `ItService_BusinessUnit`",
        "value": {
            "source": "ItService",
            "sourceEnd": "consumers",
            "target": "BusinessUnit",
            "targetEnd": "consumedServices",
            "attributable": True,
        },
    },
}
RELATION_TYPE_UPDATE_EXAMPLES: dict[str, Example] = {
    "description": {
        "summary": "New description; several targets allowed (absent keys stay)",
        "value": {"description": "Where a system runs", "targetMultiple": True},
    },
}


def committed_metamodel(ctx: RequestContext) -> Metamodel:
    return service.committed_metamodel(ctx.db, ctx.services.metamodels)


@router.get(
    "",
    operation_id="getMetamodel",
    response_model=MetamodelOut,
    responses=READ_ERRORS,
    summary="The whole metamodel",
)
def get_metamodel(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """Types, relation types, attributes and attribute groups as the caller may see them: editors of the
    metamodel or of attributes see everything; others see the types they may read, attributes of groups
    they may read and relation ends between readable types."""
    return model_response(service.MetamodelView(ctx.metamodel, ctx.actor).whole())


@router.get(
    "/types",
    operation_id="listTypes",
    response_model=list[BlockTypeOut],
    responses=READ_ERRORS,
    summary="Every building block type",
)
def list_types(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(service.MetamodelView(ctx.metamodel, ctx.actor).types())


@router.post(
    "/types",
    operation_id="createType",
    status_code=201,
    response_model=BlockTypeOut,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json_body)],
    summary="Create a building block type",
)
def create_type(
    body: Annotated[BlockTypeCreate, Body(openapi_examples=TYPE_CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs EDIT_METAMODEL. The name must be identifier-like, unique (case-insensitively) and no reserved
    word; it never changes afterwards. The new type has the built-ins of every type and no attributes."""
    name = service.create_type(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, body)
    ctx.commit()
    view = service.MetamodelView(committed_metamodel(ctx), ctx.actor)
    return model_response(
        view.block_type(view.type_named(name)),
        status_code=201,
        headers={"Location": f"/api/metamodel/types/{name}"},
    )


@router.get(
    "/types/{type}",
    operation_id="getType",
    response_model=BlockTypeOut,
    responses=READ_ERRORS,
    summary="One type",
)
def get_type(type: str, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """The type's properties (built-ins and attributes, with value type, cardinality, group and whether
    the caller may write them) and its relation ends."""
    view = service.MetamodelView(ctx.metamodel, ctx.actor)
    return model_response(view.block_type(view.type_named(type)))


@router.put(
    "/types/{type}",
    operation_id="updateType",
    response_model=BlockTypeOut,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json_body)],
    summary="Change a type's display name, abbreviation, description or hidden flag",
)
def update_type(
    type: str,
    body: Annotated[BlockTypeUpdate, Body(openapi_examples=TYPE_UPDATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs EDIT_METAMODEL. Absent keys stay; read-only keys of the GET body are ignored; `name` must be
    unchanged. `hierarchical: false` is refused (409) while elements of the type have parents."""
    service.update_type(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, type, body, elements=metamodel_edits)
    ctx.commit()
    view = service.MetamodelView(committed_metamodel(ctx), ctx.actor)
    return model_response(view.block_type(view.type_named(type)))


@router.delete(
    "/types/{type}",
    operation_id="deleteType",
    status_code=204,
    responses=WRITE_ERRORS,
    summary="Delete an unused type",
)
def delete_type(type: str, ctx: RequestContext = Depends(request_context)) -> Response:
    """Needs EDIT_METAMODEL. Refused with 409 (`in_use`) while the type has elements; its relation types
    (which then hold no relations) are deleted with it."""
    service.delete_type(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, type, elements=metamodel_edits)
    ctx.commit()
    return Response(status_code=204)


@router.get(
    "/relationtypes",
    operation_id="listRelationTypes",
    response_model=list[RelationTypeOut],
    responses=READ_ERRORS,
    summary="Every relation type",
)
def list_relation_types(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(service.MetamodelView(ctx.metamodel, ctx.actor).relation_types())


@router.post(
    "/relationtypes",
    operation_id="createRelationType",
    status_code=201,
    response_model=RelationTypeOut,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json_body)],
    summary="Create a relation type",
)
def create_relation_type(
    body: Annotated[RelationTypeCreate, Body(openapi_examples=RELATION_TYPE_CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs EDIT_METAMODEL. `sourceEnd` becomes a property of the source type listing targets,
    `targetEnd` one of the target type listing sources; neither may clash with a property or end the
    type already has. The name defaults to `{source}_{target}`."""
    name = service.create_relation_type(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, body)
    ctx.commit()
    view = service.MetamodelView(committed_metamodel(ctx), ctx.actor)
    return model_response(
        view.relation_type(view.relation_type_named(name)),
        status_code=201,
        headers={"Location": f"/api/metamodel/relationtypes/{name}"},
    )


@router.get(
    "/relationtypes/{name}",
    operation_id="getRelationType",
    response_model=RelationTypeOut,
    responses=READ_ERRORS,
    summary="One relation type",
)
def get_relation_type(name: str, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    view = service.MetamodelView(ctx.metamodel, ctx.actor)
    return model_response(view.relation_type(view.relation_type_named(name)))


@router.put(
    "/relationtypes/{name}",
    operation_id="updateRelationType",
    response_model=RelationTypeOut,
    responses=WRITE_ERRORS,
    dependencies=[Depends(require_json_body)],
    summary="Change a relation type's description, cardinalities or attributable flag",
)
def update_relation_type(
    name: str,
    body: Annotated[RelationTypeUpdate, Body(openapi_examples=RELATION_TYPE_UPDATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs EDIT_METAMODEL. Names and joined types never change (they may be sent unchanged). Making an
    end single-valued is refused (409) while some element holds several values in it; `attributable:
    false` is refused while attributes are activated for the relation type."""
    service.update_relation_type(
        ctx.db, ctx.actor, ctx.metamodel, ctx.changes, name, body, elements=metamodel_edits
    )
    ctx.commit()
    view = service.MetamodelView(committed_metamodel(ctx), ctx.actor)
    return model_response(view.relation_type(view.relation_type_named(name)))


@router.delete(
    "/relationtypes/{name}",
    operation_id="deleteRelationType",
    status_code=204,
    responses=WRITE_ERRORS,
    summary="Delete a relation type",
)
def delete_relation_type(name: str, ctx: RequestContext = Depends(request_context)) -> Response:
    """Needs EDIT_METAMODEL. Removes every relation of the type; each element that loses relations gets a
    new revision and an "updated" changeset in history."""
    service.delete_relation_type(
        ctx.db, ctx.actor, ctx.metamodel, ctx.changes, name, elements=metamodel_edits
    )
    ctx.commit()
    return Response(status_code=204)
