"""The landscape diff (`GET /api/history/diff`, API.md section 11): what changed between two revisions or
times, per element and field, what the caller may read, paged; bad parameters answer 400."""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import client_as, create_attribute, create_group, create_role, create_user

DIFF = "/api/history/diff"


def _newest(client: TestClient) -> int:
    page = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()
    return max((item["revision"] for item in page["items"]), default=0)


def _create(client: TestClient, type_name: str, body: dict[str, Any]) -> int:
    response = client.post(f"/api/element/{type_name}", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def _put(client: TestClient, type_name: str, element_id: int, body: dict[str, Any]) -> None:
    response = client.put(f"/api/element/{type_name}/{element_id}", json=body)
    assert response.status_code == 200, response.text


def _by_id(page: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {item["element"]["id"]: item for item in page["items"]}


def _fields(item: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["field"]: entry for entry in item["fields"]}


def test_the_diff_of_a_range_is_the_net_change_of_each_element(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    kept = _create(client, "InformationSystem", {"name": ["Ledger"], "description": ["old text"]})
    gone = _create(client, "InformationSystem", {"name": ["Mainframe"], "Costs": [100]})
    flip = _create(client, "InformationSystem", {"name": ["Flip"], "Costs": [1]})
    process = _create(client, "BusinessProcess", {"name": ["Billing"]})
    start = _newest(client)
    feed = client.get("/api/history", params={"sinceRevision": start - 1, "limit": 1}).json()
    moment = feed["items"][0]["timestamp"]  # when revision `start` was written
    time.sleep(0.01)  # the range's first change is stamped after that moment

    _put(client, "InformationSystem", kept, {"description": ["new text"], "Costs": [5]})
    _put(client, "InformationSystem", kept, {"description": ["newer text"]})
    added = _create(client, "InformationSystem", {"name": ["CRM"], "description": ["fresh"]})
    assert client.delete(f"/api/element/InformationSystem/{gone}").status_code == 204
    _put(client, "InformationSystem", flip, {"Costs": [2]})
    _put(client, "InformationSystem", flip, {"Costs": [1]})  # and back: no difference
    short_lived = _create(client, "InformationSystem", {"name": ["Trial"]})
    assert client.delete(f"/api/element/InformationSystem/{short_lived}").status_code == 204
    _put(client, "BusinessProcess", process, {"informationSystems": [kept, added]})
    _put(client, "BusinessProcess", process, {"informationSystems": [added]})  # kept: added and removed
    end = _newest(client)

    response = client.get(DIFF, params={"from": start})
    assert response.status_code == 200, response.text
    page = response.json()
    assert page["from"] == {"revision": start} and page["to"] == {"revision": end}
    items = _by_id(page)
    assert set(items) == {kept, added, gone, process}
    assert items[kept]["action"] == "updated"
    assert items[kept]["element"] == {"id": kept, "type": "InformationSystem", "name": "Ledger"}
    fields = _fields(items[kept])
    assert fields["description"] == {
        "field": "description",
        "base": ["old text"],
        "main": ["newer text"],
        "state": "changed",
    }
    assert fields["Costs"]["base"] == [] and fields["Costs"]["main"] == [5]
    assert items[added]["action"] == "created"
    assert _fields(items[added])["description"]["main"] == ["fresh"]
    assert items[gone]["action"] == "deleted"
    assert _fields(items[gone])["Costs"] == {"field": "Costs", "base": [100], "main": [], "state": "changed"}
    ends = _fields(items[process])["informationSystems"]
    assert [entry["id"] for entry in ends["added"]] == [added] and ends["removed"] == []
    assert page["summary"] == {
        "InformationSystem": {"updated": 1, "created": 1, "deleted": 1},
        "BusinessProcess": {"updated": 1},
    }
    assert page["nextCursor"] is None

    # The base is what the elements were at the start (asOf), the main what they are now.
    for element_id, item in items.items():
        type_name = item["element"]["type"]
        before = client.get(f"/api/element/{type_name}/{element_id}", params={"asOf": start})
        now = client.get(f"/api/element/{type_name}/{element_id}")
        for entry in item["fields"]:
            if "base" in entry:
                assert entry["base"] == (before.json()[entry["field"]] if before.status_code == 200 else [])
                assert entry["main"] == (now.json()[entry["field"]] if now.status_code == 200 else [])

    # A time names the newest revision stamped at or before it; the same range, the same diff.
    assert client.get(DIFF, params={"from": moment, "to": end}).json()["items"] == page["items"]
    # An empty range, and a range before the changes, show nothing.
    assert client.get(DIFF, params={"from": end, "to": end}).json()["items"] == []
    only_processes = client.get(DIFF, params={"from": start, "type": "BusinessProcess"}).json()
    assert [item["element"]["id"] for item in only_processes["items"]] == [process]


def test_relation_ends_of_created_and_deleted_elements_are_entries_added_and_removed(
    client: TestClient,
) -> None:
    """One shape per field whatever the action: a relation end (and `children`) lists the entries added
    and removed, also for an element created or deleted in the range; its parent stays base and main."""
    system = _create(client, "InformationSystem", {"name": ["Billing"]})
    doomed_parent = _create(client, "BusinessProcess", {"name": ["Invoicing"]})
    doomed = _create(
        client, "BusinessProcess", {"name": ["Dunning run"], "informationSystems": [{"id": system}]}
    )
    _put(client, "BusinessProcess", doomed, {"parent": [{"id": doomed_parent}]})
    start = _newest(client)
    fresh = _create(
        client,
        "BusinessProcess",
        {"name": ["Refunds"], "informationSystems": [{"id": system}], "parent": [{"id": doomed_parent}]},
    )
    assert client.delete(f"/api/element/BusinessProcess/{doomed}").status_code == 204

    items = _by_id(client.get(DIFF, params={"from": start}).json())
    created = _fields(items[fresh])
    assert items[fresh]["action"] == "created"
    assert [entry["id"] for entry in created["informationSystems"]["added"]] == [system]
    assert created["informationSystems"]["removed"] == [] and "base" not in created["informationSystems"]
    assert created["parent"]["base"] == [] and [e["id"] for e in created["parent"]["main"]] == [doomed_parent]
    deleted = _fields(items[doomed])
    assert items[doomed]["action"] == "deleted"
    assert [entry["id"] for entry in deleted["informationSystems"]["removed"]] == [system]
    assert deleted["informationSystems"]["added"] == []
    assert [e["id"] for e in deleted["parent"]["base"]] == [doomed_parent] and deleted["parent"]["main"] == []
    # The neighbours' mirrored ends say the same from their side.
    neighbour = _fields(items[system])["businessProcesses"]
    assert [entry["id"] for entry in neighbour["added"]] == [fresh]
    assert [entry["id"] for entry in neighbour["removed"]] == [doomed]
    children = _fields(items[doomed_parent])["children"]
    assert [entry["id"] for entry in children["added"]] == [fresh]
    assert [entry["id"] for entry in children["removed"]] == [doomed]


def test_pages_of_a_diff_chain_through_every_changed_element(app: FastAPI, client: TestClient) -> None:
    start = _newest(client)
    created = [_create(client, "BusinessProcess", {"name": [f"P{i}"]}) for i in range(5)]
    whole = client.get(DIFF, params={"from": start}).json()
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"from": start, "limit": 2}
        if cursor:
            params["cursor"] = cursor
        page = client.get(DIFF, params=params).json()
        assert len(page["items"]) <= 2
        assert ("summary" in page) == (cursor is None)
        seen += [item["element"]["id"] for item in page["items"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == created == [item["element"]["id"] for item in whole["items"]] and pages == 3
    # A cursor belongs to its range.
    first = client.get(DIFF, params={"from": start, "limit": 2}).json()
    other = client.get(DIFF, params={"from": start + 1, "limit": 2, "cursor": first["nextCursor"]})
    assert other.status_code == 400, other.text


def test_a_reader_sees_in_a_diff_only_what_she_may_read(app: FastAPI, client: TestClient) -> None:
    create_group(app, "Finance")
    create_attribute(app, "Budget", "number", types=["InformationSystem"], group="Finance")
    create_role(
        app,
        "system readers",
        types={"InformationSystem": ["read"]},
        functional=["VIEW_HISTORY"],
    )
    create_role(app, "finance", groups={"Finance": (True, True)})  # Finance is for this role alone
    create_user(app, "rita", "rita-password-1", roles=["system readers"])
    create_role(app, "no history", types={"InformationSystem": ["read"]})
    create_user(app, "nora", "nora-password-1", roles=["no history"])
    start = _newest(client)
    system = _create(client, "InformationSystem", {"name": ["Ledger"], "Budget": [10]})
    _create(client, "BusinessProcess", {"name": ["Billing"]})
    with client_as(app, "rita", "rita-password-1") as rita:
        page = rita.get(DIFF, params={"from": start}).json()
        assert [item["element"]["id"] for item in page["items"]] == [system]
        assert "Budget" not in _fields(page["items"][0])
        assert "Budget" not in rita.get(f"/api/element/InformationSystem/{system}").json()  # as in a GET
        assert page["summary"] == {"InformationSystem": {"created": 1}}
        refused = rita.get(DIFF, params={"from": start, "type": "BusinessProcess"})
        assert refused.status_code == 403, refused.text
    assert "Budget" in _fields(_by_id(client.get(DIFF, params={"from": start}).json())[system])
    with client_as(app, "nora", "nora-password-1") as nora:
        assert nora.get(DIFF, params={"from": start}).status_code == 403


def test_bad_diff_parameters_answer_400_and_name_the_parameter(client: TestClient) -> None:
    newest = _newest(client)
    cases = {
        "missing from": ({}, "query:from"),
        "from after to": ({"from": newest, "to": 0}, "query:from"),
        "a future revision": ({"from": 0, "to": newest + 10}, "query:to"),
        "not a moment": ({"from": "yesterday"}, "query:from"),
        "an unknown type": ({"from": 0, "type": "Nope"}, "query:type"),
        "a bad limit": ({"from": 0, "limit": 0}, "query:limit"),
        "a forged cursor": ({"from": 0, "cursor": "abc"}, "query:cursor"),
    }
    for name, (params, pointer) in cases.items():
        response = client.get(DIFF, params=params)
        assert response.status_code == 400, (name, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        assert pointer in [error["pointer"] for error in response.json()["errors"]], (name, response.text)
