"""`projection=` on `GET /api/massdata/{type}` and `POST /api/massdata/query`: lists and iteraQL over the
landscape as it will be on a date, as `GET /api/projection` projects it (issue 25)."""

from __future__ import annotations

import io
from typing import Any

import openpyxl
import orjson
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import client_as, create_attribute, create_group, create_role, create_user

SYSTEMS = "/api/element/InformationSystem"
LIST = "/api/massdata/InformationSystem"
QUERY = "/api/massdata/query"


def _created(
    client: TestClient,
    body: dict[str, Any],
    scenario: str | None = None,
    type_name: str = "InformationSystem",
) -> int:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.post(f"/api/element/{type_name}", json=body, params=params)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def _patched(client: TestClient, element_id: int, body: dict[str, Any], scenario: str | None = None) -> None:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.patch(f"{SYSTEMS}/{element_id}", json=body, params=params)
    assert response.status_code == 200, response.text


def _scenario(client: TestClient, name: str, effective: str | None) -> str:
    response = client.post("/api/scenarios", json={"name": name, "effectiveDate": effective})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _listed(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get(LIST, params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _names(page: dict[str, Any]) -> list[str]:
    return [item["name"][0] for item in page["items"]]


def _every_page(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    while True:
        page = _listed(client, **params)
        items.extend(page["items"])
        if page["nextCursor"] is None:
            return items
        params["cursor"] = page["nextCursor"]


def _landscape(app: FastAPI, client: TestClient) -> dict[str, Any]:
    """Main and two plans: `first` effective 2027-01-01, `later` 2028-01-01."""
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    ending = _created(
        client, {"name": ["Mainframe"], "runtimePeriod": [{"start": "2020-01-01", "end": "2026-12-31"}]}
    )
    erp = _created(client, {"name": ["ERP"], "Costs": [5]})
    crm = _created(client, {"name": ["CRM"], "Costs": [3]})
    _created(client, {"name": ["Shop"], "runtimePeriod": [{"start": "2027-06-01", "end": None}]})
    billing = _created(client, {"name": ["Billing"], "Costs": [1]})
    first = _scenario(client, "Migration", "2027-01-01")
    later = _scenario(client, "Renewal", "2028-01-01")
    _patched(client, erp, {"Costs": [7]}, first)
    lake = _created(client, {"name": ["Data Lake"], "Costs": [9]}, first)
    _patched(client, crm, {"Costs": [20]}, later)
    assert client.delete(f"{SYSTEMS}/{billing}", params={"scenario": first}).status_code in (200, 204)
    return {"first": first, "later": later, "erp": erp, "crm": crm, "lake": lake, "ending": ending}


def test_a_list_at_a_date_is_the_projection_page_by_page(app: FastAPI, client: TestClient) -> None:
    plans = _landscape(app, client)
    keys = f"{plans['first']},{plans['later']}"
    for at in ("2026-06-01", "2027-07-01", "2028-06-01"):
        projected = client.get(
            "/api/projection", params={"at": at, "type": "InformationSystem", "scenarios": keys}
        ).json()["items"]
        listed = _every_page(client, projection=at, scenarios=keys, limit=2)
        assert listed == projected, at
        narrowed = _every_page(client, projection=at, scenarios=keys, limit=1, fields="name,Costs")
        assert narrowed == [
            {key: item[key] for key in ("id", "name", "Costs") if key in item} for item in projected
        ]
    mid = _names(_listed(client, projection="2027-07-01", scenarios=keys, sort="name"))
    # The Mainframe's runtime has ended, Billing is deleted by the plan, the Data Lake is new, the
    # Shop's runtime has begun.
    assert mid == ["CRM", "Data Lake", "ERP", "Shop"]
    only_main = _names(_listed(client, projection="2027-07-01", sort="name"))
    assert only_main == ["Billing", "CRM", "ERP", "Shop"]


def test_filter_sort_and_count_read_the_projected_values(app: FastAPI, client: TestClient) -> None:
    plans = _landscape(app, client)
    keys = f"{plans['first']},{plans['later']}"
    at_mid = {"projection": "2027-07-01", "scenarios": keys}
    # ERP's Costs become 7 on 2027-01-01; CRM's become 20 only on 2028-01-01.
    page = _listed(client, **at_mid, filter="@Costs > 6", sort="-Costs", count="true")
    assert _names(page) == ["Data Lake", "ERP"] and page["total"] == 2
    page = _listed(client, **at_mid, filter="@Costs < 6", count="true")
    assert _names(page) == ["CRM"] and page["total"] == 1
    later = _listed(client, projection="2028-06-01", scenarios=keys, filter="@Costs > 6", sort="-Costs")
    assert _names(later) == ["CRM", "Data Lake", "ERP"]
    # Today's list is not touched by the plans.
    assert _names(_listed(client, filter="@Costs > 6")) == []
    # Sorted and paged by a projected value, one by one.
    ordered = _every_page(client, **at_mid, sort="Costs,name", limit=1, fields="name")
    assert [item["name"][0] for item in ordered] == ["CRM", "ERP", "Data Lake", "Shop"]
    assert _listed(client, **at_mid, count="true", limit=1)["total"] == 4


def test_the_stream_holds_what_the_pages_hold(app: FastAPI, client: TestClient) -> None:
    plans = _landscape(app, client)
    params = {"projection": "2027-07-01", "scenarios": plans["first"], "sort": "-name"}
    response = client.get(LIST, params=params, headers={"Accept": "application/x-ndjson"})
    assert response.status_code == 200, response.text
    lines = [orjson.loads(line) for line in response.content.splitlines() if line]
    assert lines == _every_page(client, **params, limit=2)
    body = {"query": "InformationSystem;", "projection": "2027-07-01", "scenarios": [plans["first"]]}
    response = client.post(QUERY, json=body, headers={"Accept": "application/x-ndjson"})
    assert sorted(orjson.loads(line)["id"][0] for line in response.content.splitlines() if line) == sorted(
        item["id"][0] for item in lines
    )


def test_a_query_follows_relations_as_they_are_on_the_date(app: FastAPI, client: TestClient) -> None:
    plans = _landscape(app, client)
    ordering = _created(client, {"name": ["Ordering"]}, type_name="BusinessProcess")
    invoicing = _created(client, {"name": ["Invoicing"]}, type_name="BusinessProcess")
    telex = _created(
        client, {"name": ["Telex"], "runtimePeriod": [{"start": "2000-01-01", "end": "2027-03-01"}]}
    )
    _patched(client, plans["crm"], {"businessProcesses": [ordering]})
    _patched(client, telex, {"businessProcesses": [ordering]})
    # The plan relates ERP to Invoicing (effective 2027-01-01); the Data Lake it creates to Ordering.
    _patched(client, plans["erp"], {"businessProcesses": [invoicing]}, plans["first"])
    response = client.patch(
        f"{SYSTEMS}/{plans['lake']}",
        json={"businessProcesses": [ordering]},
        params={"scenario": plans["first"]},
    )
    assert response.status_code == 200, response.text

    def reached(query: str, **extra: Any) -> list[str]:
        body = {"query": query, "sort": "name", **extra}
        response = client.post(QUERY, json=body)
        assert response.status_code == 200, response.text
        return [item["name"][0] for item in response.json()["items"]]

    step = "InformationSystem[@Costs > 4]/businessProcesses;"
    assert reached(step) == []  # today ERP (5) relates to nothing
    on_date = {"projection": "2027-07-01", "scenarios": [plans["first"]]}
    assert reached(step, **on_date) == ["Invoicing", "Ordering"]  # ERP (7) and the Data Lake (9)
    before = {"projection": "2026-06-01", "scenarios": [plans["first"]]}
    assert reached(step, **before) == []  # the plan is not effective yet: ERP still costs 5
    # A step back from the processes, with a count over related elements: the Telex's runtime has ended
    # by the date, so the step does not reach it; the Data Lake is related by the plan.
    back = 'BusinessProcess[@name = "Ordering"]/informationSystems[count(businessProcesses) >= 1];'
    assert reached(back, **on_date) == ["CRM", "Data Lake"]
    assert reached(back, **before) == ["CRM", "Telex"]
    assert reached(back) == ["CRM", "Telex"]
    # The query's cursor pages the projected result too.
    body = {"query": step, "limit": 1, "sort": "name", "count": True, **on_date}
    first_page = client.post(QUERY, json=body).json()
    assert first_page["total"] == 2 and [i["name"][0] for i in first_page["result"]] == ["Invoicing"]
    second = client.post(QUERY, json={**body, "cursor": first_page["nextCursor"]}).json()
    assert [i["name"][0] for i in second["items"]] == ["Ordering"] and second["nextCursor"] is None


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    return dict(response.json())


def test_refusals_answer_clearly(app: FastAPI, client: TestClient) -> None:
    plans = _landscape(app, client)
    key = plans["first"]
    closed = _scenario(client, "Dropped", None)
    assert client.post(f"/api/scenarios/{closed}/close").status_code == 200
    cases: list[tuple[dict[str, Any], int, str | None, str | None]] = [
        ({"projection": "2027-01-01", "asOf": "1"}, 400, "not_with_projection", "query:asOf"),
        ({"projection": "2027-01-01", "scenario": key}, 400, "not_with_projection", "query:scenario"),
        ({"scenarios": key}, 400, "projection_required", "query:scenarios"),
        ({"projection": "next year"}, 400, "invalid_date", "query:projection"),
        ({"projection": "2027-02-30"}, 400, "invalid_date", "query:projection"),
        (
            {"projection": "2027-01-01", "scenarios": ",".join(f"s{i}" for i in range(21))},
            400,
            "too_many",
            None,
        ),
        ({"projection": "2027-01-01", "scenarios": "no-such"}, 404, None, None),
        ({"projection": "2027-01-01", "scenarios": closed}, 409, None, None),
    ]
    for params, status, item_code, pointer in cases:
        problem = _problem(client.get(LIST, params=params), status)
        if item_code is not None:
            assert problem["errors"][0]["code"] == item_code, params
        if pointer is not None:
            assert problem["errors"][0]["pointer"] == pointer, params
    header = client.get(LIST, params={"projection": "2027-01-01"}, headers={"Blockrepo-Scenario": key})
    assert _problem(header, 400)["errors"][0]["code"] == "not_with_projection"

    body_cases: list[tuple[dict[str, Any], int, str | None, str | None]] = [
        ({"projection": "2027-01-01", "asOf": 1}, 400, "not_with_projection", "/asOf"),
        ({"scenarios": [key]}, 400, "projection_required", "/scenarios"),
        ({"projection": "01/01/2027"}, 400, "invalid_date", "/projection"),
        ({"projection": 2027}, 400, "wrong_type", "/projection"),
        ({"projection": ""}, 400, "invalid_date", "/projection"),
        ({"projection": "2027-01-01", "scenarios": key}, 400, "wrong_type", "/scenarios"),
        (
            {"projection": "2027-01-01", "scenarios": [f"s{i}" for i in range(21)]},
            400,
            "too_many",
            "/scenarios",
        ),
        ({"projection": "2027-01-01", "scenarios": ["no-such"]}, 404, None, None),
    ]
    for extra, status, item_code, pointer in body_cases:
        problem = _problem(client.post(QUERY, json={"query": "InformationSystem;", **extra}), status)
        if item_code is not None:
            assert problem["errors"][0]["code"] == item_code, extra
        if pointer is not None:
            assert problem["errors"][0]["pointer"] == pointer, extra

    # A cursor belongs to its date and scenarios, and to projections only.
    params = {"projection": "2027-07-01", "scenarios": key, "limit": 1}
    cursor = _listed(client, **params)["nextCursor"]
    assert cursor is not None
    assert _listed(client, **params, cursor=cursor)["items"]
    elsewhere = [
        {**params, "projection": "2027-07-02"},
        {**params, "scenarios": f"{key},{plans['later']}"},
        {"projection": "2027-07-01", "limit": 1},
        {"limit": 1},
    ]
    for other in elsewhere:
        assert _problem(client.get(LIST, params={**other, "cursor": cursor}), 400)["code"] == "invalid_cursor"
    today = _listed(client, limit=1)["nextCursor"]
    assert _problem(client.get(LIST, params={**params, "cursor": today}), 400)["code"] == "invalid_cursor"
    # Refusals change nothing: the plan is still open and lists the same.
    assert client.get(f"/api/scenarios/{key}").json()["state"] == "open"


def test_a_reader_without_the_group_neither_sees_nor_filters_its_values(
    app: FastAPI, client: TestClient
) -> None:
    create_group(app, "Finance")
    create_attribute(app, "Budget", "number", types=["InformationSystem"], group="Finance")
    erp = _created(client, {"name": ["ERP"], "Budget": [5]})
    _created(client, {"name": ["CRM"], "Budget": [1]})
    plan = _scenario(client, "Savings", "2027-01-01")
    _patched(client, erp, {"Budget": [50], "description": ["cheaper"]}, plan)
    create_role(app, "controllers", groups={"Finance": (True, True)})
    create_role(app, "readers", types={"InformationSystem": ["read"]}, functional=["MASSDATA"])
    create_user(app, "reader", "reader-password", roles=["readers"])
    shared = client.put(
        f"/api/scenarios/{plan}/shares", json={"shares": [{"role": "readers", "access": "read"}]}
    )
    assert shared.status_code == 200, shared.text
    on_date = {"projection": "2027-07-01", "scenarios": plan}
    everything = _listed(client, **on_date, filter="@Budget > 10")
    assert _names(everything) == ["ERP"] and everything["items"][0]["Budget"] == [50]
    with client_as(app, "reader", "reader-password") as reader:
        items = _every_page(reader, **on_date)
        assert {item["name"][0] for item in items} == {"ERP", "CRM"}
        assert all("Budget" not in item for item in items)
        assert [item["description"] for item in items if item["name"] == ["ERP"]] == [["cheaper"]]
        for response in (
            reader.get(LIST, params={**on_date, "filter": "@Budget > 10"}),
            reader.get(LIST, params={**on_date, "sort": "Budget"}),
            reader.post(
                QUERY, json={"query": "InformationSystem[@Budget > 10];", "projection": "2027-07-01"}
            ),
        ):
            assert response.status_code in (400, 403), response.text
            assert "[50]" not in response.text
            sortable = response.json()["errors"][0]["message"].partition("sortable:")[2]
            assert "Budget" not in sortable


def test_an_export_at_a_date_is_the_landscape_projected_to_it(client: TestClient) -> None:
    """`projection` on `GET /api/massdata/export`: the records of the landscape on the date, in hierarchy
    order, the header naming the date and the scenarios applied; the xlsx names it in `_index`."""
    ending = _created(
        client, {"name": ["Mainframe"], "runtimePeriod": [{"start": "2020-01-01", "end": "2026-12-31"}]}
    )
    parent = _created(client, {"name": ["ERP"], "description": ["today"]})
    key = _scenario(client, "Migration", "2027-01-01")
    _patched(client, parent, {"description": ["planned"]}, key)
    _created(client, {"name": ["ERP finance"], "parent": [{"id": parent}]}, key)
    later = _scenario(client, "Later plan", "2030-01-01")
    _created(client, {"name": ["Far future"]}, later)
    params = {"types": "InformationSystem", "projection": "2028-01-01", "scenarios": f"{key},{later}"}
    exported = client.get("/api/massdata/export", params=params)
    assert exported.status_code == 200, exported.text
    document = orjson.loads(exported.content)
    assert document["projection"] == {"at": "2028-01-01", "scenarios": [key]}
    records = document["elements"]["InformationSystem"]
    by_name = {record["name"]: record for record in records}
    assert set(by_name) == {"ERP", "ERP finance"}  # the mainframe has ended; the later plan is not yet
    assert by_name["ERP"]["description"] == "planned"
    assert by_name["ERP finance"]["parent"] == "ERP"
    assert [record["name"] for record in records] == ["ERP", "ERP finance"]  # parents first
    projected = client.get(
        "/api/projection",
        params={"at": "2028-01-01", "type": "InformationSystem", "scenarios": f"{key},{later}"},
    ).json()
    assert sorted(r["id"] for r in records) == sorted(item["id"][0] for item in projected["items"])
    assert ending not in {r["id"] for r in records}
    workbook = client.get("/api/massdata/export", params={**params, "format": "xlsx"})
    assert workbook.status_code == 200, workbook.text
    index = openpyxl.load_workbook(io.BytesIO(workbook.content), read_only=True)["_index"]
    rows = {row[0]: row for row in index.iter_rows(values_only=True)}
    assert orjson.loads(rows["(projection)"][2]) == {"at": "2028-01-01", "scenarios": [key]}
    # One moment per export; scenarios only with a projection; a real date.
    for refused in (
        {"projection": "2028-01-01", "scenario": key},
        {"scenarios": key},
        {"projection": "2028-02-30"},
    ):
        answer = client.get("/api/massdata/export", params=refused)
        assert answer.status_code == 400, answer.text
    assert (
        client.get(
            "/api/massdata/export", params={"projection": "2028-01-01", "scenarios": "nope"}
        ).status_code
        == 404
    )
