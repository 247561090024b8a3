"""A write that a concurrent transaction holds up beyond the database's patience (a deadlock, a lock
timeout, SQLite's busy timeout) is answered 409 `concurrent_write` with `Retry-After`, never 500, and writes
nothing; any other database error is still a 500; a read is not held up by writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.storage.engine import normalize_url
from blockrepo.storage.transactions import GATE_KEY, WRITE_LOCKS
from tests.conftest import ADMIN_PASSWORD, PG_URL


def busy_database_error(tmp_path: Path) -> OperationalError:
    """A real "database is locked" from the sqlite3 driver, wrapped as SQLAlchemy wraps it."""
    path = tmp_path / "busy.db"
    holder = sqlite3.connect(path, isolation_level=None)
    waiter = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError) as busy:
            waiter.execute("BEGIN IMMEDIATE")
    finally:
        holder.close()
        waiter.close()
    return OperationalError("BEGIN IMMEDIATE", None, busy.value)


def test_a_retryable_database_error_is_a_409_with_retry_after(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    error = busy_database_error(tmp_path)

    def busy(db: Session) -> None:
        raise error

    monkeypatch.setattr("blockrepo.databases.begin_write", busy)
    response = client.post("/api/element/InformationSystem", json={"name": ["ERP"]})

    assert response.status_code == 409, response.text
    assert response.headers["Retry-After"] == "1"
    assert response.headers["API-Version"] == "7.4" and response.headers["X-Request-ID"]
    assert response.json()["code"] == "concurrent_write"


def test_any_other_database_error_is_still_a_500(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(db: Session) -> None:
        raise OperationalError("SELECT 1", None, Exception("the disk is on fire"))

    monkeypatch.setattr("blockrepo.databases.begin_write", broken)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        client.auth = ("system", ADMIN_PASSWORD)
        response = client.post("/api/element/InformationSystem", json={"name": ["ERP"]})

    assert response.status_code == 500
    assert response.json()["code"] == "internal_error"


@pytest.fixture
def write_lock_held(app: FastAPI, database_url: str) -> Iterator[Connection]:
    """Another transaction holds the repository's write lock; this database's sessions give up waiting
    for a lock after 200 ms (a server's own setting, lock_timeout, applied to new connections)."""
    engine = create_engine(normalize_url(database_url))
    with engine.connect() as connection:
        name = connection.execute(text("SELECT current_database()")).scalar_one()
        connection.execute(text(f"ALTER DATABASE \"{name}\" SET lock_timeout = '200ms'"))
        connection.commit()
        app.state.services.engine.dispose()  # the app's next connections are opened with the setting
        connection.execute(text(f"SELECT pg_advisory_xact_lock({WRITE_LOCKS}, {GATE_KEY})"))
        yield connection
        connection.rollback()
    engine.dispose()


@pytest.mark.postgres
@pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL: SQLite's busy wait is fixed at 30 s")
def test_a_write_held_up_by_a_concurrent_one_is_a_409_to_retry(
    client: TestClient, write_lock_held: Connection
) -> None:
    created = client.post("/api/element/InformationSystem", json={"name": ["ERP"]})

    assert created.status_code == 409, created.text
    assert created.headers["content-type"].startswith("application/problem+json")
    assert created.headers["Retry-After"] == "1"
    assert created.json()["code"] == "concurrent_write"
    found = client.post("/api/massdata/query", json={"query": 'InformationSystem[@name = "ERP"];'})
    assert found.status_code == 200 and found.json()["result"] == [], found.text


@pytest.mark.postgres
@pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL: SQLite's busy wait is fixed at 30 s")
def test_a_query_sent_as_post_is_not_held_up_by_writes(
    client: TestClient, write_lock_held: Connection
) -> None:
    response = client.post("/api/massdata/query", json={"query": "InformationSystem;"})

    assert response.status_code == 200, response.text
