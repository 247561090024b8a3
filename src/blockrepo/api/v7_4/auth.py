"""Routes of the auth API (version 7.4): the auth scheme, form and Basic login, logout.

Who a request acts as is resolved before these run (blockrepo.auth.middleware); the Basic logins' session
cookies are set there too. These routes add the form login and logout, which start and end sessions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from anyio import to_thread
from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.responses import Response

from blockrepo import API_VERSION
from blockrepo.api.problem_docs import PROBLEM_SCHEMA
from blockrepo.api.responses import JsonResponse
from blockrepo.auth.backends import STORE_ERRORS, AuthBackends
from blockrepo.auth.basic import Principal
from blockrepo.auth.cookies import expired_cookies, login_cookies, read_session_cookie
from blockrepo.auth.middleware import client_address
from blockrepo.auth.sessions import IssuedSession
from blockrepo.auth.throttle import LoginOutcome
from blockrepo.errors import (
    ErrorItem,
    ServiceUnavailable,
    TooManyRequests,
    Unauthenticated,
    UnsupportedMediaType,
    ValidationFailed,
)
from blockrepo.problem import PROBLEM_MEDIA_TYPE
from blockrepo.settings import Settings

router = APIRouter(tags=["Authentication"])

FORM_LOGIN_PATH = "/j_service_security_check"
FORM_MEDIA_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")

T = TypeVar("T")


class AuthScheme(BaseModel):
    scheme: Literal["basic"] = Field(description="HTTP Basic works on every endpoint")
    formLogin: str = Field(description="path of the form login", examples=[FORM_LOGIN_PATH])
    csrfEnabled: bool = Field(
        description="whether modifying requests with the session cookie need X-XSRF-TOKEN"
    )
    apiVersion: str = Field(examples=[API_VERSION])


class LoginResult(BaseModel):
    user: str = Field(description="login of the authenticated user", examples=["system"])


def _problem(status: int, description: str) -> dict[str, Any]:
    return {"description": description, "content": {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA}}}


RETRY_AFTER = {
    "Retry-After": {"description": "seconds until a login is verified again", "schema": {"type": "integer"}}
}
SET_COOKIE = {
    "Set-Cookie": {
        "description": "`JSESSIONID=…; Path=/; HttpOnly; SameSite=Lax` (+`Secure` when configured) and, "
        "with CSRF on, `XSRF-TOKEN=…; Path=/; SameSite=Lax`",
        "schema": {"type": "string"},
    }
}
WRONG_CREDENTIALS = _problem(401, "Wrong credentials (`unauthenticated`)")
THROTTLED = {
    **_problem(429, "Too many failed logins for this account or from this address (`too_many_requests`)"),
    "headers": RETRY_AFTER,
}
STORE_DOWN = {
    **_problem(
        503,
        "The session store is unavailable (`service_unavailable`), or every password hash permit is taken "
        "(`password_hashing_busy`, with `Retry-After`)",
    ),
    "headers": RETRY_AFTER,
}
URL_CREDENTIALS = _problem(400, "`j_username` or `j_password` in the query string (`credentials_in_url`)")
CROSS_ORIGIN_LOGIN = _problem(
    403,
    "A login a browser sends for a page of another origin: `Sec-Fetch-Site` cross-site or same-site, or "
    "`Origin` or `Referer` naming another origin (`cross_origin_login`)",
)

SESSION_RULES = (
    "The session cookie then authenticates later requests alone. Sessions end after the idle timeout "
    "(default 300 s) or the absolute lifetime (default 12 h), at logout, and when the account is disabled or "
    "its password changes. With CSRF on, every PATCH, POST, PUT and DELETE authenticated by the cookie must "
    "send header `X-XSRF-TOKEN` with the `XSRF-TOKEN` cookie's value (else 403 `csrf_token_missing` / "
    "`csrf_token_invalid`), and so must such a request that a browser sends for a page of another origin "
    "whatever authenticated it. After too many failed logins for an account or from an address, attempts "
    "get 429 with `Retry-After`, whatever the password."
)


LOGIN_REFUSALS = (
    "A login never reads credentials from the URL: `j_username` or `j_password` in the query string gets "
    "400 `credentials_in_url`. A login that a browser sends for a page of another origin (`Sec-Fetch-Site` "
    "cross-site or same-site, or `Origin` or `Referer` naming another origin) gets 403 `cross_origin_login`; "
    "clients that send none of these headers pass. "
)


def _backends(request: Request) -> AuthBackends:
    return request.app.state.services.auth  # type: ignore[no-any-return]


def _settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


async def _in_store(function: Callable[..., T], *args: Any) -> T:
    """Run blocking store I/O in a worker thread; a failing store becomes 503."""
    try:
        return await to_thread.run_sync(function, *args)
    except STORE_ERRORS as exc:
        raise ServiceUnavailable("the session store is unavailable") from exc


def _wrong_credentials_unless_authenticated(request: Request) -> Principal:
    state = request.scope["state"]
    if state.get("auth_failed"):
        raise Unauthenticated("wrong credentials")
    principal: Principal | None = state.get("principal")
    if principal is None:
        raise Unauthenticated("send HTTP Basic credentials")
    return principal


# What a login through the auth scheme can answer, with a body (GET) or without (HEAD).
AUTH_SCHEME_RESPONSES: dict[int | str, Any] = {
    200: {"headers": SET_COOKIE},
    400: URL_CREDENTIALS,
    401: WRONG_CREDENTIALS,
    403: CROSS_ORIGIN_LOGIN,
    429: THROTTLED,
    503: STORE_DOWN,
}


@router.get(
    "/api/auth-scheme",
    operation_id="getAuthScheme",
    summary="How to authenticate",
    description="Public. Describes the authentication scheme. With valid HTTP Basic credentials it also logs "
    "in: it starts a new session and sets the session and CSRF cookies (so `curl -u user:password --head "
    "-c cookies.txt …/api/auth-scheme` obtains them). Wrong credentials get 401. "
    + LOGIN_REFUSALS
    + SESSION_RULES,
    response_model=AuthScheme,
    responses=AUTH_SCHEME_RESPONSES,
)
@router.head(
    "/api/auth-scheme",
    operation_id="headAuthScheme",
    summary="How to authenticate (headers only)",
    description="As GET, without a body: with valid Basic credentials it sets the session cookies.",
    response_class=Response,
    responses=AUTH_SCHEME_RESPONSES,
)
async def auth_scheme(request: Request) -> JsonResponse:
    if request.scope["state"].get("auth_failed"):
        raise Unauthenticated("wrong credentials")
    return JsonResponse(
        {
            "scheme": "basic",
            "formLogin": FORM_LOGIN_PATH,
            "csrfEnabled": _settings(request).csrf_enabled,
            "apiVersion": API_VERSION,
        }
    )


FORM_BODY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["j_username", "j_password"],
    "properties": {
        "j_username": {"type": "string", "minLength": 1},
        "j_password": {"type": "string", "format": "password"},
    },
}
# The demo user anna; her password is the one `blockrepo demo` printed (or demo_password).
FORM_BODY_EXAMPLE = {"j_username": "anna", "j_password": "her-demo-password"}
FORM_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            media_type: {"schema": FORM_BODY_SCHEMA, "example": FORM_BODY_EXAMPLE}
            for media_type in FORM_MEDIA_TYPES
        },
    }
}
FORM_LOGIN_DESCRIPTION = (
    "Public. Logs in with form fields `j_username` and `j_password` (`application/x-www-form-urlencoded` or "
    "`multipart/form-data`): answers the user's login, starts a NEW session (any session the request carried "
    "ends, so an id known before login is never the id after it) and sets `JSESSIONID` and, with CSRF on, a "
    "new `XSRF-TOKEN`. Exempt from the CSRF token check; instead, the origin check below guards against "
    "login CSRF. " + LOGIN_REFUSALS + SESSION_RULES
)
FORM_LOGIN_RESPONSES: dict[int | str, Any] = {
    200: {"headers": SET_COOKIE},
    400: _problem(
        400,
        "A field is missing (`validation_failed`), the body is malformed, or credentials are in the query "
        "string (`credentials_in_url`)",
    ),
    401: WRONG_CREDENTIALS,
    403: CROSS_ORIGIN_LOGIN,
    413: _problem(413, "The body exceeds the size limit, {setting:max_body_bytes} (`payload_too_large`)"),
    415: _problem(415, "The body is not a form (`unsupported_media_type`)"),
    429: THROTTLED,
    503: STORE_DOWN,
}


def _log_in(
    backends: AuthBackends, login: str, password: str, address: str, old_cookie: str | None
) -> tuple[LoginOutcome, IssuedSession | None]:
    outcome = backends.throttle.attempt(login, password, address, "form")
    if outcome.principal is None:
        return outcome, None
    if old_cookie is not None:
        backends.sessions.end(old_cookie)
    return outcome, backends.sessions.start(outcome.principal)


@router.post(
    FORM_LOGIN_PATH,
    operation_id="formLogin",
    summary="Form login",
    description=FORM_LOGIN_DESCRIPTION,
    response_model=LoginResult,
    responses=FORM_LOGIN_RESPONSES,
    openapi_extra=FORM_BODY,
)
@router.post(
    "/api/j_service_security_check",
    operation_id="formLoginUnderApi",
    summary="Form login (under /api)",
    description=FORM_LOGIN_DESCRIPTION,
    response_model=LoginResult,
    responses=FORM_LOGIN_RESPONSES,
    openapi_extra=FORM_BODY,
)
async def form_login(request: Request) -> JsonResponse:
    # A login form of another origin was refused by `AuthMiddleware` (403 `cross_origin_login`).
    media_type = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media_type not in FORM_MEDIA_TYPES:
        raise UnsupportedMediaType(
            "send the login as application/x-www-form-urlencoded or multipart/form-data"
        )
    async with request.form(max_files=0, max_fields=50) as form:
        login, password = form.get("j_username"), form.get("j_password")
    errors = [
        ErrorItem(pointer=f"/{field}", code="required", message=f"the form field {field} is required")
        for field, value in (("j_username", login), ("j_password", password))
        if not isinstance(value, str) or (field == "j_username" and not value)
    ]
    if errors:
        raise ValidationFailed("; ".join(e.message for e in errors), errors=errors)
    assert isinstance(login, str) and isinstance(password, str)
    outcome, issued = await _in_store(
        _log_in,
        _backends(request),
        login,
        password,
        client_address(request.scope),
        read_session_cookie(request.headers),
    )
    if outcome.retry_after is not None:
        raise TooManyRequests(
            "too many failed logins; retry later", headers={"Retry-After": str(outcome.retry_after)}
        )
    if issued is None:
        raise Unauthenticated("wrong user name or password")
    settings = _settings(request)
    response = JsonResponse({"user": issued.session.login})
    for value in login_cookies(
        issued.cookie_value,
        issued.session.csrf_token,
        secure=settings.cookie_secure,
        csrf_enabled=settings.csrf_enabled,
    ):
        response.headers.append("set-cookie", value)
    return response


BASIC_LOGIN_DESCRIPTION = (
    "Public. Logs in with HTTP Basic credentials: answers the user's login, starts a NEW session and sets "
    "the session and CSRF cookies. Without credentials but with a valid session cookie it answers who the "
    "session belongs to (no new cookies); with neither, 401. " + LOGIN_REFUSALS + SESSION_RULES
)
BASIC_LOGIN_RESPONSES: dict[int | str, Any] = {
    200: {"headers": SET_COOKIE},
    400: URL_CREDENTIALS,
    401: WRONG_CREDENTIALS,
    403: CROSS_ORIGIN_LOGIN,
    429: THROTTLED,
    503: STORE_DOWN,
}


@router.get(
    "/api/j_service_security_check",
    operation_id="basicLogin",
    summary="Basic login",
    description=BASIC_LOGIN_DESCRIPTION,
    response_model=LoginResult,
    responses=BASIC_LOGIN_RESPONSES,
)
@router.head(
    "/api/j_service_security_check",
    operation_id="headBasicLogin",
    summary="Basic login (headers only)",
    description=BASIC_LOGIN_DESCRIPTION,
    response_class=Response,
    responses=BASIC_LOGIN_RESPONSES,
)
async def basic_login(request: Request) -> JsonResponse:
    principal = _wrong_credentials_unless_authenticated(request)
    return JsonResponse({"user": principal.login})


LOGOUT_DESCRIPTION = (
    "Public. Ends the session named by the `JSESSIONID` cookie server-side and expires both cookies; answers "
    "204 whether or not the session was still valid. Like every modifying request authenticated by the "
    "session cookie, it needs `X-XSRF-TOKEN` when CSRF is on (so a foreign site cannot log a user out)."
)
LOGOUT_RESPONSES: dict[int | str, Any] = {
    204: {"description": "Logged out; both cookies expired", "headers": SET_COOKIE},
    403: _problem(403, "CSRF token missing or wrong (`csrf_token_missing`, `csrf_token_invalid`)"),
    503: STORE_DOWN,
}


@router.post(
    "/j_service_logout",
    operation_id="logout",
    summary="Logout",
    description=LOGOUT_DESCRIPTION,
    status_code=204,
    response_class=Response,
    responses=LOGOUT_RESPONSES,
)
@router.post(
    "/api/j_service_logout",
    operation_id="logoutUnderApi",
    summary="Logout (under /api)",
    description=LOGOUT_DESCRIPTION,
    status_code=204,
    response_class=Response,
    responses=LOGOUT_RESPONSES,
)
async def logout(request: Request) -> Response:
    cookie = read_session_cookie(request.headers)
    if cookie is not None:
        await _in_store(_backends(request).sessions.end, cookie)
    response = Response(status_code=204)
    for value in expired_cookies(secure=_settings(request).cookie_secure):
        response.headers.append("set-cookie", value)
    return response
