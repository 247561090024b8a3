"""The one authentication decision: who a request acts as, from its API token, session cookie or Basic
credentials, and what that takes (a session started or ended, a login counted, a token's use recorded),
returned as a value: a `Resolution`, or `WRITE_NEEDED` where only a worker thread may go on (a store write
or a password hash). Its read-only subset for the read lane, `quick`, also reads the repository's
revisions in the same statement."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection

from blockrepo.access.repository import Revisions
from blockrepo.access.service import ActingAccount, acting_account
from blockrepo.auth.backends import AuthBackends
from blockrepo.auth.basic import Principal, parse_basic
from blockrepo.auth.cookies import LoginCookieHeaders
from blockrepo.auth.sessions import WRITE_NEEDED, IssuedSession, LiveSession, WriteNeeded
from blockrepo.settings import Settings
from blockrepo.tokens.service import TokenUse

# GET/HEAD with Basic credentials here is a login: it always starts a new session.
BASIC_LOGIN_PATHS = frozenset({"/api/auth-scheme", "/api/j_service_security_check"})
# POSTs whose route starts or ends the session itself (form login, logout).
SESSION_ROUTE_PATHS = frozenset(
    {
        "/j_service_security_check",
        "/api/j_service_security_check",
        "/j_service_logout",
        "/api/j_service_logout",
    }
)


@dataclass(frozen=True)
class Resolution:
    """What the credentials and cookie of one request amount to."""

    principal: Principal | None = None
    session: LiveSession | None = None
    issued: IssuedSession | None = None
    failed: bool = False
    login_retry_after: int | None = None
    rate_retry_after: int | None = None


ANONYMOUS = Resolution()


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


Decision = Resolution | WriteNeeded


def bearer_token(authorization: str) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None for any other scheme."""
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def token_principal(use: TokenUse) -> Principal:
    """Who a valid token acts as: its owner, narrowed by its restriction."""
    return Principal(
        user_id=use.user_id,
        login=use.login,
        credentials_version=use.credentials_version,
        via="token",
        token=use.public_id,
        restriction=use.restriction,
    )


