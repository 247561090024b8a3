"""Administration API, roles: type and functional permissions, inherited sub-roles, the immutable
Supervisor, that a rights change applies at once, what a role administrator who is not a supervisor may
do, and that only a supervisor may hand out or touch Supervisor through roles."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.access_helpers import acting_as, create_role, create_user

ROLES = "/api/administration/roles"


def test_create_read_update_delete_a_role(client: TestClient) -> None:
    create_role(client, "Readers")
    response = client.post(
        ROLES,
        json={
            "name": "Editors",
            "description": "Business architecture",
            "subRoles": ["Readers"],
            "typePermissions": {"BusinessProcess": ["read", "update", "read"], "Project": []},
            "functionalPermissions": ["VIEW_HISTORY", "MASSDATA"],
        },
    )
    assert response.status_code == 201, response.text
    role = response.json()
    assert response.headers["location"] == f"{ROLES}/{role['id']}"
    assert role == {
        "id": role["id"],
        "name": "Editors",
        "description": "Business architecture",
        "builtin": False,
        "subRoles": ["Readers"],
        "typePermissions": {"BusinessProcess": ["read", "update"]},
        "functionalPermissions": ["MASSDATA", "VIEW_HISTORY"],
    }
    assert client.get(f"{ROLES}/{role['id']}").json() == role
    assert [r["name"] for r in client.get(ROLES).json()] == ["Editors", "Readers", "Supervisor"]

    response = client.put(
        f"{ROLES}/{role['id']}", json={"typePermissions": {"Project": ["delete"]}, "subRoles": []}
    )
    assert response.status_code == 200
    assert response.json()["typePermissions"] == {"Project": ["delete"]}
    assert response.json()["subRoles"] == [] and response.json()["functionalPermissions"] == [
        "MASSDATA",
        "VIEW_HISTORY",
    ]
    assert client.delete(f"{ROLES}/{role['id']}").status_code == 204
    assert client.get(f"{ROLES}/{role['id']}").status_code == 404


def test_supervisor_role_shows_every_right_and_is_immutable(client: TestClient) -> None:
    supervisor = next(r for r in client.get(ROLES).json() if r["name"] == "Supervisor")
    assert supervisor["builtin"] is True and len(supervisor["typePermissions"]) == 14
    # The eight of 7.4, MINT_TOKENS, MERGE_SCENARIOS and APPROVE_SCENARIOS.
    assert len(supervisor["functionalPermissions"]) == 11
    for response in (
        client.put(f"{ROLES}/{supervisor['id']}", json={"description": "mine now"}),
        client.delete(f"{ROLES}/{supervisor['id']}"),
    ):
        assert response.status_code == 409 and response.json()["code"] == "immutable_role"
    assert client.get(f"{ROLES}/{supervisor['id']}").json() == supervisor


def test_invalid_role_bodies(client: TestClient) -> None:
    cases = [
        ({"name": "R", "typePermissions": {"Nope": ["read"]}}, "/typePermissions/Nope"),
        ({"name": "R", "typePermissions": {"Project": ["fly"]}}, "/typePermissions/Project/0"),
        ({"name": "R", "functionalPermissions": ["ROOT"]}, "/functionalPermissions/0"),
        ({"name": "R", "subRoles": ["Nope"]}, "/subRoles/0"),
        ({"name": ""}, "/name"),
    ]
    for body, pointer in cases:
        response = client.post(ROLES, json=body)
        assert response.status_code == 400, body
        assert pointer in {e["pointer"] for e in response.json()["errors"]}, (body, response.json())
    assert [r["name"] for r in client.get(ROLES).json()] == ["Supervisor"]


def test_role_names_are_unique_and_sub_roles_acyclic(client: TestClient) -> None:
    a = create_role(client, "A")
    b = create_role(client, "B", subRoles=["A"])
    assert client.post(ROLES, json={"name": "a"}).status_code == 409
    assert client.put(f"{ROLES}/{b['id']}", json={"name": "A"}).status_code == 409
    response = client.put(f"{ROLES}/{a['id']}", json={"subRoles": ["B"]})
    assert response.status_code == 400 and response.json()["errors"][0]["code"] == "cycle"
    assert client.put(f"{ROLES}/{a['id']}", json={"subRoles": ["A"]}).status_code == 400


def test_sub_roles_pass_on_their_rights(client: TestClient, app: FastAPI) -> None:
    create_role(
        client, "Base", typePermissions={"Project": ["read"]}, functionalPermissions=["EDIT_METAMODEL"]
    )
    create_role(client, "Middle", subRoles=["Base"])
    create_role(client, "Top", subRoles=["Middle"])
    create_user(client, "anna", ["Top"])
    with acting_as(app, "anna") as anna:
        assert anna.get("/api/metamodel/types/Project").status_code == 200
        assert anna.post("/api/metamodel/types", json={"name": "DataCenter"}).status_code == 201


def test_a_supervisor_role_inherited_through_a_sub_role_counts(client: TestClient, app: FastAPI) -> None:
    admins = create_role(client, "Admins", subRoles=["Supervisor"])
    create_user(client, "boss", ["Admins"])
    with acting_as(app, "boss") as boss:
        assert boss.get("/api/administration/users/current").json()["supervisor"] is True
        system_id = next(
            u["id"] for u in boss.get("/api/administration/users").json() if u["login"] == "system"
        )
        assert boss.put(f"/api/administration/users/{system_id}", json={"enabled": False}).status_code == 200
        # boss is now the last supervisor, through Admins: it cannot lose Supervisor, nor Admins go.
        response = boss.put(f"{ROLES}/{admins['id']}", json={"subRoles": []})
        assert response.status_code == 409 and response.json()["code"] == "last_supervisor"
        response = boss.delete(f"{ROLES}/{admins['id']}")
        assert response.status_code == 409 and response.json()["code"] == "last_supervisor"


def test_role_administration_needs_admin_roles(client: TestClient, app: FastAPI) -> None:
    role = create_role(client, "UserAdmins", functionalPermissions=["ADMIN_USERS"])
    create_user(client, "admin", ["UserAdmins"])
    with acting_as(app, "admin") as admin:
        assert admin.get(ROLES).status_code == 403
        assert admin.get(f"{ROLES}/{role['id']}").status_code == 403
        assert admin.post(ROLES, json={"name": "Mine"}).status_code == 403
        assert (
            admin.put(f"{ROLES}/{role['id']}", json={"functionalPermissions": ["ADMIN_ROLES"]}).status_code
            == 403
        )
        assert admin.delete(f"{ROLES}/{role['id']}").status_code == 403


def test_granting_a_right_applies_to_the_next_request(client: TestClient, app: FastAPI) -> None:
    role = create_role(client, "Readers")
    create_user(client, "anna", ["Readers"])
    with acting_as(app, "anna") as anna:
        assert anna.get("/api/metamodel/types/Project").status_code == 403
        client.put(f"{ROLES}/{role['id']}", json={"typePermissions": {"Project": ["read"]}})
        assert anna.get("/api/metamodel/types/Project").status_code == 200
        client.put(f"{ROLES}/{role['id']}", json={"typePermissions": {}})
        assert anna.get("/api/metamodel/types/Project").status_code == 403


# --- a role administrator who is not a supervisor ----------------------------------------------------

CURRENT = "/api/administration/users/current"


def _role_admin(client: TestClient) -> dict[str, object]:
    role = create_role(client, "RoleAdmins", functionalPermissions=["ADMIN_ROLES"])
    create_user(client, "roleadmin", ["RoleAdmins"])
    return role


def test_admin_roles_alone_lets_a_non_supervisor_administer_roles(client: TestClient, app: FastAPI) -> None:
    """ADMIN_ROLES is enough: list, read, create, change and delete roles; the rights take effect."""
    create_role(client, "Readers", typePermissions={"Project": ["read"]})
    _role_admin(client)
    create_user(client, "planner", [])
    with acting_as(app, "roleadmin") as admin:
        me = admin.get(CURRENT).json()
        assert me["supervisor"] is False and me["functionalPermissions"] == ["ADMIN_ROLES"]
        response = admin.post(
            ROLES,
            json={
                "name": "Planners",
                "subRoles": ["Readers"],
                "typePermissions": {"Project": ["read", "create"]},
                "functionalPermissions": ["VIEW_HISTORY"],
            },
        )
        assert response.status_code == 201, response.text
        planners = response.json()
        assert admin.get(f"{ROLES}/{planners['id']}").json() == planners
        assert {r["name"] for r in admin.get(ROLES).json()} == {
            "Planners",
            "Readers",
            "RoleAdmins",
            "Supervisor",
        }
        response = admin.put(
            f"{ROLES}/{planners['id']}",
            json={"description": "Plans", "typePermissions": {"Project": ["read", "create", "update"]}},
        )
        assert response.status_code == 200, response.text
        assert response.json()["typePermissions"] == {"Project": ["read", "create", "update"]}
    planner_id = next(
        u["id"] for u in client.get("/api/administration/users").json() if u["login"] == "planner"
    )
    client.put(f"/api/administration/users/{planner_id}", json={"roles": ["Planners"]})
    with acting_as(app, "planner") as planner:
        assert planner.post("/api/element/Project", json={"name": ["P"]}).status_code == 201
    with acting_as(app, "roleadmin") as admin:
        assert admin.delete(f"{ROLES}/{planners['id']}").status_code == 204
        assert admin.get(f"{ROLES}/{planners['id']}").status_code == 404
    with acting_as(app, "planner") as planner:
        assert planner.post("/api/element/Project", json={"name": ["Q"]}).status_code == 403


@pytest.mark.parametrize("carrier", ["Supervisor", "Admins", "Chiefs"])
def test_only_a_supervisor_may_add_a_sub_role_that_carries_supervisor(
    client: TestClient, app: FastAPI, carrier: str
) -> None:
    """Admins carries Supervisor directly, Chiefs through Admins; naming any of them as a sub-role would
    make every holder a supervisor, the role administrator first if it is their own role."""
    create_role(client, "Admins", subRoles=["Supervisor"])
    create_role(client, "Chiefs", subRoles=["Admins"])
    own = _role_admin(client)
    other = create_role(client, "Helpers")
    before = client.get(ROLES).json()
    with acting_as(app, "roleadmin") as admin:
        for response in (
            admin.put(f"{ROLES}/{own['id']}", json={"subRoles": [carrier]}),
            admin.put(f"{ROLES}/{other['id']}", json={"subRoles": [carrier], "description": "x"}),
            admin.post(ROLES, json={"name": "Mine", "subRoles": [carrier]}),
        ):
            assert response.status_code == 403, response.text
            problem = response.json()
            assert problem["code"] == "supervisor_only" and carrier in problem["detail"]
            assert [e["pointer"] for e in problem["errors"]] == ["/subRoles/0"]
        assert admin.get(CURRENT).json()["supervisor"] is False
    assert client.get(ROLES).json() == before
    # A supervisor may.
    assert client.put(f"{ROLES}/{other['id']}", json={"subRoles": [carrier]}).status_code == 200


def test_only_a_supervisor_may_change_or_delete_a_role_that_carries_supervisor(
    client: TestClient, app: FastAPI
) -> None:
    """Such a role makes its holders supervisors: a role administrator may not demote them, rename or
    delete it, nor change its rights."""
    admins = create_role(client, "Admins", subRoles=["Supervisor"])
    chiefs = create_role(client, "Chiefs", subRoles=["Admins"])
    create_user(client, "boss", ["Chiefs"])
    _role_admin(client)
    supervisor = next(r for r in client.get(ROLES).json() if r["name"] == "Supervisor")
    before = client.get(ROLES).json()
    with acting_as(app, "roleadmin") as admin:
        for role in (admins, chiefs):
            assert admin.get(f"{ROLES}/{role['id']}").status_code == 200
            bodies: list[dict[str, Any]] = [
                {"subRoles": []},
                {"description": "mine now"},
                {"name": "Renamed"},
                {"functionalPermissions": ["EXPORT"]},
            ]
            for body in bodies:
                response = admin.put(f"{ROLES}/{role['id']}", json=body)
                assert response.status_code == 403, (role["name"], body, response.text)
                assert response.json()["code"] == "supervisor_only"
            response = admin.delete(f"{ROLES}/{role['id']}")
            assert response.status_code == 403 and response.json()["code"] == "supervisor_only"
        # The built-in role is immutable for everybody.
        response = admin.put(f"{ROLES}/{supervisor['id']}", json={"description": "x"})
        assert response.status_code == 409 and response.json()["code"] == "immutable_role"
    assert client.get(ROLES).json() == before
    with acting_as(app, "boss") as boss:
        assert boss.get(CURRENT).json()["supervisor"] is True
    # A supervisor may.
    assert client.put(f"{ROLES}/{chiefs['id']}", json={"subRoles": []}).status_code == 200
    assert client.delete(f"{ROLES}/{admins['id']}").status_code == 204


def test_a_role_administrator_may_extend_a_role_they_hold_below_supervisor(
    client: TestClient, app: FastAPI
) -> None:
    """The documented boundary (docs/architecture.md, "The permission model"): ADMIN_ROLES is a power over
    rights. Its holder may grant any right short of Supervisor to any role, their own included; only the
    Supervisor line is enforced. This test pins that decision; change it together with the docs."""
    own = _role_admin(client)
    with acting_as(app, "roleadmin") as admin:
        assert admin.post("/api/metamodel/types", json={"name": "DataCenter"}).status_code == 403
        response = admin.put(
            f"{ROLES}/{own['id']}", json={"functionalPermissions": ["ADMIN_ROLES", "EDIT_METAMODEL"]}
        )
        assert response.status_code == 200, response.text
        assert admin.post("/api/metamodel/types", json={"name": "DataCenter"}).status_code == 201
        assert admin.get(CURRENT).json()["supervisor"] is False
