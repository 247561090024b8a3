"""Per-process services and the per-request context handed to services: session, actor, metamodel, log.

The request owns the transaction: a route calls `ctx.commit()` once its service call succeeded; anything
else (an error, a forgotten commit) is rolled back when the request ends. A writing request's transaction
begins with the repository's write lock (storage.transactions), before it reads the metamodel.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fastapi import Request
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from blockrepo.access.actor import Actor, ActorCache
from blockrepo.access.models import User
from blockrepo.auth.authenticator import Authenticator
from blockrepo.auth.backends import AuthBackends
from blockrepo.auth.basic import CredentialCache, Principal
from blockrepo.auth.passwords import Passwords
from blockrepo.errors import Conflict, Unauthenticated
from blockrepo.metamodel.repository import read_repository_state
from blockrepo.metamodel.service import MetamodelCache
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine, build_session_factory
from blockrepo.storage.transactions import begin_write


class AppServices:
    """Everything one process shares between requests. Building it connects to nothing."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine: Engine = build_engine(settings.database_url, pool_size=settings.db_pool_size)
        # Writes on SQLite begin with BEGIN IMMEDIATE so that two writers queue instead of deadlocking.
        self.write_engine: Engine = self.engine.execution_options(begin_immediate=True)
        self.read_sessions: sessionmaker[Session] = build_session_factory(self.engine)
        self.write_sessions: sessionmaker[Session] = build_session_factory(self.write_engine)
        self.passwords = Passwords(settings)
        self.credentials = CredentialCache(settings.credential_cache_size, settings.credential_cache_ttl)
        self.authenticator = Authenticator(self.read_sessions, self.passwords, self.credentials)
        # Sessions, login throttling and the rate limit: on the database, or on Redis when configured.
        self.auth = AuthBackends.build(settings, self.engine, self.write_engine, self.authenticator)
        self.metamodels = MetamodelCache()
        self.actors = ActorCache()

    def dispose(self) -> None:
        self.auth.close()
        self.engine.dispose()


@dataclass
class RequestContext:
    db: Session
    actor: Actor
    metamodel: Metamodel
    changes: ChangeLog
    settings: Settings
    services: AppServices
    request_id: str
    revision: int  # the last committed global revision when the request began

    def commit(self) -> int | None:
        """Write the pending history as one revision and commit; returns that revision (None: no change)."""
        try:
            revision = self.changes.flush(self.db)
            self.db.commit()
        except IntegrityError as exc:
            self.db.rollback()
            # A concurrent request won a race that the service's own checks could not see.
            raise Conflict("the change conflicts with a concurrent change; retry") from exc
        return revision


def races_as_conflicts() -> Iterator[None]:
    """Router dependency: a constraint violation raised inside a route (a concurrent request won a race
    the service's checks could not see, e.g. the same login created in parallel) is a 409, not a 500."""
    try:
        yield
    except IntegrityError as exc:
        raise Conflict("the change conflicts with a concurrent change; retry") from exc


def principal_of(request: Request) -> Principal:
    principal = request.scope.get("state", {}).get("principal")
    if principal is None:
        raise Unauthenticated("authentication required")
    return principal  # type: ignore[no-any-return]


def request_context(request: Request) -> Iterator[RequestContext]:
    """FastAPI dependency: opens the request's session and loads who acts under which metamodel. A PATCH,
    POST, PUT or DELETE writes: its transaction takes the write lock first."""
    yield from _open_context(request, writing=request.method not in ("GET", "HEAD", "OPTIONS"))


def read_context(request: Request) -> Iterator[RequestContext]:
    """`request_context` for a route that only reads whatever its method (a query sent as POST): it takes
    no write lock, so it neither waits for writes nor holds them up."""
    yield from _open_context(request, writing=False)


def _open_context(request: Request, *, writing: bool) -> Iterator[RequestContext]:
    services: AppServices = request.app.state.services
    principal = principal_of(request)
    db = (services.write_sessions if writing else services.read_sessions)()
    try:
        if writing:
            begin_write(db)
        state = read_repository_state(db)
        user = db.get(User, principal.user_id)
        if user is None or not user.enabled or user.credentials_version != principal.credentials_version:
            raise Unauthenticated("the account is disabled or its credentials changed")
        metamodel = services.metamodels.get(db, state.metamodel_revision)
        actor = services.actors.get(db, user, state.access_revision, state.metamodel_revision)
        request_id = request.scope["state"]["request_id"]
        yield RequestContext(
            db=db,
            actor=actor,
            metamodel=metamodel,
            changes=ChangeLog(user_login=user.login, request_id=request_id),
            settings=services.settings,
            services=services,
            request_id=request_id,
            revision=state.revision,
        )
    finally:
        db.rollback()
        db.close()
