"""Who a request acts as and the repository's revisions, in one statement and without writing anything, for
the GET lane; or None, and the authentication layer decides as always (`auth/middleware.py`)."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import Connection

from blockrepo.access.repository import Revisions, acting_user
from blockrepo.auth.backends import AuthBackends
from blockrepo.auth.basic import Principal, parse_basic
from blockrepo.auth.cookies import LoginCookieHeaders
from blockrepo.settings import Settings

SetCookies = tuple[tuple[bytes, bytes], ...]


@dataclass(frozen=True, slots=True)
class QuickResolution:
    """The principal, the account's current login, the revisions read with them, and the Set-Cookie
    headers of the signed session handed to Basic credentials that brought none (as `AuthMiddleware`
    hands it)."""

    principal: Principal
    login: str
    revisions: Revisions
    set_cookies: SetCookies = ()


class QuickAuth:
    """The cases of `AuthMiddleware._resolve` that only read: a session cookie whose record is valid and needs
    no touch, and Basic credentials this process verified from the same address. Everything else (no
    credentials, a failure, throttling, the rate limit, a cookie together with credentials, a signed
    cookie's first return) is left to the middleware, which answers it exactly as before.

    Repeated Basic credentials are recognised by their raw header: a keyed hash of the address and the
    header names the login throttle's key for them (`verified_key`, which parsing and two hashes would
    compute again), so neither this map nor its keys hold a password. It only saves that work: the
    throttle's entry still decides (verified here, not expired or forgotten) and the statement still
    checks the account, so a password change or a disabled account is seen by the next request."""

    def __init__(self, backends: AuthBackends, settings: Settings) -> None:
        self.sessions = backends.sessions
        self.throttle = backends.throttle
        # The per-user rate limit counts every request, a write: no request is quick then.
        self.enabled = backends.rate_limiter is None
        self.cookies = LoginCookieHeaders(secure=settings.cookie_secure, csrf_enabled=settings.csrf_enabled)
        self._header_key = secrets.token_bytes(32)
        self._throttle_keys: dict[bytes, bytes] = {}
        self._max_throttle_keys = max(settings.credential_cache_size, 1)

    def resolve(
        self, connection: Connection, authorization: bytes | None, cookie: str | None, address: str
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
        principal = self._verified_here(authorization, address)
        if principal is None:
            return None
        row = acting_user(connection, principal.user_id)
        if row is None or not row[1] or row[2] != principal.credentials_version:
            return None  # the middleware forgets the cached credentials and verifies them again
        return QuickResolution(
            principal, row[0], Revisions(row[3], row[4], row[5]), self._signed_session(principal)
        )

    def _verified_here(self, authorization: bytes, address: str) -> Principal | None:
        """`LoginThrottle.verified_here` for the credentials of this raw `Authorization` header."""
        encoded_address = address.encode()
        header_digest = hashlib.blake2b(
            len(encoded_address).to_bytes(2, "big") + encoded_address + authorization,
            key=self._header_key,
            digest_size=16,
        ).digest()
        throttle_key = self._throttle_keys.get(header_digest)
        if throttle_key is not None:
            return self.throttle.verified_by_key(throttle_key)
        credentials = parse_basic(authorization.decode("latin-1"))
        if credentials is None:
            return None
        throttle_key = self.throttle.verified_key(*credentials, address)
        principal = self.throttle.verified_by_key(throttle_key)
        if principal is not None:
            if len(self._throttle_keys) >= self._max_throttle_keys:
                self._throttle_keys.clear()  # the next request of each client computes its key again
            self._throttle_keys[header_digest] = throttle_key
        return principal

    def _signed_session(self, principal: Principal) -> SetCookies:
        """The Set-Cookie headers of a new signed session (`SessionManager.start(..., deferred=True)`), its
        CSRF token derived only when the CSRF cookie is sent: nothing is stored, so nothing else is needed."""
        cookie_value = self.sessions.signed_cookie(principal)
        if not self.cookies.csrf_enabled:
            return (self.cookies.session(cookie_value),)
        csrf_token = self.sessions.signer.csrf_token(cookie_value)
        return (self.cookies.session(cookie_value), self.cookies.csrf(csrf_token))
