"""elements: the typed value indexes hold only the rows that use their column

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 21:00:00

Each `element_value` row sets one typed group of columns, yet the four (attribute, typed column) indexes
held an entry for every row, NULL in all but one of them. Partial indexes (`WHERE <column> IS NOT NULL`)
keep the same lookups (a comparison on the column implies it is not NULL, on SQLite and PostgreSQL) and
make every value write update two indexes instead of five.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TYPED_INDEXES = {
    "ix_element_value_number": "number_value",
    "ix_element_value_date": "date_value",
    "ix_element_value_literal": "literal_id",
    "ix_element_value_bool": "bool_value",
}


def upgrade() -> None:
    for name, column in TYPED_INDEXES.items():
        op.drop_index(name, table_name="element_value")
        present = f"{column} IS NOT NULL"
        op.create_index(
            name,
            "element_value",
            ["attribute_id", column],
            sqlite_where=sa.text(present),
            postgresql_where=sa.text(present),
        )


def downgrade() -> None:
    for name, column in TYPED_INDEXES.items():
        op.drop_index(name, table_name="element_value")
        op.create_index(name, "element_value", ["attribute_id", column])
