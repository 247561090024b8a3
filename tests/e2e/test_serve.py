"""`blockrepo serve` as a separate process: it starts, authenticates and answers over real HTTP."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer, StartServer

pytestmark = pytest.mark.e2e


def test_served_api_requires_credentials(live_server: LiveServer) -> None:
    response = httpx.get(f"{live_server.base_url}/api/element/BusinessProcess/1")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Basic")
    assert response.headers["api-version"] == "7.4"


def test_served_openapi_is_published(live_server: LiveServer) -> None:
    response = httpx.get(f"{live_server.base_url}/api/7_4/openapi.json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.1")
    redirect = httpx.get(f"{live_server.base_url}/api/openapi.json")
    assert redirect.status_code == 307
    assert redirect.headers["location"] == "/api/7_4/openapi.json"


def test_serve_with_two_workers_shares_the_repository(start_server: StartServer) -> None:
    server = start_server("--workers", "2")
    with httpx.Client(base_url=server.base_url, auth=("system", ADMIN_PASSWORD)) as client:
        statuses = {client.get("/api/no-such-path").status_code for _ in range(20)}
    assert statuses == {404}
