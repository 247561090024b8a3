"""Massdata reads with `asOf`: pages, streams and queries answer as the repository stood at a revision.

Two kinds of proof: every listing read at a revision and read again later with `asOf` that revision gives
the same answer (items, order, cursors' pages, totals), and at the newest revision the history evaluator
selects exactly what the SQL compiler selects, for every kind of predicate and sort.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.history import repository as history_repository
from tests.api.massdata_landscape import build_landscape
from tests.helpers import client_as, create_role, create_user, session_of

FILTERS: list[tuple[str, str]] = [
    ("InformationSystem", ""),
    ("InformationSystem", '@name = "CRM"'),
    ("InformationSystem", '@name != "CRM"'),
    ("InformationSystem", '@name >= "ERP"'),
    ("InformationSystem", '@name.contains("R")'),
    ("InformationSystem", '@name.startsWith("E") | @name.endsWith("op")'),
    ("InformationSystem", "@description = null"),
    ("InformationSystem", '@description.contains("planning")'),
    ("InformationSystem", '@"Annual costs" > 100'),
    ("InformationSystem", '@"Annual costs" <= 100'),
    ("InformationSystem", '@"Annual costs" != 99.5'),
    ("InformationSystem", '@"Annual costs" = null'),
    ("InformationSystem", '@"Go-live" < 2020-01-01'),
    ("InformationSystem", '@"Go-live" >= "2010-01-01"'),
    ("InformationSystem", '@Criticality = "high"'),
    ("InformationSystem", '@Criticality >= "medium"'),
    ("InformationSystem", '@Criticality != "high"'),
    ("InformationSystem", '@Tags = "core"'),
    ("InformationSystem", '@Tags.startsWith("c")'),
    ("InformationSystem", '@name.containsIgnoreCase("erp") | @Tags.containsIgnoreCase("CLOUD")'),
    ("InformationSystem", "count(@Tags) = 2"),
    ("InformationSystem", '@Responsible = "anna"'),
    ("InformationSystem", '@status = "CURRENT"'),
    ("InformationSystem", '@version.contains(".")'),
    ("InformationSystem", "@runtimePeriod.start <= 2020-06-01"),
    ("InformationSystem", "@runtimePeriod.end = null"),
    ("InformationSystem", "@runtimePeriod != null"),
    ("InformationSystem", '@lastModificationUser = "system"'),
    ("InformationSystem", "@lastModificationTime > 2000-01-01"),
    ("InformationSystem", "@lastModificationTime < 2000-01-01T00:00:00Z"),
    ("InformationSystem", "@revision >= 2"),
    ("InformationSystem", '@parent = "CRM"'),
    ("InformationSystem", "@parent = null & @children != null"),
    ("InformationSystem", '@children.endsWith("op")'),
    ("InformationSystem", '@businessProcesses = "Order"'),
    ("InformationSystem", '@businessProcesses != "Order"'),
    ("InformationSystem", "count(businessProcesses) >= 1"),
    ("InformationSystem", 'count(businessProcesses[@Criticality = "medium"]) = 0'),
    ("InformationSystem", "count(predecessors) > 0 | count(successors) = 1"),
    ("InformationSystem", "count(children) = 1"),
    ("InformationSystem", '!(@"Annual costs" > 100) | @status = "PLANNED"'),
    ("InformationSystem", '(@status = "CURRENT" & count(technicalComponents) > 0)'),
    ("BusinessProcess", 'count(informationSystems[@status = "CURRENT"]) >= 1'),
    ("BusinessProcess", '@parent = "Sell" & !@name = "Quote"'),
    ("BusinessProcess", "count(children[count(children) > 0]) > 0"),
    ("TechnicalComponent", "@Certified = true"),
    ("TechnicalComponent", "@Certified != true"),
    ("Project", "@runtimePeriod.end = null"),
]
QUERIES = [
    'BusinessProcess[@name = "Order"]/informationSystems;',
    'InformationSystem[@name = "ERP"]/businessProcesses;',
    'InformationSystem[@status = "CURRENT"]/businessProcesses[count(informationSystems) > 1]',
    'BusinessProcess[@name = "Quote"]/parent/children/informationSystems/parent;',
    "InformationSystem/predecessors;",
    "InformationFlow/sourceSystem;",
    'BusinessDomain[@name = "Sales"]/businessProcesses/children;',
]
SORTS = [
    "name",
    "-Annual costs",
    "Criticality,-name",
    "-Go-live",
    "-lastModificationTime",
    "description,-id",
    "-revision",
    "runtimePeriod",
    "-Tags",
]


def current_revision(app: FastAPI) -> int:
    with session_of(app) as db:
        return history_repository.current_revision(db)


def every_page(client: TestClient, type_name: str, **params: Any) -> tuple[list[dict[str, Any]], int]:
    """Every item of a listing, walked two at a time by cursor, and the `total` of the first page."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    total = -1
    while True:
        query = {**params, "limit": 2, "count": "true", **({"cursor": cursor} if cursor else {})}
        response = client.get(f"/api/massdata/{type_name}", params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        total = body["total"] if total < 0 else total
        assert body["total"] == total
        items.extend(body["items"])
        cursor = body["nextCursor"]
        if cursor is None:
            return items, total


def whole_listing(client: TestClient, type_name: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/massdata/{type_name}", params={**params, "limit": 1000})
    assert response.status_code == 200, response.text
    assert response.json()["nextCursor"] is None
    return response.json()["items"]  # type: ignore[no-any-return]


def query_result(client: TestClient, text: str, **extra: Any) -> list[dict[str, Any]]:
    response = client.post("/api/massdata/query", json={"query": text, "limit": 1000, **extra})
    assert response.status_code == 200, response.text
    return response.json()["result"]  # type: ignore[no-any-return]


def snapshot(client: TestClient, **as_of: Any) -> dict[str, Any]:
    """Every filter, sort and query of this module, read now (or as of a revision)."""
    read: dict[str, Any] = {}
    for type_name, predicate in FILTERS:
        params = {"filter": predicate} if predicate else {}
        read[f"{type_name}[{predicate}]"] = whole_listing(client, type_name, **params, **as_of)
    for sort in SORTS:
        read[f"sort {sort}"] = whole_listing(client, "InformationSystem", sort=sort, **as_of)
        read[f"pages {sort}"] = every_page(client, "InformationSystem", sort=sort, **as_of)
    read["fields"] = whole_listing(client, "InformationSystem", fields="name,Tags,predecessors", **as_of)
    for text in QUERIES:
        read[text] = query_result(client, text, **({"asOf": as_of["asOf"]} if as_of else {}))
    return read


def change_everything(client: TestClient) -> None:
    """Values changed and cleared, relations added and removed, renames, a recursive delete, new elements."""

    def element(type_name: str, name: str) -> int:
        found = whole_listing(client, type_name, filter=f'@name = "{name}"')
        return int(found[0]["id"][0])

    def put(type_name: str, name: str, body: dict[str, Any]) -> None:
        response = client.put(f"/api/element/{type_name}/{element(type_name, name)}", json=body)
        assert response.status_code == 200, response.text

    put("InformationSystem", "ERP", {"Annual costs": [5], "Tags": ["legacy"], "predecessors": []})
    put("InformationSystem", "CRM", {"name": ["CRM 2"], "status": ["CURRENT"], "Criticality": ["high"]})
    put("InformationSystem", "Legacy ERP", {"runtimePeriod": [{"start": "2001-01-01", "end": None}]})
    put("BusinessProcess", "Pay", {"informationSystems": [{"name": "CRM 2"}, {"name": "Shop"}]})
    put("BusinessProcess", "Quote", {"parent": [], "Criticality": ["high"]})
    response = client.delete(
        f"/api/element/BusinessProcess/{element('BusinessProcess', 'Order')}?recursive=true"
    )
    assert response.status_code == 204, response.text
    response = client.delete(f"/api/element/InformationSystem/{element('InformationSystem', 'Shop')}")
    assert response.status_code == 204, response.text
    response = client.post(
        "/api/massdata/InformationSystem",
        json={"elements": [{"name": ["Data Lake"], "Annual costs": [400], "parent": [{"name": "ERP"}]}]},
    )
    assert response.status_code == 200, response.text
    put("TechnicalComponent", "Linux", {"Certified": [True]})


def test_reads_as_of_a_revision_equal_what_was_read_then(app: FastAPI, client: TestClient) -> None:
    build_landscape(app, client)
    revision = current_revision(app)
    before = snapshot(client)
    change_everything(client)
    after = snapshot(client)
    assert after != before  # the changes show in today's reads
    assert snapshot(client, asOf=revision) == before
    assert snapshot(client, asOf=current_revision(app)) == after


def test_history_evaluation_selects_what_sql_selects_at_the_newest_revision(
    app: FastAPI, client: TestClient
) -> None:
    build_landscape(app, client)
    change_everything(client)
    assert snapshot(client, asOf=current_revision(app)) == snapshot(client)


def test_deleted_elements_are_listed_as_of_before_their_deletion(app: FastAPI, client: TestClient) -> None:
    build_landscape(app, client)
    revision = current_revision(app)
    change_everything(client)
    names_then = [e["name"][0] for e in whole_listing(client, "BusinessProcess", asOf=revision)]
    names_now = [e["name"][0] for e in whole_listing(client, "BusinessProcess")]
    assert {"Order", "Order entry", "Order check"} <= set(names_then)
    assert not {"Order", "Order entry", "Order check"} & set(names_now)
    created = whole_listing(client, "InformationSystem", filter='@name = "Data Lake"')
    assert created and not whole_listing(
        client, "InformationSystem", filter='@name = "Data Lake"', asOf=revision
    )


def test_as_of_a_time_and_the_ndjson_stream(app: FastAPI, client: TestClient) -> None:
    build_landscape(app, client)
    revision = current_revision(app)
    feed = client.get("/api/history", params={"sinceRevision": revision - 1, "limit": 1}).json()
    moment = feed["items"][0]["timestamp"]
    before = whole_listing(client, "InformationSystem", sort="-name")
    change_everything(client)
    assert whole_listing(client, "InformationSystem", sort="-name", asOf=moment) == before
    streamed = client.get(
        "/api/massdata/InformationSystem",
        params={"sort": "-name", "asOf": revision},
        headers={"Accept": "application/x-ndjson"},
    )
    assert streamed.status_code == 200
    assert streamed.headers["content-type"].startswith("application/x-ndjson")
    assert [orjson.loads(line) for line in streamed.content.splitlines()] == before
    text = client.post(
        "/api/massdata/query",
        json={"query": "InformationSystem;", "asOf": str(revision)},
        headers={"Accept": "application/x-ndjson"},
    )
    assert sorted(orjson.loads(line)["id"][0] for line in text.content.splitlines()) == sorted(
        e["id"][0] for e in before
    )


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"asOf": "yesterday"}, 400, "validation_failed"),
        ({"asOf": "999999"}, 400, "validation_failed"),
        ({"asOf": "1", "filter": "@nope = 1"}, 400, "query_invalid"),
        ({"asOf": "1", "cursor": "garbage"}, 400, "invalid_cursor"),
    ],
)
def test_bad_as_of_requests_are_400(
    app: FastAPI, client: TestClient, params: dict[str, str], status: int, code: str
) -> None:
    response = client.get("/api/massdata/InformationSystem", params=params)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == code
    response = client.post("/api/massdata/query", json={"query": "InformationSystem;", "asOf": True})
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/asOf"


