"""The write lane: `PUT` and `PATCH /api/element/{type}/{id}` with a JSON body, answered without FastAPI's
routing, dependencies and thread hand-offs."""

from __future__ import annotations

import asyncio
from typing import Any

from anyio import to_thread
from sqlalchemy.exc import DBAPIError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo import metrics
from blockrepo.api.body import is_json_media_type, read_json_object
from blockrepo.api.context import AppServices, races_refused, session_context
from blockrepo.api.element_answers import element_response, update_element
from blockrepo.api.lanes.path import element_in_path
from blockrepo.api.observed import ELEMENT_ROUTE, ROUTE_KEY
from blockrepo.auth.basic import Principal
from blockrepo.databases import concurrent_write_refusal
from blockrepo.errors import BlockrepoError
from blockrepo.problem import error_response


async def _no_body() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


class ElementWriteLane:
    """Pure ASGI, innermost middleware (behind authentication, CSRF, the method check and the whole body's
    arrival): answers `PUT` and `PATCH /api/element/{type}/{id}` with a JSON body and no query string as the
    routed `update_element_route` (api/v7_4/elements.py) would, through the same
    `element_answers.update_element`; those stay the documented operations and answer everything else
    (another media type, ids out of range ...).

    A PUT of one attribute is the write hot path (issue 16): through FastAPI it paid for routing,
    dependency solving and three thread hand-offs (opening the context, the endpoint, closing it), more
    than the write itself. Here the body is read first, before the write lock is taken (a slow client
    never holds it), and the whole write runs in one worker-thread call. Writes of one process queue on
    an asyncio lock rather than each in its own thread on the database's lock: on SQLite a waiting writer
    sleeps in the busy handler (1, 2, 5, 10 ms ...), so a dozen writers of one process polling the lock
    let the other process's writers starve (PUTs over 2 s at 32 connections, bench/hot_path.py). On
    PostgreSQL, where element writes run side by side (storage.transactions), as many as the pool holds
    connections go at once."""

    def __init__(self, app: ASGIApp, *, services: AppServices) -> None:
        self.app = app
        self.services = services
        self._locks: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        sqlite = services.databases.engine.dialect.name == "sqlite"
        self._at_once = 1 if sqlite else services.settings.db_pool_size

    def _writing(self) -> asyncio.Semaphore:
        """This event loop's write queue (a server has one loop per process; a test client one per
        session, and an asyncio semaphore belongs to one loop)."""
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            if len(self._locks) > 8:
                self._locks.clear()  # loops of test clients that are gone
            lock = self._locks[loop] = asyncio.Semaphore(self._at_once)
        return lock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("PUT", "PATCH") and not scope["query_string"]:
            element = element_in_path(scope["path"])
            principal = scope.get("state", {}).get("principal")
            content_type = next((value for name, value in scope["headers"] if name == b"content-type"), None)
            in_scenario = any(name == b"blockrepo-scenario" for name, _ in scope["headers"])
            if (
                element is not None
                and not in_scenario
                and principal is not None
                and content_type is not None
                and is_json_media_type(content_type.decode("latin-1"))
            ):
                scope["state"][ROUTE_KEY] = ELEMENT_ROUTE
                metrics.WRITE_LANE_ANSWERS.inc()
                await self._answer(scope, receive, send, principal, *element)
                return
        await self.app(scope, receive, send)

    async def _answer(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        principal: Principal,
        type_name: str,
        element_id: int,
    ) -> None:
        request_id = scope["state"].get("request_id")
        if_match = next((value for name, value in scope["headers"] if name == b"if-match"), None)
        try:
            body = await read_json_object(Request(scope, receive))
            async with self._writing():
                element, view_tag = await to_thread.run_sync(
                    self._write,
                    principal,
                    request_id,
                    type_name,
                    element_id,
                    body,
                    None if if_match is None else if_match.decode("latin-1"),
                )
        except BlockrepoError as exc:
            await error_response(exc, request_id)(scope, _no_body, send)
            return
        await element_response(element, view_tag)(scope, _no_body, send)

    def _write(
        self,
        principal: Principal,
        request_id: str,
        type_name: str,
        element_id: int,
        body: dict[str, Any],
        if_match: str | None,
    ) -> tuple[dict[str, Any], str]:
        try:
            with (
                races_refused(),
                session_context(
                    self.services, principal, request_id, writing=True, elements_only=True
                ) as ctx,
            ):
                return update_element(ctx, type_name, element_id, body, if_match)
        except DBAPIError as exc:
            refusal = concurrent_write_refusal(exc)
            if refusal is None:
                raise
            raise refusal from exc
