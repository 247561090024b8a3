"""POST /api/massdata/query takes `fields`, `limit`, `sort`, `cursor`, `count` and `asOf` in the URL as well
as in a JSON body: a `text/plain` query has no other place for them, and either body answers as the JSON
body with those members would, checked the same way."""

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
    assert names == {"fields", "limit", "sort", "cursor", "count", "asOf", "scenario"}
    assert "`result`" in operation["description"]


def newest_revision(client: TestClient) -> int:
    items = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    return int(items[-1]["revision"])


@pytest.mark.parametrize(
    "members",
    [
        {"sort": "-name"},
        {"sort": "name", "limit": 1, "count": True},
        {"count": False},
        {"fields": ["name"], "sort": "-id", "count": True, "limit": 2},
    ],
)
def test_plain_text_answers_as_the_json_body_with_sort_and_count(
    client: TestClient, processes: list[int], members: dict[str, Any]
) -> None:
    as_json = ok(client.post(QUERY, json={"query": TEXT, **members}))
    in_url = {
        name: ",".join(value)
        if isinstance(value, list)
        else str(value).lower()
        if isinstance(value, bool)
        else str(value)
        for name, value in members.items()
    }
    assert ok(plain(client, **in_url)) == as_json


def test_plain_text_pages_with_a_cursor_in_the_url(client: TestClient, processes: list[int]) -> None:
    first = ok(plain(client, sort="-name", limit="2", count="true"))
    assert [item["name"] for item in first["items"]] == [["Returns"], ["Order handling"]]
    assert first["total"] == 3
    second = ok(plain(client, sort="-name", limit="2", cursor=first["nextCursor"]))
    as_json = ok(
        client.post(QUERY, json={"query": TEXT, "sort": "-name", "limit": 2, "cursor": first["nextCursor"]})
    )
    assert second == as_json
    assert [item["name"] for item in second["items"]] == [["Billing"]]
    assert second["nextCursor"] is None and "total" not in second


def test_plain_text_reads_the_past_with_as_of_in_the_url(client: TestClient, processes: list[int]) -> None:
    before = newest_revision(client)
    renamed = client.put(f"/api/element/BusinessProcess/{processes[0]}", json={"name": ["Invoicing"]})
    assert renamed.status_code == 200, renamed.text
    past = ok(plain(client, asOf=str(before), fields="name"))
    assert past == ok(client.post(QUERY, json={"query": TEXT, "asOf": before, "fields": ["name"]}))
    assert [item["name"] for item in past["items"]] == [["Billing"], ["Order handling"], ["Returns"]]
    assert ok(plain(client, fields="name"))["items"][0]["name"] == ["Invoicing"]


def test_an_empty_url_member_is_one_not_given(client: TestClient, processes: list[int]) -> None:
    assert ok(plain(client, cursor="", sort="", asOf="")) == ok(plain(client))
    body = ok(client.post(QUERY, params={"cursor": "", "asOf": ""}, json={"query": TEXT, "cursor": None}))
    assert body == ok(plain(client))


def test_each_member_in_the_url_and_in_the_body_is_refused(client: TestClient, processes: list[int]) -> None:
    members = {"sort": "name", "cursor": "x", "count": True, "asOf": 1}
    response = client.post(
        QUERY,
        params={"sort": "name", "cursor": "x", "count": "true", "asOf": "1"},
        json={"query": TEXT, **members},
    )
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "validation_failed"
    assert {(e["pointer"], e["code"]) for e in problem["errors"]} == {
        (f"query:{name}", "given_twice") for name in members
    }


# Each member, bad in the URL and bad in the body: the same problem code and item code (the pointer tells
# where it was: `query:cursor` or `/cursor`).
BAD_MEMBERS = [
    ("sort", "nope", "nope"),
    ("cursor", "not-a-cursor", "not-a-cursor"),
    ("asOf", "yesterday", "yesterday"),
    ("asOf", "999999", 999999),
]


@pytest.mark.parametrize(("name", "in_url", "in_body"), BAD_MEMBERS)
def test_bad_url_members_are_refused_as_bad_body_members(
    client: TestClient, processes: list[int], name: str, in_url: str, in_body: Any
) -> None:
    from_url = plain(client, **{name: in_url})
    from_body = client.post(QUERY, json={"query": TEXT, name: in_body})
    assert from_url.status_code == from_body.status_code == 400, (from_url.text, from_body.text)
    assert from_url.headers["content-type"] == "application/problem+json"
    url_problem, body_problem = from_url.json(), from_body.json()
    assert url_problem["code"] == body_problem["code"]
    assert [e["code"] for e in url_problem["errors"]] == [e["code"] for e in body_problem["errors"]]
    if name == "cursor":
        assert [e["pointer"] for e in url_problem["errors"]] == ["query:cursor"]
        assert [e["pointer"] for e in body_problem["errors"]] == ["/cursor"]


def test_a_count_that_is_no_boolean_is_refused(client: TestClient, processes: list[int]) -> None:
    response = plain(client, count="maybe")
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "validation_failed"
    assert [(e["pointer"], e["code"]) for e in problem["errors"]] == [("query:count", "bool_parsing")]


def test_an_unknown_url_parameter_is_still_refused(client: TestClient, processes: list[int]) -> None:
    response = plain(client, asof="1", total="true")
    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "unknown_query_parameter"
    assert sorted(e["pointer"] for e in problem["errors"]) == ["query:asof", "query:total"]


POINTED_MEMBERS: dict[str, Any] = {
    "sort": "-nothing",
    "fields": "nothing",
    "cursor": "not-a-cursor",
    "asOf": "999999",
    "limit": "0",
}


@pytest.mark.parametrize("name", sorted(POINTED_MEMBERS))
def test_a_problem_points_where_the_member_was_given(client: TestClient, name: str) -> None:
    """`query:<name>` for a URL parameter, the JSON pointer `/<name>` for a body member, whichever the
    member; the list's URL parameters point so too."""
    raw = POINTED_MEMBERS[name]
    in_body = orjson.loads(raw) if name in ("asOf", "limit") else raw
    if name == "fields":
        in_body = [raw]
    answers = {
        "/" + name: client.post(QUERY, json={"query": TEXT, name: in_body}),
        "query:" + name: plain(client, **{name: raw}),
    }
    answers["query:" + name + " (list)"] = client.get("/api/massdata/BusinessProcess", params={name: raw})
    for where, response in answers.items():
        assert response.status_code == 400, (where, response.text)
        assert response.json()["errors"][0]["pointer"] == where.removesuffix(" (list)"), (
            where,
            response.text,
        )
