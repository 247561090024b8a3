"""Verifies Basic credentials against the user table, paying for an Argon2 hash only on a cache miss.

A cache hit still reads the user's credentials version and enabled flag (one primary-key read): an entry
made before they changed (in this process or another) is verified again instead of being trusted or
rejected, so credentials that became valid again (a password changed back, an account enabled again)
work at once in every process, and ones that stopped being valid never pass."""

from __future__ import annotations

from sqlalchemy import Engine, bindparam, select
from sqlalchemy.orm import Session, sessionmaker

from blockrepo.access.models import User
from blockrepo.auth.basic import CredentialCache, Principal
from blockrepo.auth.passwords import Passwords
from blockrepo.storage.engine import DriverStatement

# Built once (hot path: every cached Basic request reads it).
_CREDENTIALS_STATUS = DriverStatement(
    select(User.credentials_version, User.enabled).where(User.id == bindparam("user_id")),
    prepared=True,
)


class Authenticator:
    def __init__(
        self,
        engine: Engine,
        session_factory: sessionmaker[Session],
        passwords: Passwords,
        cache: CredentialCache,
    ):
        self._engine = engine
        self._session_factory = session_factory
        self.passwords = passwords
        self.cache = cache

    def verify_password(self, login: str, password: str) -> Principal | None:
        """Check a login and password (Basic or form login); None if wrong, unknown or disabled."""
        return self.cached(login, password) or self.verify_hash(login, password)

    def cached(self, login: str, password: str) -> Principal | None:
        """The principal of credentials this process verified before and whose account has not changed
        since (one primary-key read); None when only `verify_hash` can tell (it hashes)."""
        digest = self.cache.digest(login, password)
        cached = self.cache.get(digest)
        return None if cached is None else self._still_valid(digest, cached)

    def _still_valid(self, digest: bytes, cached: Principal) -> Principal | None:
        # At the driver level, without an ORM session: every cached Basic request runs it.
        with self._engine.connect() as connection:
            current = _CREDENTIALS_STATUS.first(connection, {"user_id": cached.user_id})
        if current is None or not current[1] or current[0] != cached.credentials_version:
            self.cache.forget(digest)
            return None
        return cached

    def verify_hash(self, login: str, password: str) -> Principal | None:
        """Verify against the stored Argon2 hash (and remember success in the cache).

        Unknown logins are verified against a dummy hash so that they take as long as known ones. A login
        with NUL names no account (no login can hold one) and is not looked up: PostgreSQL refuses NUL in
        text, so the query would fail instead of finding nothing. Requests with the same credentials that
        arrive while they are being hashed wait for that one hash instead of paying their own (when the
        cache entry expires under load, every connection of a client would), right or wrong. Raises
        `PasswordHashingBusy` when the hash would exceed the process's bound."""
        digest = self.cache.digest(login, password)
        with self.cache.verifying(digest) as flight:
            if flight.failed:
                return None  # found wrong meanwhile by a request that held the turn
            cached = self.cache.get(digest)  # verified meanwhile by a request that held the turn
            if cached is not None and self._still_valid(digest, cached) is not None:
                return cached
            password_hash: str | None = None
            user_id, enabled, version = 0, False, 0
            if "\x00" not in login:
                with self._session_factory() as db:
                    user = db.scalar(select(User).where(User.login == login))
                    if user is not None:
                        password_hash, user_id = user.password_hash, user.id
                        enabled, version = user.enabled, user.credentials_version
            if not self.passwords.verify(password_hash, password) or not enabled:
                flight.failed = True
                return None  # logged, with the client address, by the login throttle
            principal = Principal(user_id=user_id, login=login, credentials_version=version, via="basic")
            self.cache.put(digest, principal)
            return principal
