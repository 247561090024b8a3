"""Brings a database to the newest schema with Alembic, safely when several processes start at once."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
# An arbitrary constant: the PostgreSQL advisory lock that serializes concurrent schema upgrades.
_MIGRATION_LOCK_KEY = 74_0001


def alembic_config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, target: str = "head") -> None:
    """Run every pending migration up to `target` (a restore stops at the schema its backup was taken at);
    a no-op on an up-to-date database."""
    with engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK_KEY})
            connection.commit()
        if sqlite:
            # Table rebuilds (batch migrations) drop the old table: with foreign keys on, that would cascade.
            _sqlite_foreign_keys(connection, enabled=False)
        try:
            command.upgrade(alembic_config(connection), target)
            if sqlite and connection.exec_driver_sql("PRAGMA foreign_key_check").first() is not None:
                raise RuntimeError("a migration left rows that break a foreign key; nothing was changed")
            connection.commit()
        finally:
            if sqlite:
                connection.rollback()
                _sqlite_foreign_keys(connection, enabled=True)
            if connection.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK_KEY})
                connection.commit()


@cache
def _newest_revisions() -> frozenset[str]:
    # The migration scripts ship with the code: read once per process.
    return frozenset(ScriptDirectory.from_config(alembic_config()).get_heads())


@cache
def _shipped_revisions() -> frozenset[str]:
    return frozenset(
        script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()
    )


def is_ancestor(older: str, newer: str) -> bool:
    """Whether upgrading a schema at migration `older` passes through (or stops at) `newer`."""
    scripts = ScriptDirectory.from_config(alembic_config())
    return older in {script.revision for script in scripts.walk_revisions(base="base", head=newer)}


def schema_revision(connection: Connection) -> str | None:
    """The migration the database's schema is at; None for a database without the schema."""
    return MigrationContext.configure(connection).get_current_revision()


def known_revision(revision: str) -> bool:
    """Whether `revision` names a migration this code ships."""
    return revision in _shipped_revisions()


def schema_at_head(connection: Connection) -> bool:
    """Whether the database's schema is at the newest migration this code knows."""
    current = MigrationContext.configure(connection).get_current_heads()
    return frozenset(current) == _newest_revisions()


def _sqlite_foreign_keys(connection: Connection, *, enabled: bool) -> None:
    # PRAGMA foreign_keys is ignored inside a transaction, so it goes to the driver between transactions.
    driver = connection.connection.driver_connection
    assert driver is not None
    driver.execute(f"PRAGMA foreign_keys={'ON' if enabled else 'OFF'}")
