"""Webhooks: managing subscriptions, and the steps of delivering one (`api/webhook_worker.py` runs them).

A subscription is a cursor over the change log. A delivery reads the committed changesets after the cursor
(whole revisions, up to MESSAGE_ROWS changesets, the committed horizon on PostgreSQL bounding them, so a
rolled-back write is never read), keeps what the owner may see and the subscription asks for, and marks
the end of that range as pending before sending it: a message cut off by a crash is built again from the
same range and sent with the same id. Only a 2xx moves the cursor. The message id names the subscription,
its replay generation and the range, so a receiver deduplicates on `webhook-id`.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements.read.by_id import read_elements
from blockrepo.errors import Conflict, ErrorItem, Forbidden, NotFound, ValidationFailed
from blockrepo.history import stream
from blockrepo.history.service import require_history
from blockrepo.instants import utc_text
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.scenarios import feed as scenario_feed
from blockrepo.scenarios import service as scenarios
from blockrepo.tokens.service import restriction_text
from blockrepo.webhooks import repository
from blockrepo.webhooks.models import Webhook, WebhookDelivery
from blockrepo.webhooks.schemas import (
    DeliveryOut,
    DeliveryPage,
    IssuedWebhookOut,
    Replay,
    SecretRotation,
    WebhookCreate,
    WebhookOut,
    WebhookUpdate,
)
from blockrepo.webhooks.signing import new_secret, signed_headers
from blockrepo.webhooks.targets import TargetRules, parsed_url, resolve

# Changesets one message holds at most: a bulk write or an import of 10,000 elements is ten messages.
MESSAGE_ROWS = 1000
# Subscriptions one account may own.
MOST_WEBHOOKS_PER_OWNER = 50
# Characters of a receiver's answer the delivery log keeps.
SNIPPET_CHARACTERS = 512
# The delivery log keeps a webhook's attempts this long; it is pruned every PRUNE_EVERY attempts.
KEEP_DELIVERIES_SECONDS = 30 * 86400
PRUNE_EVERY = 100
# Retries wait 2^attempt seconds (with jitter), at most this long; a Retry-After longer than it is cut.
LONGEST_WAIT = 3600.0
# What "the position after a whole revision" is in a cursor (history.stream's position).
AFTER_REVISION = stream.AFTER_REVISION
# The author history names for what the delivery worker records (a subscription it disabled).
WORKER_LOGIN = "blockrepo"


def check_target(url: str, rules: TargetRules, pointer: str = "/url") -> None:
    """400 unless the URL is http(s) and every address its host resolves to now may be delivered to. It
    resolves the name, which may take long: call it before the write lock is taken. Each delivery checks
    the address it connects to again (a name may resolve elsewhere later)."""
    resolve(url, rules, pointer)


# --- management -----------------------------------------------------------------------------------------


def create_webhook(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    body: WebhookCreate,
) -> IssuedWebhookOut:
    """A subscription owned by the caller, delivering what the caller may read (narrowed, when a token
    creates it, by the token's restriction: a webhook never shows more than the credential that made it).
    The route checks the target (`check_target`) before the write lock is taken."""
    require_history(actor)
    parsed_url(body.url)
    types = _types(actor, metamodel, body.types)
    if repository.count_owned(db, actor.user_id) >= MOST_WEBHOOKS_PER_OWNER:
        raise Conflict(
            f"an account owns at most {MOST_WEBHOOKS_PER_OWNER} webhooks; delete one first",
            code="too_many_webhooks",
        )
    scenario_id = _scope(db, actor, body.scope, body.events)
    cursor = _start(db, scenario_id, body.from_revision)
    now = int(time.time())
    webhook = repository.add_webhook(
        db,
        Webhook(
            name=body.name,
            url=body.url,
            user_id=actor.user_id,
            restriction=None if actor.restriction is None else restriction_text(actor.restriction),
            created_by=actor.login,
            created_at=now,
            scenario_id=scenario_id,
            events=orjson.dumps(sorted(set(body.events))).decode(),
            type_names=None if types is None else orjson.dumps(types).decode(),
            conditions=_conditions_text(body.conditions),
            payload=body.payload,
            batch_seconds=body.batch_seconds,
            secret=new_secret(),
            active=True,
            cursor_revision=cursor[0],
            cursor_change=cursor[1],
            generation=0,
            attempts=0,
            next_attempt_at=0.0,
            lease_until=0.0,
        ),
    )
    changes.administration(
        "created",
        f"webhook {webhook.id}",
        [
            {"property": "name", "old": None, "new": webhook.name},
            {"property": "url", "old": None, "new": webhook.url},
            {"property": "owner", "old": None, "new": actor.login},
        ],
    )
    return IssuedWebhookOut(**_out(db, webhook, actor.login).model_dump(), secret=webhook.secret)


def _start(db: Session, scenario_id: int | None, after: int | None) -> tuple[int, int]:
    """A cursor after `after` (None: after the newest change): main's revision, or for a scenario's
    webhook (the scenario's event number, its change number)."""
    if scenario_id is None:
        newest = stream.newest_revision(db)
        return (newest if after is None else min(after, newest)), AFTER_REVISION
    # A scenario's: (its event number, its change number). From change 0 its events come from the start
    # too; from a later change, only those still to come (events and changes are numbered apart).
    newest = scenario_feed.newest_change_id(db, scenario_id)
    events = 0 if after == 0 else scenario_feed.newest_event_id(db, scenario_id)
    return events, (newest if after is None else min(after, newest))


# What a scenario's webhook may deliver: its own element changes and what happens to it (the rest is
# main's alone, and scenario events are a scenario's webhook's alone).
SCENARIO_EVENTS = frozenset(
    {
        "element.created",
        "element.updated",
        "element.deleted",
        "relation.added",
        "relation.removed",
        *scenario_feed.EVENT_TYPES,
    }
)


def _scope(db: Session, actor: Actor, scope: str, events: Sequence[str]) -> int | None:
    """The scenario a webhook's `scope` names (None: main); 404 for one the caller does not see, 400 for
    events a scenario does not have."""
    if scope == "main":
        _main_events_only(events)
        return None
    scenario_id = scenario_feed.scenario_id_of(db, actor, scope.removeprefix("scenario:"))
    _scenario_events_only(events)
    return scenario_id


def _main_events_only(events: Sequence[str]) -> None:
    of_scenarios = sorted(set(events) & set(scenario_feed.EVENT_TYPES))
    if of_scenarios:
        raise ValidationFailed(
            "scenario events come from a scenario's webhook (scope scenario:<key>)",
            errors=[ErrorItem("/events", "not_in_main", f"a scenario's events only: {of_scenarios}")],
        )


def _scenario_events_only(events: Sequence[str]) -> None:
    other = sorted(set(events) - SCENARIO_EVENTS)
    if other:
        raise ValidationFailed(
            "a scenario's webhook delivers element, relation and scenario events only",
            errors=[ErrorItem("/events", "not_in_scenario", f"main's events only: {other}")],
        )


def list_webhooks(db: Session, actor: Actor, *, everyone: bool) -> list[WebhookOut]:
    """The caller's subscriptions, or with `everyone` (a supervisor only) every account's."""
    if everyone and not actor.supervisor:
        raise Forbidden("only a supervisor sees every account's webhooks")
    return [
        _out(db, webhook, login)
        for webhook, login in repository.listed_webhooks(db, None if everyone else actor.user_id)
    ]


def get_webhook(db: Session, actor: Actor, webhook_id: int) -> WebhookOut:
    webhook, login = _managed(db, actor, webhook_id)
    return _out(db, webhook, login)


def update_webhook(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    webhook_id: int,
    body: WebhookUpdate,
) -> WebhookOut:
    """Change what it delivers and where (a new URL checked by the route, `check_target`); the cursor
    stays (what was delivered stays delivered)."""
    webhook, login = _managed(db, actor, webhook_id)
    record: list[dict[str, Any]] = []
    if body.url is not None and body.url != webhook.url:
        parsed_url(body.url)
        record.append({"property": "url", "old": webhook.url, "new": body.url})
        webhook.url = body.url
    if body.name is not None and body.name != webhook.name:
        record.append({"property": "name", "old": webhook.name, "new": body.name})
        webhook.name = body.name
    if body.events is not None:
        if webhook.scenario_id is not None:
            _scenario_events_only(body.events)
        else:
            _main_events_only(body.events)
        webhook.events = orjson.dumps(sorted(set(body.events))).decode()
    if "types" in body.model_fields_set:
        types = _types(actor, metamodel, body.types)
        webhook.type_names = None if types is None else orjson.dumps(types).decode()
    if "conditions" in body.model_fields_set:
        webhook.conditions = _conditions_text(body.conditions)
    if body.payload is not None:
        webhook.payload = body.payload
    if body.batch_seconds is not None:
        webhook.batch_seconds = body.batch_seconds
    if record:
        changes.administration("updated", f"webhook {webhook.id}", record)
    db.flush()
    return _out(db, webhook, login)


def delete_webhook(db: Session, actor: Actor, changes: ChangeLog, webhook_id: int) -> None:
    webhook, _ = _managed(db, actor, webhook_id)
    changes.administration(
        "deleted", f"webhook {webhook.id}", [{"property": "name", "old": webhook.name, "new": None}]
    )
    repository.remove_webhook(db, webhook)


def set_active(db: Session, actor: Actor, webhook_id: int, *, active: bool) -> WebhookOut:
    """Pause (nothing is sent; the cursor waits) or resume; resuming a subscription the worker disabled
    enables it again, its next message due at once."""
    webhook, login = _managed(db, actor, webhook_id)
    webhook.active = active
    if active:
        webhook.disabled_at = None
        webhook.disabled_reason = None
        webhook.attempts = 0
        webhook.failing_since = None
        webhook.next_attempt_at = 0.0
    db.flush()
    return _out(db, webhook, login)


def replay(db: Session, actor: Actor, webhook_id: int, body: Replay) -> WebhookOut:
    """Deliver again every change after `fromRevision` (a scenario's webhook: after that scenario change;
    the cursor goes back there). The replayed messages get new ids: a receiver that deduplicated the
    first delivery takes them."""
    webhook, login = _managed(db, actor, webhook_id)
    webhook.cursor_revision, webhook.cursor_change = _start(db, webhook.scenario_id, body.from_revision)
    webhook.pending_revision = None
    webhook.pending_change = None
    webhook.generation += 1
    webhook.attempts = 0
    webhook.failing_since = None
    webhook.next_attempt_at = 0.0
    db.flush()
    return _out(db, webhook, login)


def rotate_secret(db: Session, actor: Actor, webhook_id: int, body: SecretRotation) -> IssuedWebhookOut:
    """A new signing secret; for `overlapSeconds` every message carries a signature under each."""
    webhook, login = _managed(db, actor, webhook_id)
    webhook.previous_secret = webhook.secret if body.overlap_seconds else None
    webhook.previous_secret_until = int(time.time()) + body.overlap_seconds if body.overlap_seconds else None
    webhook.secret = new_secret()
    db.flush()
    return IssuedWebhookOut(**_out(db, webhook, login).model_dump(), secret=webhook.secret)


def delivery_page(
    db: Session, actor: Actor, webhook_id: int, status: str | None, before: int | None, limit: int
) -> DeliveryPage:
    """The delivery log, newest first."""
    _managed(db, actor, webhook_id)
    if status is not None and status not in ("delivered", "failed"):
        raise ValidationFailed(
            "status is delivered or failed",
            errors=[ErrorItem("query:status", "invalid_status", f"not a delivery status: {status!r}")],
        )
    rows = repository.deliveries(db, webhook_id, status, before, limit)
    items = [_delivery_out(row) for row in rows[:limit]]
    return DeliveryPage(items=items, next_before=items[-1].id if len(rows) > limit else None)


def _managed(db: Session, actor: Actor, webhook_id: int) -> tuple[Webhook, str]:
    """The subscription if the caller may manage it (their own, or any for a supervisor), else 404."""
    webhook = repository.webhook_by_id(db, webhook_id)
    if webhook is None or not (actor.supervisor or webhook.user_id == actor.user_id):
        raise NotFound(f"no webhook {webhook_id}")
    owner = repository.owner_of(db, webhook.user_id)
    assert owner is not None, "a webhook's owner exists (its row goes with the account)"
    return webhook, owner[0]


def _types(actor: Actor, metamodel: Metamodel, names: list[str] | None) -> list[str] | None:
    if names is None:
        return None
    for index, name in enumerate(names):
        type_def = metamodel.type_named(name)
        if type_def is None or not actor.can_type(type_def.id, "read"):
            raise ValidationFailed(
                f"no building block type {name!r} you may read",
                errors=[ErrorItem(f"/types/{index}", "unknown_type", f"not a type you may read: {name!r}")],
            )
    return sorted(set(names))


def _conditions_text(conditions: list[Any] | None) -> str | None:
    if not conditions:
        return None
    return orjson.dumps(
        [c.model_dump(include=c.model_fields_set | {"property"}) for c in conditions]
    ).decode()


def _maybe_time(seconds: float | None) -> str | None:
    return None if seconds is None else utc_text(seconds)


def _out(db: Session, webhook: Webhook, owner: str) -> WebhookOut:
    scope, delivered = "main", webhook.cursor_revision
    if webhook.scenario_id is not None:
        scope = f"scenario:{scenario_feed.scenario_key(db, webhook.scenario_id)}"
        delivered = webhook.cursor_change
    elif webhook.cursor_change != AFTER_REVISION:
        delivered = webhook.cursor_revision - 1
    return WebhookOut(
        id=webhook.id,
        name=webhook.name,
        url=webhook.url,
        owner=owner,
        created_by=webhook.created_by,
        created_at=utc_text(webhook.created_at),
        events=orjson.loads(webhook.events),
        types=None if webhook.type_names is None else orjson.loads(webhook.type_names),
        conditions=None if webhook.conditions is None else orjson.loads(webhook.conditions),
        scope=scope,
        payload=webhook.payload,
        batch_seconds=webhook.batch_seconds,
        active=webhook.active and webhook.disabled_at is None,
        disabled_at=_maybe_time(webhook.disabled_at),
        disabled_reason=webhook.disabled_reason,
        delivered_through=delivered,
        attempts=webhook.attempts,
        next_attempt_at=_maybe_time(webhook.next_attempt_at) if webhook.attempts else None,
        failing_since=_maybe_time(webhook.failing_since),
        last_delivered_at=_maybe_time(webhook.last_delivered_at),
    )


def _delivery_out(row: WebhookDelivery) -> DeliveryOut:
    return DeliveryOut(
        id=row.id,
        message_id=row.message_id,
        kind=row.kind,
        first_revision=row.first_revision,
        last_revision=row.last_revision,
        events=row.events,
        attempt=row.attempt,
        status=row.status,
        response_status=row.response_status,
        response_snippet=row.response_snippet,
        error=row.error,
        duration_ms=row.duration_ms,
        attempted_at=utc_text(row.attempted_at),
    )


# --- delivery --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subscription:
    """A subscription as a delivery reads it (a copy: the worker holds no session while it sends)."""

    id: int
    url: str
    user_id: int
    restriction: str | None
    events: frozenset[str]
    type_names: frozenset[str] | None
    conditions: tuple[dict[str, Any], ...]
    payload: str
    batch_seconds: int
    signing_secrets: tuple[str, ...]
    cursor: tuple[int, int]
    pending: tuple[int, int] | None
    generation: int
    attempts: int
    failing_since: int | None
    scenario: str | None = None  # the key of the scenario whose changes it delivers (None: main's)


@dataclass(frozen=True)
class Outgoing:
    """A message ready to send: where, the exact bytes and the secrets that sign them (each attempt is
    signed when it is sent, `signature_headers`, so that its timestamp is the time of sending)."""

    webhook_id: int
    generation: int
    message_id: str
    kind: str
    url: str
    body: bytes
    signing_secrets: tuple[str, ...]
    first_revision: int | None
    last_revision: int | None
    events: int
    attempt: int
    end: tuple[int, int] | None = None


@dataclass(frozen=True)
class Outcome:
    """How a receiver answered (status None: no answer; `error` says why)."""

    status: int | None
    snippet: str | None
    error: str | None
    duration_ms: int
    retry_after: float | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class NextStep:
    """What a delivery does next: send `message`, or move the cursor to `advance_to` without sending
    (nothing there for this subscription), or wait until `wait_until` (a batching window), or nothing."""

    message: Outgoing | None = None
    advance_to: tuple[int, int] | None = None
    wait_until: float | None = None
    end: tuple[int, int] | None = None


@dataclass(frozen=True)
class Backlog:
    """What the delivery workers have yet to send, for the operator's metrics."""

    active: int  # webhooks active and not disabled
    behind: int  # of them, those with committed revisions still to deliver
    failing: int  # of them, those whose last attempt failed
    revisions_behind: int  # revisions between the newest and the furthest-behind cursor


def backlog(db: Session) -> Backlog:
    newest = stream.newest_revision(db)
    active, behind, failing, oldest = repository.backlog_figures(db, newest)
    return Backlog(active, behind, failing, 0 if oldest is None else max(newest - oldest, 0))


def due_webhooks(db: Session, worker: str, limit: int) -> list[int]:
    """Subscriptions with changes to deliver, due now and held by no other worker: main's with revisions
    after their cursor, a scenario's with changes written in it after theirs, any with a message pending."""
    now = time.time()
    newest = stream.newest_revision(db)
    due = repository.due_webhook_ids(db, now, worker, limit, newest, AFTER_REVISION)
    waiting = repository.waiting_scenario_webhooks(db, now, worker, limit)
    if waiting:
        scenario_ids = {scenario_id for _, scenario_id, _ in waiting}
        newest_events = scenario_feed.newest_event_ids(db, scenario_ids)
        newest_changes = scenario_feed.newest_change_ids(db, scenario_ids)
        due.extend(
            webhook_id
            for webhook_id, scenario_id, (event, change) in waiting
            if newest_events.get(scenario_id, 0) > event or newest_changes.get(scenario_id, 0) > change
        )
    return due[:limit]


def take_lease(db: Session, webhook_id: int, worker: str, seconds: float) -> bool:
    now = time.time()
    return repository.take_lease(db, webhook_id, worker, now, now + seconds)


def release_lease(db: Session, webhook_id: int, worker: str) -> None:
    repository.release_lease(db, webhook_id, worker)


def postpone(db: Session, webhook_id: int, worker: str, seconds: float) -> None:
    """Leave a webhook that cannot deliver now (its owner disabled or without the right to read history)
    until `seconds` from now."""
    repository.postpone(db, webhook_id, worker, time.time() + seconds)


def subscription(db: Session, webhook_id: int) -> tuple[Subscription, str] | None:
    """The subscription and its owner's login, if it is to deliver (active, its owner enabled)."""
    webhook = repository.webhook_by_id(db, webhook_id)
    if webhook is None or not webhook.active or webhook.disabled_at is not None:
        return None
    owner = repository.owner_of(db, webhook.user_id)
    if owner is None or not owner[1]:
        return None
    now = int(time.time())
    signing = [webhook.secret]
    if webhook.previous_secret is not None and (webhook.previous_secret_until or 0) > now:
        signing.append(webhook.previous_secret)
    pending = None
    if webhook.pending_revision is not None and webhook.pending_change is not None:
        pending = (webhook.pending_revision, webhook.pending_change)
    scenario = None
    if webhook.scenario_id is not None:
        scenario = scenario_feed.scenario_key(db, webhook.scenario_id)
        if scenario is None:
            return None
    found = Subscription(
        scenario=scenario,
        id=webhook.id,
        url=webhook.url,
        user_id=webhook.user_id,
        restriction=webhook.restriction,
        events=frozenset(orjson.loads(webhook.events)),
        type_names=None if webhook.type_names is None else frozenset(orjson.loads(webhook.type_names)),
        conditions=tuple(orjson.loads(webhook.conditions or "[]")),
        payload=webhook.payload,
        batch_seconds=webhook.batch_seconds,
        signing_secrets=tuple(signing),
        cursor=(webhook.cursor_revision, webhook.cursor_change),
        pending=pending,
        generation=webhook.generation,
        attempts=webhook.attempts,
        failing_since=webhook.failing_since,
    )
    return found, owner[0]


def cache_revisions(db: Session) -> tuple[int, int]:
    """The metamodel and access revisions the owner's rights are to be read at."""
    return stream.cache_revisions(db)


def next_step(db: Session, owner: Actor, metamodel: Metamodel, hook: Subscription) -> NextStep:
    """The message the subscription is to send next (the pending one again, if one is), built from the
    committed changesets after its cursor as its owner may see them now."""
    now = time.time()
    if hook.scenario is not None:
        return _next_in_scenario(db, owner, metamodel, hook, hook.scenario, now)
    read = stream.recent_rows(db, hook.cursor, MESSAGE_ROWS)
    rows, end = read.rows, read.position
    if hook.pending is not None:
        rows = [row for row in rows if (row.revision, row.change_id) <= hook.pending]
        end = hook.pending
    elif not rows:
        return NextStep(advance_to=end) if end > hook.cursor else NextStep()
    elif hook.batch_seconds and len(rows) < MESSAGE_ROWS:
        first = _epoch(rows[0].created_at)
        if first + hook.batch_seconds > now:
            return NextStep(wait_until=first + hook.batch_seconds)
    through = end[0] if end[1] == AFTER_REVISION else end[0] - 1
    view = stream.stream_view(db, owner, metamodel, stream.StreamFilter(), cache_revisions(db))
    items = stream.select_changes(view, rows, through).items
    events = [event for item in items for event in _events(item) if _wanted(hook, event)]
    if not events:
        return NextStep(advance_to=end)
    if hook.payload == "full":
        _add_current(db, owner, metamodel, events)
    first_revision = rows[0].revision if rows else end[0]
    message_id = f"msg_{hook.id}_{hook.generation}_{_position(hook.cursor)}_{_position(end)}"
    timestamp = int(now)
    body = orjson.dumps(
        {
            "type": "changes",
            "timestamp": utc_text(timestamp),
            "data": {
                "webhook": hook.id,
                "afterRevision": hook.cursor[0] if hook.cursor[1] == AFTER_REVISION else hook.cursor[0] - 1,
                "fromRevision": first_revision,
                "toRevision": end[0],
                "complete": end[1] == AFTER_REVISION,
                "events": events,
            },
        }
    )
    message = Outgoing(
        webhook_id=hook.id,
        generation=hook.generation,
        message_id=message_id,
        kind="changes",
        url=hook.url,
        body=body,
        signing_secrets=hook.signing_secrets,
        first_revision=first_revision,
        last_revision=end[0],
        events=len(events),
        attempt=hook.attempts + 1,
        end=end,
    )
    return NextStep(message=message, end=end)


def _next_in_scenario(
    db: Session, owner: Actor, metamodel: Metamodel, hook: Subscription, key: str, now: float
) -> NextStep:
    """`next_step` for a scenario's webhook: the changesets written in the scenario after its cursor (a
    change number), as the owner may see them now (403 for an owner who no longer sees the scenario:
    the worker looks again later)."""
    try:
        happened, last_event = scenario_feed.events_after(db, owner, key, hook.cursor[0])
        batch = scenario_feed.stream_batch(db, owner, metamodel, key, hook.cursor[1])
    except NotFound as gone:
        raise Forbidden("the webhook's owner no longer sees its scenario") from gone
    items, end = batch.items, (last_event, batch.after)
    if hook.pending is not None:
        happened = [event for event in happened if event["scenarioEvent"] <= hook.pending[0]]
        items = [item for item in items if item["scenarioChange"] <= hook.pending[1]]
        end = hook.pending
    elif not items and not happened:
        return NextStep(advance_to=end) if end != hook.cursor else NextStep()
    elif hook.batch_seconds and not batch.more:
        first = min(_epoch_of(entry["timestamp"]) for entry in [*items[:1], *happened[:1]])
        if first + hook.batch_seconds > now:
            return NextStep(wait_until=first + hook.batch_seconds)
    events = [event for event in happened if _wanted(hook, event)]
    for item in items:
        for event in _events(item):
            if _wanted(hook, event):
                events.append({**event, "scenario": key, "scenarioChange": item["scenarioChange"]})
    # In the order they happened (a stable sort: each kind is in order already).
    events.sort(key=lambda event: _epoch_of(event["timestamp"]))
    if not events:
        return NextStep(advance_to=end)
    if hook.payload == "full":
        _add_planned(db, owner, metamodel, key, events)
    body = orjson.dumps(
        {
            "type": "changes",
            "timestamp": utc_text(int(now)),
            "data": {
                "webhook": hook.id,
                "scenario": key,
                "afterEvent": hook.cursor[0],
                "toEvent": end[0],
                "afterChange": hook.cursor[1],
                "toChange": end[1],
                "complete": True,
                "events": events,
            },
        }
    )
    message = Outgoing(
        webhook_id=hook.id,
        generation=hook.generation,
        message_id=f"msg_{hook.id}_{hook.generation}_s{hook.cursor[0]}.{hook.cursor[1]}_s{end[0]}.{end[1]}",
        kind="changes",
        url=hook.url,
        body=body,
        signing_secrets=hook.signing_secrets,
        first_revision=None,
        last_revision=None,
        events=len(events),
        attempt=hook.attempts + 1,
        end=end,
    )
    return NextStep(message=message, end=end)


def test_message(db: Session, actor: Actor, webhook_id: int) -> Outgoing:
    """A `webhook.test` message to send now, outside the cursor (what "test" in the interface sends)."""
    webhook, _ = _managed(db, actor, webhook_id)
    found = subscription(db, webhook.id)
    signing = (webhook.secret,) if found is None else found[0].signing_secrets
    now = int(time.time())
    message_id = f"msg_{webhook.id}_test_{now}_{secrets.token_hex(4)}"
    body = orjson.dumps(
        {
            "type": "webhook.test",
            "timestamp": utc_text(now),
            "data": {"webhook": webhook.id, "name": webhook.name},
        }
    )
    return Outgoing(
        webhook_id=webhook.id,
        generation=webhook.generation,
        message_id=message_id,
        kind="test",
        url=webhook.url,
        body=body,
        signing_secrets=signing,
        first_revision=None,
        last_revision=None,
        events=0,
        attempt=1,
    )


def signature_headers(message: Outgoing) -> dict[str, str]:
    """The Standard Webhooks headers that sign the message now."""
    return signed_headers(list(message.signing_secrets), message.message_id, int(time.time()), message.body)


def mark_pending(db: Session, worker: str, hook: Subscription, step: NextStep, lease_seconds: float) -> bool:
    """Keep what the step will do before it is done: the pending message's end (so a delivery cut off
    sends the same message again), a cursor moved past changes with nothing to send, or the end of a
    batching window. False if the worker no longer holds the subscription (another took it over, or a
    replay moved it)."""
    webhook = repository.held_webhook(db, hook.id, worker, hook.generation)
    if webhook is None:
        return False
    webhook.lease_until = time.time() + lease_seconds
    if step.advance_to is not None:
        webhook.cursor_revision, webhook.cursor_change = step.advance_to
    elif step.wait_until is not None:
        webhook.next_attempt_at = step.wait_until
    elif step.end is not None:
        webhook.pending_revision, webhook.pending_change = step.end
    db.flush()
    return True


def would_disable(hook: Subscription, outcome: Outcome, disable_after: int) -> bool:
    """Whether recording this outcome may disable the webhook (a 410, or failing for long enough)."""
    if outcome.delivered:
        return False
    failing_since = hook.failing_since or int(time.time())
    return outcome.status == 410 or time.time() - failing_since >= disable_after - 60


def record_outcome(
    db: Session,
    changes: ChangeLog | None,
    worker: str,
    message: Outgoing,
    outcome: Outcome,
    disable_after: int,
) -> bool:
    """Log the attempt; on a 2xx move the cursor past the message, else schedule the next attempt with
    exponential backoff and jitter (a Retry-After within LONGEST_WAIT wins), and disable the subscription
    on a 410 or when it has failed for `disable_after` seconds (recording a `webhook.disabled` change;
    with `changes` None, in a transaction that may not record history, it is disabled at a later
    failure). Whether the next message may follow at once."""
    now = int(time.time())
    _log_attempt(db, message, outcome, now)
    if message.kind != "changes":
        return False
    webhook = repository.held_webhook(db, message.webhook_id, worker, message.generation)
    if webhook is None or message.end is None:
        return False
    if (webhook.pending_revision, webhook.pending_change) != message.end:
        return False
    if outcome.delivered:
        webhook.cursor_revision, webhook.cursor_change = message.end
        webhook.pending_revision = webhook.pending_change = None
        webhook.attempts = 0
        webhook.failing_since = None
        webhook.last_delivered_at = now
        webhook.next_attempt_at = 0.0
        db.flush()
        return True
    webhook.attempts += 1
    webhook.failing_since = webhook.failing_since or now
    wait = min(LONGEST_WAIT, 2.0 ** min(webhook.attempts, 20)) * random.uniform(0.5, 1.0)
    if outcome.retry_after is not None:
        wait = min(LONGEST_WAIT, max(outcome.retry_after, 1.0))
    webhook.next_attempt_at = now + wait
    reason = None
    if outcome.status == 410:
        reason = "the receiver answered 410 Gone"
    elif now - webhook.failing_since >= disable_after:
        reason = f"every delivery failed for {now - webhook.failing_since} seconds"
    if reason is not None and changes is not None:
        webhook.disabled_at = now
        webhook.disabled_reason = reason
        changes.administration(
            "updated",
            f"webhook {webhook.id}",
            [{"property": "disabled", "old": None, "new": reason}],
        )
    db.flush()
    return False


def record_test(db: Session, message: Outgoing, outcome: Outcome) -> DeliveryOut:
    """Log a test message's attempt; the logged attempt."""
    return _delivery_out(_log_attempt(db, message, outcome, int(time.time())))


def _log_attempt(db: Session, message: Outgoing, outcome: Outcome, now: int) -> WebhookDelivery:
    delivery = WebhookDelivery(
        webhook_id=message.webhook_id,
        message_id=message.message_id,
        kind=message.kind,
        first_revision=message.first_revision,
        last_revision=message.last_revision,
        events=message.events,
        attempt=message.attempt,
        status="delivered" if outcome.delivered else "failed",
        response_status=outcome.status,
        response_snippet=outcome.snippet,
        error=outcome.error,
        duration_ms=outcome.duration_ms,
        attempted_at=now,
    )
    repository.add_delivery(db, delivery)
    if delivery.id % PRUNE_EVERY == 0:
        repository.prune_deliveries(db, message.webhook_id, now - KEEP_DELIVERIES_SECONDS)
    return delivery


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header's wait: seconds, or an HTTP date (None: absent or unreadable)."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return max(0.0, moment.timestamp() - time.time())


def _position(position: tuple[int, int]) -> str:
    return str(position[0]) if position[1] == AFTER_REVISION else f"{position[0]}.{position[1]}"


def _epoch_of(timestamp: str) -> float:
    """Seconds since the epoch of a timestamp as history writes it (`…Z`)."""
    return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def _epoch(moment: dt.datetime) -> float:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def _events(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The events of one changeset as the owner may see it: an element's creation, change or deletion (a
    change of its relations as relation.added / relation.removed), a metamodel change, a token's or a
    webhook's, or another administration change."""
    base = {
        "revision": item["revision"],
        "timestamp": item["timestamp"],
        "user": item["user"],
        "via": item["via"],
    }
    changes: list[dict[str, Any]] = item["changes"]
    if item["entity"] == "element":
        element = {"type": item["type"], "id": item["id"], "name": item["name"]}
        if item["operation"] != "updated":
            return [{"type": f"element.{item['operation']}", **base, "element": element, "changes": changes}]
        found = []
        values = [c for c in changes if "added" not in c and "removed" not in c]
        added = [{"property": c["property"], "added": c["added"]} for c in changes if c.get("added")]
        removed = [{"property": c["property"], "removed": c["removed"]} for c in changes if c.get("removed")]
        for kind, entries in (
            ("element.updated", values),
            ("relation.added", added),
            ("relation.removed", removed),
        ):
            if entries:
                found.append({"type": kind, **base, "element": element, "changes": entries})
        return found
    subject = item["subject"] or ""
    if item["entity"] == "metamodel":
        return [{"type": "metamodel.changed", **base, "subject": subject, "changes": changes}]
    kind = subject.split(" ", 1)[0]
    if kind == "token":
        return [{"type": f"token.{item['operation']}", **base, "subject": subject, "changes": changes}]
    if kind == "import":
        return [{"type": "import.completed", **base, "subject": subject, "changes": changes}]
    if kind == "webhook":
        if any(change.get("property") == "disabled" and change.get("new") for change in changes):
            return [{"type": "webhook.disabled", **base, "subject": subject, "changes": changes}]
        return []
    return [{"type": "administration.changed", **base, "subject": subject, "changes": changes}]


def _wanted(hook: Subscription, event: dict[str, Any]) -> bool:
    if event["type"] not in hook.events:
        return False
    element = event.get("element")
    if element is None:
        return True
    if hook.type_names is not None and element["type"] not in hook.type_names:
        return False
    return all(_holds(condition, event["changes"]) for condition in hook.conditions)


def _holds(condition: dict[str, Any], changes: list[dict[str, Any]]) -> bool:
    for change in changes:
        if change.get("property") != condition["property"]:
            continue
        if "added" in change or "removed" in change:
            if "new" in condition and not _matches(change.get("added", []), condition["new"]):
                continue
            if "old" in condition and not _matches(change.get("removed", []), condition["old"]):
                continue
            return True
        if "old" in condition and not _matches(change.get("old"), condition["old"]):
            continue
        if "new" in condition and not _matches(change.get("new"), condition["new"]):
            continue
        return True
    return False


def _matches(value: Any, expected: Any) -> bool:
    """A recorded value against a condition's: equal, or among a list's entries (a multi-valued attribute,
    relation ends named by id or name)."""
    if value == expected:
        return True
    if isinstance(value, list):
        return any(_matches(entry, expected) for entry in value)
    if isinstance(value, dict):
        return expected in (value.get("id"), value.get("name"))
    return False


def _add_current(db: Session, owner: Actor, metamodel: Metamodel, events: list[dict[str, Any]]) -> None:
    """A `full` payload: each element event gets the element as the REST API renders it now for the owner
    (null once deleted), read in one batch per type."""
    by_type: dict[str, list[int]] = {}
    for event in events:
        element = event.get("element")
        if element is not None and element["id"] is not None:
            by_type.setdefault(element["type"], []).append(element["id"])
    current: dict[tuple[str, int], dict[str, Any]] = {}
    for type_name, ids in by_type.items():
        for element_id, rendered in read_elements(db, metamodel, owner, type_name, ids).items():
            current[(type_name, element_id)] = rendered
    for event in events:
        element = event.get("element")
        if element is not None:
            event["current"] = current.get((element["type"], element["id"]))


def _add_planned(
    db: Session, owner: Actor, metamodel: Metamodel, key: str, events: list[dict[str, Any]]
) -> None:
    """A `full` payload of a scenario's webhook: each element event gets the element as a read in the
    scenario renders it now for the owner (null once deleted there), one read per element."""
    current: dict[tuple[str, int], dict[str, Any] | None] = {}
    for event in events:
        element = event.get("element")
        if element is None:
            continue
        found = (element["type"], element["id"])
        if found not in current:
            try:
                current[found] = scenarios.read_element(db, owner, metamodel, key, *found)
            except NotFound:
                current[found] = None
        event["current"] = current[found]
