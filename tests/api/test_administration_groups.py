"""Administration API, attribute groups: membership, the always-present default group, and the per-role
read/write rule of API.md §6 as the element API applies it."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.access_helpers import acting_as, create_role, create_user

GROUPS = "/api/administration/attributegroups"
DEFAULT = "[Default Attribute Group]"


def create_group(client: TestClient, name: str, **fields: Any) -> dict[str, Any]:
    response = client.post(GROUPS, json={"name": name, **fields})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def attribute(client: TestClient, name: str) -> dict[str, Any]:
    return next(a for a in client.get("/api/administration/attributes").json() if a["name"] == name)


def test_default_group_always_exists(client: TestClient) -> None:
    groups = client.get(GROUPS).json()
    assert [g["name"] for g in groups] == [DEFAULT]
    default_id = groups[0]["id"]
    response = client.delete(f"{GROUPS}/{default_id}")
    assert response.status_code == 409 and response.json()["code"] == "default_group"
    response = client.put(f"{GROUPS}/{default_id}", json={"name": "Mine"})
    assert response.status_code == 409 and response.json()["code"] == "default_group"
    assert client.put(f"{GROUPS}/{default_id}", json={"description": "The rest"}).status_code == 200


def test_group_crud_moves_attributes(client: TestClient) -> None:
    create_role(client, "Controllers")
    client.post("/api/administration/attributes", json={"name": "Costs", "valueType": "number"})
    client.post("/api/administration/attributes", json={"name": "Budget", "valueType": "number"})
    group = create_group(
        client,
        "Finance",
        description="Money",
        attributes=["Costs"],
        permissions=[{"role": "Controllers", "read": True, "write": True}],
    )
    assert response_location_ok(client, group)
    assert group["attributes"] == ["Costs"] and group["position"] == 1
    assert group["permissions"] == [{"role": "Controllers", "read": True, "write": True}]
    assert attribute(client, "Costs")["group"] == "Finance"

    response = client.put(f"{GROUPS}/{group['id']}", json={"attributes": ["Budget"], "name": "Money"})
    assert response.status_code == 200
    assert response.json()["attributes"] == ["Budget"] and response.json()["name"] == "Money"
    assert attribute(client, "Costs")["group"] == DEFAULT
    assert attribute(client, "Budget")["group"] == "Money"

    assert client.delete(f"{GROUPS}/{group['id']}").status_code == 204
    assert attribute(client, "Budget")["group"] == DEFAULT
    assert [g["name"] for g in client.get(GROUPS).json()] == [DEFAULT]


def response_location_ok(client: TestClient, group: dict[str, Any]) -> bool:
    return client.get(f"{GROUPS}/{group['id']}").json() == group


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"name": "G", "permissions": [{"role": "Nope", "read": True}]}, "/permissions/0/role"),
        (
            {"name": "G", "permissions": [{"role": "Readers", "read": False, "write": True}]},
            "/permissions/0/write",
        ),
        (
            {
                "name": "G",
                "permissions": [{"role": "Readers", "read": True}, {"role": "Readers", "read": True}],
            },
            "/permissions/1/role",
        ),
        ({"name": "G", "attributes": ["Nope"]}, "/attributes/0"),
        ({"name": ""}, "/name"),
        ({"name": "G", "position": 2.5}, "/position"),
        ({"name": "G", "position": -1}, "/position"),
        ({"name": "G", "position": 2**31}, "/position"),
        ({"name": "G", "position": 1e300}, "/position"),
    ],
)
def test_invalid_group_bodies(client: TestClient, body: dict[str, Any], pointer: str) -> None:
    create_role(client, "Readers")
    response = client.post(GROUPS, json=body)
    assert response.status_code == 400
    assert pointer in {e["pointer"] for e in response.json()["errors"]}


def test_group_position_accepts_an_integral_number_as_the_schema_does(client: TestClient) -> None:
    # JSON Schema counts 2390.0 as an integer, so generated clients and other JSON encoders may send it.
    group = create_group(client, "Finance", position=2390.0)
    assert group["position"] == 2390
    response = client.put(f"{GROUPS}/{group['id']}", json={"position": 7.0})
    assert response.status_code == 200, response.text
    assert response.json()["position"] == 7


def test_group_names_are_unique(client: TestClient) -> None:
    create_group(client, "Finance")
    assert client.post(GROUPS, json={"name": "finance"}).status_code == 409
    assert client.post(GROUPS, json={"name": DEFAULT}).status_code == 409


def test_group_administration_needs_admin_attributes(client: TestClient, app: FastAPI) -> None:
    group = create_group(client, "Finance")
    create_role(client, "Modellers", functionalPermissions=["EDIT_METAMODEL"])
    create_user(client, "modeller", ["Modellers"])
    with acting_as(app, "modeller") as modeller:
        assert modeller.get(GROUPS).status_code == 403
        assert modeller.get(f"{GROUPS}/{group['id']}").status_code == 403
        assert modeller.post(GROUPS, json={"name": "Mine"}).status_code == 403
        assert modeller.put(f"{GROUPS}/{group['id']}", json={"permissions": []}).status_code == 403
        assert modeller.delete(f"{GROUPS}/{group['id']}").status_code == 403


def test_admin_attributes_alone_lets_a_non_supervisor_administer_groups(
    client: TestClient, app: FastAPI
) -> None:
    """ADMIN_ATTRIBUTES is enough: list, read, create, change (members, permissions) and delete groups."""
    create_role(client, "AttributeAdmins", functionalPermissions=["ADMIN_ATTRIBUTES"])
    create_role(client, "Controllers", typePermissions={"Project": ["read"]})
    create_user(client, "curator", ["AttributeAdmins"])
    create_user(client, "reader", ["Controllers"])
    client.post(
        "/api/administration/attributes", json={"name": "Costs", "valueType": "number", "types": ["Project"]}
    )
    project = client.post("/api/element/Project", json={"name": ["P"], "Costs": [5]}).json()["id"][0]
    with acting_as(app, "curator") as curator:
        me = curator.get("/api/administration/users/current").json()
        assert me["supervisor"] is False and me["functionalPermissions"] == ["ADMIN_ATTRIBUTES"]
        response = curator.post(GROUPS, json={"name": "Finance", "attributes": ["Costs"]})
        assert response.status_code == 201, response.text
        group = response.json()
        assert curator.get(f"{GROUPS}/{group['id']}").json() == group
        assert [g["name"] for g in curator.get(GROUPS).json()] == [DEFAULT, "Finance"]
        # Restricting the group to a role the reader lacks hides it from her at once.
        response = curator.put(
            f"{GROUPS}/{group['id']}",
            json={"description": "Money", "permissions": [{"role": "AttributeAdmins", "read": True}]},
        )
        assert response.status_code == 200, response.text
        assert response.json()["permissions"] == [{"role": "AttributeAdmins", "read": True, "write": False}]
    with acting_as(app, "reader") as reader:
        assert "Costs" not in reader.get(f"/api/element/Project/{project}").json()
    with acting_as(app, "curator") as curator:
        assert curator.delete(f"{GROUPS}/{group['id']}").status_code == 204
        assert [g["name"] for g in curator.get(GROUPS).json()] == [DEFAULT]
    assert attribute(client, "Costs")["group"] == DEFAULT
    with acting_as(app, "reader") as reader:
        assert reader.get(f"/api/element/Project/{project}").json()["Costs"] == [5]


# The rule: if no role has read on a group, everyone may read it; otherwise only those roles. Write needs
# read; if no role has write, only an unrestricted group is writable.
RULE_CASES = [
    # permissions on the group, role of the user -> (reads, writes)
    ([], "Plain", (True, True)),
    ([{"role": "Readers", "read": True}], "Readers", (True, False)),
    ([{"role": "Readers", "read": True}], "Plain", (False, False)),
    (
        [{"role": "Readers", "read": True}, {"role": "Writers", "read": True, "write": True}],
        "Readers",
        (True, False),
    ),
    (
        [{"role": "Readers", "read": True}, {"role": "Writers", "read": True, "write": True}],
        "Writers",
        (True, True),
    ),
    (
        [{"role": "Readers", "read": True}, {"role": "Writers", "read": True, "write": True}],
        "Plain",
        (False, False),
    ),
    ([{"role": "Writers", "read": True, "write": True}], "Sub", (True, True)),  # inherited through a sub-role
]


@pytest.mark.parametrize(("permissions", "role", "expected"), RULE_CASES)
def test_group_rule_as_the_element_api_applies_it(
    client: TestClient,
    app: FastAPI,
    permissions: list[dict[str, Any]],
    role: str,
    expected: tuple[bool, bool],
) -> None:
    project_rights = {"Project": ["read", "create", "update"]}
    for name in ("Readers", "Writers", "Plain"):
        create_role(client, name, typePermissions=project_rights)
    create_role(client, "Sub", subRoles=["Writers"])
    client.post(
        "/api/administration/attributes", json={"name": "Costs", "valueType": "number", "types": ["Project"]}
    )
    create_group(client, "Finance", attributes=["Costs"], permissions=permissions)
    created = client.post("/api/element/Project", json={"name": ["P"], "Costs": [5]}).json()
    create_user(client, "user", [role])
    reads, writes = expected
    with acting_as(app, "user") as user:
        body = user.get(f"/api/element/Project/{created['id'][0]}").json()
        assert ("Costs" in body) is reads
        if reads:
            assert body["Costs"] == [5]
        groups = user.get("/api/administration/users/current").json()["attributeGroups"]
        assert ({"name": "Finance", "read": True, "write": writes} in groups) is reads
        assert (
            "Costs" in {p["name"] for p in user.get("/api/metamodel/types/Project").json()["properties"]}
        ) is reads
        # What the user may not read is answered as an unknown key (400); read without write is 403.
        refused = 403 if reads else 400
        response = user.put(f"/api/element/Project/{created['id'][0]}", json={"Costs": [7]})
        assert response.status_code == (200 if writes else refused), response.text
        response = user.post("/api/element/Project", json={"name": ["Q"], "Costs": [1]})
        assert response.status_code == (201 if writes else refused)
    assert client.get(f"/api/element/Project/{created['id'][0]}").json()["Costs"] == [7 if writes else 5]


def test_restricting_a_group_applies_to_the_next_request(client: TestClient, app: FastAPI) -> None:
    create_role(client, "Readers", typePermissions={"Project": ["read"]})
    create_role(client, "Controllers")
    client.post(
        "/api/administration/attributes", json={"name": "Costs", "valueType": "number", "types": ["Project"]}
    )
    group = create_group(client, "Finance", attributes=["Costs"])
    project = client.post("/api/element/Project", json={"name": ["P"], "Costs": [5]}).json()["id"][0]
    create_user(client, "reader", ["Readers"])
    with acting_as(app, "reader") as reader:
        assert reader.get(f"/api/element/Project/{project}").json()["Costs"] == [5]
        client.put(f"{GROUPS}/{group['id']}", json={"permissions": [{"role": "Controllers", "read": True}]})
        assert "Costs" not in reader.get(f"/api/element/Project/{project}").json()
        client.put(f"{GROUPS}/{group['id']}", json={"permissions": []})
        assert reader.get(f"/api/element/Project/{project}").json()["Costs"] == [5]


def test_write_without_read_is_refused_and_grants_nothing(client: TestClient, app: FastAPI) -> None:
    """API.md §6 "Write needs read": a permission entry with write but not read is refused (400
    `write_needs_read`), on create and on change, and nothing is stored: the restricted group stays closed
    to the role that asked for write, and the unrestricted group stays open to everybody."""
    project_rights = {"Project": ["read", "create", "update"]}
    create_role(client, "Controllers", typePermissions=project_rights)
    create_role(client, "Writers", typePermissions=project_rights)
    create_role(client, "Others", typePermissions=project_rights)
    for name in ("Costs", "Notes"):
        client.post(
            "/api/administration/attributes", json={"name": name, "valueType": "text", "types": ["Project"]}
        )
    finance = create_group(
        client,
        "Finance",
        attributes=["Costs"],
        permissions=[{"role": "Controllers", "read": True, "write": True}],
    )
    open_group = create_group(client, "Open", attributes=["Notes"])
    project = client.post("/api/element/Project", json={"name": ["P"], "Costs": ["5"], "Notes": ["n"]}).json()
    project_id = project["id"][0]
    create_user(client, "wanda", ["Writers"])
    create_user(client, "otto", ["Others"])
    write_only = {"role": "Writers", "read": False, "write": True}

    response = client.post(
        GROUPS, json={"name": "Sneaky", "attributes": ["Costs"], "permissions": [write_only]}
    )
    assert response.status_code == 400 and response.json()["code"] == "validation_failed"
    assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [
        ("/permissions/0/write", "write_needs_read")
    ]
    for group, permissions in (
        (finance, [{"role": "Controllers", "read": True, "write": True}, write_only]),
        (open_group, [write_only]),
    ):
        response = client.put(f"{GROUPS}/{group['id']}", json={"permissions": permissions})
        assert response.status_code == 400, response.text
        assert response.json()["errors"][0]["code"] == "write_needs_read"
        assert client.get(f"{GROUPS}/{group['id']}").json() == group
    assert [g["name"] for g in client.get(GROUPS).json()] == [DEFAULT, "Finance", "Open"]
    assert attribute(client, "Costs")["group"] == "Finance"

    with acting_as(app, "wanda") as wanda:
        body = wanda.get(f"/api/element/Project/{project_id}").json()
        assert "Costs" not in body and body["Notes"] == ["n"]
        groups = wanda.get("/api/administration/users/current").json()["attributeGroups"]
        assert {"name": "Open", "read": True, "write": True} in groups
        assert "Finance" not in {g["name"] for g in groups}
        assert wanda.put(f"/api/element/Project/{project_id}", json={"Costs": ["0"]}).status_code == 400
        assert wanda.put(f"/api/element/Project/{project_id}", json={"Notes": ["w"]}).status_code == 200
    with acting_as(app, "otto") as otto:  # the open group stays writable for everybody else too
        assert otto.put(f"/api/element/Project/{project_id}", json={"Notes": ["o"]}).status_code == 200
    assert client.get(f"/api/element/Project/{project_id}").json()["Costs"] == ["5"]
