"""`GET /health` and `GET /ready` (API.md section 11): public, holding no data; readiness fails (503) when the
database's schema is not at the newest migration or Redis does not answer, and says only which check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import text
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.conftest import make_settings
from tests.helpers import engine_of


def test_health_and_readiness_answer_without_credentials(anon: TestClient) -> None:
    health = anon.get("/health")
    assert health.status_code == 200 and health.json() == {"status": "ok"}
    ready = anon.get("/ready")
    assert ready.status_code == 200, ready.text
    assert ready.json() == {"status": "ok", "checks": {"database": "ok", "migrations": "ok"}}
    assert "set-cookie" not in ready.headers  # no session for a probe
    assert anon.head("/health").status_code in (200, 405)


def test_readiness_fails_while_the_schema_is_not_at_the_newest_migration(
    app: FastAPI, anon: TestClient
) -> None:
    engine = engine_of(app)
    with engine.begin() as connection:
        newest = connection.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
        connection.execute(text("UPDATE alembic_version SET version_num = 'an_older_one'"))
    try:
        ready = anon.get("/ready")
        assert ready.status_code == 503, ready.text
        assert ready.json() == {"status": "unavailable", "checks": {"database": "ok", "migrations": "failed"}}
        assert anon.get("/health").status_code == 200  # alive all the same
    finally:
        with engine.begin() as connection:
            connection.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": newest})
    assert anon.get("/ready").status_code == 200


@pytest.fixture
def app_without_redis(database_url: str) -> Iterator[FastAPI]:
    """Sessions configured in a Redis that does not answer (a closed port)."""
    application = create_app(make_settings(database_url, redis_url="redis://127.0.0.1:1/0"))
    yield application
    application.state.services.dispose()


def test_readiness_fails_when_the_configured_redis_does_not_answer(app_without_redis: FastAPI) -> None:
    with TestClient(app_without_redis, base_url="http://127.0.0.1") as anon:
        ready = anon.get("/ready")
        assert ready.status_code == 503, ready.text
        assert ready.json()["checks"] == {"database": "ok", "migrations": "ok", "redis": "failed"}
        assert "127.0.0.1:1" not in ready.text  # the reason is for the log
