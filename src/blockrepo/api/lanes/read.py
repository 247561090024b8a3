"""The read lane: `GET /api/element/{type}/{id}` answered in front of the whole application, when the
request is the plain case, and passed on unchanged otherwise."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from sqlalchemy import Connection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo import metrics
from blockrepo.access.service import ActingAccount, acting_accounts, revisions_now, settled
from blockrepo.api.body_arrival import has_body
from blockrepo.api.context import AppServices
from blockrepo.api.etag import element_etag, none_match
from blockrepo.api.headers import DATA_HEADERS
from blockrepo.api.lanes.path import element_in_path
from blockrepo.api.middleware import identity_headers, request_id_for, version_supported
from blockrepo.api.observed import ELEMENT_ROUTE, LOGIN_KEY, ROUTE_KEY
from blockrepo.auth.cookies import session_cookie_in
from blockrepo.auth.csrf import sent_for_another_origin
from blockrepo.auth.middleware import client_address
from blockrepo.auth.resolution import QuickResolution, Resolver

log = logging.getLogger("blockrepo.api")

_WANTED = frozenset(
    {
        b"authorization",
        b"cookie",
        b"if-none-match",
        b"x-request-id",
        b"api-version",
        b"blockrepo-scenario",
    }
)

Answer = tuple[Message, Message]
_Read = TypeVar("_Read")
_Key = TypeVar("_Key", bound=Hashable)
_Found = TypeVar("_Found")


class TurnBatch(Generic[_Key, _Found]):
    """The keys asked for by the lane's requests that reach it in one turn of the event loop, looked up
    together as soon as that turn's ready work is done: one statement, one round trip for all of them
    (session cookies; the accounts of Basic credentials verified before; API tokens).

    For PostgreSQL, where a round trip costs the worker (a send, a wait, a receive, the wake-ups) and the
    server more than the lookup itself; under load the requests of several connections arrive in one
    turn, and each waits one turn more (bench/README.md). A request alone still costs one statement. Each
    thread's event loop has its own batch (and its own connection, `HeldConnections`)."""

    def __init__(self, lookup: Callable[[list[_Key]], dict[_Key, _Found]]) -> None:
        self._lookup = lookup
        self._local = threading.local()

    def resolve(self, key: _Key) -> asyncio.Future[_Found | None]:
        """What the lookup found for this key, or None (nothing, or the lookup failed): the documented way
        decides then."""
        loop = asyncio.get_running_loop()
        waiting: dict[_Key, list[asyncio.Future[_Found | None]]] | None = getattr(
            self._local, "waiting", None
        )
        if waiting is None:
            waiting = self._local.waiting = {}
            loop.call_soon(self._look_up_waiting)  # after the tasks that are ready now have run
        future: asyncio.Future[_Found | None] = loop.create_future()
        waiting.setdefault(key, []).append(future)
        return future

    def _look_up_waiting(self) -> None:
        waiting: dict[_Key, list[asyncio.Future[_Found | None]]] = self._local.waiting
        self._local.waiting = None
        found: dict[_Key, _Found] = {}
        try:
            found = self._lookup(list(waiting))
        finally:  # every request goes on, the documented way if the lookup failed
            for key, futures in waiting.items():
                for future in futures:
                    if not future.done():  # not cancelled meanwhile
                        future.set_result(found.get(key))


