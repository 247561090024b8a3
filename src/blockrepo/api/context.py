"""Per-process services and the per-request context handed to services: session, actor, metamodel, log.

The request owns the transaction: a route calls `ctx.commit()` once its service call succeeded; anything
else (an error, a forgotten commit) is rolled back when the request ends. A writing request's transaction
begins with the repository's write lock (storage.transactions), before it reads the metamodel.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from fastapi import Request
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from blockrepo.access.actor import Actor, ActorCache
from blockrepo.access.service import acting_account
from blockrepo.api.cursors import CursorSeal
from blockrepo.api.revision_watch import RevisionWatch
from blockrepo.api.webhook_worker import WebhookWorker
from blockrepo.auth.authenticator import Authenticator
from blockrepo.auth.backends import AuthBackends
from blockrepo.auth.basic import CredentialCache, Principal
from blockrepo.auth.passwords import Passwords
from blockrepo.databases import Databases
from blockrepo.elements.read.by_id import RenderedElements
from blockrepo.errors import Conflict, Unauthenticated
from blockrepo.history.stream import RecentRows, recent_rows
from blockrepo.metamodel.service import MetamodelCache
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.settings import Settings


class AppServices:
    """Everything one process shares between requests. Building it connects to nothing."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.databases = Databases(settings)
        # Named here too, for the many readers of the process's engines and sessions.
        self.engine: Engine = self.databases.engine
        self.write_engine: Engine = self.databases.write_engine
        self.read_sessions: sessionmaker[Session] = self.databases.read_sessions
        self.write_sessions: sessionmaker[Session] = self.databases.write_sessions
        self.write_queue = self.databases.write_queue
        self.short_engine: Engine = self.databases.short_engine
        self.loop_connections = self.databases.loop_connections
        self.passwords = Passwords(settings)
        self.credentials = CredentialCache(settings.credential_cache_size, settings.credential_cache_ttl)
        self.authenticator = Authenticator(
            self.databases.lone_reads, self.read_sessions, self.passwords, self.credentials
        )
        # Sessions, login throttling and the rate limit: on the database, or on Redis when configured.
        self.auth = AuthBackends.build(
            settings, self.databases.lone_reads, self.write_engine, self.authenticator
        )
        self.metamodels = MetamodelCache()
        self.actors = ActorCache()
        self.rendered_elements = RenderedElements()
        # The listings' cursors, sealed under a key derived from the server secret (read at the first use).
        self.cursors = CursorSeal(lambda: self.auth.sessions.signer.derived_key(b"cursors"))
        # Reads new changes once for every live change stream (GET /api/history/stream) and wakes them.
        self.revision_watch = RevisionWatch(self._recent_rows)
        # Delivers the webhooks' messages (started by the application's lifespan when enabled).
        self.webhook_worker = WebhookWorker(self.databases, self.metamodels, self.actors, settings)
        # A server runs one lifespan; tests may nest several clients of one application, each running one,
        # and the engines must outlive them all.
        self._lifespans = 0
        self._lifespans_lock = threading.Lock()

    def _recent_rows(self, after: tuple[int, int] | None, limit: int) -> RecentRows:
        with self.read_sessions() as db:
            return recent_rows(db, after, limit)

    def enter(self) -> bool:
        """Count one more running lifespan of the application; whether it is the first."""
        with self._lifespans_lock:
            self._lifespans += 1
            return self._lifespans == 1

    def leave(self) -> bool:
        """Count one lifespan fewer; whether it was the last (then the process's resources may go)."""
        with self._lifespans_lock:
            self._lifespans -= 1
            return self._lifespans == 0

    def dispose(self) -> None:
        self.auth.close()
        self.databases.dispose()


@dataclass
class RequestContext:
    db: Session
    actor: Actor
    metamodel: Metamodel
    changes: ChangeLog
    settings: Settings
    services: AppServices
    request_id: str
    revision: int  # `Revisions.revision` when the request began
    principal: Principal

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


@contextmanager
def races_refused() -> Iterator[None]:
    """A constraint violation raised inside (a concurrent request won a race the service's checks could
    not see, e.g. the same login created in parallel) is a 409, not a 500."""
    try:
        yield
    except IntegrityError as exc:
        raise Conflict("the change conflicts with a concurrent change; retry") from exc


def races_as_conflicts() -> Iterator[None]:
    """Router dependency: the whole route runs inside `races_refused`."""
    with races_refused():
        yield


def principal_of(request: Request) -> Principal:
    principal = request.scope.get("state", {}).get("principal")
    if principal is None:
        raise Unauthenticated("authentication required")
    return principal  # type: ignore[no-any-return]


