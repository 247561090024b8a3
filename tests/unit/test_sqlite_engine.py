"""The SQLite engine of storage/engine.py configures EVERY connection it opens: WAL journal, foreign keys on,
and a busy timeout (so that a writer waits for the lock instead of failing with "database is locked").

foreign_keys and busy_timeout are per connection in SQLite, so each connection is checked, including ones
opened at the same time, from other threads, and after the pool was emptied."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine

from blockrepo.api.context import AppServices
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine, sqlite_page_cache


def pragmas(connection: Connection) -> tuple[str, int, int]:
    return (
        str(connection.exec_driver_sql("PRAGMA journal_mode").scalar()),
        int(connection.exec_driver_sql("PRAGMA foreign_keys").scalar() or 0),
        int(connection.exec_driver_sql("PRAGMA busy_timeout").scalar() or 0),
    )


def assert_configured(connection: Connection) -> None:
    journal_mode, foreign_keys, busy_timeout = pragmas(connection)
    assert journal_mode.lower() == "wal"
    assert foreign_keys == 1
    assert busy_timeout > 0


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return build_engine(f"sqlite:///{tmp_path / 'pragmas.db'}")


def test_the_first_connection_to_a_new_file_switches_it_to_wal(engine: Engine, tmp_path: Path) -> None:
    with engine.connect() as connection:
        assert_configured(connection)
    engine.dispose()
    # WAL is a property of the file: a plain connection without the engine's set-up sees it too ...
    plain = sqlite3.connect(tmp_path / "pragmas.db")
    try:
        assert plain.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        # ... while foreign keys are per connection and off unless the engine turns them on.
        assert plain.execute("PRAGMA foreign_keys").fetchone() == (0,)
    finally:
        plain.close()


def test_every_pooled_connection_is_configured(engine: Engine) -> None:
    with ExitStack() as stack:
        connections = [stack.enter_context(engine.connect()) for _ in range(4)]
        raw = {id(c.connection.dbapi_connection) for c in connections}
        assert len(raw) == 4  # four distinct DBAPI connections, open at once
        for connection in connections:
            assert_configured(connection)
    engine.dispose()
    with engine.connect() as connection:  # a new connection after the pool was emptied
        assert_configured(connection)
    with engine.connect() as connection:
        connection.invalidate()  # the pool replaces an invalidated connection with a new one
    with engine.connect() as connection:
        assert_configured(connection)
    engine.dispose()


def test_connections_opened_in_other_threads_are_configured(engine: Engine) -> None:
    def check(_: int) -> tuple[str, int, int]:
        with engine.connect() as connection:
            return pragmas(connection)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(check, range(8)))
    engine.dispose()
    for journal_mode, foreign_keys, busy_timeout in results:
        assert (journal_mode.lower(), foreign_keys) == ("wal", 1)
        assert busy_timeout > 0


def test_the_app_engines_are_configured(tmp_path: Path) -> None:
    """The read engine and the BEGIN IMMEDIATE write engine of the app (AppServices) alike."""
    services = AppServices(Settings(database_url=f"sqlite:///{tmp_path / 'app.db'}"))
    try:
        for engine in (services.engine, services.write_engine):
            with engine.connect() as connection:
                assert_configured(connection)
        with services.write_sessions() as db:
            assert_configured(db.connection())
    finally:
        services.dispose()


def test_a_smaller_page_cache_is_the_blocks_alone(engine: Engine) -> None:
    """`sqlite_page_cache` (an import's): the connection's cache is smaller inside the block and as it was
    after it, also after the block failed."""
    with engine.connect() as connection:
        usual = connection.exec_driver_sql("PRAGMA cache_size").scalar()
        assert usual == -65536
        with sqlite_page_cache(connection, 8192):
            assert connection.exec_driver_sql("PRAGMA cache_size").scalar() == -8192
        assert connection.exec_driver_sql("PRAGMA cache_size").scalar() == usual
        with pytest.raises(RuntimeError), sqlite_page_cache(connection, 1024):
            raise RuntimeError("the import failed")
        assert connection.exec_driver_sql("PRAGMA cache_size").scalar() == usual
