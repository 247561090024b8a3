"""user ids are never reused (SQLite AUTOINCREMENT), and signed cookies made before are void

A signed session cookie and a cached Basic credential name their account by id and credentials version,
and a new account starts at version 1. SQLite without AUTOINCREMENT gives a new row the largest id plus
one, so deleting the newest user let the next account take its id, and the deleted user's cookie acted as
the new account. Rebuilding `app_user` with AUTOINCREMENT makes SQLite remember the largest id ever used
from now on; PostgreSQL's sequence never hands an id out twice.

The rebuild cannot know ids used and deleted before it, above today's largest one: a signed cookie issued
to such a user could still come back. Replacing the signing secret voids every signed cookie made before
the upgrade (a Basic client simply gets a new one; stored sessions are unaffected, and a deleted user's
stored sessions went with the user).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_SECRET = sa.table("server_secret", sa.column("name", sa.String), sa.column("value", sa.String))


def upgrade() -> None:
    op.execute(
        _SECRET.update().where(_SECRET.c.name == "session_signing").values(value=secrets.token_urlsafe(48))
    )
    if op.get_bind().dialect.name != "sqlite":
        return
    # The rebuild copies the rows and keeps every index and constraint; `migrate.upgrade` runs SQLite
    # migrations with foreign keys off, so dropping the old table cascades nowhere.
    with op.batch_alter_table("app_user", recreate="always", table_kwargs={"sqlite_autoincrement": True}):
        pass


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table("app_user", recreate="always", table_kwargs={"sqlite_autoincrement": False}):
        pass
