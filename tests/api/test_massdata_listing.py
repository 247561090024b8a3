"""GET /api/massdata/{type} and POST /api/massdata/query: filters, sorting, keyset pages, NDJSON streams,
fixed query counts and permissions."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.massdata import listing
from tests.helpers import (
    client_as,
    count_queries,
    create_attribute,
    create_group,
    create_role,
    create_user,
    engine_of,
)

COSTS = [700, None, 300, 300, 1200, None, 50, 999, 300, 10, None, 450]
LEVELS = ["low", "medium", "high"]


@pytest.fixture
def systems(app: FastAPI, client: TestClient) -> dict[str, int]:
    """Twelve information systems `IS-00`..`IS-11` with costs (some empty) and criticality, a hidden
    attribute, and business processes related to some of them."""
    create_group(app, "Confidential")
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    create_attribute(app, "Criticality", "enum", types=["InformationSystem"], literals=LEVELS)
    create_attribute(app, "Secret", "text", types=["InformationSystem"], group="Confidential")
    create_role(app, "confidential", groups={"Confidential": (True, True)})
    ids: dict[str, int] = {}
    for index, costs in enumerate(COSTS):
        body: dict[str, Any] = {
            "name": [f"IS-{index:02d}"],
            "Costs": [] if costs is None else [costs],
            "Criticality": [LEVELS[index % 3]] if index % 4 else [],
            "Secret": [f"secret {index}"],
        }
        response = client.post("/api/element/InformationSystem", json=body)
        assert response.status_code == 201, response.text
        ids[f"IS-{index:02d}"] = response.json()["id"][0]
    for name, targets in {"Sell": ["IS-00", "IS-01", "IS-02"], "Buy": ["IS-02"], "Idle": []}.items():
        response = client.post(
            "/api/element/BusinessProcess",
            json={"name": [name], "informationSystems": [ids[t] for t in targets]},
        )
        assert response.status_code == 201, response.text
        ids[name] = response.json()["id"][0]
    return ids


def names(items: list[dict[str, Any]]) -> list[str]:
    return [item["name"][0] for item in items]


def walk(client: TestClient, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a listing, page by page."""
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        response = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        items += page["items"]
        cursor = page["nextCursor"]
        if cursor is None:
            return items


# --- pages ---------------------------------------------------------------------------------------------


def test_lists_every_element_of_the_type_by_id(client: TestClient, systems: dict[str, int]) -> None:
    response = client.get("/api/massdata/InformationSystem")
    assert response.status_code == 200
    page = response.json()
    assert page["type"] == "InformationSystem"
    assert page["nextCursor"] is None and "total" not in page
    assert [item["id"][0] for item in page["items"]] == sorted(systems[f"IS-{i:02d}"] for i in range(12))
    first = page["items"][0]
    single = client.get(f"/api/element/InformationSystem/{first['id'][0]}").json()
    assert first == single


def test_pages_cover_every_match_once(client: TestClient, systems: dict[str, int]) -> None:
    pages = walk(client, "/api/massdata/InformationSystem", limit=5)
    assert names(pages) == [f"IS-{i:02d}" for i in range(12)]


@pytest.mark.parametrize(
    "sort", ["name", "-name", "Costs", "-Costs", "Criticality,-name", "-Criticality,Costs,id"]
)
def test_pages_of_any_sort_concatenate_to_the_whole_order(
    client: TestClient, systems: dict[str, int], sort: str
) -> None:
    whole = client.get("/api/massdata/InformationSystem", params={"sort": sort, "limit": 1000}).json()
    paged = walk(client, "/api/massdata/InformationSystem", sort=sort, limit=2)
    assert names(paged) == names(whole["items"])
    assert len(paged) == 12


def test_sort_by_attribute_puts_empty_values_last(client: TestClient, systems: dict[str, int]) -> None:
    ascending = client.get(
        "/api/massdata/InformationSystem", params={"sort": "Costs,name", "fields": "Costs"}
    )
    costs = [item["Costs"] for item in ascending.json()["items"]]
    assert costs == [[10], [50], [300], [300], [300], [450], [700], [999], [1200], [], [], []]
    descending = client.get("/api/massdata/InformationSystem", params={"sort": "-Costs", "fields": "Costs"})
    assert [item["Costs"] for item in descending.json()["items"]][:2] == [[1200], [999]]
    assert [item["Costs"] for item in descending.json()["items"]][-3:] == [[], [], []]


