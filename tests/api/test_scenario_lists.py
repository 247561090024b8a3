"""List pages in a planning scenario start from main's stored elements and fold only those that diverge
(`history.asof.diverged`): every page, total and cursor must be the ones the full fold of the type gives,
whatever main and the scenario did after the base."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.massdata import asof as massdata_asof
from tests.helpers import create_attribute

SYSTEMS = "/api/element/InformationSystem"
LISTINGS: list[dict[str, Any]] = [
    {},
    {"sort": "name"},
    {"sort": "-Costs"},
    {"sort": "Costs,-id", "fields": "name,Costs,businessDomains"},
    {"sort": "-lastModificationTime"},
    {"filter": "@Costs > 40"},
    {"filter": "count(businessDomains) > 0", "sort": "-name"},
    {"filter": '!@name.startsWith("S") & (@Costs <= 80 | @Costs = null)', "sort": "Costs"},
]


def _created(client: TestClient, path: str, body: dict[str, Any], params: dict[str, str]) -> int:
    response = client.post(path, json=body, params=params)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def _scramble(client: TestClient, seed: int) -> str:
    """A landscape, a scenario from it, then writes in main and in the scenario, chosen by `seed`."""
    rng = random.Random(seed)
    domains = [_created(client, "/api/element/BusinessDomain", {"name": [f"D{i}"]}, {}) for i in range(3)]
    systems = [
        _created(client, SYSTEMS, {"name": [f"S{i:02}"], "Costs": [rng.randint(0, 100)]}, {})
        for i in range(24)
    ]
    for system in systems[:3]:
        client.patch(f"{SYSTEMS}/{system}", json={"businessDomains": [domains[0]]})
    key = str(client.post("/api/scenarios", json={"name": f"plan {seed}"}).json()["key"])
    alive = {"main": list(systems), "scenario": list(systems)}
    for step in range(60):
        side = rng.choice(["main", "scenario"])
        params = {} if side == "main" else {"scenario": key}
        ids = alive[side]
        action = rng.choice(["costs", "costs", "rename", "relate", "create", "delete"])
        if action == "create" or not ids:
            body: dict[str, list[Any]] = {"name": [f"{side[0]}{step}"], "Costs": [rng.randint(0, 100)]}
            ids.append(_created(client, SYSTEMS, body, params))
            continue
        target = rng.choice(ids)
        if action == "delete":
            response = client.delete(f"{SYSTEMS}/{target}", params=params)
            assert response.status_code == 204, response.text
            ids.remove(target)
            continue
        bodies: dict[str, dict[str, list[Any]]] = {
            "costs": {"Costs": [rng.randint(0, 100)]},
            "rename": {"name": [f"{rng.choice('SRT')}{side[0]}{step}"]},
            "relate": {"businessDomains": rng.sample(domains, rng.randint(0, 2))},
        }
        body = bodies[action]
        response = client.patch(f"{SYSTEMS}/{target}", json=body, params=params)
        assert response.status_code == 200, response.text
    # A related element renamed in the scenario: lists name it so.
    renamed = client.patch(
        f"/api/element/BusinessDomain/{domains[0]}", json={"name": ["Renamed"]}, params={"scenario": key}
    )
    assert renamed.status_code == 200, renamed.text
    return key


def _pages(client: TestClient, key: str, listing: dict[str, Any]) -> Iterator[dict[str, Any]]:
    params: dict[str, Any] = {**listing, "scenario": key, "limit": 5, "count": True}
    while True:
        response = client.get("/api/massdata/InformationSystem", params=params)
        assert response.status_code == 200, response.text
        page = dict(response.json())
        yield page
        if page["nextCursor"] is None:
            return
        params["cursor"] = page["nextCursor"]


def _content(page: dict[str, Any]) -> tuple[Any, ...]:
    return page["items"], page["total"], page["nextCursor"] is None


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_list_in_a_scenario_is_the_full_fold_of_its_type(
    app: FastAPI, client: TestClient, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    key = _scramble(client, seed)
    fast = {str(listing): list(_pages(client, key, listing)) for listing in LISTINGS}
    # The same pages from the fold of the whole type (the path `asOf` reads take).
    monkeypatch.setattr(massdata_asof, "diverged", lambda *args: None)
    for listing in LISTINGS:
        folded = list(_pages(client, key, listing))
        # Cursors may differ in what they carry (a time to the microsecond, or to the millisecond the
        # fold reads from element JSON); the pages they lead to may not.
        assert [_content(page) for page in fast[str(listing)]] == [_content(page) for page in folded], listing
    assert any(page["items"] for pages in fast.values() for page in pages)
    # An element read by id in the scenario is the one the fold lists; one the scenario lacks is a 404.
    listed = {item["id"][0]: item for page in _pages(client, key, {}) for item in page["items"]}
    for element_id in range(1, max(listed) + 2):
        response = client.get(f"{SYSTEMS}/{element_id}", params={"scenario": key})
        if element_id in listed:
            assert response.status_code == 200, response.text
            assert response.json() == listed[element_id]
        else:
            assert response.status_code == 404, response.text
    named = {
        entry["name"]
        for page in fast[str({})]
        for item in page["items"]
        for entry in item["businessDomains"]
        if entry["name"] in ("D0", "Renamed")
    }
    assert named == {"Renamed"}


def test_a_list_follows_the_scenario_and_main_as_they_change(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    first = _created(client, SYSTEMS, {"name": ["First"], "Costs": [1]}, {})
    key = str(client.post("/api/scenarios", json={"name": "plan"}).json()["key"])

    def listed() -> list[tuple[str, list[Any]]]:
        response = client.get("/api/massdata/InformationSystem", params={"scenario": key, "sort": "name"})
        assert response.status_code == 200, response.text
        return [(item["name"][0], item["Costs"]) for item in response.json()["items"]]

    assert listed() == [("First", [1])]
    client.patch(f"{SYSTEMS}/{first}", json={"Costs": [2]}, params={"scenario": key})
    assert listed() == [("First", [2])]
    client.patch(f"{SYSTEMS}/{first}", json={"name": ["Primary"]})  # main after the base: not seen
    _created(client, SYSTEMS, {"name": ["Later"]}, {})
    assert listed() == [("First", [2])]
    _created(client, SYSTEMS, {"name": ["Planned"], "Costs": [5]}, {"scenario": key})
    assert listed() == [("First", [2]), ("Planned", [5])]
    assert client.post(f"/api/scenarios/{key}/sync").status_code == 200  # main folds in
    assert listed() == [("Later", []), ("Planned", [5]), ("Primary", [2])]


BULK = "/api/massdata/InformationSystem"


def test_a_bulk_write_in_a_scenario_is_the_single_writes_it_stands_for(
    app: FastAPI, client: TestClient
) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    domain = _created(client, "/api/element/BusinessDomain", {"name": ["Finance"]}, {})
    erp = _created(client, SYSTEMS, {"name": ["ERP"], "Costs": [10]}, {})
    crm = _created(client, SYSTEMS, {"name": ["CRM"], "Costs": [20]}, {})
    key = str(client.post("/api/scenarios", json={"name": "plan"}).json()["key"])
    planned = _created(client, SYSTEMS, {"name": ["Planned"]}, {"scenario": key})
    before_main = client.get(BULK, params={"sort": "id"}).json()["items"]

    body = {
        "elements": [
            {"id": erp, "Costs": [11], "businessDomains": [domain]},
            {"name": ["CRM"], "description": ["by name"]},
            {"name": ["New one"], "Costs": [5], "businessDomains": [{"id": domain}]},
            {"id": planned, "Costs": [7]},
        ],
        "match": "name",
    }
    dry = client.post(BULK, json={**body, "dryRun": True}, params={"scenario": key})
    assert dry.status_code == 200, dry.text
    assert (dry.json()["created"], dry.json()["updated"], dry.json()["dryRun"]) == (1, 3, True)
    written = client.post(BULK, json=body, params={"scenario": key})
    assert written.status_code == 200, written.text
    results = written.json()["results"]
    assert [r["status"] for r in results] == [200, 200, 201, 200]
    new_one = results[2]["id"]
    assert results[1]["id"] == crm and new_one > planned

    def in_scenario(element_id: int) -> dict[str, Any]:
        response = client.get(f"{SYSTEMS}/{element_id}", params={"scenario": key})
        assert response.status_code == 200, response.text
        return dict(response.json())

    assert in_scenario(erp)["Costs"] == [11]
    assert [e["id"] for e in in_scenario(erp)["businessDomains"]] == [domain]
    assert in_scenario(crm)["description"] == ["by name"]
    assert (in_scenario(new_one)["name"], in_scenario(new_one)["Costs"]) == (["New one"], [5])
    assert in_scenario(planned)["Costs"] == [7]
    mirrored = client.get(f"/api/element/BusinessDomain/{domain}", params={"scenario": key}).json()
    assert sorted(e["id"] for e in mirrored["informationSystems"]) == [erp, new_one]
    # Main saw none of it.
    assert client.get(BULK, params={"sort": "id"}).json()["items"] == before_main
    assert client.get(f"{SYSTEMS}/{new_one}").status_code == 404

    # Atomic: one bad item, nothing written; per item: the good ones go on.
    version = client.get(f"/api/scenarios/{key}").json()["version"]
    bad = {"elements": [{"id": erp, "Costs": [12]}, {"id": erp + 1000, "Costs": [1]}, {"name": ["CRM"]}]}
    refused = client.post(BULK, json=bad, params={"scenario": key})
    assert refused.status_code == 400, refused.text
    assert [r["status"] for r in refused.json()["results"]] == [200, 404, 409]
    assert client.get(f"/api/scenarios/{key}").json()["version"] == version
    assert in_scenario(erp)["Costs"] == [11]
    partly = client.post(BULK, json={**bad, "mode": "perItem"}, headers={"Blockrepo-Scenario": key})
    assert partly.status_code == 200, partly.text
    assert (partly.json()["updated"], partly.json()["failed"]) == (1, 2)
    assert in_scenario(erp)["Costs"] == [12]
    # The merge takes the bulk's changes to main like any others.
    merged = client.post(f"/api/scenarios/{key}/merge", json={})
    assert merged.status_code == 200, merged.text
    landed = client.get(BULK, params={"filter": '@name = "New one"'}).json()["items"]
    assert [item["Costs"] for item in landed] == [[5]]
    assert client.post(BULK, json=body, params={"scenario": key}).status_code == 409  # merged: closed


def test_a_bulk_write_in_a_scenario_refuses_what_a_single_write_refuses(
    app: FastAPI, client: TestClient
) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _created(client, SYSTEMS, {"name": ["ERP"]}, {})
    key = str(client.post("/api/scenarios", json={"name": "plan"}).json()["key"])
    gone = _created(client, SYSTEMS, {"name": ["Gone"]}, {"scenario": key})
    assert client.delete(f"{SYSTEMS}/{gone}", params={"scenario": key}).status_code == 204
    cases: list[tuple[Any, int, str]] = [
        ({"id": erp, "Costs": ["many"]}, 400, "/elements/0/Costs/0"),
        ({"id": gone, "Costs": [1]}, 400, "/elements/0/id"),
        ({"name": ["ERP"]}, 400, "/elements/0/name"),
        ({"id": erp, "nothing": [1]}, 400, "/elements/0/nothing"),
        ("not an object", 400, "/elements/0"),
    ]
    for item, status, pointer in cases:
        response = client.post(BULK, json={"elements": [item]}, params={"scenario": key})
        assert response.status_code == status, (item, response.text)
        assert any(e["pointer"].startswith(pointer) for e in response.json()["errors"]), response.text
    assert client.post(BULK, json={"elements": []}, params={"scenario": "no-such"}).status_code == 404
