"""Administration API, users: CRUD, write-only hashed passwords, credential invalidation, protected
supervisors and the caller's effective permissions."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from starlette.testclient import TestClient

from blockrepo.access.models import User
from blockrepo.administration import repository
from blockrepo.app import create_app
from blockrepo.revisions.models import Change
from blockrepo.settings import Settings
from tests.api.access_helpers import PASSWORD, acting_as, create_role, create_user, database
from tests.api.auth_support import bare_client, form_login, logged_in, session_headers

USERS = "/api/administration/users"
CURRENT = "/api/administration/users/current"


def test_create_read_update_delete_a_user(client: TestClient, app: FastAPI) -> None:
    create_role(client, "Readers", typePermissions={"Project": ["read"]})
    response = client.post(
        USERS,
        json={
            "login": "anna",
            "firstName": "Anna",
            "email": "anna@example.com",
            "roles": ["Readers"],
            "password": PASSWORD,
        },
    )
    assert response.status_code == 201, response.text
    anna = response.json()
    assert response.headers["location"] == f"{USERS}/{anna['id']}"
    assert anna == {
        "id": anna["id"],
        "login": "anna",
        "firstName": "Anna",
        "lastName": "",
        "email": "anna@example.com",
        "enabled": True,
        "roles": ["Readers"],
    }
    assert client.get(f"{USERS}/{anna['id']}").json() == anna
    assert [u["login"] for u in client.get(USERS).json()] == ["anna", "system"]

    response = client.put(f"{USERS}/{anna['id']}", json={"lastName": "Schmidt", "roles": []})
    assert response.status_code == 200
    assert response.json()["lastName"] == "Schmidt" and response.json()["roles"] == []
    assert client.delete(f"{USERS}/{anna['id']}").status_code == 204
    assert client.get(f"{USERS}/{anna['id']}").status_code == 404
    with acting_as(app, "anna") as gone:
        assert gone.get("/api/administration/users/current").status_code == 401


def test_password_is_write_only_hashed_and_never_in_history(client: TestClient, database_url: str) -> None:
    user = create_user(client, "anna", [])
    assert "password" not in user and "password" not in client.get(f"{USERS}/{user['id']}").json()
    client.put(f"{USERS}/{user['id']}", json={"password": "another-password"})
    with database(database_url) as db:
        stored = db.scalar(select(User.password_hash).where(User.login == "anna"))
        history = [c.changes for c in db.scalars(select(Change).where(Change.entity == "administration"))]
    assert stored is not None and stored.startswith("$argon2id$")
    assert (
        PASSWORD not in str(history)
        and "another-password" not in str(history)
        and "argon2" not in str(history)
    )


def test_invalid_user_bodies(client: TestClient) -> None:
    cases = [
        ({"login": "a:b", "password": PASSWORD}, "/login"),
        ({"login": "anna", "password": "short"}, "/password"),
        ({"login": "anna"}, "/password"),
        ({"login": "anna", "password": PASSWORD, "roles": ["Nope"]}, "/roles/0"),
        ({"login": "anna", "password": PASSWORD, "enabled": "yes"}, "/enabled"),
        ({"login": "anna", "password": PASSWORD, "admin": True}, "/admin"),
    ]
    for body, pointer in cases:
        response = client.post(USERS, json=body)
        assert response.status_code == 400, body
        assert response.json()["code"] == "validation_failed"
        assert pointer in {e["pointer"] for e in response.json()["errors"]}, body
    assert (
        client.post(USERS, content=b"login=anna", headers={"content-type": "text/plain"}).status_code == 415
    )
    assert [u["login"] for u in client.get(USERS).json()] == ["system"]


def test_logins_are_unique_ignoring_case(client: TestClient) -> None:
    create_user(client, "anna", [])
    response = client.post(USERS, json={"login": "Anna", "password": PASSWORD})
    assert response.status_code == 409 and response.json()["code"] == "name_conflict"


def test_unknown_or_malformed_ids(client: TestClient) -> None:
    assert client.get(f"{USERS}/999").status_code == 404
    assert client.put(f"{USERS}/999", json={"enabled": False}).status_code == 404
    assert client.delete(f"{USERS}/999").status_code == 404
    assert client.get(f"{USERS}/abc").status_code == 400
    assert client.get(f"{USERS}/0").status_code == 400


def test_password_change_rejects_the_old_cached_credentials(client: TestClient, app: FastAPI) -> None:
    user = create_user(client, "anna", [])
    with acting_as(app, "anna") as anna:
        assert anna.get("/api/administration/users/current").status_code == 200  # now cached
        assert client.put(f"{USERS}/{user['id']}", json={"password": "the-new-password"}).status_code == 200
        assert anna.get("/api/administration/users/current").status_code == 401
    with acting_as(app, "anna", "the-new-password") as anna:
        assert anna.get("/api/administration/users/current").status_code == 200


def test_disabled_user_cannot_log_in_and_loses_cached_credentials(client: TestClient, app: FastAPI) -> None:
    user = create_user(client, "anna", [])
    with acting_as(app, "anna") as anna:
        assert anna.get("/api/administration/users/current").status_code == 200
        assert client.put(f"{USERS}/{user['id']}", json={"enabled": False}).status_code == 200
        assert anna.get("/api/administration/users/current").status_code == 401
        client.put(f"{USERS}/{user['id']}", json={"enabled": True})
        assert anna.get("/api/administration/users/current").status_code == 200


def test_disabling_in_one_app_instance_locks_out_in_another(client: TestClient, settings: Settings) -> None:
    user = create_user(client, "anna", [])
    other_app = create_app(settings)
    try:
        with acting_as(other_app, "anna") as anna:
            assert anna.get("/api/administration/users/current").status_code == 200  # cached there
            assert client.put(f"{USERS}/{user['id']}", json={"enabled": False}).status_code == 200
            assert anna.get("/api/administration/users/current").status_code == 401
    finally:
        other_app.state.services.dispose()


def test_nobody_can_delete_themself(client: TestClient, app: FastAPI) -> None:
    create_role(client, "UserAdmins", functionalPermissions=["ADMIN_USERS"])
    admin = create_user(client, "admin", ["UserAdmins"])
    with acting_as(app, "admin") as me:
        response = me.delete(f"{USERS}/{admin['id']}")
        assert response.status_code == 409 and response.json()["code"] == "self_deletion"
    system_id = next(u["id"] for u in client.get(USERS).json() if u["login"] == "system")
    response = client.delete(f"{USERS}/{system_id}")
    assert response.status_code == 409 and response.json()["code"] == "self_deletion"


def test_last_supervisor_is_protected(client: TestClient, app: FastAPI) -> None:
    """Only a supervisor may touch a supervisor (see the supervisor_only tests), so the last one can only
    try to remove themself: disabling or demoting is 409, deleting is refused as self-deletion."""
    create_role(client, "UserAdmins", functionalPermissions=["ADMIN_USERS"])
    system_id = next(u["id"] for u in client.get(USERS).json() if u["login"] == "system")
    bodies: list[dict[str, Any]] = [{"enabled": False}, {"roles": []}, {"roles": ["UserAdmins"]}]
    for body in bodies:
        response = client.put(f"{USERS}/{system_id}", json=body)
        assert response.status_code == 409 and response.json()["code"] == "last_supervisor", body
    response = client.delete(f"{USERS}/{system_id}")
    assert response.status_code == 409 and response.json()["code"] == "self_deletion"
    system = client.get(f"{USERS}/{system_id}").json()
    assert system["roles"] == ["Supervisor"] and system["enabled"] is True
    # With a second supervisor, the first may go; then the second is the last.
    boss = create_user(client, "boss", ["Supervisor"])
    with acting_as(app, "boss") as other:
        assert other.put(f"{USERS}/{system_id}", json={"enabled": False}).status_code == 200
        for body in ({"enabled": False}, {"roles": ["UserAdmins"]}):
            response = other.put(f"{USERS}/{boss['id']}", json=body)
            assert response.status_code == 409 and response.json()["code"] == "last_supervisor", body
        assert other.get(f"{USERS}/{boss['id']}").json()["roles"] == ["Supervisor"]


def test_user_administration_needs_admin_users(client: TestClient, app: FastAPI) -> None:
    create_role(
        client,
        "Editors",
        typePermissions={"Project": ["read", "update"]},
        functionalPermissions=["ADMIN_ROLES"],
    )
    user = create_user(client, "editor", ["Editors"])
    with acting_as(app, "editor") as editor:
        assert editor.get(USERS).status_code == 403
        assert editor.get(f"{USERS}/{user['id']}").status_code == 403
        assert editor.post(USERS, json={"login": "x", "password": PASSWORD}).status_code == 403
        assert editor.put(f"{USERS}/{user['id']}", json={"roles": ["Supervisor"]}).status_code == 403
        assert editor.delete(f"{USERS}/{user['id']}").status_code == 403
        assert editor.get("/api/administration/users/current").status_code == 200


def test_current_user_shows_effective_permissions(client: TestClient, app: FastAPI) -> None:
    create_role(
        client, "Readers", typePermissions={"Project": ["read"]}, functionalPermissions=["VIEW_HISTORY"]
    )
    create_role(
        client,
        "Editors",
        subRoles=["Readers"],
        typePermissions={"InformationSystem": ["read", "create", "update"]},
    )
    create_user(client, "anna", ["Editors"], firstName="Anna")
    with acting_as(app, "anna") as anna:
        me = anna.get("/api/administration/users/current").json()
    assert me["login"] == "anna" and me["firstName"] == "Anna" and me["roles"] == ["Editors"]
    assert me["supervisor"] is False
    assert me["effectiveRoles"] == ["Editors", "Readers"]
    assert me["typePermissions"] == {"InformationSystem": ["read", "create", "update"], "Project": ["read"]}
    assert me["functionalPermissions"] == ["VIEW_HISTORY"]
    assert me["attributeGroups"] == [{"name": "[Default Attribute Group]", "read": True, "write": True}]
    assert "password" not in me

    system = client.get("/api/administration/users/current").json()
    assert system["supervisor"] is True and len(system["typePermissions"]) == 14
    assert "EDIT_METAMODEL" in system["functionalPermissions"]


def test_user_changes_are_recorded_in_history(client: TestClient, database_url: str) -> None:
    user = create_user(client, "anna", [])
    client.put(f"{USERS}/{user['id']}", json={"email": "a@example.com"})
    client.delete(f"{USERS}/{user['id']}")
    with database(database_url) as db:
        records = [
            (c.operation, c.subject) for c in db.scalars(select(Change).where(Change.subject == "user anna"))
        ]
    assert records == [("created", "user anna"), ("updated", "user anna"), ("deleted", "user anna")]


def test_disabling_or_a_new_password_ends_live_sessions(client: TestClient, app: FastAPI) -> None:
    user = create_user(client, "anna", [])
    web = bare_client(app)
    session_id, _ = logged_in(web, "anna", PASSWORD)
    assert web.get(CURRENT, headers=session_headers(session_id)).status_code == 200
    assert client.put(f"{USERS}/{user['id']}", json={"enabled": False}).status_code == 200
    assert web.get(CURRENT, headers=session_headers(session_id)).status_code == 401
    assert form_login(web, "anna", PASSWORD).status_code == 401  # a disabled user cannot log in
    client.put(f"{USERS}/{user['id']}", json={"enabled": True})
    assert web.get(CURRENT, headers=session_headers(session_id)).status_code == 401  # stays ended

    session_id, _ = logged_in(web, "anna", PASSWORD)
    assert web.get(CURRENT, headers=session_headers(session_id)).status_code == 200
    client.put(f"{USERS}/{user['id']}", json={"password": "the-new-password"})
    assert web.get(CURRENT, headers=session_headers(session_id)).status_code == 401
    assert form_login(web, "anna", PASSWORD).status_code == 401
    session_id, _ = logged_in(web, "anna", "the-new-password")
    # Editing something else (here the e-mail) leaves the session alone.
    client.put(f"{USERS}/{user['id']}", json={"email": "anna@example.com"})
    assert web.get(CURRENT, headers=session_headers(session_id)).status_code == 200


def test_a_lost_race_is_a_conflict_not_a_server_error(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two requests creating the same login at once: the checks of both pass, the database refuses one."""
    create_user(client, "anna", [])
    monkeypatch.setattr(repository, "login_taken", lambda *_args, **_kwargs: False)
    response = client.post(USERS, json={"login": "anna", "password": PASSWORD})
    assert response.status_code == 409 and response.headers["content-type"] == "application/problem+json"
    assert [u["login"] for u in client.get(USERS).json()] == ["anna", "system"]


