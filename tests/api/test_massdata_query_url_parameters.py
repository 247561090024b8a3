"""POST /api/massdata/query takes `fields` and `limit` in the URL as well as in a JSON body: a `text/plain`
query has no other place for them, and either body answers as the JSON body with those members would."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from starlette.testclient import TestClient

QUERY = "/api/massdata/query"
TEXT = "BusinessProcess;"
PLAIN = {"Content-Type": "text/plain; charset=utf-8"}


@pytest.fixture
def processes(client: TestClient) -> list[int]:
    ids = []
    for name in ("Billing", "Order handling", "Returns"):
        response = client.post("/api/element/BusinessProcess", json={"name": [name], "description": ["d"]})
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"][0])
    return ids


def plain(client: TestClient, text: str = TEXT, **params: str) -> httpx.Response:
    return client.post(QUERY, content=text.encode(), headers=PLAIN, params=params)


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_plain_text_query_honours_limit_and_fields(client: TestClient, processes: list[int]) -> None:
    body = ok(plain(client, limit="2", fields="name"))
    assert body["result"] == [
        {"id": [processes[0]], "name": ["Billing"]},
        {"id": [processes[1]], "name": ["Order handling"]},
    ]
    assert body["nextCursor"] is not None


def test_plain_text_answers_as_the_json_body_with_those_members(
    client: TestClient, processes: list[int]
) -> None:
    as_json = ok(client.post(QUERY, json={"query": TEXT, "limit": 2, "fields": ["name", "description"]}))
    as_text = ok(plain(client, limit="2", fields="name,description"))
    assert as_text == as_json


def test_url_members_apply_to_a_json_body_too(client: TestClient, processes: list[int]) -> None:
    body = ok(client.post(QUERY, params={"limit": "1", "fields": "description"}, json={"query": TEXT}))
    assert body["result"] == [{"id": [processes[0]], "description": ["d"]}]


def test_without_them_every_property_and_the_default_page(client: TestClient, processes: list[int]) -> None:
    body = ok(plain(client))
    assert [item["id"][0] for item in body["result"]] == processes
    assert all("description" in item and "name" in item for item in body["result"])
    assert body["nextCursor"] is None


def test_a_member_in_the_url_and_in_the_body_is_refused(client: TestClient, processes: list[int]) -> None:
    response = client.post(
        QUERY, params={"limit": "1", "fields": "name"}, json={"query": TEXT, "limit": 1, "fields": ["name"]}
    )
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "validation_failed"
    assert [(e["pointer"], e["code"]) for e in problem["errors"]] == [
        ("query:fields", "given_twice"),
        ("query:limit", "given_twice"),
    ]


@pytest.mark.parametrize(
    ("params", "code", "item"),
    [
        ({"limit": "0"}, "invalid_limit", "invalid_limit"),
        ({"limit": "1001"}, "invalid_limit", "invalid_limit"),
        ({"limit": "two"}, "validation_failed", "int_parsing"),
        ({"fields": "name,nope"}, "unknown_field", "unknown_field"),
    ],
)
def test_url_members_are_checked_as_the_body_members(
    client: TestClient, processes: list[int], params: dict[str, str], code: str, item: str
) -> None:
    response = plain(client, **params)
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == code
    assert [e["code"] for e in problem["errors"]] == [item]


def test_url_fields_narrow_a_stream(client: TestClient, processes: list[int]) -> None:
    response = client.post(
        QUERY,
        content=TEXT.encode(),
        params={"fields": "name"},
        headers={**PLAIN, "Accept": "application/x-ndjson"},
    )
    assert response.status_code == 200, response.text
    lines = [orjson.loads(line) for line in response.content.splitlines()]
    assert [sorted(line) for line in lines] == [["id", "name"]] * 3


def test_the_description_offers_them(anon: TestClient) -> None:
    operation = anon.get("/api/7_4/openapi.json").json()["paths"][QUERY]["post"]
    names = {p["name"] for p in operation["parameters"] if p.get("in") == "query"}
    assert names == {"fields", "limit"}
    assert "`result`" in operation["description"]
