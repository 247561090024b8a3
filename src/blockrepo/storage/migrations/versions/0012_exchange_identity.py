"""Exchange identities

`exchange_identity` keeps, for a model of another tool (an ArchiMate file from Archi), which element each of
its identifiers stands for, so that importing the model again updates the same elements.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "exchange_identity",
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("identifier", sa.String(length=255), nullable=False),
        sa.Column("element_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["element_id"],
            ["element.id"],
            name=op.f("fk_exchange_identity_element_id_element"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("model", "identifier", name=op.f("pk_exchange_identity")),
    )
    op.create_index(
        op.f("ix_exchange_identity_element_id"), "exchange_identity", ["element_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_exchange_identity_element_id"), table_name="exchange_identity")
    op.drop_table("exchange_identity")
