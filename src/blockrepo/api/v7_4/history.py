"""Routes of the history API (version 7.4): element and type history and the change feed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated, Any

import orjson
from anyio import to_thread
from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import StreamingResponse

from blockrepo.api.background_threads import run_to_end
from blockrepo.api.context import AppServices, RequestContext, principal_of, request_context, session_context
from blockrepo.api.cursors import HISTORY
from blockrepo.api.limits import PAGE_SIZE_BOUNDS
from blockrepo.api.parameters import (
    REVISION,
    REVISION_OR_TIME,
    ScenarioHeader,
    ScenarioQuery,
    given,
    scenario_named,
)
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import JsonResponse
from blockrepo.auth.basic import Principal
from blockrepo.errors import ErrorItem, Forbidden, NotFound, Unauthenticated, ValidationFailed
from blockrepo.history import diff, service, stream
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
from blockrepo.scenarios import feed as scenario_feed
from blockrepo.scenarios import service as scenarios

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


_STREAM_DESCRIPTION = """The change feed live, as Server-Sent Events (`text/event-stream`): each changeset the
caller may see, in commit order, as an event `change` whose data is the changeset as the feed gives it; after
the changesets of a revision, a line `id: <revision>` (without data: it moves the client's `lastEventId`,
nothing is dispatched). A client that reconnects sends `Last-Event-ID` and gets every changeset after that
revision, none twice (a revision larger than 500 changesets may be sent again in part). Without
`Last-Event-ID`, `sinceRevision` is where it starts; without either, only what changes from now on. `type`
and `operation` (`created`, `updated`, `deleted`, comma-separated) narrow it. A comment line every 15 s
(`stream_heartbeat`) keeps proxies from closing an idle stream. Rights are read again before each batch:
a right the caller loses applies at once, and a disabled account's stream ends. Needs `VIEW_HISTORY`.

With `scenario` (or the `Blockrepo-Scenario` header) it is the live feed of that planning scenario's own
changesets, in the shape history in the scenario gives them (`scenarioChange`, `viaScenario`), each event
with `id: <scenarioChange>`, which `Last-Event-ID` resumes after (`sinceRevision` does not apply: 400). A
reader who no longer sees the scenario gets an `end` event. Not part of LUY 7.4 (API.md section 11)."""


@router.get(
    "/api/history/stream",
    operation_id="streamHistory",
    summary="The change feed, live (Server-Sent Events)",
    description=_STREAM_DESCRIPTION,
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {"schema": {"type": "string"}}}, "description": "the stream"},
        **problem_responses(400, 401, 403, 404),
    },
)
async def history_stream(
    request: Request,
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", description="the last revision a reconnecting client received"),
    ] = None,
    since_revision: Annotated[
        str | None,
        Query(
            alias="sinceRevision",
            description="start after this revision (without Last-Event-ID)",
            json_schema_extra=REVISION,
        ),
    ] = None,
    type_name: Annotated[str | None, Query(alias="type", description="only this building block type")] = None,
    operation: Annotated[
        str | None, Query(description="only these operations: created, updated, deleted (comma-separated)")
    ] = None,
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> StreamingResponse:
    services: AppServices = request.app.state.services
    principal = principal_of(request)
    request_id = request.scope["state"]["request_id"]
    key = scenario_named(scenario, scenario_header)
    if key is not None:
        after, chosen = await to_thread.run_sync(
            _scenario_opened, services, principal, request_id, key, given(last_event_id),
            given(since_revision), given(type_name), given(operation),
        )  # fmt: skip
        return StreamingResponse(
            _scenario_events(services, principal, request_id, key, after, chosen),
            media_type="text/event-stream",
            headers={"X-Accel-Buffering": "no"},
        )
    start, chosen = await to_thread.run_sync(
        _opened, services, principal, request_id, given(last_event_id), given(since_revision),
        given(type_name), given(operation),
    )  # fmt: skip
    return StreamingResponse(
        _events(services, principal, request_id, start, chosen),
        media_type="text/event-stream",
        headers={"X-Accel-Buffering": "no"},  # nginx: pass each event on at once
    )


def _opened(
    services: AppServices,
    principal: Principal,
    request_id: str,
    last_event_id: str | None,
    since_revision: str | None,
    type_name: str | None,
    operation: str | None,
) -> tuple[int, stream.StreamFilter]:
    """Where the stream starts and what it lets through; 400/403 before the stream begins."""
    with session_context(services, principal, request_id, writing=False) as ctx:
        chosen = stream.stream_filter(ctx.actor, ctx.metamodel, type_name, operation)
        return stream.stream_start(ctx.db, last_event_id, since_revision), chosen


def _batch(
    services: AppServices,
    principal: Principal,
    request_id: str,
    chosen: stream.StreamFilter,
    position: tuple[int, int],
) -> stream.StreamBatch:
    """The next batch, under the caller's rights as they are now."""
    _still_valid(services, principal)
    with session_context(services, principal, request_id, writing=False) as ctx:
        return stream.stream_batch(ctx.db, ctx.actor, ctx.metamodel, chosen, position)


