"""The session and CSRF cookies: their exact Set-Cookie lines, and reading them from a request."""

from __future__ import annotations

import re

from starlette.datastructures import Headers
from starlette.requests import cookie_parser

SESSION_COOKIE = "JSESSIONID"
CSRF_COOKIE = "XSRF-TOKEN"
CSRF_HEADER = "x-xsrf-token"

# Every value the service issues is `secrets.token_urlsafe`; anything else cannot name a session, so it is
# dismissed without a store lookup.
_TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
_EXPIRED = "Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT"


def read_session_cookie(headers: Headers) -> str | None:
    """The request's session cookie value if it is well-formed, else None (treated as absent)."""
    return session_cookie_in(headers.get("cookie"))


def session_cookie_in(raw: str | None) -> str | None:
    """The session cookie value in a `Cookie` header's text if it is well-formed, else None."""
    if not raw:
        return None
    value = cookie_parser(raw).get(SESSION_COOKIE)
    return value if value and _TOKEN_PATTERN.match(value) else None


def _suffix(secure: bool) -> str:
    return "; Secure" if secure else ""


def session_cookie(value: str, *, secure: bool) -> str:
    # No Max-Age: the browser drops it when it closes; the server enforces idle time and lifetime.
    return f"{SESSION_COOKIE}={value}; Path=/; HttpOnly; SameSite=Lax{_suffix(secure)}"


def csrf_cookie(token: str, *, secure: bool) -> str:
    # Not HttpOnly: the page's script must read it to echo it in the X-XSRF-TOKEN header.
    return f"{CSRF_COOKIE}={token}; Path=/; SameSite=Lax{_suffix(secure)}"


def login_cookies(session_value: str, csrf_token: str, *, secure: bool, csrf_enabled: bool) -> list[str]:
    """Set-Cookie values for a new session: the session id, and the CSRF token when CSRF is on."""
    cookies = [session_cookie(session_value, secure=secure)]
    if csrf_enabled:
        cookies.append(csrf_cookie(csrf_token, secure=secure))
    return cookies


def login_cookie_headers(
    session_value: str, csrf_token: str, *, secure: bool, csrf_enabled: bool
) -> list[tuple[bytes, bytes]]:
    """`login_cookies` as ASGI response headers."""
    return [
        (b"set-cookie", value.encode("latin-1"))
        for value in login_cookies(session_value, csrf_token, secure=secure, csrf_enabled=csrf_enabled)
    ]


_MARK = "\0"  # never in a cookie value


def _around_value(line: str) -> tuple[bytes, bytes]:
    before, after = line.split(_MARK)
    return before.encode("latin-1"), after.encode("latin-1")


class LoginCookieHeaders:
    """`login_cookie_headers` for one server's settings, one header at a time, with the constant parts
    encoded once: the GET lane hands a new signed session to every Basic answer without a cookie."""

    def __init__(self, *, secure: bool, csrf_enabled: bool) -> None:
        self.csrf_enabled = csrf_enabled
        # The parts around the value, cut from the lines `session_cookie` and `csrf_cookie` write, so
        # that the attributes are defined in one place.
        self._session_prefix, self._session_suffix = _around_value(session_cookie(_MARK, secure=secure))
        self._csrf_prefix, self._csrf_suffix = _around_value(csrf_cookie(_MARK, secure=secure))

    def session(self, session_value: str) -> tuple[bytes, bytes]:
        """The session cookie's header, as `session_cookie` writes it."""
        return (b"set-cookie", self._session_prefix + session_value.encode("latin-1") + self._session_suffix)

    def csrf(self, csrf_token: str) -> tuple[bytes, bytes]:
        """The CSRF cookie's header, as `csrf_cookie` writes it (only when `csrf_enabled`)."""
        return (b"set-cookie", self._csrf_prefix + csrf_token.encode("latin-1") + self._csrf_suffix)


def expired_cookies(*, secure: bool) -> list[str]:
    """Set-Cookie values that make the client drop both cookies (logout)."""
    return [
        f"{CSRF_COOKIE}=; Path=/; {_EXPIRED}; SameSite=Lax{_suffix(secure)}",
        # Last on purpose: curl 7.88 drops only the last of several expired cookies of one response, and
        # the session cookie is the one that matters.
        f"{SESSION_COOKIE}=; Path=/; {_EXPIRED}; HttpOnly; SameSite=Lax{_suffix(secure)}",
    ]
