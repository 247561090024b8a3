"""Saved reports shared with roles

`report` keeps a list filter, an iteraQL query or a diagram configuration with its owner; `report_share`
names the roles a report is shared with and whether their members only see and run it (`view`) or also
change it (`edit`).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "report",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("type_name", sa.String(length=255), nullable=True),
        sa.Column("filter_text", sa.Text(), nullable=True),
        sa.Column("query_text", sa.Text(), nullable=True),
        sa.Column("sort", sa.Text(), nullable=True),
        sa.Column("fields", sa.JSON(), nullable=True),
        sa.Column("config", sa.JSON(), nullable=True),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("owner_login", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["app_user.id"], name=op.f("fk_report_owner_id_app_user"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_report")),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_report_owner_id"), "report", ["owner_id"], unique=False)
    op.create_table(
        "report_share",
        sa.Column("report_id", sa.Integer(), nullable=False),
        sa.Column("role_id", sa.Integer(), nullable=False),
        sa.Column("access", sa.String(length=8), nullable=False),
        sa.ForeignKeyConstraint(
            ["report_id"], ["report.id"], name=op.f("fk_report_share_report_id_report"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["role_id"], ["role.id"], name=op.f("fk_report_share_role_id_role"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("report_id", "role_id", name=op.f("pk_report_share")),
    )
    op.create_index(op.f("ix_report_share_role_id"), "report_share", ["role_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_report_share_role_id"), table_name="report_share")
    op.drop_table("report_share")
    op.drop_index(op.f("ix_report_owner_id"), table_name="report")
    op.drop_table("report")
