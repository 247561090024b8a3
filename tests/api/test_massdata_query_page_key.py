"""POST /api/massdata/query pages under `items`, as GET /api/massdata/{type} does, and under `result` too,
the key API 7.4 clients read: the same elements under both. A streamed (NDJSON) answer has no keys and is
unchanged."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

QUERY = "/api/massdata/query"


@pytest.fixture
def processes(client: TestClient) -> list[int]:
    ids = []
    for name in ("Billing", "Order handling", "Returns"):
        response = client.post("/api/element/BusinessProcess", json={"name": [name]})
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"][0])
    return ids


def answer(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post(QUERY, json={"query": "BusinessProcess;", **body})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()  # type: ignore[no-any-return]


def test_the_page_is_under_items_and_result(client: TestClient, processes: list[int]) -> None:
    body = answer(client, limit=2, count=True)
    assert list(body) == ["query", "type", "items", "result", "nextCursor", "total"]
    assert [item["id"][0] for item in body["items"]] == processes[:2]
    assert body["result"] == body["items"]
    assert body["total"] == 3


def test_items_are_what_the_list_endpoint_answers(client: TestClient, processes: list[int]) -> None:
    listed = client.get("/api/massdata/BusinessProcess", params={"limit": 2, "fields": "name"}).json()
    queried = answer(client, limit=2, fields=["name"])
    assert queried["items"] == listed["items"]
    second = answer(client, limit=2, fields=["name"], cursor=queried["nextCursor"])
    assert second["items"] == second["result"] == [{"id": [processes[2]], "name": ["Returns"]}]
    assert second["nextCursor"] is None


def test_an_empty_page_is_empty_under_both(client: TestClient) -> None:
    body = answer(client)
    assert body["items"] == body["result"] == []


def test_a_stream_is_unchanged(client: TestClient, processes: list[int]) -> None:
    response = client.post(
        QUERY,
        json={"query": "BusinessProcess;", "fields": ["name"]},
        headers={"Accept": "application/x-ndjson"},
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [orjson.loads(line) for line in response.content.splitlines()]
    assert lines == [
        {"id": [ident], "name": [name]}
        for ident, name in zip(processes, ("Billing", "Order handling", "Returns"), strict=True)
    ]


def test_the_description_names_both_keys(anon: TestClient) -> None:
    operation = anon.get("/api/7_4/openapi.json").json()["paths"][QUERY]["post"]
    content = operation["responses"]["200"]["content"]["application/json"]
    assert {"items", "result"} <= set(content["schema"]["required"])
    assert content["example"]["items"] == content["example"]["result"]
    assert "`items`" in operation["description"] and "`result`" in operation["description"]