class ElementReadLane:
    """Pure ASGI, outermost: answers a GET by id without a query string with 200 or 304 itself when the
    caller is known without writing anything (`Resolver.quick`) and the metamodel and rights of the current
    revisions are cached; every other request, and any of these the lane cannot answer so (an error, a
    session whose idle time stamp is due, credentials to verify, a cold cache), goes through the
    application's middleware and the routed `get_element` unchanged, which answer it as they always did.

    It answers exactly what that path would, headers included (request id, API version, the signed
    session of a Basic request), after one statement that reads who acts and the repository's revisions
    (`Resolver.quick`; on PostgreSQL one statement for the session cookies of all requests that arrive
    together, `TurnBatch`); the body comes from `RenderedElements` while those revisions are current,
    else from the element's statements in one snapshot. All of it runs on the event loop, on a connection
    held for it in autocommit: a hop to a worker thread, a pool checkout (with PostgreSQL's pre-ping) and
    a BEGIN and ROLLBACK each cost more than the one statement, and thread hops are what made latency
    under load long. That holds while the database and Redis answer in well under a millisecond (the same
    host or network); against worker threads on PostgreSQL it costs a fraction of the CPU per GET and
    serves several times the rate (bench/README.md). Where they do not, `loop_reads` off turns the lane
    off."""

    def __init__(self, app: ASGIApp, *, services: AppServices) -> None:
        self.app = app
        self.services = services
        self.auth = Resolver(services.auth, services.settings)
        # The lane answers on the event loop or not at all (`loop_reads`, one policy with auth's reads).
        self.enabled = services.auth.reads_on_loop
        # Requests with only a session cookie, or only Basic credentials verified before, are looked up
        # together where a statement is a round trip.
        together = services.databases.round_trips
        self.cookie_batch = TurnBatch(self._sessions) if together else None
        self.account_batch = TurnBatch(self._accounts) if together else None
        self.token_batch = TurnBatch(self._tokens) if together else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.enabled
            and scope["type"] == "http"
            and scope["method"] == "GET"
            and not scope["query_string"]
        ):
            element = element_in_path(scope["path"])
            if element is not None:
                answer = await self._answer(scope, *element)
                if answer is not None:
                    await send(answer[0])
                    await send(answer[1])
                    return
        await self.app(scope, receive, send)

    async def _answer(self, scope: Scope, type_name: str, element_id: int) -> Answer | None:
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in _WANTED and name not in headers:  # the first of repeated headers, as Headers.get
                headers[name] = value
        if has_body(scope["headers"]):
            return None  # a GET with a body: the body limit of RequestContextMiddleware applies
        if b"blockrepo-scenario" in headers:
            return None  # read in a planning scenario: the route answers
        version = headers.get(b"api-version")
        if version is not None and not version_supported(version.decode("latin-1")):
            return None
        authorization = headers.get(b"authorization") or None
        cookie = session_cookie_in(headers[b"cookie"].decode("latin-1")) if b"cookie" in headers else None
        if authorization is None:
            if cookie is None:
                return None
            if self.cookie_batch is not None:
                found = await self.cookie_batch.resolve(cookie)
                if found is None:
                    return None
                return self._on_connection(
                    lambda connection: self._read(connection, scope, headers, type_name, element_id, found)
                )
        elif authorization[:7].lower() == b"bearer ":
            # A token starts no session and a browser never sends one by itself: where the request comes
            # from changes nothing (the middleware decides a token alone too).
            if self.token_batch is not None:
                token = await self.token_batch.resolve((authorization, client_address(scope)))
                if token is None:
                    return None
                return self._on_connection(
                    lambda connection: self._read(connection, scope, headers, type_name, element_id, token)
                )
        elif sent_for_another_origin(scope["headers"], scope["scheme"], referer=True):
            return None  # credentials sent for another origin's page: the middleware decides (no session)
        elif cookie is None and self.account_batch is not None:
            principal = self._on_connection(
                lambda _: self.auth.quick_principal(authorization, client_address(scope))
            )
            if principal is None:
                return None
            account = await self.account_batch.resolve((principal.user_id, principal.credentials_version))
            if account is None:
                return None  # the middleware forgets the cached credentials and verifies them again
            resolution = self.auth.quick_basic(principal, account)
            return self._on_connection(
                lambda connection: self._read(connection, scope, headers, type_name, element_id, resolution)
            )

        def resolved_and_read(connection: Connection) -> Answer | None:
            found = self.auth.quick(connection, authorization, cookie, client_address(scope))
            if found is None:
                return None
            return self._read(connection, scope, headers, type_name, element_id, found)

        return self._on_connection(resolved_and_read)

    def _on_connection(self, read: Callable[[Connection], _Read]) -> _Read | None:
        """`read` on this worker's connection for the lane; None (the documented way) if it fails."""
        connections = self.services.loop_connections
        try:
            return read(connections.get())
        except Exception:
            # Whatever went wrong, the documented way answers it (and logs it, if it fails there too); a
            # connection that failed is replaced.
            log.warning("the GET lane passed a request on after an error", exc_info=True)
            connections.drop()
            return None

    def _sessions(self, cookies: list[str]) -> dict[str, QuickResolution]:
        """The cookie batch's lookup: the sessions of these cookies that the lane may use."""
        resolved = self._on_connection(lambda connection: self.auth.quick_sessions(connection, cookies))
        return resolved or {}

    def _accounts(self, principals: list[tuple[int, int]]) -> dict[tuple[int, int], ActingAccount]:
        """The account batch's lookup: the accounts of these (user id, credentials version) as they are."""
        accounts = self._on_connection(lambda connection: acting_accounts(connection, principals))
        return accounts or {}

    def _tokens(self, requests: list[tuple[bytes, str]]) -> dict[tuple[bytes, str], QuickResolution]:
        """The token batch's lookup: the valid tokens among these (header, address) that ask for no write."""
        resolved = self._on_connection(lambda connection: self.auth.quick_tokens(connection, requests))
        return resolved or {}

    def _read(
        self,
        connection: Connection,
        scope: Scope,
        headers: dict[bytes, bytes],
        type_name: str,
        element_id: int,
        found: QuickResolution,
    ) -> Answer | None:
        services = self.services
        revisions = found.revisions
        metamodel = services.metamodels.current(revisions.metamodel)
        principal = found.principal
        actor = services.actors.cached(
            principal.user_id, found.login, revisions.access, revisions.metamodel, principal.restriction
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
        state = scope.setdefault("state", {})
        state[ROUTE_KEY] = ELEMENT_ROUTE
        state[LOGIN_KEY] = found.login
        metrics.READ_LANE_ANSWERS.inc()
        etag = element_etag(rendered.revision, rendered.view_tag)
        sent_id = headers.get(b"x-request-id")
        request_id = state.get("request_id") or request_id_for(
            None if sent_id is None else sent_id.decode("latin-1")
        )
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
