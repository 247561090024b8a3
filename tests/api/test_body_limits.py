"""API.md §7/§9: a body over the limit gets 413 `payload_too_large` (problem+json); the limit is
`max_body_bytes` (default 10 MiB) and 20 times that for `POST /api/massdata/import`. Tested with the
smallest limit the settings allow, at exact sizes, declared by Content-Length and streamed in chunks."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import orjson
import pytest
from starlette.testclient import TestClient

from blockrepo.settings import Settings
from tests.conftest import make_settings

LIMIT = 1024  # the smallest max_body_bytes the settings accept
IMPORT_LIMIT = 20 * LIMIT
IMPORT = "/api/massdata/import"
ELEMENTS = "/api/element/BusinessProcess"
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, max_body_bytes=LIMIT)


def padded(
    document: dict[str, object], size: int, put_padding: Callable[[dict[str, object], str], None]
) -> bytes:
    """`document` as JSON of exactly `size` bytes, padded by the description `put_padding` sets."""
    put_padding(document, "")
    padding = size - len(orjson.dumps(document))
    assert padding >= 0
    put_padding(document, "x" * padding)
    body = orjson.dumps(document)
    assert len(body) == size
    return body


def export_document(size: int) -> bytes:
    """An export (the import's format) with one process, of exactly `size` bytes."""

    def put(document: dict[str, object], text: str) -> None:
        document["elements"] = {"BusinessProcess": [{"name": "Imported", "description": text}]}

    return padded({"format": "blockrepo-export"}, size, put)


def element_body(size: int) -> bytes:
    def put(document: dict[str, object], text: str) -> None:
        document["description"] = [text]

    return padded({"name": ["Sized"]}, size, put)


def chunks(body: bytes) -> Iterator[bytes]:
    """The body streamed without Content-Length (Transfer-Encoding: chunked)."""
    for start in range(0, len(body), 1000):
        yield body[start : start + 1000]


def assert_too_large(response: httpx.Response, limit: int) -> None:
    assert response.status_code == 413, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "payload_too_large"
    assert response.json()["status"] == 413
    assert str(limit) in response.json()["detail"]


def assert_nothing_imported(client: TestClient) -> None:
    listed = client.get("/api/massdata/BusinessProcess", params={"filter": '@name = "Imported"'})
    assert listed.status_code == 200
    assert listed.json()["items"] == []


@pytest.mark.parametrize("size", [15 * LIMIT, IMPORT_LIMIT])
def test_import_accepts_bodies_up_to_twenty_times_the_limit(client: TestClient, size: int) -> None:
    body = export_document(size)
    dry = client.post(IMPORT, content=body, headers=JSON, params={"dryRun": "true"})
    assert dry.status_code == 200, dry.text
    assert dry.json()["created"] == 1
    assert_nothing_imported(client)
    imported = client.post(IMPORT, content=body, headers=JSON)
    assert imported.status_code == 200, imported.text
    listed = client.get("/api/massdata/BusinessProcess", params={"filter": '@name = "Imported"'})
    assert [item["name"] for item in listed.json()["items"]] == [["Imported"]]


@pytest.mark.parametrize("size", [IMPORT_LIMIT + 1, 21 * LIMIT])
def test_import_over_twenty_times_the_limit_is_413(client: TestClient, size: int) -> None:
    body = export_document(size)
    assert_too_large(client.post(IMPORT, content=body, headers=JSON), IMPORT_LIMIT)
    assert_nothing_imported(client)


def test_streamed_import_over_the_limit_is_413(client: TestClient) -> None:
    accepted = client.post(IMPORT, content=chunks(export_document(15 * LIMIT)), headers=JSON)
    assert accepted.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in accepted.request.headers
    assert accepted.status_code == 200, accepted.text
    refused = client.post(
        IMPORT, content=chunks(export_document(21 * LIMIT)), headers=JSON, params={"mode": "cud"}
    )
    assert_too_large(refused, IMPORT_LIMIT)
    # The file was refused before it was read: `cud` deleted nothing, the first import stands.
    listed = client.get("/api/massdata/BusinessProcess", params={"filter": '@name = "Imported"'})
    assert len(listed.json()["items"]) == 1


def test_other_endpoints_keep_the_plain_limit(client: TestClient) -> None:
    assert client.post(ELEMENTS, content=element_body(LIMIT), headers=JSON).status_code == 201
    assert_too_large(client.post(ELEMENTS, content=element_body(LIMIT + 1), headers=JSON), LIMIT)
    assert_too_large(client.post(ELEMENTS, content=element_body(2 * LIMIT), headers=JSON), LIMIT)
    assert_too_large(client.post(ELEMENTS, content=chunks(element_body(2 * LIMIT)), headers=JSON), LIMIT)
    bulk = orjson.dumps({"elements": [{"name": [f"P{n}"], "description": ["x" * 100]} for n in range(15)]})
    assert 1 * LIMIT < len(bulk) < 3 * LIMIT
    assert_too_large(client.post("/api/massdata/BusinessProcess", content=bulk, headers=JSON), LIMIT)
    # Only the import path has the larger limit, not paths that merely start like it.
    assert_too_large(client.post(IMPORT + "/", content=export_document(2 * LIMIT), headers=JSON), LIMIT)
