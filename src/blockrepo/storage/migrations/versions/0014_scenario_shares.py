"""Scenarios shared with roles

`scenario_share` names the roles a planning scenario is shared with and whether their members only see it
(`read`) or also write in it (`write`).

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "scenario_share",
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("role_id", sa.Integer(), nullable=False),
        sa.Column("access", sa.String(length=8), nullable=False),
        sa.ForeignKeyConstraint(
            ["role_id"], ["role.id"], name=op.f("fk_scenario_share_role_id_role"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenario.id"],
            name=op.f("fk_scenario_share_scenario_id_scenario"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("scenario_id", "role_id", name=op.f("pk_scenario_share")),
    )
    op.create_index(op.f("ix_scenario_share_role_id"), "scenario_share", ["role_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_scenario_share_role_id"), table_name="scenario_share")
    op.drop_table("scenario_share")
