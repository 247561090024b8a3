"""Hierarchy through the Element API: parent and ordered children, cycles, wrong types, recursive delete."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient


def create(client: TestClient, body: dict[str, Any], type_name: str = "BusinessProcess") -> int:
    response = client.post(f"/api/element/{type_name}", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def get(client: TestClient, element_id: int, type_name: str = "BusinessProcess") -> dict[str, Any]:
    return client.get(f"/api/element/{type_name}/{element_id}").json()  # type: ignore[no-any-return]


def test_children_are_ordered_and_a_new_child_goes_last(client: TestClient) -> None:
    root = create(client, {"name": ["Sales"]})
    b = create(client, {"name": ["B"], "parent": [root]})
    a = create(client, {"name": ["A"], "parent": [{"name": "Sales"}]})
    c = create(client, {"name": ["C"], "parent": [{"id": root}]})
    assert get(client, root)["children"] == [
        {"id": b, "name": "B"},
        {"id": a, "name": "A"},
        {"id": c, "name": "C"},
    ]
    assert get(client, a)["parent"] == [{"id": root, "name": "Sales"}]
    # Moving a child away and back puts it last.
    client.put(f"/api/element/BusinessProcess/{b}", json={"parent": []})
    client.put(f"/api/element/BusinessProcess/{b}", json={"parent": [root]})
    assert [child["id"] for child in get(client, root)["children"]] == [a, c, b]


def test_moving_changes_both_parents_revisions(client: TestClient) -> None:
    one = create(client, {"name": ["One"]})
    two = create(client, {"name": ["Two"]})
    child = create(client, {"name": ["Child"], "parent": [one]})
    assert get(client, one)["revision"] == [2]
    client.put(f"/api/element/BusinessProcess/{child}", json={"parent": [two]})
    assert get(client, one)["children"] == [] and get(client, one)["revision"] == [3]
    assert get(client, two)["children"] == [{"id": child, "name": "Child"}] and get(client, two)[
        "revision"
    ] == [2]


def test_cycles_are_rejected(client: TestClient) -> None:
    top = create(client, {"name": ["Top"]})
    middle = create(client, {"name": ["Middle"], "parent": [top]})
    bottom = create(client, {"name": ["Bottom"], "parent": [middle]})
    for target, parent in ((top, bottom), (top, middle), (middle, middle)):
        response = client.put(f"/api/element/BusinessProcess/{target}", json={"parent": [parent]})
        assert response.status_code == 400
        assert response.json()["errors"][0]["pointer"] == "/parent/0"
        assert response.json()["errors"][0]["code"] == "cycle"
    assert get(client, top)["parent"] == []


def test_parent_must_be_of_the_same_type_and_exist(client: TestClient) -> None:
    unit = create(client, {"name": ["Sales"]}, "BusinessUnit")
    response = client.post("/api/element/BusinessProcess", json={"name": ["P"], "parent": [unit]})
    assert response.json()["errors"][0]["code"] == "wrong_type"
    response = client.post(
        "/api/element/BusinessProcess", json={"name": ["P"], "parent": [{"name": "Sales"}]}
    )
    assert response.json()["errors"][0]["code"] == "unknown_target"
    response = client.post("/api/element/BusinessProcess", json={"name": ["P"], "parent": [1, 2]})
    assert response.json()["errors"][0] == {
        "pointer": "/parent/1",
        "code": "too_many_values",
        "message": "parent holds at most one value, got 2",
    }


def test_children_is_read_only(client: TestClient) -> None:
    root = create(client, {"name": ["Root"]})
    other = create(client, {"name": ["Other"]})
    response = client.put(f"/api/element/BusinessProcess/{root}", json={"children": [{"id": other}]})
    assert response.status_code == 200
    assert response.json()["children"] == []


def test_delete_with_children_is_409_unless_recursive(client: TestClient) -> None:
    root = create(client, {"name": ["Root"]})
    child = create(client, {"name": ["Child"], "parent": [root]})
    grandchild = create(client, {"name": ["Grandchild"], "parent": [child]})
    unit = create(client, {"name": ["Unit"]}, "InformationSystem")
    client.put(f"/api/element/BusinessProcess/{grandchild}", json={"informationSystems": [unit]})
    response = client.delete(f"/api/element/BusinessProcess/{root}")
    assert response.status_code == 409
    assert response.json()["code"] == "has_children"
    assert get(client, child)["name"] == ["Child"]
    assert client.delete(f"/api/element/BusinessProcess/{root}?recursive=true").status_code == 204
    for element_id in (root, child, grandchild):
        assert client.get(f"/api/element/BusinessProcess/{element_id}").status_code == 404
    assert get(client, unit, "InformationSystem")["businessProcesses"] == []


def test_deleting_a_child_updates_the_parent(client: TestClient) -> None:
    root = create(client, {"name": ["Root"]})
    child = create(client, {"name": ["Child"], "parent": [root]})
    assert client.delete(f"/api/element/BusinessProcess/{child}").status_code == 204
    parent = get(client, root)
    assert parent["children"] == [] and parent["revision"] == [3]


def test_recursive_must_be_a_boolean(client: TestClient) -> None:
    root = create(client, {"name": ["Root"]})
    response = client.delete(f"/api/element/BusinessProcess/{root}?recursive=maybe")
    assert response.status_code == 400
