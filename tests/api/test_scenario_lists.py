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
