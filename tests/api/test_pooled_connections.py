"""A PostgreSQL server that dropped the pool's connections while they rested (a restart, a fail-over, a
proxy's idle cut) costs no request an error: a connection that rested is pinged at checkout and replaced
when it is gone. One used a moment ago is not pinged (that round trip was a tenth of a PUT)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from blockrepo.storage import engine as storage_engine
from tests.conftest import PG_URL, _pg_execute

pytestmark = pytest.mark.skipif(PG_URL is None, reason="the pool's ping concerns PostgreSQL")


def create_element(client: TestClient, type_name: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = client.post(f"/api/element/{type_name}", json=body)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()  # type: ignore[no-any-return]


def _drop_connections(app: FastAPI) -> None:
    database = make_url(app.state.services.settings.database_url).database
    assert PG_URL is not None
    _pg_execute(
        PG_URL,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        f"WHERE datname = '{database}' AND pid <> pg_backend_pid()",
    )


def test_requests_after_the_server_dropped_resting_connections_succeed(
    app: FastAPI, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    element = create_element(client, "InformationSystem", {"name": ["Before"]})
    monkeypatch.setattr(storage_engine, "PING_AFTER_IDLE", 0.0)  # every connection has rested long enough
    _drop_connections(app)
    for _ in range(3):  # more checkouts than one: each pooled connection was dropped
        answer = client.get(f"/api/element/InformationSystem/{element['id'][0]}")
        assert answer.status_code == 200, answer.text
        written = client.patch(
            f"/api/element/InformationSystem/{element['id'][0]}", json={"description": ["after"]}
        )
        assert written.status_code == 200, written.text
    assert create_element(client, "InformationSystem", {"name": ["After"]})["name"] == ["After"]