def _context_in(services: AppServices, principal: Principal, db: Session, request_id: str) -> RequestContext:
    account = acting_account(db.connection(), principal.user_id, principal.credentials_version)
    if account is None:
        raise Unauthenticated("the account is disabled or its credentials changed")
    login, revisions = account.login, account.revisions
    metamodel = services.metamodels.get(db, revisions.metamodel)
    actor = services.actors.get(
        db, principal.user_id, login, revisions.access, revisions.metamodel, principal.restriction
    )
    return RequestContext(
        db=db,
        actor=actor,
        metamodel=metamodel,
        changes=ChangeLog(
            user_login=login,
            request_id=request_id,
            via=principal.credential,
            main_protected=services.settings.protected_main and not actor.supervisor,
        ),
        settings=services.settings,
        services=services,
        request_id=request_id,
        revision=revisions.revision,
        principal=principal,
    )


def request_context(request: Request) -> Iterator[RequestContext]:
    """FastAPI dependency: opens the request's session and loads who acts under which metamodel. A PATCH,
    POST, PUT or DELETE writes: its transaction takes the write lock first."""
    yield from _open_context(request, writing=request.method not in ("GET", "HEAD", "OPTIONS"))


def element_write_context(request: Request) -> Iterator[RequestContext]:
    """`request_context` for a route that writes elements and nothing else: on PostgreSQL it runs beside
    other element writes (the write gate shared, storage.transactions)."""
    yield from _open_context(
        request, writing=request.method not in ("GET", "HEAD", "OPTIONS"), elements_only=True
    )


def read_context(request: Request) -> Iterator[RequestContext]:
    """`request_context` for a route that only reads whatever its method (a query sent as POST): it takes
    no write lock, so it neither waits for writes nor holds them up."""
    yield from _open_context(request, writing=False)


def _open_context(
    request: Request, *, writing: bool, elements_only: bool = False
) -> Iterator[RequestContext]:
    services: AppServices = request.app.state.services
    with session_context(
        services,
        principal_of(request),
        request.scope["state"]["request_id"],
        writing=writing,
        elements_only=elements_only,
    ) as ctx:
        yield ctx


@contextmanager
def session_context(
    services: AppServices,
    principal: Principal,
    request_id: str,
    *,
    writing: bool,
    elements_only: bool = False,
) -> Iterator[RequestContext]:
    """The request's session and who acts under which metamodel, outside FastAPI's dependencies too (the
    element write lane); a writing one takes the write gate first (shared when it writes `elements_only`).
    Rolled back and closed at the end: the caller commits what it means to keep."""
    with services.databases.session(writing=writing, elements_only=elements_only) as db:
        yield _context_in(services, principal, db, request_id)


@dataclass
class ReadContext:
    """What a bounded read on the event loop needs: a connection in a read transaction (no ORM session:
    opening and closing one costs more than the whole GET by id), who acts and under which metamodel."""

    connection: Connection
    actor: Actor
    metamodel: Metamodel
    services: AppServices


@contextmanager
def open_read_context(services: AppServices, principal: Principal) -> Iterator[ReadContext]:
    """The context of a read of bounded, small size (GET by id), meant to be made on the event loop and
    closed before the next await (its connection comes from the pool of such reads, `short_engine`).

    Such a read is a few primary-key and index lookups that never wait for a lock (SQLite in WAL mode and
    PostgreSQL both let readers pass writers), so it costs less than a hop to a worker thread and back,
    and under load it spares the GIL hand-offs between many threads. Anything that may take long or
    write (history as of a time, every write) stays in worker threads. The statements run at the driver
    level in one read transaction; a metamodel or actor not cached yet is loaded through an ORM session
    of its own."""
    with services.databases.short_read() as connection:
        account = acting_account(connection, principal.user_id, principal.credentials_version)
        if account is None:
            raise Unauthenticated("the account is disabled or its credentials changed")
        login, (_, metamodel_revision, access_revision) = account.login, account.revisions
        metamodel = services.metamodels.current(metamodel_revision)
        actor = services.actors.cached(
            principal.user_id, login, access_revision, metamodel_revision, principal.restriction
        )
        if metamodel is None or actor is None:
            # From the pool of short reads too: on the event loop, never wait for the main pool.
            with Session(services.short_engine, autoflush=False) as db:
                metamodel = services.metamodels.get(db, metamodel_revision)
                actor = services.actors.get(
                    db, principal.user_id, login, access_revision, metamodel_revision, principal.restriction
                )
        yield ReadContext(connection=connection, actor=actor, metamodel=metamodel, services=services)
