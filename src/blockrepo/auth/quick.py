"""Who a request acts as and the repository's revisions, in one statement and without writing anything, for
the GET lane; or None, and the authentication layer decides as always (`auth/middleware.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from blockrepo.access.repository import Revisions, acting_user
from blockrepo.auth.backends import AuthBackends
from blockrepo.auth.basic import Principal, parse_basic
from blockrepo.auth.sessions import IssuedSession


@dataclass(frozen=True, slots=True)
class QuickResolution:
    """The principal, the account's current login, the revisions read with them, and the signed session
    handed to Basic credentials that brought none (as `AuthMiddleware` hands it)."""

    principal: Principal
    login: str
    revisions: Revisions
    issued: IssuedSession | None = None


class QuickAuth:
    """The cases of `AuthMiddleware._resolve` that only read: a session cookie whose record is valid and needs
    no touch, and Basic credentials this process verified from the same address. Everything else (no
    credentials, a failure, throttling, the rate limit, a cookie together with credentials, a signed
    cookie's first return) is left to the middleware, which answers it exactly as before."""

    def __init__(self, backends: AuthBackends) -> None:
        self.sessions = backends.sessions
        self.throttle = backends.throttle
        # The per-user rate limit counts every request, a write: no request is quick then.
        self.enabled = backends.rate_limiter is None

    def resolve(
        self, connection: Connection, authorization: str | None, cookie: str | None, address: str
    ) -> QuickResolution | None:
        if not self.enabled:
            return None
        if authorization is None:
            if cookie is None:
                return None
            found = self.sessions.peek(cookie, connection)
            return None if found is None else QuickResolution(found[0], found[0].login, found[1])
        if cookie is not None:
            return None  # credentials and a cookie: which wins, and ending the other, is the middleware's
        credentials = parse_basic(authorization)
        if credentials is None:
            return None
        principal = self.throttle.verified_here(*credentials, address)
        if principal is None:
            return None
        row = acting_user(connection, principal.user_id)
        if row is None or not row[1] or row[2] != principal.credentials_version:
            return None  # the middleware forgets the cached credentials and verifies them again
        issued = self.sessions.start(principal, deferred=True)
        if issued is None:
            return None
        return QuickResolution(principal, row[0], Revisions(row[3], row[4], row[5]), issued)
