"""Brings a database to the newest schema with Alembic, safely when several processes start at once."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, text

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# An arbitrary constant: the PostgreSQL advisory lock that serializes concurrent schema upgrades.
_MIGRATION_LOCK_KEY = 74_0001


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine) -> None:
    """Run every pending migration; a no-op on an up-to-date database."""
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK_KEY})
            connection.commit()
        try:
            command.upgrade(alembic_config(connection), "head")
            connection.commit()
        finally:
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK_KEY})
                connection.commit()