def _view(
    services: AppServices,
    principal: Principal,
    request_id: str,
    chosen: stream.StreamFilter,
    revisions: tuple[int, int],
) -> stream.StreamView:
    """The caller's view under their rights as they are now (built again when rights or names move)."""
    _still_valid(services, principal)
    with session_context(services, principal, request_id, writing=False) as ctx:
        return stream.stream_view(ctx.db, ctx.actor, ctx.metamodel, chosen, revisions)


# Rows a stream filters on the event loop; more go to a worker thread.
ON_LOOP_ROWS = 64


async def _events(
    services: AppServices, principal: Principal, request_id: str, start: int, chosen: stream.StreamFilter
) -> AsyncIterator[bytes]:
    yield f"retry: 2000\n: changes after revision {start}\n\n".encode()
    position, sent = (start, stream.AFTER_REVISION), start
    watch, heartbeat = services.revision_watch, services.settings.stream_heartbeat
    view: stream.StreamView | None = None
    checked = asyncio.get_running_loop().time()
    while True:
        recent = watch.recent
        try:
            if asyncio.get_running_loop().time() - checked > heartbeat:
                # A busy stream never idles into a heartbeat: its token is looked at as often anyway.
                await to_thread.run_sync(_still_valid, services, principal)
                checked = asyncio.get_running_loop().time()
            if recent is None or (
                recent.covers(position) and position >= (recent.through, stream.AFTER_REVISION)
            ):
                # Nothing new held: wait for the watch (which starts reading if it was not).
                if not await watch.beyond(position[0], heartbeat):
                    await to_thread.run_sync(_still_valid, services, principal)
                    checked = asyncio.get_running_loop().time()
                    yield b": heartbeat\n\n"
                if recent is not None:
                    continue
                recent = watch.recent
            if recent is not None and recent.covers(position):
                # What the process read for every stream, picked in memory: nothing is read per stream.
                revisions = (recent.metamodel_revision, recent.access_revision)
                if view is None or (view.metamodel_revision, view.access_revision) != revisions:
                    view = await to_thread.run_sync(_view, services, principal, request_id, chosen, revisions)
                    continue  # what the watch holds may have moved meanwhile: look again
                rows = watch.rows_after(position, recent.through)
                if len(rows) > ON_LOOP_ROWS:
                    batch = await to_thread.run_sync(stream.select_changes, view, rows, recent.through)
                else:
                    batch = stream.select_changes(view, rows, recent.through)
            else:  # behind what the process holds (a resumed or slow stream): the database
                batch = await to_thread.run_sync(_batch, services, principal, request_id, chosen, position)
        except (Unauthenticated, Forbidden) as refused:
            problem = orjson.dumps({"code": refused.code, "detail": refused.detail})
            yield b"event: end\ndata: " + problem + b"\n\n"
            return
        for item in batch.items:
            yield b"event: change\ndata: " + orjson.dumps(item) + b"\n\n"
        if batch.complete_revision is not None and batch.complete_revision > sent:
            sent = batch.complete_revision
            yield f"id: {sent}\n\n".encode()
        position = batch.position


# How often a stream in a scenario looks for new changesets while none come (the revision watch serves
# main's streams; a scenario's rows are read by each stream, one indexed query a look).
SCENARIO_POLL_SECONDS = 0.5


