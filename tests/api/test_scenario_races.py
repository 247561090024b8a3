"""Merging planning scenarios against concurrent requests (issue 25): two merges of one scenario merge it
once; a merge racing writes in main loses none of them, and neither loses the merge's changes. On both
databases (the suite's PostgreSQL pass runs these against PostgreSQL)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.conftest import ADMIN_PASSWORD
from tests.helpers import create_attribute

SCENARIOS = "/api/scenarios"


def _client(app: FastAPI) -> TestClient:
    client = TestClient(app, base_url="http://127.0.0.1")
    client.auth = ("system", ADMIN_PASSWORD)
    return client


def _create(client: TestClient, name: str, **values: Any) -> int:
    made = client.post("/api/element/InformationSystem", json={"name": [name], **values})
    assert made.status_code == 201, made.text
    return int(made.json()["id"][0])


def test_two_merges_of_one_scenario_merge_it_once(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    ids = [_create(client, f"System {n}", Costs=[n]) for n in range(20)]
    key = client.post(SCENARIOS, json={"name": "raise"}).json()["key"]
    for element in ids:
        changed = client.patch(
            f"/api/element/InformationSystem/{element}", json={"Costs": [1000]}, params={"scenario": key}
        )
        assert changed.status_code == 200, changed.text
    start = threading.Barrier(2)

    def merge() -> tuple[int, str]:
        with _client(app) as racer:
            start.wait()
            answer = racer.post(f"{SCENARIOS}/{key}/merge", json={})
            return answer.status_code, answer.json().get("code", "")

    with ThreadPoolExecutor(2) as pool:
        answers = sorted(pool.map(lambda _: merge(), range(2)))
    assert answers[0][0] == 200 and answers[1] in ((409, "scenario_not_open"), (409, "concurrent_write")), (
        answers
    )
    history = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    merged = {item["revision"] for item in history if item["viaScenario"] == key}
    assert len(merged) == 1  # one revision, not two
    assert all(client.get(f"/api/element/InformationSystem/{i}").json()["Costs"] == [1000] for i in ids)


def test_a_merge_racing_writes_in_main_loses_nothing(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    planned = [_create(client, f"Planned {n}") for n in range(10)]
    busy = [_create(client, f"Busy {n}", Costs=[0]) for n in range(4)]
    key = client.post(SCENARIOS, json={"name": "describe"}).json()["key"]
    for element in planned:
        client.patch(
            f"/api/element/InformationSystem/{element}",
            json={"description": ["planned"]},
            params={"scenario": key},
        )
    stop = threading.Event()
    written: dict[int, int] = {}

    def write_main(element: int) -> None:
        with _client(app) as writer:
            value = 0
            while not stop.is_set() or value < 3:
                value += 1
                answer = writer.patch(f"/api/element/InformationSystem/{element}", json={"Costs": [value]})
                if answer.status_code == 200:
                    written[element] = value
                else:
                    assert answer.status_code == 409 and answer.json()["code"] == "concurrent_write", (
                        answer.text
                    )
                    value -= 1

    with ThreadPoolExecutor(len(busy)) as pool:
        running = [pool.submit(write_main, element) for element in busy]
        merged = client.post(f"{SCENARIOS}/{key}/merge", json={})
        stop.set()
        for future in running:
            future.result()
    assert merged.status_code == 200, merged.text
    for element in planned:
        assert client.get(f"/api/element/InformationSystem/{element}").json()["description"] == ["planned"]
    for element in busy:
        assert client.get(f"/api/element/InformationSystem/{element}").json()["Costs"] == [written[element]]
