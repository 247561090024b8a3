"""The tables of webhooks: subscriptions, each a cursor over the revisions, and their delivery log."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base


class Webhook(Base):
    """One subscription. Its cursor is the position in the change log (revision, change id) up to which
    every change was delivered or passed over; a delivery worker reads the committed changes after it and
    moves it only when the receiver answered 2xx. `pending_*` name the end of the message in flight, kept
    before it is sent, so a delivery cut off (a crash, a kill) is sent again as the same message with the
    same id. Times are seconds since the epoch."""

    __tablename__ = "webhook"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    url: Mapped[str] = mapped_column(Text, nullable=False)
    # Whose rights mask what it delivers (read at every delivery), narrowed by the restriction of the
    # token that created it, if one did (JSON text as `api_token.restriction`).
    user_id: Mapped[int] = mapped_column(
        ForeignKey("app_user.id", ondelete="CASCADE"), nullable=False, index=True
    )
    restriction: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
    # The planning scenario whose own changes it delivers (None: main's); its cursor is then
    # (0, the scenario's change number).
    scenario_id: Mapped[int | None] = mapped_column(
        ForeignKey("scenario.id", ondelete="CASCADE"), nullable=True, index=True
    )
    # JSON text: the event types, the building block types (None: every one) and the conditions.
    events: Mapped[str] = mapped_column(Text, nullable=False)
    type_names: Mapped[str | None] = mapped_column(Text, nullable=True)
    conditions: Mapped[str | None] = mapped_column(Text, nullable=True)
    payload: Mapped[str] = mapped_column(String(8), nullable=False)
    batch_seconds: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # The signing secret (`whsec_…`), and the one it replaced while both sign.
    secret: Mapped[str] = mapped_column(String(64), nullable=False)
    previous_secret: Mapped[str | None] = mapped_column(String(64), nullable=True)
    previous_secret_until: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    active: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    disabled_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    disabled_reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    cursor_revision: Mapped[int] = mapped_column(Integer, nullable=False)
    cursor_change: Mapped[int] = mapped_column(Integer, nullable=False)
    # Moved by a replay: message ids of a replayed range differ from the first delivery's.
    generation: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    pending_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    pending_change: Mapped[int | None] = mapped_column(Integer, nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    next_attempt_at: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)
    failing_since: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_delivered_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    # The delivery worker holding the subscription, until when (one sender at a time across instances).
    lease_owner: Mapped[str | None] = mapped_column(String(64), nullable=True)
    lease_until: Mapped[float] = mapped_column(Float, nullable=False, default=0.0)


class WebhookDelivery(Base):
    """One attempt to deliver a message: what was sent and how the receiver answered."""

    __tablename__ = "webhook_delivery"
    __table_args__ = (Index("ix_webhook_delivery_webhook_id_id", "webhook_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhook.id", ondelete="CASCADE"), nullable=False)
    message_id: Mapped[str] = mapped_column(String(96), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # "changes" or "test"
    first_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    events: Mapped[int] = mapped_column(Integer, nullable=False)
    attempt: Mapped[int] = mapped_column(Integer, nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)  # "delivered" or "failed"
    response_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    response_snippet: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    duration_ms: Mapped[int] = mapped_column(Integer, nullable=False)
    attempted_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
