"""The limits the description publishes are the settings the service was created with, and the service
answers exactly at those limits."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.conftest import ADMIN_PASSWORD, make_settings

PAGE_SIZE = 7
MAX_PAGE_SIZE = 250
BULK_MAX = 77
BODY_MIB = 2


@pytest.fixture
def configured(database_url: str) -> Iterator[TestClient]:
    settings = make_settings(
        database_url,
        page_size=PAGE_SIZE,
        max_page_size=MAX_PAGE_SIZE,
        bulk_max_elements=BULK_MAX,
        max_body_bytes=BODY_MIB * 1024 * 1024,
    )
    app = create_app(settings)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.auth = ("system", ADMIN_PASSWORD)
        yield client
    app.state.services.dispose()


def _parameter(document: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    parameters = document["paths"][path]["get"]["parameters"]
    return next(p for p in parameters if p.get("name") == name)  # type: ignore[no-any-return]


def test_page_sizes_in_the_description_are_the_settings(configured: TestClient) -> None:
    document = configured.get("/api/7_4/openapi.json").json()
    for path in ("/api/massdata/{type}", "/api/history", "/api/history/{type}", "/api/history/{type}/{id}"):
        schema = _parameter(document, path, "limit")["schema"]
        assert (schema["type"], schema["minimum"], schema["maximum"]) == ("integer", 1, MAX_PAGE_SIZE), path
    query = document["paths"]["/api/massdata/query"]["post"]["requestBody"]["content"]["application/json"]
    assert query["schema"]["properties"]["limit"]["maximum"] == MAX_PAGE_SIZE
    assert f"at most {MAX_PAGE_SIZE}" in document["info"]["description"]
    assert f"pages of\n{PAGE_SIZE} elements" in document["info"]["description"]


def test_bulk_and_body_limits_in_the_description_are_the_settings(configured: TestClient) -> None:
    document = configured.get("/api/7_4/openapi.json").json()
    bulk = document["paths"]["/api/massdata/{type}"]["post"]
    elements = bulk["requestBody"]["content"]["application/json"]["schema"]["properties"]["elements"]
    assert f"At most {BULK_MAX} elements" in elements["description"]
    assert f"up to {BODY_MIB} MiB" in document["info"]["description"]
    assert f"{BODY_MIB} MiB" in bulk["responses"]["413"]["description"]
    assert "{setting:" not in configured.get("/api/7_4/openapi.json").text


def test_the_service_answers_at_the_published_limits(configured: TestClient) -> None:
    assert configured.get("/api/massdata/BusinessProcess", params={"limit": MAX_PAGE_SIZE}).status_code == 200
    assert (
        configured.get("/api/massdata/BusinessProcess", params={"limit": MAX_PAGE_SIZE + 1}).status_code
        == 400
    )
    assert configured.get("/api/history", params={"limit": MAX_PAGE_SIZE}).status_code == 200
    assert configured.get("/api/history", params={"limit": MAX_PAGE_SIZE + 1}).status_code == 400
    too_many = configured.request(
        "DELETE", "/api/massdata/BusinessProcess", json={"ids": list(range(1, BULK_MAX + 2))}
    )
    assert too_many.status_code == 413
    assert str(BULK_MAX) in too_many.json()["detail"]