# --- a user administrator who is not a supervisor ----------------------------------------------------


def _user_admin(client: TestClient) -> dict[str, Any]:
    create_role(client, "UserAdmins", functionalPermissions=["ADMIN_USERS"])
    return create_user(client, "admin", ["UserAdmins"])


def test_admin_users_alone_lets_a_non_supervisor_administer_users(client: TestClient, app: FastAPI) -> None:
    """ADMIN_USERS is enough: list, read, create, change (roles, password, enabled) and delete users."""
    create_role(client, "Readers", typePermissions={"Project": ["read"]})
    _user_admin(client)
    with acting_as(app, "admin") as admin:
        me = admin.get(CURRENT).json()
        assert me["supervisor"] is False and me["functionalPermissions"] == ["ADMIN_USERS"]
        assert me["typePermissions"] == {}
        response = admin.post(USERS, json={"login": "anna", "password": PASSWORD, "roles": ["Readers"]})
        assert response.status_code == 201, response.text
        anna = response.json()
        assert admin.get(f"{USERS}/{anna['id']}").json() == anna
        assert {u["login"] for u in admin.get(USERS).json()} == {"admin", "anna", "system"}
        response = admin.put(
            f"{USERS}/{anna['id']}",
            json={"email": "anna@example.com", "roles": [], "password": "anna-new-password"},
        )
        assert response.status_code == 200, response.text
        assert response.json()["roles"] == [] and response.json()["email"] == "anna@example.com"
        with acting_as(app, "anna", "anna-new-password") as anna_client:
            assert anna_client.get(CURRENT).json()["effectiveRoles"] == []
        assert admin.put(f"{USERS}/{anna['id']}", json={"enabled": False}).status_code == 200
        with acting_as(app, "anna", "anna-new-password") as anna_client:
            assert anna_client.get(CURRENT).status_code == 401
        assert admin.delete(f"{USERS}/{anna['id']}").status_code == 204
        assert admin.get(f"{USERS}/{anna['id']}").status_code == 404
    assert [u["login"] for u in client.get(USERS).json()] == ["admin", "system"]


