"""Argon2id password hashing, with a dummy hash so that unknown users cost as much time as known ones.

Each hash costs `argon2_memory_cost` (64 MiB by default) and tens of milliseconds of a core, and anybody
can ask for one by sending a wrong password: so a process computes at most `password_hash_concurrency`
hashes at once (API.md rule 1.5). A password check past that bound does not wait (a waiting thread would
hold up the requests queued behind it): it gets `PasswordHashingBusy`, answered 503 with `Retry-After`.
Hashing a new password (an administrator creating a user, an import creating its missing users) takes a
permit of its own, one per process, and waits for it a while at most: it runs inside a write, under the
write lock, so it must never wait behind a flood of wrong passwords holding every check's permit.
Requests with a session or cached credentials never hash, so they never meet the bound.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from blockrepo.errors import PasswordHashingBusy
from blockrepo.settings import Settings

# A hash takes well under a second, so a client told to come back in one usually finds a permit free.
RETRY_AFTER_SECONDS = 1
# How long hashing a new password waits for its permit (only other new passwords hold that one).
NEW_PASSWORD_WAIT_SECONDS = 10.0


def available_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def hash_permits(settings: Settings, workers: int = 1) -> int:
    """Concurrent hashes per process: the setting, or else the cores shared among `workers` processes."""
    if settings.password_hash_concurrency > 0:
        return settings.password_hash_concurrency
    return max(1, available_cores() // max(1, workers))


class Passwords:
    def __init__(self, settings: Settings) -> None:
        self._hasher = PasswordHasher(
            time_cost=settings.argon2_time_cost,
            memory_cost=settings.argon2_memory_cost,
            parallelism=settings.argon2_parallelism,
            type=Type.ID,
        )
        self._permits = threading.BoundedSemaphore(hash_permits(settings))
        self._new_password_permit = threading.BoundedSemaphore(1)
        self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(16))

    def hash(self, password: str) -> str:
        with _permit(self._new_password_permit, wait=NEW_PASSWORD_WAIT_SECONDS):
            return self._hasher.hash(password)

    def verify(self, password_hash: str | None, password: str) -> bool:
        """True if the password matches; with `password_hash=None` burns the same time and fails. Raises
        `PasswordHashingBusy` at once when every permit is taken."""
        with _permit(self._permits, wait=0.0):
            try:
                ok = self._hasher.verify(password_hash or self._dummy_hash, password)
            except (VerifyMismatchError, VerificationError, InvalidHashError):
                return False
        return ok and password_hash is not None


@contextmanager
def _permit(permits: threading.BoundedSemaphore, wait: float) -> Iterator[None]:
    acquired = permits.acquire(timeout=wait) if wait > 0 else permits.acquire(blocking=False)
    if not acquired:
        raise PasswordHashingBusy(
            "too many password checks at once; retry shortly",
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
    try:
        yield
    finally:
        permits.release()


def generate_password() -> str:
    return secrets.token_urlsafe(18)
