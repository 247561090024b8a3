"""Fixtures that give each test its own copy of the demo landscape (users anna and bernd, group Finance)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from blockrepo.demo import DemoResult, load_demo
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine
from tests.conftest import cloned_database, make_settings

DEMO_PASSWORD = "demo-password-for-tests"
# anna reads everything but the Finance group (Annual costs); bernd (Business editor) reads Finance too.
ANNA = ("anna", DEMO_PASSWORD)
BERND = ("bernd", DEMO_PASSWORD)


@pytest.fixture(scope="module")
def demo_repository(template_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A seeded repository with the demo loaded, that each test of the module clones."""
    with cloned_database(template_database, tmp_path_factory.mktemp("demo")) as url:
        engine = build_engine(url)
        try:
            result: DemoResult = load_demo(engine, make_settings(url, demo_password=DEMO_PASSWORD))
            assert result.loaded
            if url.startswith("sqlite"):
                with engine.connect() as connection:
                    connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            engine.dispose()
        yield url


@pytest.fixture
def database_url(demo_repository: str, tmp_path: Path) -> Iterator[str]:
    with cloned_database(demo_repository, tmp_path) as url:
        yield url


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, demo_password=DEMO_PASSWORD)


def element_named(client: TestClient, type_name: str, name: str) -> dict[str, Any]:
    """The element JSON of the element of that type and name, as the supervisor reads it."""
    response = client.get(f"/api/massdata/{type_name}", params={"filter": f'@name = "{name}"'})
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert len(items) == 1, f"{type_name} {name!r}: {items}"
    return items[0]  # type: ignore[no-any-return]


def newest_revision(client: TestClient) -> int:
    """The newest revision of the repository, as the supervisor's change feed shows it."""
    query: dict[str, Any] = {"sinceRevision": 0, "limit": 1000}
    revision = 0
    while True:
        body = client.get("/api/history", params=query).json()
        if body["items"]:
            revision = body["items"][-1]["revision"]
        if body["nextCursor"] is None:
            return revision
        query["cursor"] = body["nextCursor"]
