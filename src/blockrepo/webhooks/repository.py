"""All SQL of webhooks: the subscriptions, the lease a delivery worker takes on one, and the delivery log."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, delete, func, or_, select, update
from sqlalchemy.orm import Session

from blockrepo.access.models import User
from blockrepo.webhooks.models import Webhook, WebhookDelivery


def add_webhook(db: Session, webhook: Webhook) -> Webhook:
    db.add(webhook)
    db.flush()
    return webhook


def webhook_by_id(db: Session, webhook_id: int) -> Webhook | None:
    return db.get(Webhook, webhook_id)


def remove_webhook(db: Session, webhook: Webhook) -> None:
    db.execute(delete(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook.id))
    db.delete(webhook)
    db.flush()


def listed_webhooks(db: Session, owner_id: int | None) -> list[tuple[Webhook, str]]:
    """(webhook, owner's login) of one owner's subscriptions (every owner's with None), newest first."""
    statement = select(Webhook, User.login).join(User, User.id == Webhook.user_id)
    if owner_id is not None:
        statement = statement.where(Webhook.user_id == owner_id)
    return [(row[0], row[1]) for row in db.execute(statement.order_by(Webhook.id.desc()))]


def owner_of(db: Session, user_id: int) -> tuple[str, bool] | None:
    """The owner's login and whether the account is enabled."""
    row = db.execute(select(User.login, User.enabled).where(User.id == user_id)).first()
    return None if row is None else (row[0], bool(row[1]))


def due_webhook_ids(db: Session, now: float, worker: str, limit: int, newest: int, whole: int) -> list[int]:
    """Active subscriptions with changes after their cursor (up to the revision `newest`; a cursor at
    `whole` change id is after a whole revision) or a message pending, whose next attempt is due and that
    no other worker holds, oldest due first."""
    statement = (
        select(Webhook.id)
        .where(
            Webhook.active.is_(True),
            Webhook.disabled_at.is_(None),
            Webhook.next_attempt_at <= now,
            or_(Webhook.lease_owner.is_(None), Webhook.lease_until < now, Webhook.lease_owner == worker),
            or_(
                and_(
                    Webhook.scenario_id.is_(None),
                    or_(Webhook.cursor_revision < newest, Webhook.cursor_change < whole),
                ),
                Webhook.pending_revision.is_not(None),
            ),
        )
        .order_by(Webhook.next_attempt_at, Webhook.id)
        .limit(limit)
    )
    return list(db.scalars(statement))


def waiting_scenario_webhooks(
    db: Session, now: float, worker: str, limit: int
) -> list[tuple[int, int, tuple[int, int]]]:
    """(id, scenario id, cursor) of the active subscriptions to a scenario with no message pending, due now
    and held by no other worker, oldest due first (whether the scenario has events or changes after the
    cursor is the scenarios service's to say)."""
    statement = (
        select(Webhook.id, Webhook.scenario_id, Webhook.cursor_revision, Webhook.cursor_change)
        .where(
            Webhook.scenario_id.is_not(None),
            Webhook.active.is_(True),
            Webhook.disabled_at.is_(None),
            Webhook.next_attempt_at <= now,
            or_(Webhook.lease_owner.is_(None), Webhook.lease_until < now, Webhook.lease_owner == worker),
            Webhook.pending_revision.is_(None),
        )
        .order_by(Webhook.next_attempt_at, Webhook.id)
        .limit(limit)
    )
    return [
        (webhook_id, scenario_id, (event, change))
        for webhook_id, scenario_id, event, change in db.execute(statement)
        if scenario_id is not None
    ]


def take_lease(db: Session, webhook_id: int, worker: str, now: float, until: float) -> bool:
    """Hold the subscription for `worker` until `until`, unless another worker holds it: one conditional
    update, so of several workers on any number of hosts one wins."""
    result = db.execute(
        update(Webhook)
        .where(
            Webhook.id == webhook_id,
            or_(Webhook.lease_owner.is_(None), Webhook.lease_until < now, Webhook.lease_owner == worker),
        )
        .values(lease_owner=worker, lease_until=until)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def held_webhook(db: Session, webhook_id: int, worker: str, generation: int) -> Webhook | None:
    """The subscription, locked for update, if `worker` still holds it and no replay moved it since."""
    return db.scalar(
        select(Webhook)
        .where(Webhook.id == webhook_id, Webhook.lease_owner == worker, Webhook.generation == generation)
        .with_for_update()
    )


def release_lease(db: Session, webhook_id: int, worker: str) -> None:
    db.execute(
        update(Webhook)
        .where(Webhook.id == webhook_id, Webhook.lease_owner == worker)
        .values(lease_owner=None, lease_until=0.0)
        .execution_options(synchronize_session=False)
    )


def add_delivery(db: Session, delivery: WebhookDelivery) -> None:
    db.add(delivery)
    db.flush()


def prune_deliveries(db: Session, webhook_id: int, before: int) -> None:
    """Forget the webhook's attempts made before the time `before`."""
    db.execute(
        delete(WebhookDelivery).where(
            WebhookDelivery.webhook_id == webhook_id, WebhookDelivery.attempted_at < before
        )
    )


def deliveries(
    db: Session, webhook_id: int, status: str | None, before: int | None, limit: int
) -> Sequence[WebhookDelivery]:
    """The newest attempts first, from before the id `before`, one more than `limit`."""
    statement = select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id)
    if status is not None:
        statement = statement.where(WebhookDelivery.status == status)
    if before is not None:
        statement = statement.where(WebhookDelivery.id < before)
    return db.scalars(statement.order_by(WebhookDelivery.id.desc()).limit(limit + 1)).all()


def count_owned(db: Session, owner_id: int) -> int:
    return len(db.scalars(select(Webhook.id).where(Webhook.user_id == owner_id)).all())


def postpone(db: Session, webhook_id: int, worker: str, until: float) -> None:
    """Look at the webhook again only at `until` (if `worker` still holds it)."""
    db.execute(
        update(Webhook)
        .where(Webhook.id == webhook_id, Webhook.lease_owner == worker)
        .values(next_attempt_at=until)
        .execution_options(synchronize_session=False)
    )


def backlog_figures(db: Session, newest: int) -> tuple[int, int, int, int | None]:
    """Of the active webhooks: how many, how many of main's are behind the revision `newest`, how many are
    failing, and the oldest cursor's revision of main's (None: no active webhook of main's). A scenario's
    webhook counts its cursor in the scenario's changes, not in revisions."""
    of_main = Webhook.scenario_id.is_(None)
    row = db.execute(
        select(
            func.count(),
            func.count().filter(of_main, Webhook.cursor_revision < newest),
            func.count(Webhook.failing_since),
            func.min(Webhook.cursor_revision).filter(of_main),
        ).where(Webhook.active.is_(True), Webhook.disabled_at.is_(None))
    ).one()
    return int(row[0]), int(row[1]), int(row[2]), None if row[3] is None else int(row[3])
