"""`GET /api/projection`: the landscape as it will be on a date, from main, the scenarios effective by then
and the runtime periods (issue 25, "to-be at a date")."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import create_attribute

SYSTEMS = "/api/element/InformationSystem"


def _created(client: TestClient, body: dict[str, Any], scenario: str | None = None) -> int:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.post(SYSTEMS, json=body, params=params)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def _patched(client: TestClient, element_id: int, body: dict[str, Any], scenario: str | None = None) -> None:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.patch(f"{SYSTEMS}/{element_id}", json=body, params=params)
    assert response.status_code == 200, response.text


def _projected(client: TestClient, at: str, *keys: str, **params: Any) -> dict[str, Any]:
    query = {"at": at, "type": "InformationSystem", **params}
    if keys:
        query["scenarios"] = ",".join(keys)
    response = client.get("/api/projection", params=query)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _by_name(page: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"][0]: item for item in page["items"]}


def test_the_landscape_on_a_date_takes_the_plans_effective_by_then(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    ending = _created(
        client, {"name": ["Mainframe"], "runtimePeriod": [{"start": "2020-01-01", "end": "2026-12-31"}]}
    )
    erp = _created(client, {"name": ["ERP"], "Costs": [5], "description": ["today"]})
    _created(client, {"name": ["Cloud CRM"], "runtimePeriod": [{"start": "2027-06-01", "end": None}]})
    first = client.post("/api/scenarios", json={"name": "Migration", "effectiveDate": "2027-01-01"}).json()[
        "key"
    ]
    later = client.post("/api/scenarios", json={"name": "Renewal", "effectiveDate": "2028-01-01"}).json()[
        "key"
    ]
    _patched(client, erp, {"Costs": [7]}, first)
    planned = _created(client, {"name": ["Data Lake"]}, first)
    _patched(client, ending, {"description": ["kept a while"]}, first)
    _patched(client, erp, {"description": ["renewed"]}, later)
    _patched(client, erp, {"description": ["main moved on"]})  # after both bases: another field than `first`

    now = _projected(client, "2026-06-01", first, later)
    assert set(_by_name(now)) == {"Mainframe", "ERP"}  # no plan yet; Cloud CRM not begun
    assert [s["applied"] for s in now["scenarios"]] == [False, False]
    assert _by_name(now)["ERP"]["Costs"] == [5]

    mid = _by_name(_projected(client, "2027-07-01", first, later))
    assert set(mid) == {"ERP", "Cloud CRM", "Data Lake"}  # the Mainframe's runtime has ended
    assert (mid["ERP"]["Costs"], mid["ERP"]["description"]) == ([7], ["main moved on"])
    assert mid["Data Lake"]["id"] == [planned]

    end = _by_name(_projected(client, "2028-06-01", later, first))  # applied by date, not by the order given
    assert (end["ERP"]["Costs"], end["ERP"]["description"]) == ([7], ["renewed"])

    only_main = _by_name(_projected(client, "2027-07-01"))
    assert set(only_main) == {"ERP", "Cloud CRM"} and only_main["ERP"]["Costs"] == [5]

    # Paged one by one: the same elements, each once.
    seen: list[int] = []
    params: dict[str, Any] = {"limit": 1, "fields": "name"}
    while True:
        page = _projected(client, "2027-07-01", first, later, **params)
        seen.extend(item["id"][0] for item in page["items"])
        assert all(set(item) == {"id", "name"} for item in page["items"])
        if page["nextCursor"] is None:
            break
        params["cursor"] = page["nextCursor"]
    assert sorted(seen) == sorted(item["id"][0] for item in mid.values())


def test_bad_projections_answer_clearly(app: FastAPI, client: TestClient) -> None:
    key = client.post("/api/scenarios", json={"name": "Plan"}).json()["key"]
    closed = client.post("/api/scenarios", json={"name": "Dropped"}).json()["key"]
    assert client.post(f"/api/scenarios/{closed}/close").status_code == 200
    base = {"at": "2027-01-01", "type": "InformationSystem"}
    cases = [
        ({**base, "scenarios": "no-such"}, 404),
        ({**base, "scenarios": closed}, 409),
        ({**base, "at": "next year"}, 400),
        ({"type": "InformationSystem"}, 400),
        ({**base, "type": "Nothing"}, 404),
        ({**base, "fields": "name,nothing"}, 400),
        ({**base, "cursor": "garbage"}, 400),
        ({**base, "scenarios": key, "limit": 0}, 400),
    ]
    for params, status in cases:
        response = client.get("/api/projection", params=params)
        assert response.status_code == status, (params, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")


def _compared(client: TestClient, start: str, end: str, *keys: str, **params: Any) -> dict[str, Any]:
    query = {"from": start, "to": end, "type": "InformationSystem", **params}
    if keys:
        query["scenarios"] = ",".join(keys)
    response = client.get("/api/projection/diff", params=query)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _fields(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["field"]: entry for entry in item["fields"]}


def test_two_dates_compare_in_the_diff_shape(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    mainframe = _created(
        client, {"name": ["Mainframe"], "runtimePeriod": [{"start": "2020-01-01", "end": "2027-03-31"}]}
    )
    erp = _created(client, {"name": ["ERP"], "Costs": [5]})
    crm = _created(client, {"name": ["CRM"]})
    _created(client, {"name": ["Unchanged"]})
    plan = client.post("/api/scenarios", json={"name": "Migration", "effectiveDate": "2027-06-01"}).json()[
        "key"
    ]
    _patched(client, erp, {"Costs": [7], "description": ["consolidated"]}, plan)
    lake = _created(client, {"name": ["Data Lake"]}, plan)
    domain = client.post("/api/element/BusinessDomain", json={"name": ["Finance"]}).json()["id"][0]
    _patched(client, crm, {"businessDomains": [domain]}, plan)

    page = _compared(client, "2027-01-01", "2027-07-01", plan)
    assert page["from"] == {"at": "2027-01-01"} and page["to"] == {"at": "2027-07-01"}
    assert page["scenarios"][0]["appliedFrom"] is False and page["scenarios"][0]["appliedTo"] is True
    items = {item["element"]["id"]: item for item in page["items"]}
    assert set(items) == {mainframe, erp, crm, lake}  # the unchanged system is no difference
    assert items[mainframe]["action"] == "deleted"  # its runtime period ended in between
    assert items[lake]["action"] == "created" and items[lake]["element"]["name"] == "Data Lake"
    erp_fields = _fields(items[erp])
    assert items[erp]["action"] == "updated"
    assert (erp_fields["Costs"]["base"], erp_fields["Costs"]["main"]) == ([5], [7])
    assert erp_fields["description"]["main"] == ["consolidated"]
    domains = _fields(items[crm])["businessDomains"]
    assert [entry["id"] for entry in domains["added"]] == [domain] and domains["removed"] == []
    # Both dates before the plan: only the runtime periods differ; the same date twice: nothing.
    early = _compared(client, "2027-01-01", "2027-05-01", plan)
    assert [item["element"]["id"] for item in early["items"]] == [mainframe]
    assert _compared(client, "2027-07-01", "2027-07-01", plan)["items"] == []
    # Backwards, the same differences the other way round.
    back = {
        item["element"]["id"]: item for item in _compared(client, "2027-07-01", "2027-01-01", plan)["items"]
    }
    assert back[mainframe]["action"] == "created" and back[lake]["action"] == "deleted"
    assert _fields(back[erp])["Costs"]["main"] == [5]

    # Pages by id, without a gap or a repeat.
    seen: list[int] = []
    cursor = None
    while True:
        more = _compared(
            client, "2027-01-01", "2027-07-01", plan, limit=1, **({"cursor": cursor} if cursor else {})
        )
        seen.extend(item["element"]["id"] for item in more["items"])
        cursor = more["nextCursor"]
        if cursor is None:
            break
    assert seen == sorted(items)


def test_bad_comparisons_answer_clearly(client: TestClient) -> None:
    for params in (
        {"from": "2027-01-01", "type": "InformationSystem"},
        {"from": "someday", "to": "2027-01-01", "type": "InformationSystem"},
        {"from": "2027-01-01", "to": "2027-02-01", "type": "InformationSystem", "limit": 0},
        {"from": "2027-01-01", "to": "2027-02-01", "type": "InformationSystem", "cursor": "nope"},
    ):
        response = client.get("/api/projection/diff", params=params)
        assert response.status_code == 400, (params, response.text)
    missing = client.get(
        "/api/projection/diff", params={"from": "2027-01-01", "to": "2027-02-01", "type": "Nope"}
    )
    assert missing.status_code == 404, missing.text
    unknown = client.get(
        "/api/projection/diff",
        params={"from": "2027-01-01", "to": "2027-02-01", "type": "InformationSystem", "scenarios": "nope"},
    )
    assert unknown.status_code == 404, unknown.text


def test_pages_follow_sealed_cursors_with_the_most_scenarios(client: TestClient) -> None:
    for index in range(5):
        _created(client, {"name": [f"System {index}"]})
    # Twenty scenarios with long names: the cursor is bound to all of them and still short enough to send.
    keys = [
        client.post("/api/scenarios", json={"name": f"A long plan name for paging, number {n}"}).json()["key"]
        for n in range(20)
    ]
    _created(client, {"name": ["Planned system"]}, keys[-1])
    names: list[str] = []
    cursor = None
    while True:
        page = _projected(client, "2030-01-01", *keys, limit=2, **({"cursor": cursor} if cursor else {}))
        names.extend(item["name"][0] for item in page["items"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert sorted(names) == sorted([*(f"System {i}" for i in range(5)), "Planned system"])
    compared = client.get(
        "/api/projection/diff",
        params={
            "from": "2020-01-01",
            "to": "2030-01-01",
            "type": "InformationSystem",
            "scenarios": ",".join(keys),
        },
    )
    assert compared.status_code == 200, compared.text
    # A cursor the server did not seal (here, the position without its seal) is refused.
    first = _projected(client, "2030-01-01", limit=2)["nextCursor"]
    assert first is not None
    unsealed = client.get(
        "/api/projection",
        params={"at": "2030-01-01", "type": "InformationSystem", "cursor": first.rsplit(".", 1)[0]},
    )
    assert unsealed.status_code == 400 and unsealed.json()["code"] == "invalid_cursor", unsealed.text
