"""history: attributes' former names (history bound to an attribute's identity), ids never reused

Change rows name attributes as they were named when written; a renamed or deleted attribute leaves its name
to the next one that takes it. `attribute_former_name` records, for each rename and deletion, which
attribute bore the name up to which revision (a deletion also the attribute's group), so that history,
the feed and `asOf` reads resolve a recorded name to the attribute it meant and decide visibility by that
attribute's group, not by the group of today's bearer of the name.

The rows for the history recorded so far are derived from its metamodel changes, newest first, starting
from today's attributes: a rename `old -> new` hands `new`'s bearer back its old name; a deletion marks the
name as borne by a deleted attribute whose id and group the old records do not tell (those values stay
readable to supervisors only); a creation frees the name before it.

On SQLite, `attribute` and `attribute_group` become AUTOINCREMENT (as `element` did in 0003): a deleted
attribute's history refers to its id and its group's id, which must never name another one.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_CHANGE = sa.table(
    "change",
    sa.column("id", sa.Integer),
    sa.column("revision", sa.Integer),
    sa.column("entity", sa.String),
    sa.column("operation", sa.String),
    sa.column("subject", sa.String),
    sa.column("changes", sa.JSON),
)
_ATTRIBUTE = sa.table(
    "attribute",
    sa.column("id", sa.Integer),
    sa.column("name", sa.String),
    sa.column("builtin_type_id", sa.Integer),
)
_PREFIX = "attribute "


def upgrade() -> None:
    former_name = op.create_table(
        "attribute_former_name",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attribute_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("until_revision", sa.Integer(), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attribute_former_name")),
    )
    rows = former_names(op.get_bind())
    if rows:
        op.bulk_insert(former_name, rows)
    if op.get_bind().dialect.name == "sqlite":
        # The rebuild keeps every row, index and constraint; `migrate.upgrade` runs SQLite migrations with
        # foreign keys off, so dropping the old tables cascades nowhere.
        for table in ("attribute_group", "attribute"):
            with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": True}):
                pass


def former_names(connection: sa.Connection) -> list[dict[str, Any]]:
    """The `attribute_former_name` rows the recorded metamodel changes imply (see the module docstring)."""
    bearer: dict[str, int | None] = {
        name: attribute_id
        for attribute_id, name in connection.execute(
            sa.select(_ATTRIBUTE.c.id, _ATTRIBUTE.c.name).where(_ATTRIBUTE.c.builtin_type_id.is_(None))
        )
    }
    events = connection.execute(
        sa.select(_CHANGE.c.revision, _CHANGE.c.operation, _CHANGE.c.subject, _CHANGE.c.changes)
        .where(_CHANGE.c.entity == "metamodel", _CHANGE.c.subject.like(f"{_PREFIX}%"))
        .order_by(_CHANGE.c.revision.desc(), _CHANGE.c.id.desc())
    )
    rows: list[dict[str, Any]] = []
    for until, operation, subject, changes in events:
        name = str(subject)[len(_PREFIX) :]
        if operation == "created":
            bearer.pop(name, None)
        elif operation == "deleted":
            bearer[name] = None
            rows.append({"attribute_id": None, "name": name, "until_revision": until, "group_id": None})
        else:
            old = _renamed_from(name, changes)
            if old is not None:
                attribute_id = bearer.pop(name, None)
                bearer[old] = attribute_id
                rows.append(
                    {"attribute_id": attribute_id, "name": old, "until_revision": until, "group_id": None}
                )
    return rows


def _renamed_from(name: str, changes: Any) -> str | None:
    """The old name if this "updated" record of attribute `name` renamed it."""
    for change in changes if isinstance(changes, list) else ():
        old, new = change.get("old"), change.get("new")
        if (
            change.get("property") == "name"
            and isinstance(old, list)
            and isinstance(new, list)
            and len(old) == len(new) == 1
            and new[0] == name
        ):
            return str(old[0])
    return None


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for table in ("attribute", "attribute_group"):
            with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": False}):
                pass
    op.drop_table("attribute_former_name")
