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
    select(User.credentials_version, User.enabled).where(User.id == bindparam("user_id"))
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

    def verify_cached(self, login: str, password: str) -> Principal | None:
        """The principal of credentials this process verified before and whose account has not changed
        since (one primary-key read); None when only `verify_password` can tell (it hashes)."""
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

    def verify_password(self, login: str, password: str) -> Principal | None:
        """Check a login and password (Basic or form login); None if wrong, unknown or disabled.

        Unknown logins are verified against a dummy hash so that they take as long as known ones. Requests
        with the same credentials that arrive while they are being hashed wait for that one hash instead of
        paying their own (when the cache entry expires under load, every connection of a client would)."""
        digest = self.cache.digest(login, password)
        cached = self.cache.get(digest)
        if cached is not None and self._still_valid(digest, cached) is not None:
            return cached
        with self.cache.verifying(digest):
            cached = self.cache.get(digest)  # verified meanwhile by a request that held the turn
            if cached is not None and self._still_valid(digest, cached) is not None:
                return cached
            with self._session_factory() as db:
                user = db.scalar(select(User).where(User.login == login))
                password_hash = user.password_hash if user is not None else None
                user_id = user.id if user is not None else 0
                enabled = user.enabled if user is not None else False
                version = user.credentials_version if user is not None else 0
            if not self.passwords.verify(password_hash, password) or not enabled:
                return None  # logged, with the client address, by the login throttle
            principal = Principal(user_id=user_id, login=login, credentials_version=version, via="basic")
            self.cache.put(digest, principal)
            return principal
