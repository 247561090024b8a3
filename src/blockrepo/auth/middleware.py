"""Pure ASGI authentication layer: resolves who a request acts as (session cookie or HTTP Basic) before any
route runs, starts sessions, and applies login throttling and the optional per-user rate limit.

It sets in `scope["state"]`: `principal` (a `Principal` or None), `auth_failed` (credentials were sent and
were wrong) and `session` (the `LiveSession` in effect, or None). It answers by itself: 401 for protected
paths without a principal, 429 for throttled logins and rate-limited users, 503 when the shared store
fails or every password hash permit is taken (`auth/passwords.py`). Before any of that it refuses a login
that names credentials in its URL (400 `credentials_in_url`) or that a browser sends for a page of another
origin (403 `cross_origin_login`): neither is verified, counted or given a session. Credentials a browser
sends for a page of another origin on any other path act without a session (none started, none ended).
Who acts is decided by `auth.resolution.Resolver`. Requests without credentials or cookie never leave the
event loop, and with `loop_reads` neither do those that only read the stores (a session lookup, credentials
verified before); a write or a password hash goes to a worker thread.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

from anyio import to_thread
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from blockrepo.auth.backends import STORE_ERRORS, AuthBackends
from blockrepo.auth.cookies import login_cookie_headers, read_session_cookie
from blockrepo.auth.csrf import FORM_LOGIN_PATHS, sent_for_another_origin
from blockrepo.auth.resolution import ANONYMOUS, BASIC_LOGIN_PATHS, Resolution, Resolver
from blockrepo.auth.sessions import WRITE_NEEDED
from blockrepo.errors import BadRequest, BlockrepoError, Forbidden, PasswordHashingBusy
from blockrepo.problem import error_response, problem_response
from blockrepo.settings import Settings

log = logging.getLogger("blockrepo.auth")

PUBLIC_PATHS = frozenset(
    {
        "/api/auth-scheme",
        "/j_service_security_check",
        "/api/j_service_security_check",
        "/j_service_logout",
        "/api/j_service_logout",
        "/api/openapi.json",
        "/api/7_4/openapi.json",
        "/api/7_4/",
        "/api/7_4",
        "/",  # the web interface's page (it holds no data; it reads everything through the API)
        "/health",  # probes: they hold no data (api/health.py)
        "/ready",
        "/metrics",  # its own access rule (the `metrics` setting; api/health.py)
        "/api/tokens/revocations",  # revoking a leaked token by its string (api/v7_4/tokens.py)
    }
)
PUBLIC_PREFIXES = ("/api/7_4/assets/", "/web/")


# Every path that logs in; credentials in their query string log nobody in (API.md rule 1.6).
LOGIN_PATHS = BASIC_LOGIN_PATHS | {"/j_service_security_check"}
URL_CREDENTIAL_FIELDS = frozenset({"j_username", "j_password"})


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class AuthMiddleware:
    def __init__(self, app: ASGIApp, *, backends: AuthBackends, settings: Settings) -> None:
        self.app = app
        self.resolver = Resolver(backends, settings)
        self.cookie_secure = settings.cookie_secure
        self.csrf_enabled = settings.csrf_enabled
        self.reads_on_loop = backends.reads_on_loop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        headers = Headers(scope=scope)
        authorization = headers.get("authorization") or None  # an empty header is no credentials
        if scope["path"] in LOGIN_PATHS:
            refusal = _login_refusal(scope, authorization)
            if refusal is not None:
                await error_response(refusal, state.get("request_id"))(scope, receive, send)
                return
        cookie = read_session_cookie(headers)
        resolution = ANONYMOUS
        if authorization is not None or cookie is not None:
            # Credentials a browser sends for a page of another origin (the test the logins use) are served
            # without a session: see `Resolver.resolve`.
            foreign = authorization is not None and sent_for_another_origin(
                scope["headers"], scope["scheme"], referer=True
            )
            arguments = (
                authorization,
                cookie,
                client_address(scope),
                scope["method"],
                scope["path"],
                foreign,
            )
            try:
                # Most requests only read (a session, cached credentials): done here on the event loop
                # (`loop_reads`), they spare the hop to a worker thread and back.
                decided = (
                    self.resolver.resolve(*arguments, may_write=False) if self.reads_on_loop else WRITE_NEEDED
                )
                if isinstance(decided, Resolution):
                    resolution = decided
                else:
                    resolution = await to_thread.run_sync(self._resolve_anyhow, *arguments)
            except STORE_ERRORS:
                log.exception("the session store failed")
                await self._problem(scope, receive, send, 503, "the session store is unavailable", {})
                return
            except PasswordHashingBusy as busy:
                await error_response(busy, state.get("request_id"))(scope, receive, send)
                return
        state["principal"] = resolution.principal
        state["auth_failed"] = resolution.failed
        state["session"] = resolution.session
        if resolution.login_retry_after is not None:
            retry = {"Retry-After": str(resolution.login_retry_after)}
            await self._problem(scope, receive, send, 429, "too many failed logins; retry later", retry)
            return
        if resolution.rate_retry_after is not None:
            retry = {"Retry-After": str(resolution.rate_retry_after)}
            await self._problem(scope, receive, send, 429, "request rate limit exceeded", retry)
            return
        if resolution.principal is None and not is_public(scope["path"]):
            detail = "wrong credentials" if resolution.failed else "authentication required"
            await self._problem(scope, receive, send, 401, detail, {})
            return
        if resolution.issued is None:
            await self.app(scope, receive, send)
            return
        set_cookies = login_cookie_headers(
            resolution.issued.cookie_value,
            resolution.issued.session.csrf_token,
            secure=self.cookie_secure,
            csrf_enabled=self.csrf_enabled,
        )

        async def send_with_cookies(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *set_cookies]
            await send(message)

        await self.app(scope, receive, send_with_cookies)

    def _resolve_anyhow(
        self,
        authorization: str | None,
        cookie: str | None,
        address: str,
        method: str,
        path: str,
        foreign: bool,
    ) -> Resolution:
        """`Resolver.resolve` where it may write (a worker thread): it always decides there."""
        decided = self.resolver.resolve(authorization, cookie, address, method, path, foreign)
        assert isinstance(decided, Resolution), "a resolution that may write needs nothing more"
        return decided

    @staticmethod
    async def _problem(
        scope: Scope, receive: Receive, send: Send, status: int, detail: str, headers: dict[str, str]
    ) -> None:
        titles = {401: "Unauthorized", 429: "Too Many Requests", 503: "Service Unavailable"}
        codes = {401: "unauthenticated", 429: "too_many_requests", 503: "service_unavailable"}
        response = problem_response(
            status=status,
            title=titles[status],
            detail=detail,
            code=codes[status],
            request_id=scope["state"].get("request_id"),
            headers=headers,
        )
        await response(scope, receive, send)


def _login_refusal(scope: Scope, authorization: str | None) -> BlockrepoError | None:
    """The error to answer if this request to a login path must not log anyone in, else None."""
    query = scope["query_string"]
    if query and any(
        name in URL_CREDENTIAL_FIELDS
        for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    ):
        return BadRequest(
            "credentials are never read from a URL: send them as Basic or as a form body",
            code="credentials_in_url",
        )
    method, path = scope["method"], scope["path"]
    logs_in = (method == "POST" and path in FORM_LOGIN_PATHS) or (
        authorization is not None and method in ("GET", "HEAD") and path in BASIC_LOGIN_PATHS
    )
    if logs_in and sent_for_another_origin(scope["headers"], scope["scheme"], referer=True):
        # A page of another origin cannot log its visitor in, neither with a form it posts nor with Basic
        # credentials the browser remembers or that the page put into the URL it navigates to (login CSRF).
        # Refused here, for both logins, before anything is verified, counted, started or ended.
        return Forbidden(
            "a page of another origin cannot log in here (Sec-Fetch-Site, Origin or Referer says so)",
            code="cross_origin_login",
        )
    return None
