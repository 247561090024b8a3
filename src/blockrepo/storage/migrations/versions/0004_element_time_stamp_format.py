"""elements: one text format for modification time stamps on SQLite

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 18:00:00

Bulk writes used to store `element.last_modified_at` through the sqlite3 driver's default adapter
(`2026-11-23 17:46:15.437914+00:00`) while every other write path stores SQLAlchemy's format
(`2026-11-23 17:46:15.437914`). SQLite compares the texts, so equal times compared unequal and keyset
pages sorted by lastModificationTime skipped elements. Every stamp is UTC, so dropping the offset is exact.
PostgreSQL stores a timestamp type and needs nothing.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(
            "UPDATE element SET last_modified_at = substr(last_modified_at, 1, length(last_modified_at) - 6) "
            "WHERE last_modified_at LIKE '%+00:00'"
        )


def downgrade() -> None:
    pass  # the old format was a defect; nothing to restore
