"""The webhook delivery worker: one per process, sending each due webhook's next messages in order.

Every `webhook_poll` seconds it asks which webhooks have committed changes after their cursor, takes a
lease on each (a conditional update: of all the workers of all instances one holds a webhook at a time,
and another takes it over once the lease runs out), builds the next message in a worker thread, keeps its
range as pending, sends it, and records the answer. The database is the only queue: nothing is held in
memory or in Redis that a kill could lose.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass

import httpx
from anyio import to_thread

from blockrepo import __version__
from blockrepo.access.actor import ActorCache
from blockrepo.api.background_threads import run_to_end
from blockrepo.databases import Databases
from blockrepo.errors import BlockrepoError, Forbidden
from blockrepo.metamodel.service import MetamodelCache
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.settings import Settings
from blockrepo.tokens.service import restriction_from_text
from blockrepo.webhooks import service
from blockrepo.webhooks.schemas import DeliveryOut
from blockrepo.webhooks.service import NextStep, Outcome, Outgoing, Subscription
from blockrepo.webhooks.targets import resolve, target_rules

log = logging.getLogger("blockrepo.webhooks")

# Webhooks one worker sends to at once, and messages it sends to one before it lets others have a turn.
CONCURRENT_WEBHOOKS = 8
MESSAGES_PER_TURN = 50
# An owner who may not read history (or is disabled) is looked at again after this many seconds.
OWNER_RECHECK = 60.0
RESPONSE_SNIPPET_BYTES = 512


@dataclass(frozen=True)
class Prepared:
    hook: Subscription
    step: NextStep


class WebhookWorker:
    """Delivers webhooks for this process (started by the application's lifespan)."""

    def __init__(
        self, databases: Databases, metamodels: MetamodelCache, actors: ActorCache, settings: Settings
    ) -> None:
        self._databases = databases
        self._metamodels = metamodels
        self._actors = actors
        self._settings = settings
        self.targets = target_rules(settings.webhook_allowed_networks, settings.webhook_public_targets)
        self.name = f"{socket.gethostname()[:32]}:{os.getpid()}:{secrets.token_hex(4)}"

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            timeout=self._settings.webhook_timeout, follow_redirects=False, trust_env=False
        )

    async def run(self) -> None:
        """Deliver until cancelled (one run at a time: the application's lifespan starts it once)."""
        gate = asyncio.Semaphore(CONCURRENT_WEBHOOKS)
        # The client belongs to this run and its event loop, and is closed with it.
        async with self._client() as client:

            async def turn(webhook_id: int) -> None:
                async with gate:
                    await self._deliver(webhook_id, client)

            while True:
                busy = False
                try:
                    due = await run_to_end(self._due)
                    if due:
                        busy = True
                        await asyncio.gather(*(turn(webhook_id) for webhook_id in due))
                except Exception:
                    log.warning("the webhook worker failed a round; it goes on", exc_info=True)
                await asyncio.sleep(0.05 if busy else self._settings.webhook_poll)

    async def send(self, message: Outgoing, client: httpx.AsyncClient | None = None) -> Outcome:
        """Send one message (to the address its host resolves to now, checked against the SSRF rules),
        through `client` or, for a single message, a client of its own."""
        if client is None:
            async with self._client() as own:
                return await self.send(message, own)
        start = time.perf_counter()
        try:
            target = await to_thread.run_sync(resolve, message.url, self.targets)
        except BlockrepoError as refused:
            return Outcome(None, None, refused.detail, 0)
        url = httpx.URL(message.url).copy_with(host=target.address)
        headers = {
            **service.signature_headers(message),
            "content-type": "application/json",
            "user-agent": f"blockrepo-webhooks/{__version__}",
            "host": httpx.URL(message.url).netloc.decode("ascii"),
        }
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        try:
            async with client.stream(
                "POST", url, content=message.body, headers=headers, extensions=extensions
            ) as response:
                snippet = b""
                async for chunk in response.aiter_raw():
                    snippet += chunk
                    if len(snippet) >= RESPONSE_SNIPPET_BYTES:
                        break
                retry_after = service.retry_after_seconds(response.headers.get("retry-after"))
                return Outcome(
                    response.status_code,
                    snippet[:RESPONSE_SNIPPET_BYTES].decode("utf-8", "replace"),
                    None,
                    _elapsed(start),
                    retry_after,
                )
        except httpx.HTTPError as exc:
            return Outcome(None, None, f"{type(exc).__name__}: {exc}"[:500], _elapsed(start))

    async def _deliver(self, webhook_id: int, client: httpx.AsyncClient) -> None:
        if not await run_to_end(self._claim, webhook_id):
            return
        try:
            for _ in range(MESSAGES_PER_TURN):
                prepared = await run_to_end(self._prepare, webhook_id)
                if prepared is None or prepared.step.message is None:
                    if prepared is not None and prepared.step.advance_to is not None:
                        continue  # passed over changes with nothing to send: look further
                    return
                message = prepared.step.message
                outcome = await self.send(message, client)
                disabling = service.would_disable(
                    prepared.hook, outcome, self._settings.webhook_disable_after
                )
                if not await run_to_end(self._record, message, outcome, disabling):
                    return
        finally:
            await run_to_end(self._release, webhook_id)

    def _due(self) -> list[int]:
        with self._databases.session(writing=False) as db:
            return service.due_webhooks(db, self.name, CONCURRENT_WEBHOOKS * 4)

    def _claim(self, webhook_id: int) -> bool:
        with self._databases.session(writing=True, elements_only=True) as db:
            taken = service.take_lease(db, webhook_id, self.name, self._settings.webhook_lease)
            db.commit()
            return taken

    def _release(self, webhook_id: int) -> None:
        with self._databases.session(writing=True, elements_only=True) as db:
            service.release_lease(db, webhook_id, self.name)
            db.commit()

    def _prepare(self, webhook_id: int) -> Prepared | None:
        """The next step, kept in the database before it is taken (None: nothing to do now)."""
        with self._databases.session(writing=False) as db:
            found = service.subscription(db, webhook_id)
            if found is None:
                step, hook = None, None
            else:
                hook, login = found
                metamodel_revision, access_revision = service.cache_revisions(db)
                metamodel = self._metamodels.get(db, metamodel_revision)
                restriction = None if hook.restriction is None else restriction_from_text(hook.restriction)
                owner = self._actors.get(
                    db, hook.user_id, login, access_revision, metamodel_revision, restriction
                )
                try:
                    step = service.next_step(db, owner, metamodel, hook)
                except Forbidden:  # the owner lost the right to read history: look again later
                    step = NextStep(wait_until=time.time() + OWNER_RECHECK)
        if hook is None or step is None:
            with self._databases.session(writing=True, elements_only=True) as db:
                service.postpone(db, webhook_id, self.name, OWNER_RECHECK)
                db.commit()
            return None
        if step.message is None and step.advance_to is None and step.wait_until is None:
            return None
        with self._databases.session(writing=True, elements_only=True) as db:
            kept = service.mark_pending(db, self.name, hook, step, self._settings.webhook_lease)
            db.commit()
        return Prepared(hook, step) if kept else None

    def _record(self, message: Outgoing, outcome: Outcome, disabling: bool = False) -> bool:
        # Disabling the webhook is recorded in history, a write that takes the gate alone; the rest of the
        # bookkeeping runs beside element writes.
        with self._databases.session(writing=True, elements_only=not disabling) as db:
            changes = ChangeLog(
                user_login=service.WORKER_LOGIN, request_id=f"webhook-{message.webhook_id}", via="webhook"
            )
            more = service.record_outcome(
                db,
                changes if disabling else None,
                self.name,
                message,
                outcome,
                self._settings.webhook_disable_after,
            )
            changes.flush(db)
            db.commit()
        if not outcome.delivered:
            log.info(
                "webhook %s: %s not delivered (%s)",
                message.webhook_id,
                message.message_id,
                outcome.status or outcome.error,
            )
        return more

    def record_test(self, message: Outgoing, outcome: Outcome) -> DeliveryOut:
        """Log a test message's attempt; the logged attempt."""
        with self._databases.session(writing=True, elements_only=True) as db:
            logged = service.record_test(db, message, outcome)
            db.commit()
        return logged


def _elapsed(start: float) -> int:
    return int((time.perf_counter() - start) * 1000)
