"""Verifies Basic credentials against the user table, paying for an Argon2 hash only on a cache miss."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from blockrepo.access.models import User
from blockrepo.auth.basic import CredentialCache, Principal
from blockrepo.auth.passwords import Passwords


class Authenticator:
    def __init__(self, session_factory: sessionmaker[Session], passwords: Passwords, cache: CredentialCache):
        self._session_factory = session_factory
        self.passwords = passwords
        self.cache = cache

    def verify_password(self, login: str, password: str) -> Principal | None:
        """Check a login and password (Basic or form login); None if wrong, unknown or disabled.

        Unknown logins are verified against a dummy hash so that they take as long as known ones."""
        digest = self.cache.digest(login, password)
        cached = self.cache.get(digest)
        if cached is not None:
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
