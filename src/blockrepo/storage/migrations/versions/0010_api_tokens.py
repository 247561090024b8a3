"""API tokens, and which credential made each revision

`api_token` holds each token's public id and an HMAC of its secret under a server-side pepper (never the
secret), its owner, expiry, restriction and allowed networks. `revision.via` records what authenticated a
write (`basic`, `session` or `token:<public id>`); revisions made before stay null. The Supervisor role is
granted the new functional permission MINT_TOKENS (minting tokens for service accounts).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_token",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("public_id", sa.String(length=16), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("pepper_id", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("created_by_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.BigInteger(), nullable=False),
        sa.Column("revoked_at", sa.BigInteger(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("restriction", sa.Text(), nullable=True),
        sa.Column("allowed_networks", sa.Text(), nullable=True),
        sa.Column("last_used_at", sa.BigInteger(), nullable=True),
        sa.Column("last_used_address", sa.String(length=64), nullable=True),
        sa.Column("rotated_from", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["app_user.id"], name=op.f("fk_api_token_user_id_app_user"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_token")),
        sa.UniqueConstraint("public_id", name=op.f("uq_api_token_public_id")),
        sqlite_autoincrement=True,
    )
    op.create_index(op.f("ix_api_token_user_id"), "api_token", ["user_id"], unique=False)
    with op.batch_alter_table("revision") as batch:
        batch.add_column(sa.Column("via", sa.String(length=96), nullable=True))
    op.execute(
        "INSERT INTO role_functional_permission (role_id, permission)"
        " SELECT id, 'MINT_TOKENS' FROM role WHERE name = 'Supervisor' AND NOT EXISTS ("
        " SELECT 1 FROM role_functional_permission AS p"
        " WHERE p.role_id = role.id AND p.permission = 'MINT_TOKENS')"
    )


def downgrade() -> None:
    op.execute("DELETE FROM role_functional_permission WHERE permission = 'MINT_TOKENS'")
    with op.batch_alter_table("revision") as batch:
        batch.drop_column("via")
    op.drop_index(op.f("ix_api_token_user_id"), table_name="api_token")
    op.drop_table("api_token")