def test_as_of_needs_view_history_and_hides_what_the_caller_may_not_read(
    app: FastAPI, client: TestClient
) -> None:
    build_landscape(app, client)
    revision = current_revision(app)
    create_role(app, "ops", groups={"Finance": (True, True)})
    readable = {"InformationSystem": ["read"], "BusinessProcess": ["read"]}
    create_role(app, "massdata", types=readable, functional=["MASSDATA"])
    create_role(app, "historian", types=readable, functional=["MASSDATA", "VIEW_HISTORY"])
    create_user(app, "mass", "mass-password", roles=["massdata"])
    create_user(app, "hist", "hist-password", roles=["historian"])
    with client_as(app, "mass", "mass-password") as mass:
        assert mass.get("/api/massdata/InformationSystem").status_code == 200
        response = mass.get("/api/massdata/InformationSystem", params={"asOf": revision})
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
    with client_as(app, "hist", "hist-password") as hist:
        items = whole_listing(hist, "InformationSystem", asOf=revision)
        assert items == whole_listing(hist, "InformationSystem")
        assert items and all("Annual costs" not in item and "Criticality" in item for item in items)
        assert all("technicalComponents" not in item for item in items)  # an unreadable type's end
        response = hist.get(
            "/api/massdata/InformationSystem", params={"asOf": revision, "filter": '@"Annual costs" > 1'}
        )
        assert response.status_code == 400
        assert response.json()["code"] == "query_invalid"
        response = hist.post("/api/massdata/query", json={"query": "Project;", "asOf": revision})
        assert response.status_code == 403


def test_export_refuses_as_of_instead_of_answering_with_today(client: TestClient) -> None:
    response = client.get("/api/massdata/export", params={"asOf": "1"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "asof_unsupported"