def test_sort_by_enumeration_follows_literal_order(client: TestClient, systems: dict[str, int]) -> None:
    response = client.get(
        "/api/massdata/InformationSystem", params={"sort": "-Criticality,name", "fields": "Criticality"}
    )
    levels = [item["Criticality"] for item in response.json()["items"]]
    assert levels == [["high"]] * 3 + [["medium"]] * 3 + [["low"]] * 3 + [[]] * 3


def test_cursor_is_stable_under_concurrent_inserts_and_deletes(
    client: TestClient, systems: dict[str, int]
) -> None:
    first = client.get("/api/massdata/InformationSystem", params={"sort": "name", "limit": 4}).json()
    assert names(first["items"]) == ["IS-00", "IS-01", "IS-02", "IS-03"]
    # Meanwhile: an insert before the cursor, one after it, a delete on the first page and one ahead.
    client.post("/api/element/InformationSystem", json={"name": ["IS-00a"]})
    client.post("/api/element/InformationSystem", json={"name": ["IS-05a"]})
    assert client.delete(f"/api/element/InformationSystem/{systems['IS-01']}").status_code == 204
    assert client.delete(f"/api/element/InformationSystem/{systems['IS-07']}").status_code == 204
    rest = walk(client, "/api/massdata/InformationSystem", sort="name", limit=4, cursor=first["nextCursor"])
    assert names(rest) == ["IS-04", "IS-05", "IS-05a", "IS-06", "IS-08", "IS-09", "IS-10", "IS-11"]


def test_count_gives_the_total_of_matches(client: TestClient, systems: dict[str, int]) -> None:
    page = client.get(
        "/api/massdata/InformationSystem", params={"filter": "@Costs >= 300", "limit": 2, "count": "true"}
    ).json()
    assert page["total"] == 7
    assert len(page["items"]) == 2


def test_fields_limit_the_properties(client: TestClient, systems: dict[str, int]) -> None:
    page = client.get("/api/massdata/InformationSystem", params={"fields": "name,Costs", "limit": 1}).json()
    assert list(page["items"][0]) == ["id", "name", "Costs"]


# --- filters -------------------------------------------------------------------------------------------


def test_filter_runs_an_iteraql_predicate(client: TestClient, systems: dict[str, int]) -> None:
    response = client.get(
        "/api/massdata/InformationSystem",
        params={"filter": '(@Costs > 400 | @Costs = null) & !@Criticality = "medium"', "sort": "name"},
    )
    assert names(response.json()["items"]) == ["IS-00", "IS-04", "IS-05", "IS-11"]


def test_filter_by_relation_count(client: TestClient, systems: dict[str, int]) -> None:
    response = client.get(
        "/api/massdata/BusinessProcess", params={"filter": "count(informationSystems) >= 1"}
    )
    assert sorted(names(response.json()["items"])) == ["Buy", "Sell"]


def test_filter_syntax_error_is_400_with_position(client: TestClient, systems: dict[str, int]) -> None:
    response = client.get("/api/massdata/InformationSystem", params={"filter": "@Costs > > 3"})
    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "query_syntax"
    assert problem["position"] == {"offset": 9, "line": 1, "column": 10}
    assert problem["errors"][0]["pointer"] == "query:filter"
    assert "line 1, column 10" in problem["detail"]


def test_filter_with_an_unknown_property_is_400(client: TestClient, systems: dict[str, int]) -> None:
    response = client.get("/api/massdata/InformationSystem", params={"filter": "@Cost > 3"})
    assert response.status_code == 400
    assert response.json()["code"] == "query_invalid"


# --- bad parameters ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"limit": 1001}, "invalid_limit"),
        ({"limit": 0}, "invalid_limit"),
        ({"sort": "colour"}, "invalid_sort"),
        ({"sort": "name,name"}, "invalid_sort"),
        ({"fields": "name,colour"}, "unknown_field"),
        ({"cursor": "not-a-cursor"}, "invalid_cursor"),
        ({"cursor": "WyJJbmZvcm1hdGlvblN5c3RlbSIsImlkIixbInNpeCJdXQ"}, "invalid_cursor"),
    ],
)
def test_bad_parameters_are_400(
    client: TestClient, systems: dict[str, int], params: dict[str, Any], code: str
) -> None:
    response = client.get("/api/massdata/InformationSystem", params=params)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == code


