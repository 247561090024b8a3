"""Verifies Basic credentials against the user table, paying for an Argon2 hash only on a cache miss.

A cache hit still reads the user's credentials version and enabled flag (one primary-key read): an entry
made before they changed (in this process or another) is verified again instead of being trusted or
rejected, so credentials that became valid again (a password changed back, an account enabled again)
work at once in every process, and ones that stopped being valid never pass."""

from __future__ import annotations

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session, sessionmaker

from blockrepo.access.models import User
from blockrepo.auth.basic import CredentialCache, Principal
from blockrepo.auth.passwords import Passwords

# Built once (hot path: every cached Basic request reads it).
_CREDENTIALS_STATUS = select(User.credentials_version, User.enabled).where(User.id == bindparam("user_id"))


class Authenticator:
    def __init__(self, session_factory: sessionmaker[Session], passwords: Passwords, cache: CredentialCache):
        self._session_factory = session_factory
        self.passwords = passwords
        self.cache = cache

    def verify_password(self, login: str, password: str) -> Principal | None:
        """Check a login and password (Basic or form login); None if wrong, unknown or disabled."""
        return self.cached(login, password) or self.verify_hash(login, password)

    def cached(self, login: str, password: str) -> Principal | None:
        """The principal if these exact credentials were verified recently and are still valid; no hash."""
        digest = self.cache.digest(login, password)
        cached = self.cache.get(digest)
        if cached is None:
            return None
        with self._session_factory() as db:
            current = db.execute(_CREDENTIALS_STATUS, {"user_id": cached.user_id}).one_or_none()
        if (
            current is not None
            and current.enabled
            and current.credentials_version == cached.credentials_version
        ):
            return cached
        self.cache.forget(digest)
        return None

    def verify_hash(self, login: str, password: str) -> Principal | None:
        """Verify against the stored Argon2 hash (and remember success in the cache).

        Unknown logins are verified against a dummy hash so that they take as long as known ones. A login
        with NUL names no account (no login can hold one) and is not looked up: PostgreSQL refuses NUL in
        text, so the query would fail instead of finding nothing."""
        password_hash: str | None = None
        user_id, enabled, version = 0, False, 0
        if "\x00" not in login:
            with self._session_factory() as db:
                user = db.scalar(select(User).where(User.login == login))
                if user is not None:
                    password_hash, user_id = user.password_hash, user.id
                    enabled, version = user.enabled, user.credentials_version
        if not self.passwords.verify(password_hash, password) or not enabled:
            return None  # logged, with the client address, by the login throttle
        principal = Principal(user_id=user_id, login=login, credentials_version=version, via="basic")
        self.cache.put(self.cache.digest(login, password), principal)
        return principal
