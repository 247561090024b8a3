"""`blockrepo init`, `blockrepo user add|passwd` and `blockrepo --help`, run through typer's CliRunner against
an empty database (SQLite, or PostgreSQL when BLOCKREPO_TEST_DATABASE_URL is set); the accounts they make
are then used over HTTP Basic against an app built on the same database."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient
from typer.testing import CliRunner, Result

from blockrepo.app import create_app
from blockrepo.cli import app as cli
from blockrepo.settings import Settings
from tests.api.auth_support import PROTECTED, bare_client
from tests.conftest import CHEAP_HASHING, make_settings

runner = CliRunner()
ANSI = re.compile(r"\x1b\[[0-9;]*m")
GENERATED = re.compile(r"generated password:\s*(\S+)")


@pytest.fixture(autouse=True)
def cli_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The commands read BLOCKREPO_* variables and export their flags as such; start from none of them
    (restored after the test) and hash cheaply."""
    for name in Settings.model_fields:
        monkeypatch.delenv(f"BLOCKREPO_{name.upper()}", raising=False)
    for name, value in CHEAP_HASHING.items():
        monkeypatch.setenv(f"BLOCKREPO_{name.upper()}", str(value))


def run(*args: str, input: str | None = None) -> Result:
    return runner.invoke(cli, list(args), input=input)


def output_of(result: Result) -> str:
    return ANSI.sub("", result.output)


def generated_passwords(result: Result) -> list[str]:
    return GENERATED.findall(output_of(result))


def init(url: str) -> str:
    """`blockrepo init` on an empty database; the generated password of `system`."""
    result = run("init", "--database", url)
    assert result.exit_code == 0, result.output
    [password] = generated_passwords(result)
    return password


@contextmanager
def app_on(url: str) -> Iterator[FastAPI]:
    # The admin password of the test settings plays no part: the repository exists already.
    application = create_app(make_settings(url))
    try:
        yield application
    finally:
        application.state.services.dispose()


def basic(app: FastAPI, login: str, password: str) -> int:
    """Status of a Basic request from a client that keeps no cookies (so no session can stand in)."""
    return bare_client(app).get(PROTECTED, auth=(login, password)).status_code


def current_roles(app: FastAPI, login: str, password: str) -> list[str]:
    response = bare_client(app).get(PROTECTED, auth=(login, password))
    assert response.status_code == 200, response.text
    assert response.json()["login"] == login
    return list(response.json()["roles"])


def test_init_seeds_an_empty_database_and_prints_the_password_once(empty_database_url: str) -> None:
    first = run("init", "--database", empty_database_url)
    assert first.exit_code == 0, first.output
    [password] = generated_passwords(first)
    assert output_of(first).count(password) == 1
    assert "shown only this once" in output_of(first)
    assert "repository initialised" in output_of(first)

    second = run("init", "--database", empty_database_url)
    assert second.exit_code == 0, second.output
    assert "repository is up to date" in output_of(second)
    assert generated_passwords(second) == []
    assert password not in output_of(second)

    with app_on(empty_database_url) as app:
        assert basic(app, "system", password) == 200
        assert basic(app, "system", password + "x") == 401
        assert current_roles(app, "system", password) == ["Supervisor"]
        with TestClient(app, base_url="http://127.0.0.1") as client:
            client.auth = ("system", password)
            types = client.get("/api/metamodel/types").json()
        assert len(types) == 14


