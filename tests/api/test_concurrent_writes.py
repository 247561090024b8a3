"""A write that a concurrent transaction holds up beyond the database's patience is answered 409
`concurrent_write` with `Retry-After`, never 500, and writes nothing; a read is not held up by writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import Connection, create_engine, text
from starlette.testclient import TestClient

from blockrepo.storage.engine import normalize_url
from tests.conftest import PG_URL

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL: SQLite's busy wait is fixed at 30 s"),
]


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
        connection.execute(text("SELECT id FROM repository_state WHERE id = 1 FOR UPDATE"))
        yield connection
        connection.rollback()
    engine.dispose()


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


def test_a_query_sent_as_post_is_not_held_up_by_writes(
    client: TestClient, write_lock_held: Connection
) -> None:
    response = client.post("/api/massdata/query", json={"query": "InformationSystem;"})

    assert response.status_code == 200, response.text
