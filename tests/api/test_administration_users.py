"""Administration API, users: CRUD, write-only hashed passwords, credential invalidation, protected
supervisors and the caller's effective permissions."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from starlette.testclient import TestClient

from blockrepo.access.models import User
from blockrepo.administration import repository
from blockrepo.app import create_app
from blockrepo.history.models import Change
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
    create_role(client, "UserAdmins", functionalPermissions=["ADMIN_USERS"])
    create_user(client, "admin", ["UserAdmins"])
    system_id = next(u["id"] for u in client.get(USERS).json() if u["login"] == "system")
    with acting_as(app, "admin") as admin:
        for attempt in (
            lambda: admin.delete(f"{USERS}/{system_id}"),
            lambda: admin.put(f"{USERS}/{system_id}", json={"enabled": False}),
            lambda: admin.put(f"{USERS}/{system_id}", json={"roles": ["UserAdmins"]}),
        ):
            response = attempt()
            assert response.status_code == 409 and response.json()["code"] == "last_supervisor"
    assert client.get(f"{USERS}/{system_id}").json()["roles"] == ["Supervisor"]
    # With a second supervisor, the first may go.
    create_user(client, "boss", ["Supervisor"])
    with acting_as(app, "boss") as boss:
        assert boss.put(f"{USERS}/{system_id}", json={"enabled": False}).status_code == 200


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