def _scenario_opened(
    services: AppServices,
    principal: Principal,
    request_id: str,
    key: str,
    last_event_id: str | None,
    since_revision: str | None,
    type_name: str | None,
    operation: str | None,
) -> tuple[int, stream.StreamFilter]:
    """Where a stream in a scenario starts and what it lets through; 400/403/404 before it begins."""
    if since_revision is not None:
        raise ValidationFailed(
            "sinceRevision and scenario cannot be combined: a scenario's stream resumes with Last-Event-ID",
            errors=[ErrorItem("query:sinceRevision", "not_with_scenario", "leave out sinceRevision")],
        )
    with session_context(services, principal, request_id, writing=False) as ctx:
        chosen = stream.stream_filter(ctx.actor, ctx.metamodel, type_name, operation)
        return scenario_feed.stream_start(ctx.db, ctx.actor, key, last_event_id), chosen


def _scenario_batch(
    services: AppServices,
    principal: Principal,
    request_id: str,
    key: str,
    chosen: stream.StreamFilter,
    after: int,
) -> scenario_feed.ScenarioBatch:
    _still_valid(services, principal)
    with session_context(services, principal, request_id, writing=False) as ctx:
        return scenario_feed.stream_batch(
            ctx.db, ctx.actor, ctx.metamodel, key, after,
            type_name=chosen.type_name, operations=chosen.operations,
        )  # fmt: skip


async def _scenario_events(
    services: AppServices,
    principal: Principal,
    request_id: str,
    key: str,
    after: int,
    chosen: stream.StreamFilter,
) -> AsyncIterator[bytes]:
    yield f"retry: 2000\n: changes in scenario {key} after {after}\n\n".encode()
    heartbeat = services.settings.stream_heartbeat
    loop = asyncio.get_running_loop()
    quiet_since = loop.time()
    while True:
        try:
            batch = await run_to_end(_scenario_batch, services, principal, request_id, key, chosen, after)
        except (Unauthenticated, Forbidden, NotFound) as refused:
            problem = orjson.dumps({"code": refused.instance_code, "detail": refused.detail})
            yield b"event: end\ndata: " + problem + b"\n\n"
            return
        for item in batch.items:
            yield b"event: change\nid: %d\ndata: " % item["scenarioChange"] + orjson.dumps(item) + b"\n\n"
        if batch.after > after:
            if not batch.items or batch.items[-1]["scenarioChange"] != batch.after:
                yield b"id: %d\n\n" % batch.after  # rows passed over: a reconnect need not read them again
            after, quiet_since = batch.after, loop.time()
        if batch.more:
            continue
        if loop.time() - quiet_since >= heartbeat:
            quiet_since = loop.time()
            yield b": heartbeat\n\n"
        await asyncio.sleep(SCENARIO_POLL_SECONDS)


def _still_valid(services: AppServices, principal: Principal) -> None:
    """Raise `Unauthenticated` when the token that opened the stream no longer authenticates (revoked,
    disabled or expired since): checked at every heartbeat and before every batch."""
    if principal.token is not None and not services.auth.tokens.still_valid(principal.token):
        raise Unauthenticated("the token that opened the stream no longer authenticates")


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
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> JsonResponse:
    key = scenario_named(scenario, scenario_header)
    in_scenario = None
    if key is not None:
        in_scenario = partial(scenarios.planned_history, ctx.db, ctx.actor, key, type_name=type_name)
    page = service.type_history(
        ctx.db,
        ctx.actor,
        ctx.metamodel,
        _limits(ctx),
        type_name,
        _page(ctx, limit, cursor, from_, to),
        in_scenario,
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
    scenario: ScenarioQuery = None,
    scenario_header: ScenarioHeader = None,
) -> JsonResponse:
    key = scenario_named(scenario, scenario_header)
    in_scenario = None
    if key is not None:
        in_scenario = partial(scenarios.planned_history, ctx.db, ctx.actor, key, element_id=element_id)
    page = service.element_history(
        ctx.db,
        ctx.actor,
        ctx.metamodel,
        _limits(ctx),
        type_name,
        element_id,
        _page(ctx, limit, cursor, from_, to),
        in_scenario,
    )
    return _sealed(ctx, page)
