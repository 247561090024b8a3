"""Webhooks scoped to a planning scenario

`webhook.scenario_id` names the scenario whose own changes a webhook delivers (NULL: main's). Its cursor
is then the scenario's change number (`cursor_change`, `cursor_revision` 0).

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
