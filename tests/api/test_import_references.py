"""An import names elements by name, in any order: a child before its parent, a relation to an element of
a type that comes later in the file; a cycle among the file's parents is a 400 with pointers; in cud mode
a name the file lacks (its element is deleted) cannot be referred to; the same elements listed in another
order are no change."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.testclient import TestClient


def _import(client: TestClient, elements: dict[str, Any], **params: str) -> Any:
    document = {"format": "blockrepo-export", "elements": elements}
    return client.post(
        "/api/massdata/import",
        params=params,
        content=orjson.dumps(document),
        headers={"Content-Type": "application/json"},
    )


def _named(client: TestClient, type_name: str, name: str) -> dict[str, Any]:
    items = client.get(f"/api/massdata/{type_name}", params={"limit": 1000}).json()["items"]
    return next(item for item in items if item["name"] == [name])


def test_references_may_name_elements_listed_later_in_any_type(client: TestClient) -> None:
    response = _import(
        client,
        {
            "BusinessProcess": [{"name": "Sell", "informationSystems": ["Shop"]}],
            "InformationSystem": [
                {"name": "Shop", "parent": "Platform", "technicalComponents": ["Server"]},
                {"name": "Platform"},
            ],
            "TechnicalComponent": [{"name": "Server"}],
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["created"] == 4
    shop = _named(client, "InformationSystem", "Shop")
    platform = _named(client, "InformationSystem", "Platform")
    assert shop["parent"] == [{"id": platform["id"][0], "name": "Platform"}]
    assert [entry["name"] for entry in shop["technicalComponents"]] == ["Server"]
    assert [entry["name"] for entry in shop["businessProcesses"]] == ["Sell"]
    assert [entry["name"] for entry in platform["children"]] == ["Shop"]


def test_a_cycle_among_the_files_parents_is_refused_with_pointers(client: TestClient) -> None:
    response = _import(
        client,
        {"InformationSystem": [{"name": "A", "parent": "B"}, {"name": "B", "parent": "A"}, {"name": "C"}]},
    )
    assert response.status_code == 400, response.text
    errors = {(e["pointer"], e["code"]) for e in response.json()["errors"]}
    assert errors == {
        ("/elements/InformationSystem/0/parent", "cycle"),
        ("/elements/InformationSystem/1/parent", "cycle"),
    }
    assert response.json()["report"]["failed"] == 2
    assert client.get("/api/massdata/InformationSystem").json()["items"] == []


def test_cud_refuses_references_to_what_it_deletes(client: TestClient) -> None:
    assert _import(client, {"InformationSystem": [{"name": "Old"}, {"name": "Kept"}]}).status_code == 200
    response = _import(
        client,
        {"InformationSystem": [{"name": "Kept", "parent": "Old", "predecessors": ["Old"]}]},
        mode="cud",
    )
    assert response.status_code == 400, response.text
    errors = {(e["pointer"], e["code"]) for e in response.json()["errors"]}
    assert errors == {
        ("/elements/InformationSystem/0/parent", "unknown_target"),
        ("/elements/InformationSystem/0/predecessors/0", "unknown_target"),
    }
    names = {i["name"][0] for i in client.get("/api/massdata/InformationSystem").json()["items"]}
    assert names == {"Old", "Kept"}


def test_the_same_elements_in_another_order_change_nothing(client: TestClient) -> None:
    """No revision and no silent rewrite either: the element reads as before, so its ETag stays valid."""
    first = {
        "InformationSystem": [
            {"name": "P"},
            {"name": "A", "parent": "P"},
            {"name": "B", "parent": "P"},
            {"name": "X", "predecessors": ["A", "B"]},
        ]
    }
    assert _import(client, first).status_code == 200
    before = {name: _named(client, "InformationSystem", name) for name in ("P", "X")}
    reordered = {
        "InformationSystem": [
            {"name": "P"},
            {"name": "B", "parent": "P"},
            {"name": "A", "parent": "P"},
            {"name": "X", "predecessors": ["B", "A"]},
        ]
    }
    response = _import(client, reordered)
    assert response.status_code == 200, response.text
    assert response.json()["updated"] == 0
    assert {name: _named(client, "InformationSystem", name) for name in ("P", "X")} == before


def test_users_the_file_names_are_created_disabled_without_roles(client: TestClient) -> None:
    attribute = {"name": "Owner", "valueType": "responsibility", "types": ["InformationSystem"]}
    assert client.post("/api/administration/attributes", json=attribute).status_code == 201
    document = {
        "format": "blockrepo-export",
        "elements": {"InformationSystem": [{"name": "ERP", "Owner": ["zoe"]}]},
        "users": [{"login": "zoe", "firstName": "Zoe", "lastName": "Zed"}, {"login": "system"}],
    }
    response = client.post(
        "/api/massdata/import", content=orjson.dumps(document), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    zoe = next(u for u in client.get("/api/administration/users").json() if u["login"] == "zoe")
    assert (zoe["firstName"], zoe["lastName"], zoe["enabled"], zoe["roles"]) == ("Zoe", "Zed", False, [])
    assert _named(client, "InformationSystem", "ERP")["Owner"] == ["zoe"]
    document["users"] = [{"login": "x" * 300}]
    document["elements"] = {"InformationSystem": [{"name": "CRM"}]}
    response = client.post(
        "/api/massdata/import", content=orjson.dumps(document), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [("/users", "invalid_user")]


def test_an_end_left_out_or_listed_empty_keeps_its_relations(client: TestClient) -> None:
    """A record is its element's whole state for values, description and parent; a relation end it
    lists replaces what the end held, one it leaves out or lists empty keeps it (an export lists only
    the source ends towards the types it holds)."""
    first = {
        "InformationSystem": [{"name": "A"}, {"name": "B", "predecessors": ["A"], "version": ["1"]}],
        "TechnicalComponent": [{"name": "Server"}],
    }
    assert _import(client, first).status_code == 200
    assert (
        _import(client, {"InformationSystem": [{"name": "B", "technicalComponents": ["Server"]}]}).json()[
            "updated"
        ]
        == 1
    )
    b = _named(client, "InformationSystem", "B")
    assert [e["name"] for e in b["predecessors"]] == ["A"]
    assert b["version"] == []
    response = _import(
        client, {"InformationSystem": [{"name": "B", "predecessors": [], "technicalComponents": []}]}
    )
    assert response.status_code == 200, response.text
    assert response.json()["updated"] == 0
    b = _named(client, "InformationSystem", "B")
    assert [e["name"] for e in b["predecessors"]] == ["A"]
    assert [e["name"] for e in b["technicalComponents"]] == ["Server"]