def test_a_cursor_of_another_sort_is_rejected(client: TestClient, systems: dict[str, int]) -> None:
    cursor = client.get("/api/massdata/InformationSystem", params={"sort": "name", "limit": 2}).json()[
        "nextCursor"
    ]
    response = client.get("/api/massdata/InformationSystem", params={"sort": "-name", "cursor": cursor})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_cursor"


def test_unknown_type_is_404(client: TestClient) -> None:
    response = client.get("/api/massdata/Nothing")
    assert response.status_code == 404
    assert response.json()["code"] == "unknown_type"


# --- NDJSON --------------------------------------------------------------------------------------------


def test_ndjson_streams_every_match_across_batches(
    client: TestClient, systems: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(listing, "STREAM_BATCH", 5)
    response = client.get(
        "/api/massdata/InformationSystem",
        params={"filter": "@Costs != 300", "sort": "-name", "limit": 2},
        headers={"Accept": "application/x-ndjson"},
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [orjson.loads(line) for line in response.content.splitlines()]
    expected = [f"IS-{i:02d}" for i in range(12) if COSTS[i] != 300]
    assert names(lines) == sorted(expected, reverse=True)
    assert lines[0] == client.get(f"/api/element/InformationSystem/{lines[0]['id'][0]}").json()


def test_ndjson_resumes_from_a_cursor(client: TestClient, systems: dict[str, int]) -> None:
    cursor = client.get("/api/massdata/InformationSystem", params={"limit": 10}).json()["nextCursor"]
    response = client.get(
        "/api/massdata/InformationSystem",
        params={"cursor": cursor},
        headers={"Accept": "application/x-ndjson"},
    )
    assert names([orjson.loads(line) for line in response.content.splitlines()]) == ["IS-10", "IS-11"]


# --- cost ----------------------------------------------------------------------------------------------


def test_a_page_costs_the_same_queries_for_2_and_12_items(
    app: FastAPI, client: TestClient, systems: dict[str, int]
) -> None:
    params = {"filter": "count(businessProcesses) >= 0", "count": "true", "sort": "Costs"}
    client.get("/api/massdata/InformationSystem", params=params)  # warm the caches
    with count_queries(engine_of(app)) as small:
        assert (
            len(client.get("/api/massdata/InformationSystem", params={**params, "limit": 2}).json()["items"])
            == 2
        )
    with count_queries(engine_of(app)) as large:
        assert (
            len(client.get("/api/massdata/InformationSystem", params={**params, "limit": 12}).json()["items"])
            == 12
        )
    assert small.count == large.count


# --- POST /api/massdata/query --------------------------------------------------------------------------


def test_query_navigates_and_answers_the_result_type(client: TestClient, systems: dict[str, int]) -> None:
    response = client.post(
        "/api/massdata/query",
        json={
            "query": 'BusinessProcess[@name = "Sell"]/informationSystems[@Costs > 100];',
            "fields": ["name"],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["type"] == "InformationSystem"
    assert body["query"].startswith("BusinessProcess")
    assert body["result"] == [
        {"id": [systems["IS-00"]], "name": ["IS-00"]},
        {"id": [systems["IS-02"]], "name": ["IS-02"]},
    ]
    assert body["nextCursor"] is None


def test_query_as_plain_text(client: TestClient, systems: dict[str, int]) -> None:
    response = client.post(
        "/api/massdata/query",
        content='InformationSystem[@name.endsWith("1")]',
        headers={"Content-Type": "text/plain; charset=utf-8"},
    )
    assert response.status_code == 200
    assert names(response.json()["result"]) == ["IS-01", "IS-11"]


def test_query_pages_with_cursor_and_count(client: TestClient, systems: dict[str, int]) -> None:
    body = {"query": "InformationSystem[@Costs >= 300]", "sort": "-Costs", "limit": 3, "count": True}
    first = client.post("/api/massdata/query", json=body).json()
    assert first["total"] == 7
    second = client.post("/api/massdata/query", json={**body, "cursor": first["nextCursor"]}).json()
    third = client.post("/api/massdata/query", json={**body, "cursor": second["nextCursor"]}).json()
    assert third["nextCursor"] is None
    assert len(first["result"] + second["result"] + third["result"]) == 7


def test_query_streams_as_ndjson(client: TestClient, systems: dict[str, int]) -> None:
    response = client.post(
        "/api/massdata/query",
        json={"query": "InformationSystem[@Costs = null]"},
        headers={"Accept": "application/x-ndjson"},
    )
    assert names([orjson.loads(line) for line in response.content.splitlines()]) == [
        "IS-01",
        "IS-05",
        "IS-10",
    ]


def test_query_syntax_error_names_the_position(client: TestClient) -> None:
    response = client.post("/api/massdata/query", json={"query": "InformationSystem[@Costs > 1]\n/ [x]"})
    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "query_syntax"
    assert problem["position"]["line"] == 2 and problem["position"]["column"] == 3
    assert problem["errors"][0]["pointer"] == "/query"


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({}, "/query"),
        ({"query": 3}, "/query"),
        ({"query": "InformationSystem", "limit": "10"}, "/limit"),
        ({"query": "InformationSystem", "fields": "name"}, "/fields"),
        ({"query": "InformationSystem", "colour": "red"}, "/colour"),
    ],
)
def test_query_body_problems_are_400(client: TestClient, body: dict[str, Any], pointer: str) -> None:
    response = client.post("/api/massdata/query", json=body)
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == pointer


def test_query_body_of_another_media_type_is_415(client: TestClient) -> None:
    response = client.post(
        "/api/massdata/query", content=b"<q/>", headers={"Content-Type": "application/xml"}
    )
    assert response.status_code == 415


# --- permissions ---------------------------------------------------------------------------------------


@pytest.fixture
def reader(app: FastAPI, systems: dict[str, int]) -> Iterator[TestClient]:
    """May read information systems and use massdata, but not the Confidential group or processes."""
    create_role(app, "massdata-reader", types={"InformationSystem": ["read"]}, functional=["MASSDATA"])
    create_user(app, "reader", "reader-password", ["massdata-reader"])
    with client_as(app, "reader", "reader-password") as client:
        yield client


def test_massdata_needs_the_massdata_permission(app: FastAPI, systems: dict[str, int]) -> None:
    create_role(app, "plain-reader", types={"InformationSystem": ["read"]})
    create_user(app, "plain", "plain-password", ["plain-reader"])
    with client_as(app, "plain", "plain-password") as plain:
        assert plain.get("/api/massdata/InformationSystem").status_code == 403
        assert plain.post("/api/massdata/query", json={"query": "InformationSystem"}).status_code == 403


def test_type_read_permission_applies(reader: TestClient) -> None:
    assert reader.get("/api/massdata/BusinessProcess").status_code == 403
    assert reader.post("/api/massdata/query", json={"query": "BusinessProcess"}).status_code == 403
    response = reader.post("/api/massdata/query", json={"query": "InformationSystem/businessProcesses"})
    assert response.status_code == 400  # the end leads to a type the reader cannot see


def test_hidden_properties_stay_hidden(reader: TestClient) -> None:
    page = reader.get("/api/massdata/InformationSystem").json()
    assert all("Secret" not in item and "businessProcesses" not in item for item in page["items"])
    streamed = reader.get("/api/massdata/InformationSystem", headers={"Accept": "application/x-ndjson"})
    assert all("Secret" not in orjson.loads(line) for line in streamed.content.splitlines())
    for params in ({"filter": '@Secret = "secret 1"'}, {"sort": "Secret"}, {"fields": "Secret"}):
        assert reader.get("/api/massdata/InformationSystem", params=params).status_code == 400


def test_pages_by_modification_time_keep_ties_of_one_bulk_write(client: TestClient) -> None:
    """Elements of one bulk request share their time stamp; the keyset must still page through all of them
    (bulk inserts once stored the stamp in another text format on SQLite: equal times compared unequal)."""
    elements = [{"name": [f"Tie {index}"]} for index in range(5)]
    response = client.post("/api/massdata/InformationSystem", json={"elements": elements})
    assert response.status_code == 200, response.text
    seen: list[str] = []
    cursor = None
    while True:
        params = {"sort": "-lastModificationTime", "limit": 2, **({"cursor": cursor} if cursor else {})}
        body = client.get("/api/massdata/InformationSystem", params=params).json()
        seen.extend(names(body["items"]))
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert sorted(seen) == [f"Tie {index}" for index in range(5)]
