"""Webhooks and their delivery log

`webhook` holds each subscription: its target, what it delivers, its signing secrets and its cursor over the
change log (the position every change up to which was delivered), with the message in flight and the lease
of the worker delivering it. `webhook_delivery` logs every attempt with the receiver's answer.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "webhook",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("restriction", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("events", sa.Text(), nullable=False),
        sa.Column("type_names", sa.Text(), nullable=True),
        sa.Column("conditions", sa.Text(), nullable=True),
        sa.Column("payload", sa.String(length=8), nullable=False),
        sa.Column("batch_seconds", sa.Integer(), nullable=False),
        sa.Column("secret", sa.String(length=64), nullable=False),
        sa.Column("previous_secret", sa.String(length=64), nullable=True),
        sa.Column("previous_secret_until", sa.BigInteger(), nullable=True),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("disabled_at", sa.BigInteger(), nullable=True),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("cursor_revision", sa.Integer(), nullable=False),
        sa.Column("cursor_change", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("pending_revision", sa.Integer(), nullable=True),
        sa.Column("pending_change", sa.Integer(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.Float(), nullable=False),
        sa.Column("failing_since", sa.BigInteger(), nullable=True),
        sa.Column("last_delivered_at", sa.BigInteger(), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["app_user.id"], name=op.f("fk_webhook_user_id_app_user"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook")),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_webhook_user_id"), "webhook", ["user_id"], unique=False)
    op.create_table(
        "webhook_delivery",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.String(length=96), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("first_revision", sa.Integer(), nullable=True),
        sa.Column("last_revision", sa.Integer(), nullable=True),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("response_snippet", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("attempted_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhook.id"],
            name=op.f("fk_webhook_delivery_webhook_id_webhook"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_delivery")),
    )
    op.create_index(
        "ix_webhook_delivery_webhook_id_id", "webhook_delivery", ["webhook_id", "id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_delivery_webhook_id_id", table_name="webhook_delivery")
    op.drop_table("webhook_delivery")
    op.drop_index(op.f("ix_webhook_user_id"), table_name="webhook")
    op.drop_table("webhook")