def test_init_with_an_admin_password_prints_none(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BLOCKREPO_ADMIN_PASSWORD", "chosen-admin-password")
    result = run("init", "--database", empty_database_url)
    assert result.exit_code == 0, result.output
    assert generated_passwords(result) == []
    assert "chosen-admin-password" not in output_of(result)
    with app_on(empty_database_url) as app:
        assert basic(app, "system", "chosen-admin-password") == 200


def test_user_add_on_an_empty_database_seeds_it_first(empty_database_url: str) -> None:
    result = run("user", "add", "anna", "--password", "anna-password", "--database", empty_database_url)
    assert result.exit_code == 0, result.output
    [system_password] = generated_passwords(result)
    with app_on(empty_database_url) as app:
        assert basic(app, "system", system_password) == 200
        assert current_roles(app, "anna", "anna-password") == []


def test_user_add_supervisor_can_use_basic(empty_database_url: str) -> None:
    system_password = init(empty_database_url)
    result = run(
        "user", "add", "anna", "--password", "anna-password", "--supervisor", "--database", empty_database_url
    )
    assert result.exit_code == 0, result.output
    assert "created user 'anna'" in output_of(result)
    assert generated_passwords(result) == []
    with app_on(empty_database_url) as app:
        assert current_roles(app, "anna", "anna-password") == ["Supervisor"]
        assert basic(app, "anna", "wrong-password") == 401
        # A supervisor may administer users, and sees anna's creation recorded as done from the CLI.
        with TestClient(app, base_url="http://127.0.0.1") as anna:
            anna.auth = ("anna", "anna-password")
            logins = {user["login"] for user in anna.get("/api/administration/users").json()}
            assert logins == {"system", "anna"}
        assert basic(app, "system", system_password) == 200


def test_user_add_with_roles(empty_database_url: str) -> None:
    system_password = init(empty_database_url)
    with app_on(empty_database_url) as app, TestClient(app, base_url="http://127.0.0.1") as admin:
        admin.auth = ("system", system_password)
        for name in ("Readers", "Writers"):
            created = admin.post("/api/administration/roles", json={"name": name})
            assert created.status_code == 201, created.text
        result = run(
            "user", "add", "bob", "--password", "bob-password", "--role", "Readers", "--role", "Writers",
            "--database", empty_database_url,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert sorted(current_roles(app, "bob", "bob-password")) == ["Readers", "Writers"]

        unknown = run(
            "user", "add", "carl", "--password", "carl-password", "--role", "Nope",
            "--database", empty_database_url,
        )  # fmt: skip
        assert unknown.exit_code == 1
        assert "unknown role(s): Nope" in output_of(unknown)
        assert basic(app, "carl", "carl-password") == 401  # nothing was created


def test_user_add_asks_for_the_password_twice(empty_database_url: str) -> None:
    init(empty_database_url)
    result = run("user", "add", "anna", "--database", empty_database_url, input="typed-password\n" * 2)
    assert result.exit_code == 0, result.output
    with app_on(empty_database_url) as app:
        assert basic(app, "anna", "typed-password") == 200


@pytest.mark.parametrize(
    ("login", "password", "problem"),
    [
        ("anna", "other-password", "exists"),
        ("ANNA", "other-password", "exists"),  # logins are unique ignoring case, as in the API
        ("a:b", "long-enough", "login"),  # Basic (RFC 7617) cannot carry a ':' in the user id
        ("anna smith", "long-enough", "login"),
        ("bert", "short", "password"),
    ],
)
def test_user_add_refuses_what_the_api_refuses(
    empty_database_url: str, login: str, password: str, problem: str
) -> None:
    init(empty_database_url)
    assert (
        run("user", "add", "anna", "--password", "anna-password", "--database", empty_database_url).exit_code
        == 0
    )
    result = run("user", "add", login, "--password", password, "--database", empty_database_url)
    assert result.exit_code == 1, result.output
    assert problem in output_of(result)
    with app_on(empty_database_url) as app:
        assert basic(app, login, password) == 401
        assert basic(app, "anna", "anna-password") == 200


def test_user_passwd_replaces_the_password(empty_database_url: str) -> None:
    init(empty_database_url)
    assert (
        run("user", "add", "anna", "--password", "old-password", "--database", empty_database_url).exit_code
        == 0
    )
    with app_on(empty_database_url) as app:
        # Verified and cached by this app before the change, which happens in another process (the CLI).
        assert basic(app, "anna", "old-password") == 200
        result = run("user", "passwd", "anna", "--password", "new-password", "--database", empty_database_url)
        assert result.exit_code == 0, result.output
        assert "password of 'anna' changed" in output_of(result)
        assert basic(app, "anna", "old-password") == 401
        assert basic(app, "anna", "new-password") == 200
    with app_on(empty_database_url) as fresh:
        assert basic(fresh, "anna", "old-password") == 401
        assert basic(fresh, "anna", "new-password") == 200


def test_user_passwd_asks_twice_and_refuses_unknown_users_and_short_passwords(
    empty_database_url: str,
) -> None:
    init(empty_database_url)
    assert (
        run("user", "add", "anna", "--password", "old-password", "--database", empty_database_url).exit_code
        == 0
    )
    unknown = run("user", "passwd", "nobody", "--password", "new-password", "--database", empty_database_url)
    assert unknown.exit_code == 1
    assert "no user 'nobody'" in output_of(unknown)
    short = run("user", "passwd", "anna", "--password", "short", "--database", empty_database_url)
    assert short.exit_code == 1
    assert "password" in output_of(short)
    typed = run("user", "passwd", "anna", "--database", empty_database_url, input="typed-password\n" * 2)
    assert typed.exit_code == 0, typed.output
    with app_on(empty_database_url) as app:
        assert basic(app, "anna", "old-password") == 401
        assert basic(app, "anna", "short") == 401
        assert basic(app, "anna", "typed-password") == 200


def test_help_lists_the_commands() -> None:
    result = run("--help")
    assert result.exit_code == 0, result.output
    commands = set(re.findall(r"^[│ ]\s*(\w+)\s{2,}", output_of(result), flags=re.MULTILINE))
    assert {"serve", "init", "export", "import", "user"} <= commands
    user_help = run("user", "--help")
    assert user_help.exit_code == 0, user_help.output
    assert {"add", "passwd"} <= set(
        re.findall(r"^[│ ]\s*(\w+)\s{2,}", output_of(user_help), flags=re.MULTILINE)
    )
    for command in ("init", "serve", "export", "import"):
        assert run(command, "--help").exit_code == 0