class Resolver:
    """Decides for `AuthMiddleware` (`resolve`: on the event loop without writing, then if need be in a worker
    thread) and for the read lane (`quick`: the cases that only read, or None for the middleware's way).

    The quick cases: a session cookie whose record is valid and needs no touch, and Basic credentials this
    process verified from the same address. Everything else (no credentials, a failure, throttling, the
    rate limit, a cookie together with credentials, a signed cookie's first return) is left to `resolve`.
    Repeated Basic credentials are recognised there by their raw header: a keyed hash of the address and
    the header names the login throttle's key for them (`verified_key`, which parsing and two hashes would
    compute again), so neither this map nor its keys hold a password. It only saves that work: the
    throttle's entry still decides (verified here, not expired or forgotten) and the statement still
    checks the account, so a password change or a disabled account is seen by the next request."""

    def __init__(self, backends: AuthBackends, settings: Settings) -> None:
        self.sessions = backends.sessions
        self.throttle = backends.throttle
        self.rate_limiter = backends.rate_limiter
        self.tokens = backends.tokens
        self.cookies = LoginCookieHeaders(secure=settings.cookie_secure, csrf_enabled=settings.csrf_enabled)
        self._header_key = secrets.token_bytes(32)
        self._throttle_keys: dict[bytes, bytes] = {}
        self._max_throttle_keys = max(settings.credential_cache_size, 1)

    def resolve(
        self,
        authorization: str | None,
        cookie: str | None,
        address: str,
        method: str,
        path: str,
        foreign: bool = False,
        may_write: bool = True,
    ) -> Decision:
        """Every store access of the request, in one place. With `may_write` False (on the event loop) it
        returns `WRITE_NEEDED` before anything that writes or hashes a password; the caller then asks
        again in a worker thread, where it may block. `foreign`: a browser sent the credentials for a page
        of another origin (`auth.csrf.sent_for_another_origin`, with `Referer`)."""
        if not may_write and self.rate_limiter is not None:
            return WRITE_NEEDED  # the request counter writes
        token = None if authorization is None else bearer_token(authorization)
        if token is not None:
            # A token decides alone: a cookie sent with it is neither used nor ended, and none is started.
            return self._bearer(token, address, may_write)
        session = self.sessions.resume(cookie, may_write=may_write) if cookie is not None else None
        if session is WRITE_NEEDED:
            return WRITE_NEEDED
        if authorization is None:
            if session is None:
                return ANONYMOUS
            return self._limited(Resolution(principal=session.principal(), session=session))
        credentials = parse_basic(authorization)
        if credentials is None:
            return Resolution(failed=True)
        if may_write:
            outcome = self.throttle.attempt(*credentials, address, "basic")
            if outcome.retry_after is not None:
                # A valid session of the same user keeps working while an attack throttles its password.
                if session is not None and session.login == credentials[0]:
                    return self._limited(Resolution(principal=session.principal(), session=session))
                return Resolution(login_retry_after=outcome.retry_after)
            principal = outcome.principal
            if principal is None:
                return Resolution(failed=True)
        else:
            # Credentials verified before and still valid, when the login throttle would let them pass
            # without hashing or counting; anything else (a refusal to log, a hash to pay, a failure to
            # count) is for the login throttle in a worker thread.
            cached = self.throttle.cached(*credentials, address)
            if cached is None:
                return WRITE_NEEDED
            principal = cached
        if foreign:
            # Login CSRF (API.md rules 1.3, 1.4, 1.6): a page elsewhere sends its visitor to
            # `http://attacker:pw@repo/api/...`, the browser answers the 401 with the URL's credentials.
            # Served statelessly rather than refused: they act for this one request and start no session,
            # and the caller's own session is neither ended nor replaced (nor used, if it is another user's).
            # A refusal would protect the session no better but would break what the CSRF rule allows: a
            # page of a sibling origin that holds the session's token may write with Basic credentials,
            # and a foreign read shows only what those credentials may see.
            if session is not None and session.user_id != principal.user_id:
                session = None
            return self._limited(Resolution(principal=principal, session=session))
        # Credentials win over the cookie: a session of another user is not used.
        if session is not None and session.user_id != principal.user_id:
            if not may_write:
                return WRITE_NEEDED
            self.sessions.end_session(session)
            session = None
        limited = self._limited(Resolution(principal=principal, session=session))
        if limited.rate_retry_after is not None or (method == "POST" and path in SESSION_ROUTE_PATHS):
            return limited
        explicit_login = method in ("GET", "HEAD") and path in BASIC_LOGIN_PATHS
        if session is not None and not explicit_login:
            return limited
        # No valid session of this user, or an explicit login: a new session with a new id (no fixation).
        # An explicit login stores it at once; any other request gets a signed session, stored only when
        # its cookie comes back, so a script that never keeps cookies costs no write per request.
        if not may_write and (session is not None or explicit_login):
            return WRITE_NEEDED
        if session is not None:
            self.sessions.end_session(session)
        issued = self.sessions.start(principal, deferred=not explicit_login)
        if issued is None:
            return Resolution(failed=True)
        return Resolution(principal=principal, session=issued.session, issued=issued)

    def _bearer(self, token: str, address: str, may_write: bool) -> Decision:
        use = self.tokens.verify(token, address)
        if use is None:
            return Resolution(failed=True)
        if use.touch_due:
            if not may_write:
                return WRITE_NEEDED
            self.tokens.record_use(use, address)
        return self._limited(Resolution(principal=token_principal(use)))

    def _limited(self, resolution: Resolution) -> Resolution:
        if self.rate_limiter is None or resolution.principal is None:
            return resolution
        retry_after = self.rate_limiter.check(resolution.principal.user_id)
        return resolution if retry_after is None else Resolution(rate_retry_after=retry_after)

    def quick(
        self, connection: Connection, authorization: bytes | None, cookie: str | None, address: str
    ) -> QuickResolution | None:
        if self.rate_limiter is not None:
            return None  # the per-user rate limit counts every request, a write: none is quick
        if authorization is None:
            return None if cookie is None else self.quick_sessions(connection, [cookie]).get(cookie)
        if authorization[:7].lower() == b"bearer ":
            return self.quick_tokens(connection, [(authorization, address)]).get((authorization, address))
        if cookie is not None:
            return None  # credentials and a cookie: which wins, and ending the other, is the middleware's
        principal = self.quick_principal(authorization, address)
        if principal is None:
            return None
        account = acting_account(connection, principal.user_id, principal.credentials_version)
        if account is None:
            return None  # the middleware forgets the cached credentials and verifies them again
        return self.quick_basic(principal, account)

    def quick_principal(self, authorization: bytes, address: str) -> Principal | None:
        """`quick` for Basic credentials without a cookie, its first half: who they are, if this process
        verified them from this address (nothing read); None where `resolve` must decide. The second half,
        `quick_basic`, needs the account as it is now (`access.service.acting_account(s)`)."""
        if self.rate_limiter is not None:
            return None  # the per-user rate limit counts every request, a write: none is quick
        return self._verified_here(authorization, address)

    def quick_basic(self, principal: Principal, account: ActingAccount) -> QuickResolution:
        """The resolution of credentials that `quick_principal` recognised, with their account: a new signed
        session for each answer (as `AuthMiddleware` hands one to Basic credentials that brought none)."""
        return QuickResolution(principal, account.login, account.revisions, self._signed_session(principal))

    def quick_sessions(self, connection: Connection, cookies: Sequence[str]) -> dict[str, QuickResolution]:
        """`quick` for requests with nothing but a session cookie, several at once (the cookies of requests
        that arrived together, read in one statement on PostgreSQL): the cookies it resolves."""
        if self.rate_limiter is not None:
            return {}  # the per-user rate limit counts every request, a write: none is quick
        found = self.sessions.peek(cookies, connection)
        return {
            cookie: QuickResolution(principal, principal.login, revisions)
            for cookie, (principal, revisions) in found.items()
        }

    def quick_tokens(
        self, connection: Connection, requests: Sequence[tuple[bytes, str]]
    ) -> dict[tuple[bytes, str], QuickResolution]:
        """`quick` for requests with a Bearer token, several at once (one statement on PostgreSQL), keyed
        by (raw `Authorization` header, client address): those whose token is valid and asks for no write
        (its last use recorded within the interval, its hash under the current pepper)."""
        if self.rate_limiter is not None:
            return {}  # the per-user rate limit counts every request, a write: none is quick
        if len(requests) == 1:  # the common case, without the batch's bookkeeping
            authorization, address = requests[0]
            token = bearer_token(authorization.decode("latin-1"))
            use = (
                None
                if token is None
                else self.tokens.uses(connection, [(token, address)]).get((token, address))
            )
            if use is None or use.touch_due:
                return {}
            return {requests[0]: QuickResolution(token_principal(use), use.login, use.revisions)}
        texts = {}
        for authorization, address in requests:
            token = bearer_token(authorization.decode("latin-1"))
            if token is not None:
                texts[authorization, address] = (token, address)
        uses = self.tokens.uses(connection, list(set(texts.values())))
        found = {}
        for request, text in texts.items():
            use = uses.get(text)
            if use is not None and not use.touch_due:
                found[request] = QuickResolution(token_principal(use), use.login, use.revisions)
        return found

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
