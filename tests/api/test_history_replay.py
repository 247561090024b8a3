"""Replay: rebuild the whole repository from the change feed alone, as a client would, and compare it with
what the element API returns for every element (and 404 for every deleted one)."""

from __future__ import annotations

import random
from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.history_support import all_pages
from tests.helpers import create_attribute

TYPES = ("BusinessProcess", "InformationSystem")
# The relation ends a BusinessProcess or InformationSystem holds towards the other type or its own.
ENDS = {
    "BusinessProcess": [("informationSystems", "InformationSystem"), ("successors", "BusinessProcess")],
    "InformationSystem": [("businessProcesses", "BusinessProcess"), ("baseComponents", "InformationSystem")],
}
VALUES: dict[str, tuple[str, list[Any]]] = {
    "BusinessProcess": ("Criticality", ["low", "high"]),
    "InformationSystem": ("Costs", [1, 2.5, 300]),
}


def _replace(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """A re-added entry keeps its place; the relation attributes it names replace those."""
    if "attributes" in before and "attributes" in after:
        return {**after, "attributes": {**before["attributes"], **after["attributes"]}}
    return after


def _apply_related(current: list[Any], change: dict[str, Any]) -> list[Any]:
    """The documented meaning of `added`/`removed`/`order` (API.md §5, docs/architecture.md "History")."""
    added = {e["id"]: e for e in change.get("added", [])}
    removed = {e["id"] for e in change.get("removed", [])}
    result = [
        _replace(e, added.pop(e["id"])) if e["id"] in added else e
        for e in current
        if e["id"] in added or e["id"] not in removed
    ]
    result += [e for e in change.get("added", []) if e["id"] in added]
    if "order" in change:
        result.sort(key=lambda e: change["order"].index(e["id"]))
    return result


def replay(feed: list[dict[str, Any]]) -> tuple[dict[tuple[str, int], dict[str, Any]], set[tuple[str, int]]]:
    """Fold every element changeset of the feed; returns the living elements and the deleted ones."""
    elements: dict[tuple[str, int], dict[str, Any]] = {}
    deleted: set[tuple[str, int]] = set()
    names: dict[int, str] = {}
    renamed: dict[str, str] = {}  # attribute name when recorded -> name today
    for item in feed:
        if item["entity"] == "metamodel" and str(item.get("subject", "")).startswith("attribute "):
            for change in item["changes"]:
                if change["property"] == "name":
                    old, new = change["old"][0], change["new"][0]
                    renamed = {k: (new if v == old else v) for k, v in renamed.items()}
                    renamed.setdefault(old, new)
        if item["entity"] != "element":
            continue
        key = (item["type"], item["id"])
        names[item["id"]] = item["name"]
        if item["operation"] == "deleted":
            elements.pop(key)
            deleted.add(key)
            continue
        state = elements.setdefault(key, {"revision": 0})
        state["revision"] += 1
        state["name"] = [item["name"]]
        state["lastModificationTime"] = [item["timestamp"]]
        state["lastModificationUser"] = [item["user"]]
        for change in item["changes"]:
            prop = change["property"]
            if "added" in change or "removed" in change:
                state[prop] = _apply_related(state.get(prop, []), change)
            else:
                state[prop] = change["new"]
    for state in elements.values():
        for prop, after in renamed.items():
            # Attributes renamed since a change was recorded: the feed's metamodel changes say so.
            if prop in state:
                state[after] = state.pop(prop)
        for value in state.values():
            for entry in value if isinstance(value, list) else ():
                attributes = entry.get("attributes") if isinstance(entry, dict) else None
                if not isinstance(attributes, dict):
                    continue
                for prop, after in renamed.items():
                    if prop in attributes:
                        attributes[after] = attributes.pop(prop)
        for value in state.values():
            for entry in value if isinstance(value, list) else ():
                if isinstance(entry, dict) and "id" in entry and "name" in entry:
                    entry["name"] = names[entry["id"]]  # related elements under their newest name
    return elements, deleted


def _random_writes(client: TestClient, rng: random.Random, ids: dict[str, list[int]], steps: range) -> None:
    for step in steps:
        type_name = rng.choice(TYPES)
        existing = ids[type_name]
        action = rng.random()
        if not existing or action < 0.3:
            body: dict[str, Any] = {"name": [f"{type_name[:2]}-{step}"]}
            if existing and rng.random() < 0.4:
                body["parent"] = [rng.choice(existing)]
            response = client.post(f"/api/element/{type_name}", json=body)
            assert response.status_code == 201, response.text
            existing.append(response.json()["id"][0])
            continue
        element_id = rng.choice(existing)
        path = f"/api/element/{type_name}/{element_id}"
        if action < 0.8:
            body = {}
            if rng.random() < 0.3:
                body["name"] = [f"{type_name[:2]}-{step}-renamed"]
            if rng.random() < 0.3:
                attribute, choices = VALUES[type_name]
                body[attribute] = [rng.choice(choices)] if rng.random() < 0.8 else []
            if rng.random() < 0.2:
                body["description"] = [f"step {step}"]
            if rng.random() < 0.2:
                body["parent"] = [rng.choice(existing)] if rng.random() < 0.7 else []
            for end, other in ENDS[type_name]:
                if ids[other] and rng.random() < 0.4:
                    picked = rng.sample(ids[other], k=rng.randint(0, min(4, len(ids[other]))))
                    if end == "informationSystems":
                        body[end] = [{"id": i, "attributes": {"Share": [rng.randint(1, 99)]}} for i in picked]
                    else:
                        body[end] = [i for i in picked if i != element_id or other != type_name]
            response = client.put(path, json=body)
            assert response.status_code in (200, 400), response.text  # 400: a hierarchy cycle
        else:
            response = client.delete(path, params={"recursive": "true"})
            assert response.status_code == 204, response.text
            alive = {i for i in existing if client.get(f"/api/element/{type_name}/{i}").status_code == 200}
            ids[type_name] = [i for i in existing if i in alive]


def _compare(client: TestClient) -> list[dict[str, Any]]:
    feed = all_pages(client, "/api/history", {"limit": 37})
    elements, deleted = replay(feed)
    for (type_name, element_id), state in elements.items():
        response = client.get(f"/api/element/{type_name}/{element_id}")
        assert response.status_code == 200
        current = response.json()
        rebuilt = {key: state.get(key, []) for key in current}
        rebuilt.update(id=[element_id], type=[type_name], revision=[state["revision"]])
        assert rebuilt == current, f"{type_name} {element_id}"
    for type_name, element_id in deleted:
        assert client.get(f"/api/element/{type_name}/{element_id}").status_code == 404
    return feed


def test_the_feed_alone_rebuilds_the_repository(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Criticality", "enum", types=["BusinessProcess"], literals=["low", "high"])
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    rng = random.Random(20261122)
    ids: dict[str, list[int]] = {t: [] for t in TYPES}
    for checkpoint in range(4):
        _random_writes(client, rng, ids, range(checkpoint * 40, (checkpoint + 1) * 40))
        feed = _compare(client)
    operations = {i["operation"] for i in feed if i["entity"] == "element"}
    assert operations == {"created", "updated", "deleted"}
    changes = [c for i in feed for c in i["changes"]]
    # The story covers every kind of recorded change: values, relation ends with attributes, reorders.
    assert any("order" in c for c in changes) and any(c["property"] == "children" for c in changes)
    assert any(c["property"] == "informationSystems" and "removed" in c and c["removed"] for c in changes)


def test_the_feed_rebuilds_the_repository_across_metamodel_changes(app: FastAPI, client: TestClient) -> None:
    """Metamodel edits that rewrite element JSON (a literal renamed or removed, an attribute renamed or
    deleted, a relation type deleted) reach the elements through the feed as well."""
    create_attribute(app, "Criticality", "enum", types=["BusinessProcess"], literals=["low", "high"])
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    attributes = {a["name"]: a for a in client.get("/api/administration/attributes").json()}
    rng = random.Random(20261123)
    ids: dict[str, list[int]] = {t: [] for t in TYPES}

    def edit(name: str, body: dict[str, Any]) -> None:
        response = client.put(f"/api/administration/attributes/{attributes[name]['id']}", json=body)
        assert response.status_code == 200, response.text

    _random_writes(client, rng, ids, range(0, 60))
    for name, level in (("Low one", "low"), ("High one", "high")):
        response = client.post("/api/element/BusinessProcess", json={"name": [name], "Criticality": [level]})
        assert response.status_code == 201, response.text
    low, high = (lit["id"] for lit in attributes["Criticality"]["literals"])
    edit("Criticality", {"literals": [{"id": low, "name": "minor"}, {"id": high, "name": "high"}]})
    _compare(client)
    edit("Costs", {"name": "Run costs"})
    VALUES["InformationSystem"] = ("Run costs", [7, 8])
    try:
        _random_writes(client, rng, ids, range(60, 100))
        _compare(client)
        edit("Criticality", {"literals": [{"id": low, "name": "minor"}]})  # "high" values go
        edit("Share", {"name": "Portion"})
        _compare(client)
        response = client.delete(f"/api/administration/attributes/{attributes['Costs']['id']}")
        assert response.status_code == 204, response.text
        response = client.delete("/api/metamodel/relationtypes/BusinessProcess_InformationSystem")
        assert response.status_code == 204, response.text
        feed = _compare(client)
    finally:
        VALUES["InformationSystem"] = ("Costs", [1, 2.5, 300])
    changes = [c for i in feed if i["entity"] == "element" for c in i["changes"]]
    assert any(c["property"] == "Criticality" and c["new"] == ["minor"] for c in changes)
    assert any(c["property"] == "Criticality" and c["old"] == ["high"] and c["new"] == [] for c in changes)
