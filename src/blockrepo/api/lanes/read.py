"""The read lane: `GET /api/element/{type}/{id}` answered in front of the whole application, when the
request is the plain case, and passed on unchanged otherwise."""

from __future__ import annotations

import logging

from sqlalchemy import Connection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo.access.service import revisions_now, settled
from blockrepo.api.body_arrival import has_body
from blockrepo.api.context import AppServices
from blockrepo.api.etag import element_etag, none_match
from blockrepo.api.headers import DATA_HEADERS
from blockrepo.api.lanes.path import element_in_path
from blockrepo.api.middleware import identity_headers, request_id_for, version_supported
from blockrepo.auth.cookies import session_cookie_in
from blockrepo.auth.csrf import sent_for_another_origin
from blockrepo.auth.middleware import client_address
from blockrepo.auth.resolution import Resolver

log = logging.getLogger("blockrepo.api")

_WANTED = frozenset(
    {
        b"authorization",
        b"cookie",
        b"if-none-match",
        b"x-request-id",
        b"api-version",
    }
)

Answer = tuple[Message, Message]


class ElementReadLane:
    """Pure ASGI, outermost: answers a GET by id without a query string with 200 or 304 itself when the
    caller is known without writing anything (`Resolver.quick`) and the metamodel and rights of the current
    revisions are cached; every other request, and any of these the lane cannot answer so (an error, a
    session whose idle time stamp is due, credentials to verify, a cold cache), goes through the
    application's middleware and the routed `get_element` unchanged, which answer it as they always did.

    It answers exactly what that path would, headers included (request id, API version, the signed
    session of a Basic request), after one statement that reads who acts and the repository's revisions
    (`Resolver.quick`); the body comes from `RenderedElements` while those revisions are current, else from
    the element's statements in one snapshot. All of it runs on the event loop, on a connection held for
    it in autocommit: a hop to a worker thread, a pool checkout (with PostgreSQL's pre-ping) and a BEGIN
    and ROLLBACK each cost more than the one statement, and thread hops are what made latency under load
    long. That holds while the database and Redis answer in well under a millisecond (the same host or
    network); against worker threads on PostgreSQL it costs a fraction of the CPU per GET and serves
    several times the rate (bench/README.md). Where they do not, `loop_reads` off turns the lane off."""

    def __init__(self, app: ASGIApp, *, services: AppServices) -> None:
        self.app = app
        self.services = services
        self.auth = Resolver(services.auth, services.settings)
        # The lane answers on the event loop or not at all (`loop_reads`, one policy with auth's reads).
        self.enabled = services.auth.reads_on_loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.enabled
            and scope["type"] == "http"
            and scope["method"] == "GET"
            and not scope["query_string"]
        ):
            element = element_in_path(scope["path"])
            if element is not None:
                answer = self._answer(scope, *element)
                if answer is not None:
                    await send(answer[0])
                    await send(answer[1])
                    return
        await self.app(scope, receive, send)

    def _answer(self, scope: Scope, type_name: str, element_id: int) -> Answer | None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _WANTED and name not in headers:  # the first of repeated headers, as Headers.get
                headers[name] = value
        if has_body(scope["headers"]):
            return None  # a GET with a body: the body limit of RequestContextMiddleware applies
        version = headers.get(b"api-version")
        if version is not None and not version_supported(version.decode("latin-1")):
            return None
        authorization = headers.get(b"authorization")
        cookie = session_cookie_in(headers[b"cookie"].decode("latin-1")) if b"cookie" in headers else None
        if not authorization and cookie is None:
            return None
        if authorization and sent_for_another_origin(scope["headers"], scope["scheme"], referer=True):
            return None  # credentials sent for another origin's page: the middleware decides (no session)
        connections = self.services.loop_connections
        try:
            return self._read(connections.get(), scope, headers, type_name, element_id, cookie)
        except Exception:
            # Whatever went wrong, the documented way answers it (and logs it, if it fails there too); a
            # connection that failed is replaced.
            log.warning("the GET lane passed a request on after an error", exc_info=True)
            connections.drop()
            return None

    def _read(
        self,
        connection: Connection,
        scope: Scope,
        headers: dict[bytes, bytes],
        type_name: str,
        element_id: int,
        cookie: str | None,
    ) -> Answer | None:
        services = self.services
        found = self.auth.quick(
            connection, headers.get(b"authorization") or None, cookie, client_address(scope)
        )
        if found is None:
            return None
        revisions = found.revisions
        metamodel = services.metamodels.current(revisions.metamodel)
        actor = services.actors.cached(
            found.principal.user_id, found.login, revisions.access, revisions.metamodel
        )
        if metamodel is None or actor is None:
            return None
        type_def = metamodel.type_named(type_name)
        if type_def is None or not actor.can_type(type_def.id, "read"):
            return None
        rendered = services.rendered_elements.cached(actor, type_def, element_id, revisions)
        if rendered is None:
            # Not read at these revisions yet: the element's statements, in one snapshot that must still be
            # at these revisions (else a write came in between, and the documented way answers); kept for
            # the next reads only if no write up to these revisions is still under way (PostgreSQL).
            keep = settled(connection, revisions)
            with services.databases.snapshot(connection):
                if revisions_now(connection) != revisions:
                    return None
                rendered = services.rendered_elements.read(
                    connection, metamodel, actor, type_def, element_id, revisions, keep=keep
                )
        if rendered is None:
            return None
        etag = element_etag(rendered.revision, rendered.view_tag)
        sent_id = headers.get(b"x-request-id")
        request_id = request_id_for(None if sent_id is None else sent_id.decode("latin-1"))
        common = [*found.set_cookies, *identity_headers(request_id), *DATA_HEADERS]
        if_none_match = headers.get(b"if-none-match")
        if if_none_match is not None and none_match(if_none_match.decode("latin-1"), etag):
            start = {
                "type": "http.response.start",
                "status": 304,
                "headers": [(b"etag", etag.encode()), *common],
            }
            return start, {"type": "http.response.body", "body": b""}
        body = rendered.body
        start = {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-length", str(len(body)).encode()),
                (b"content-type", b"application/json"),
                (b"etag", etag.encode()),
                *common,
            ],
        }
        return start, {"type": "http.response.body", "body": body}
