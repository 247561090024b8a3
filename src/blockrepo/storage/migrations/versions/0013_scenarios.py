"""Planning scenarios

`scenario` holds each planned landscape (its base revision in main, owner, state and review),
`scenario_change` the change rows of writes made in it, `scenario_resolution` how its conflicts with main
are settled, `scenario_reviewer`, `scenario_approval` and `scenario_comment` its review, `merge_rule` the
checks a scenario must pass to merge; `revision.scenario` names the scenario whose merge made a revision.
The Supervisor role gets the functional permissions MERGE_SCENARIOS and APPROVE_SCENARIOS.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("revision") as batch:
        batch.add_column(sa.Column("scenario", sa.String(length=64), nullable=True))
    op.create_table(
        "scenario",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("effective_date", sa.Date(), nullable=True),
        sa.Column("base_revision", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("owner_login", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("merged_revision", sa.Integer(), nullable=True),
        sa.Column("merged_by", sa.String(length=255), nullable=True),
        sa.Column("merged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("merged_ids", sa.JSON(), nullable=True),
        sa.Column("required_approvals", sa.Integer(), nullable=True),
        sa.Column("proposed_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["app_user.id"], name=op.f("fk_scenario_owner_id_app_user"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenario")),
        sa.UniqueConstraint("key", name=op.f("uq_scenario_key")),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "scenario_change",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("element_id", sa.Integer(), nullable=False),
        sa.Column("type_name", sa.String(length=255), nullable=False),
        sa.Column("element_name", sa.String(length=255), nullable=False),
        sa.Column("operation", sa.String(length=16), nullable=False),
        sa.Column("changes", sa.JSON(), nullable=False),
        sa.Column("main_revision", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("user_login", sa.String(length=255), nullable=False),
        sa.Column("request_id", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenario.id"],
            name=op.f("fk_scenario_change_scenario_id_scenario"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenario_change")),
    )
    op.create_index(
        "ix_scenario_change_scenario_element",
        "scenario_change",
        ["scenario_id", "element_id", "id"],
        unique=False,
    )
    op.create_table(
        "scenario_resolution",
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("element_id", sa.Integer(), nullable=False),
        sa.Column("field", sa.String(length=255), nullable=False),
        sa.Column("take", sa.String(length=16), nullable=False),
        sa.Column("value", sa.JSON(), nullable=True),
        sa.Column("resolved_by", sa.String(length=255), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenario.id"],
            name=op.f("fk_scenario_resolution_scenario_id_scenario"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("scenario_id", "element_id", "field", name=op.f("pk_scenario_resolution")),
    )

    op.create_table(
        "scenario_reviewer",
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("login", sa.String(length=255), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenario.id"],
            name=op.f("fk_scenario_reviewer_scenario_id_scenario"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["app_user.id"],
            name=op.f("fk_scenario_reviewer_user_id_app_user"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("scenario_id", "user_id", name=op.f("pk_scenario_reviewer")),
    )
    op.create_table(
        "scenario_approval",
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("login", sa.String(length=255), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("approved_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenario.id"],
            name=op.f("fk_scenario_approval_scenario_id_scenario"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["app_user.id"],
            name=op.f("fk_scenario_approval_user_id_app_user"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("scenario_id", "user_id", name=op.f("pk_scenario_approval")),
    )
    op.create_table(
        "scenario_comment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("scenario_id", sa.Integer(), nullable=False),
        sa.Column("element_id", sa.Integer(), nullable=True),
        sa.Column("field", sa.String(length=255), nullable=True),
        sa.Column("author", sa.String(length=255), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["scenario_id"],
            ["scenario.id"],
            name=op.f("fk_scenario_comment_scenario_id_scenario"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scenario_comment")),
    )
    op.create_index(
        "ix_scenario_comment_scenario_id_id", "scenario_comment", ["scenario_id", "id"], unique=False
    )
    op.create_table(
        "merge_rule",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("required", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_merge_rule")),
        sa.UniqueConstraint("name", name=op.f("uq_merge_rule_name")),
        sqlite_autoincrement=True,
    )
    for permission in ("MERGE_SCENARIOS", "APPROVE_SCENARIOS"):
        op.execute(
            "INSERT INTO role_functional_permission (role_id, permission)"
            f" SELECT id, '{permission}' FROM role WHERE name = 'Supervisor' AND NOT EXISTS ("
            " SELECT 1 FROM role_functional_permission AS p"
            f" WHERE p.role_id = role.id AND p.permission = '{permission}')"
        )


def downgrade() -> None:
    op.execute(
        "DELETE FROM role_functional_permission WHERE permission IN ('MERGE_SCENARIOS', 'APPROVE_SCENARIOS')"
    )
    op.drop_table("merge_rule")
    op.drop_index("ix_scenario_comment_scenario_id_id", table_name="scenario_comment")
    op.drop_table("scenario_comment")
    op.drop_table("scenario_approval")
    op.drop_table("scenario_reviewer")
    op.drop_table("scenario_resolution")
    op.drop_index("ix_scenario_change_scenario_element", table_name="scenario_change")
    op.drop_table("scenario_change")
    op.drop_table("scenario")
    with op.batch_alter_table("revision") as batch:
        batch.drop_column("scenario")
