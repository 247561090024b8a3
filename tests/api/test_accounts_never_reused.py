"""API.md rule 1.6: accounts are never reused. A user id is never handed out twice (SQLite included), so a
deleted account's session cookies (stored or signed) and its credentials cached by any app instance
authenticate nobody, not even the account created next: the audit's mallory/carol scenario, on the
database and the Redis session store, against two app instances over one database (two workers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from fastapi import FastAPI
from sqlalchemy import text
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.storage import migrate
from blockrepo.storage.engine import build_engine
from tests.api.auth_support import bare_client, cookie_value, form_login
from tests.conftest import ADMIN_PASSWORD, PG_URL, make_settings

USERS = "/api/administration/users"
CURRENT = "/api/administration/users/current"
MALLORY = ("mallory", "mallory-keeps-her-cookie")
CAROL = ("carol", "carol-is-the-new-supervisor")


@pytest.fixture
def apps(database_url: str, auth_store: dict[str, str]) -> Iterator[tuple[FastAPI, FastAPI]]:
    """Two app instances over one database and one session store: two worker processes."""
    settings = make_settings(database_url, **auth_store)
    first, second = create_app(settings), create_app(settings)
    yield first, second
    for application in (first, second):
        application.state.services.dispose()


def admin_of(app: FastAPI) -> TestClient:
    client = TestClient(app, base_url="http://127.0.0.1")
    client.auth = ("system", ADMIN_PASSWORD)
    return client


def created(response: object) -> int:
    assert getattr(response, "status_code", None) == 201, getattr(response, "text", response)
    return int(response.json()["id"])  # type: ignore[attr-defined]


def readable_element(admin: TestClient) -> str:
    """A role that reads business processes and one business process: the path of the GET lane."""
    role = {"name": "Readers", "typePermissions": {"BusinessProcess": ["read"]}}
    assert admin.post("/api/administration/roles", json=role).status_code == 201
    element = admin.post("/api/element/BusinessProcess", json={"name": ["Order handling"]})
    assert element.status_code == 201, element.text
    return f"/api/element/BusinessProcess/{element.json()['id'][0]}"


class MallorysKeys:
    """Everything mallory can authenticate with after she is gone: a stored session (form login), a signed
    session (handed to Basic credentials), and her credentials, verified and cached by both instances on
    the GET lane and on the general path."""

    def __init__(self, apps: tuple[FastAPI, FastAPI], element: str) -> None:
        first, second = apps
        login = form_login(bare_client(first), *MALLORY)
        assert login.status_code == 200, login.text
        self.stored_cookie = cookie_value(login, "JSESSIONID")
        for app in (first, second):
            for path in (element, element, CURRENT, CURRENT):
                answer = bare_client(app).get(path, auth=MALLORY)
                assert answer.status_code == 200, answer.text
        self.signed_cookie = cookie_value(answer, "JSESSIONID")

    def assert_act_as_nobody(self, apps: tuple[FastAPI, FastAPI], element: str) -> None:
        for app in apps:
            for path in (element, CURRENT):
                for cookie in (self.stored_cookie, self.signed_cookie):
                    answer = bare_client(app).get(path, headers={"Cookie": f"JSESSIONID={cookie}"})
                    assert answer.status_code == 401, (path, answer.text)
                answer = bare_client(app).get(path, auth=MALLORY)
                assert answer.status_code == 401, (path, answer.text)


def test_a_deleted_users_cookies_and_cached_credentials_never_act_as_the_next_user(
    apps: tuple[FastAPI, FastAPI],
) -> None:
    first, _ = apps
    with admin_of(first) as admin:
        element = readable_element(admin)
        mallory = created(
            admin.post(USERS, json={"login": MALLORY[0], "password": MALLORY[1], "roles": ["Readers"]})
        )
        keys = MallorysKeys(apps, element)
        assert admin.delete(f"{USERS}/{mallory}").status_code == 204
        body = {"login": CAROL[0], "password": CAROL[1], "roles": ["Supervisor"]}
        carol = created(admin.post(USERS, json=body))
    keys.assert_act_as_nobody(apps, element)
    assert carol > mallory  # her id is never handed out again (the newest user's was, on SQLite)
    for app in apps:
        answer = bare_client(app).get(CURRENT, auth=CAROL)
        assert answer.status_code == 200 and answer.json()["login"] == "carol"


def test_a_re_created_accounts_old_cookies_authenticate_nobody(apps: tuple[FastAPI, FastAPI]) -> None:
    """Deleted and created again under the same login: a new account, which the old cookies do not reach."""
    first, _ = apps
    with admin_of(first) as admin:
        element = readable_element(admin)
        body = {"login": MALLORY[0], "password": MALLORY[1], "roles": ["Readers"]}
        old = created(admin.post(USERS, json=body))
        keys = MallorysKeys(apps, element)
        assert admin.delete(f"{USERS}/{old}").status_code == 204
        again = created(admin.post(USERS, json={**body, "password": "mallory-has-a-new-one"}))
    keys.assert_act_as_nobody(apps, element)
    assert again != old


def test_a_disabled_users_cookies_and_cached_credentials_authenticate_nobody(
    apps: tuple[FastAPI, FastAPI],
) -> None:
    first, _ = apps
    with admin_of(first) as admin:
        element = readable_element(admin)
        mallory = created(
            admin.post(USERS, json={"login": MALLORY[0], "password": MALLORY[1], "roles": ["Readers"]})
        )
        keys = MallorysKeys(apps, element)
        assert admin.put(f"{USERS}/{mallory}", json={"enabled": False}).status_code == 200
    keys.assert_act_as_nobody(apps, element)


def test_user_ids_come_from_a_counter_that_never_goes_back(client: TestClient) -> None:
    """Deleting the newest users, on either database, never lets the next ones take their ids."""
    ids = []
    for n in range(3):
        ids.append(created(client.post(USERS, json={"login": f"user{n}", "password": f"pass-phrase-{n}"})))
    for user_id in ids[1:]:
        assert client.delete(f"{USERS}/{user_id}").status_code == 204
    later = created(client.post(USERS, json={"login": "later", "password": "pass-phrase-later"}))
    assert later > max(ids)


@pytest.mark.skipif(PG_URL is not None, reason="the rebuild concerns SQLite only")
def test_upgrading_an_sqlite_repository_keeps_users_and_voids_signed_cookies(tmp_path: Path) -> None:
    """Migration 0008 rebuilds `app_user` with AUTOINCREMENT (foreign keys off: roles and sessions of the
    users survive it) and replaces the secret that signed the cookies made before it."""
    engine = build_engine(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        with engine.connect() as connection:
            command.upgrade(migrate.alembic_config(connection), "0006")
            connection.commit()
            user = "INSERT INTO app_user VALUES (:id, :login, '', '', '', 1, 'hash', 1)"
            for user_id, login in ((1, "system"), (2, "newest")):
                connection.execute(text(user), {"id": user_id, "login": login})
            connection.execute(
                text("INSERT INTO role (id, name, description, builtin) VALUES (1, 'R', '', 0)")
            )
            connection.execute(text("INSERT INTO user_role VALUES (2, 1)"))
            connection.execute(
                text("INSERT INTO auth_session VALUES ('k', 2, 1, 'csrf', :at, :at, :at)"),
                {"at": "2026-01-01 00:00:00"},
            )
            secret = "SELECT value FROM server_secret WHERE name = 'session_signing'"
            before = connection.exec_driver_sql(secret).scalar()
            connection.commit()
        migrate.upgrade(engine)
        with engine.connect() as connection:
            assert connection.exec_driver_sql(secret).scalar() != before
            assert connection.exec_driver_sql("SELECT count(*) FROM user_role").scalar() == 1
            assert connection.exec_driver_sql("SELECT count(*) FROM auth_session").scalar() == 1
            table_sql = connection.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'app_user'")
            assert "AUTOINCREMENT" in str(table_sql.scalar())
            connection.exec_driver_sql("DELETE FROM app_user WHERE id = 2")
            connection.execute(
                text(
                    "INSERT INTO app_user (login, first_name, last_name, email, enabled, "
                    "password_hash, credentials_version) VALUES ('next', '', '', '', 1, 'h', 1)"
                )
            )
            assert connection.exec_driver_sql("SELECT max(id) FROM app_user").scalar() == 3
    finally:
        engine.dispose()