def _supervisor_roles(client: TestClient) -> None:
    """Admins carries Supervisor directly, Chiefs through Admins."""
    create_role(client, "Admins", subRoles=["Supervisor"])
    create_role(client, "Chiefs", subRoles=["Admins"])


@pytest.mark.parametrize("role", ["Supervisor", "Admins", "Chiefs"])
def test_only_a_supervisor_may_grant_a_role_that_carries_supervisor(
    client: TestClient, app: FastAPI, role: str
) -> None:
    _supervisor_roles(client)
    admin = _user_admin(client)
    plain = create_user(client, "plain", [])
    before = client.get(USERS).json()
    with acting_as(app, "admin") as me:
        attempts = [
            me.post(USERS, json={"login": "puppet", "password": PASSWORD, "roles": ["UserAdmins", role]}),
            me.put(f"{USERS}/{admin['id']}", json={"roles": ["UserAdmins", role]}),  # themself
            me.put(f"{USERS}/{plain['id']}", json={"roles": [role], "email": "p@example.com"}),
        ]
        for response in attempts:
            assert response.status_code == 403, response.text
            problem = response.json()
            assert problem["code"] == "supervisor_only" and role in problem["detail"]
            assert [e["pointer"] for e in problem["errors"]] in (["/roles/1"], ["/roles/0"])
        assert me.get(CURRENT).json()["supervisor"] is False
    assert client.get(USERS).json() == before  # nothing changed, nobody created
    # A supervisor may.
    response = client.post(USERS, json={"login": "deputy", "password": PASSWORD, "roles": [role]})
    assert response.status_code == 201
    with acting_as(app, "deputy") as deputy:
        assert deputy.get(CURRENT).json()["supervisor"] is True


