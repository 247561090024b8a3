"""The migrations form one line and produce exactly the schema the models declare."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text

from blockrepo.access import models as _access_models  # noqa: F401
from blockrepo.auth import models as _auth_models  # noqa: F401
from blockrepo.elements import models as _element_models  # noqa: F401
from blockrepo.metamodel import models as _metamodel_models  # noqa: F401
from blockrepo.revisions import models as _revision_models  # noqa: F401
from blockrepo.storage.base import Base
from blockrepo.storage.engine import build_engine
from blockrepo.storage.migrate import alembic_config
from blockrepo.tokens import models as _token_models  # noqa: F401


def test_migrations_have_exactly_one_head() -> None:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1, f"several migration heads: {heads}; chain the newest after the other"


def test_migrated_schema_matches_the_models(database_url: str) -> None:
    """`database_url` was built by running every migration (SQLite, or PostgreSQL when configured)."""
    engine = build_engine(database_url)
    try:
        with engine.connect() as connection:
            diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    finally:
        engine.dispose()
    assert diff == [], f"models and migrations differ; add a migration: {diff}"


def test_an_upgraded_supervisor_role_may_mint_tokens(empty_database_url: str) -> None:
    """Migration 0010 grants MINT_TOKENS to the Supervisor role of a repository made before it."""
    engine = build_engine(empty_database_url)
    try:
        with engine.connect() as connection:
            command.upgrade(alembic_config(connection), "0009")
            connection.execute(
                text("INSERT INTO role (name, description, builtin) VALUES ('Supervisor', '', true)")
            )
            connection.execute(
                text("INSERT INTO role (name, description, builtin) VALUES ('Readers', '', false)")
            )
            connection.commit()
            command.upgrade(alembic_config(connection), "head")
            connection.commit()
            granted = connection.execute(
                text(
                    "SELECT r.name FROM role_functional_permission AS p JOIN role AS r ON r.id = p.role_id"
                    " WHERE p.permission = 'MINT_TOKENS'"
                )
            ).all()
    finally:
        engine.dispose()
    assert [row[0] for row in granted] == ["Supervisor"]
