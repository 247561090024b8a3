"""auth: the server secret that signs session cookies, shared by every worker and host

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24 07:20:00
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    table = op.create_table(
        "server_secret",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_server_secret")),
    )
    # Made once, here: every process that serves this database reads the same one.
    op.bulk_insert(table, [{"name": "session_signing", "value": secrets.token_urlsafe(48)}])


def downgrade() -> None:
    op.drop_table("server_secret")
