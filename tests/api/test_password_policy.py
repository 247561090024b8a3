"""API.md rule 1.9: the most common passwords and a password equal to the login are refused wherever a
password is set: the administration API (create and update: 400 `validation_failed` at `/password`),
`blockrepo user add|passwd`, and the passwords of `system` and the demo users from the environment."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.auth.password_policy import common_passwords, password_refusal
from blockrepo.demo import DemoLoadFailed, load_demo
from blockrepo.storage.engine import build_engine
from tests.api.auth_support import PROTECTED, bare_client
from tests.api.test_cli_accounts import app_on, basic, cli_environment, init, output_of, run  # noqa: F401
from tests.conftest import make_settings

USERS = "/api/administration/users"
GOOD = "correct horse battery"
# Among the most common passwords, in any case, and long enough for the length rule.
COMMON = ["password", "Password1", "qwertyuiop", "iloveyou", "12345678", "PASSW0RD"]


def refused(response: object, message: str) -> None:
    assert getattr(response, "status_code", None) == 400, getattr(response, "text", response)
    body = response.json()  # type: ignore[attr-defined]
    assert body["code"] == "validation_failed"
    [error] = body["errors"]
    assert (error["pointer"], error["code"]) == ("/password", "weak_password")
    assert message in error["message"]


def logins(client: TestClient) -> set[str]:
    return {user["login"] for user in client.get(USERS).json()}


def test_the_common_list_is_the_well_known_one() -> None:
    passwords = common_passwords()
    assert len(passwords) == 30_000
    assert {"123456", "password", "qwerty", "letmein", "trustno1"} <= passwords
    assert password_refusal(GOOD, "anna") is None
    assert password_refusal("Anna.Schmidt", "anna.schmidt") == "the password must not be the login"


@pytest.mark.parametrize("password", COMMON)
def test_creating_a_user_with_a_common_password_is_400(client: TestClient, password: str) -> None:
    refused(client.post(USERS, json={"login": "anna", "password": password}), "most common passwords")
    assert "anna" not in logins(client)


def test_creating_a_user_whose_password_is_the_login_is_400(client: TestClient) -> None:
    body = {"login": "anna.schmidt", "password": "Anna.Schmidt"}
    refused(client.post(USERS, json=body), "must not be the login")
    assert "anna.schmidt" not in logins(client)
    created = client.post(USERS, json={**body, "password": GOOD})
    assert created.status_code == 201, created.text


def test_changing_a_password_to_a_weak_one_is_400_and_keeps_the_old(app: FastAPI, client: TestClient) -> None:
    user = client.post(USERS, json={"login": "anna.schmidt", "password": GOOD}).json()
    refused(client.put(f"{USERS}/{user['id']}", json={"password": "iloveyou"}), "most common passwords")
    refused(client.put(f"{USERS}/{user['id']}", json={"password": "ANNA.SCHMIDT"}), "must not be the login")
    # With a new login, the new one counts; and nothing of a refused change is kept.
    renamed = {"login": "aschmidt", "firstName": "Anna", "password": "aschmidt"}
    refused(client.put(f"{USERS}/{user['id']}", json=renamed), "must not be the login")
    assert client.get(f"{USERS}/{user['id']}").json()["login"] == "anna.schmidt"
    assert bare_client(app).get(PROTECTED, auth=("anna.schmidt", GOOD)).status_code == 200
    changed = client.put(f"{USERS}/{user['id']}", json={"password": "a better pass phrase"})
    assert changed.status_code == 200, changed.text


@pytest.mark.usefixtures("cli_environment")
@pytest.mark.parametrize(
    ("login", "password"), [("bert", "password"), ("bertrand", "Bertrand"), ("bert12345", "BERT12345")]
)
def test_user_add_and_passwd_refuse_weak_passwords(
    empty_database_url: str, login: str, password: str
) -> None:
    init(empty_database_url)
    result = run("user", "add", login, "--password", password, "--database", empty_database_url)
    assert result.exit_code == 1, result.output
    assert "the password" in output_of(result)
    assert run("user", "add", login, "--password", GOOD, "--database", empty_database_url).exit_code == 0
    result = run("user", "passwd", login, "--password", password, "--database", empty_database_url)
    assert result.exit_code == 1, result.output
    with app_on(empty_database_url) as app:
        assert basic(app, login, password) == 401
        assert basic(app, login, GOOD) == 200


@pytest.mark.usefixtures("cli_environment")
@pytest.mark.parametrize("password", ["password", "SYSTEM"])
def test_a_weak_admin_password_from_the_environment_seeds_nothing(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch, password: str
) -> None:
    monkeypatch.setenv("BLOCKREPO_ADMIN_PASSWORD", password)
    result = run("init", "--database", empty_database_url)
    assert result.exit_code == 1, result.output
    assert "BLOCKREPO_ADMIN_PASSWORD" in output_of(result)
    monkeypatch.setenv("BLOCKREPO_ADMIN_PASSWORD", GOOD)
    assert run("init", "--database", empty_database_url).exit_code == 0
    with app_on(empty_database_url) as app:
        assert basic(app, "system", password) == 401
        assert basic(app, "system", GOOD) == 200


@pytest.mark.parametrize("password", ["letmein1", "Anna"])
def test_a_weak_demo_password_from_the_environment_loads_nothing(
    database_url: str, client: TestClient, password: str
) -> None:
    engine = build_engine(database_url)
    try:
        with pytest.raises(DemoLoadFailed, match="BLOCKREPO_DEMO_PASSWORD"):
            load_demo(engine, make_settings(database_url, demo_password=password))
    finally:
        engine.dispose()
    assert logins(client) == {"system"}
