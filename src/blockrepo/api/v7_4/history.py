"""Routes of the history API (version 7.4): element and type history and the change feed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query

from blockrepo.api.context import RequestContext, request_context
from blockrepo.api.cursors import HISTORY
from blockrepo.api.limits import PAGE_SIZE_BOUNDS
from blockrepo.api.parameters import REVISION, REVISION_OR_TIME, given
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import JsonResponse
from blockrepo.history import diff, service
from blockrepo.history.schemas import (
    CURSOR_DESCRIPTION,
    ELEMENT_HISTORY_DESCRIPTION,
    FEED_DESCRIPTION,
    FROM_DESCRIPTION,
    LIMIT_DESCRIPTION,
    SINCE_DESCRIPTION,
    TO_DESCRIPTION,
    TYPE_HISTORY_DESCRIPTION,
    HistoryPage,
)

router = APIRouter(tags=["history"])

_ERRORS = problem_responses(400, 401, 403)
_TYPE_ERRORS = problem_responses(400, 401, 403, 404)

# Parsed by the history service from the text; described as the integer it must be.
Limit = Annotated[
    str | None,
    Query(
        description=LIMIT_DESCRIPTION,
        examples=[100],
        json_schema_extra={"type": "integer", **PAGE_SIZE_BOUNDS},
    ),
]
Cursor = Annotated[str | None, Query(description=CURSOR_DESCRIPTION + "; empty: the first page")]
From = Annotated[
    str | None,
    Query(
        alias="from",
        description=FROM_DESCRIPTION,
        examples=["2026-11-01T00:00:00Z"],
        json_schema_extra=REVISION_OR_TIME,
    ),
]
To = Annotated[
    str | None, Query(description=TO_DESCRIPTION, examples=[42], json_schema_extra=REVISION_OR_TIME)
]
TypeName = Annotated[str, Path(alias="type", description="building block type, e.g. BusinessProcess")]


def _page(
    ctx: RequestContext, limit: str | None, cursor: str | None, from_: str | None, to: str | None
) -> service.PageParameters:
    # An empty parameter is one not given (a form's empty field), as on every other listing.
    position = ctx.services.cursors.open(HISTORY, cursor, "query:cursor")
    return service.PageParameters(limit=given(limit), cursor=position, from_=given(from_), to=given(to))


def _sealed(ctx: RequestContext, page: dict[str, Any]) -> JsonResponse:
    page["nextCursor"] = ctx.services.cursors.seal(HISTORY, page["nextCursor"])
    return JsonResponse(page)


def _limits(ctx: RequestContext) -> service.Limits:
    return service.Limits(page_size=ctx.settings.page_size, max_page_size=ctx.settings.max_page_size)


@router.get(
    "/api/history",
    operation_id="getHistoryFeed",
    summary="Change feed",
    description=FEED_DESCRIPTION,
    response_model=HistoryPage,
    responses=_ERRORS,
)
def history_feed(
    ctx: Annotated[RequestContext, Depends(request_context)],
    since_revision: Annotated[
        str | None,
        Query(alias="sinceRevision", description=SINCE_DESCRIPTION, examples=[0], json_schema_extra=REVISION),
    ] = None,
    limit: Limit = None,
    cursor: Cursor = None,
    from_: From = None,
    to: To = None,
) -> JsonResponse:
    page = service.feed(
        ctx.db,
        ctx.actor,
        ctx.metamodel,
        _limits(ctx),
        given(since_revision),
        _page(ctx, limit, cursor, from_, to),
    )
    return _sealed(ctx, page)


_DIFF_DESCRIPTION = """What changed in the repository between two revisions or times (`from`, and `to`, which
defaults to the newest revision): a page of elements in id order, each with its action (`created`,
`updated`, `deleted`) and its fields, each field with its value at `from` (`base`) and at `to` (`main`),
relation ends and `children` as the entries `added` and `removed`. A value changed and changed back is no
difference, and an element created and deleted in the range is left out. The first page counts every
element of the range by type and action (`summary`). What the caller may not read (types, attribute
groups) is left out, as in the history. Needs `VIEW_HISTORY`. Not part of LUY 7.4 (API.md section 11)."""


@router.get(
    "/api/history/diff",
    operation_id="getLandscapeDiff",
    summary="Landscape diff between two revisions or times",
    description=_DIFF_DESCRIPTION,
    responses=_ERRORS,
)
def landscape_diff(
    ctx: Annotated[RequestContext, Depends(request_context)],
    from_: Annotated[
        str | None,
        Query(
            alias="from",
            description="the revision or ISO-8601 time compared from (required)",
            examples=[1],
            json_schema_extra=REVISION_OR_TIME,
        ),
    ] = None,
    to: Annotated[
        str | None,
        Query(
            description="the revision or ISO-8601 time compared to; empty: the newest revision",
            examples=["2026-12-01T00:00:00Z"],
            json_schema_extra=REVISION_OR_TIME,
        ),
    ] = None,
    type_name: Annotated[
        str | None, Query(alias="type", description="only elements of this building block type")
    ] = None,
    limit: Limit = None,
    cursor: Cursor = None,
) -> JsonResponse:
    parameters = diff.DiffParameters(
        from_=given(from_),
        to=given(to),
        type_name=given(type_name),
        limit=given(limit),
        cursor=ctx.services.cursors.open(HISTORY, cursor, "query:cursor"),
    )
    return _sealed(ctx, diff.landscape_diff(ctx.db, ctx.actor, ctx.metamodel, _limits(ctx), parameters))


@router.get(
    "/api/history/{type}",
    operation_id="getTypeHistory",
    summary="History of every element of a type",
    description=TYPE_HISTORY_DESCRIPTION,
    response_model=HistoryPage,
    responses=_TYPE_ERRORS,
)
def type_history(
    ctx: Annotated[RequestContext, Depends(request_context)],
    type_name: TypeName,
    limit: Limit = None,
    cursor: Cursor = None,
    from_: From = None,
    to: To = None,
) -> JsonResponse:
    page = service.type_history(
        ctx.db,
        ctx.actor,
        ctx.metamodel,
        _limits(ctx),
        type_name,
        _page(ctx, limit, cursor, from_, to),
    )
    return _sealed(ctx, page)


@router.get(
    "/api/history/{type}/{id}",
    operation_id="getElementHistory",
    summary="History of one element",
    description=ELEMENT_HISTORY_DESCRIPTION,
    response_model=HistoryPage,
    responses={
        **_ERRORS,
        404: {"description": "unknown type, or no element with that id ever existed in it"},
    },
)
def element_history(
    ctx: Annotated[RequestContext, Depends(request_context)],
    type_name: TypeName,
    element_id: Annotated[int, Path(alias="id", ge=1, le=2**31 - 1, description="element id")],
    limit: Limit = None,
    cursor: Cursor = None,
    from_: From = None,
    to: To = None,
) -> JsonResponse:
    page = service.element_history(
        ctx.db,
        ctx.actor,
        ctx.metamodel,
        _limits(ctx),
        type_name,
        element_id,
        _page(ctx, limit, cursor, from_, to),
    )
    return _sealed(ctx, page)
