"""element ids are never reused (SQLite AUTOINCREMENT)

History, the change feed and `asOf` reads identify an element by its id forever, and clients keep ids.
PostgreSQL hands ids out from a sequence; SQLite without AUTOINCREMENT gives a new row the largest id
plus one, so deleting the newest element would let the next one take its id. Rebuilding the table with
AUTOINCREMENT makes SQLite remember the largest id ever used.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # The rebuild copies the rows and keeps every index and constraint; `migrate.upgrade` runs SQLite
    # migrations with foreign keys off, so dropping the old table cascades nowhere.
    with op.batch_alter_table("element", recreate="always", table_kwargs={"sqlite_autoincrement": True}):
        pass


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table("element", recreate="always", table_kwargs={"sqlite_autoincrement": False}):
        pass