def test_only_a_supervisor_may_touch_a_supervisor(client: TestClient, app: FastAPI) -> None:
    """Supervisors directly, through a role, and disabled ones: a user administrator may read them but not
    change, disable, enable, re-password, demote or delete them."""
    _supervisor_roles(client)
    _user_admin(client)
    system_id = next(u["id"] for u in client.get(USERS).json() if u["login"] == "system")
    boss = create_user(client, "boss", ["Chiefs"])
    sleeper = create_user(client, "sleeper", ["Supervisor"], enabled=False)
    before = client.get(USERS).json()
    with acting_as(app, "admin") as admin:
        for target in (system_id, boss["id"], sleeper["id"]):
            assert admin.get(f"{USERS}/{target}").status_code == 200
            for body in (
                {"email": "x@example.com"},
                {"enabled": True},
                {"enabled": False},
                {"password": "taken-over-password"},
                {"roles": ["UserAdmins"]},
                {"login": "renamed"},
            ):
                response = admin.put(f"{USERS}/{target}", json=body)
                assert response.status_code == 403, (target, body, response.text)
                assert response.json()["code"] == "supervisor_only"
            response = admin.delete(f"{USERS}/{target}")
            assert response.status_code == 403 and response.json()["code"] == "supervisor_only"
    assert client.get(USERS).json() == before
    with acting_as(app, "sleeper", "taken-over-password") as sleeper_client:
        assert sleeper_client.get(CURRENT).status_code == 401
    with acting_as(app, "boss") as other_supervisor:  # the password is the old one still
        assert other_supervisor.get(CURRENT).json()["supervisor"] is True
        # A supervisor may do all of it.
        assert other_supervisor.put(f"{USERS}/{sleeper['id']}", json={"enabled": True}).status_code == 200
        assert other_supervisor.delete(f"{USERS}/{sleeper['id']}").status_code == 204
