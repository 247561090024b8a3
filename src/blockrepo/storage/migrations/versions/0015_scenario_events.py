"""Scenario events and webhooks scoped to a planning scenario

`scenario_event` records what happened to a scenario as a whole (proposed, approved, commented on, synced,
merged, closed, reopened): the outbox its webhooks read. `webhook.scenario_id` names the scenario whose own
changes and events a webhook delivers (NULL: main's); its cursor is then (the scenario's event number, its
change number).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scenario_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("login", sa.String(length=255), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenario.id"],
            name=op.f("fk_scenario_event_scenario_id_scenario"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenario_event")),
    )
    op.create_index("ix_scenario_event_scenario_id_id", "scenario_event", ["scenario_id", "id"], unique=False)
    with op.batch_alter_table("webhook") as batch:
        batch.add_column(sa.Column("scenario_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            batch.f("fk_webhook_scenario_id_scenario"),
            "scenario",
            ["scenario_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.create_index(batch.f("ix_webhook_scenario_id"), ["scenario_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("webhook") as batch:
        batch.drop_index(batch.f("ix_webhook_scenario_id"))
        batch.drop_constraint(batch.f("fk_webhook_scenario_id_scenario"), type_="foreignkey")
        batch.drop_column("scenario_id")
    op.drop_index("ix_scenario_event_scenario_id_id", table_name="scenario_event")
    op.drop_table("scenario_event")
