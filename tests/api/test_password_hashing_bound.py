"""Bounded password hashing (API.md rule 1.5): past the permits a credential check gets 503 with Retry-After
at once, and requests with a session or cached credentials pass meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from argon2 import PasswordHasher
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.auth.passwords import available_cores, hash_permits
from tests.api.auth_support import PROTECTED, form_login, logged_in, session_headers
from tests.conftest import ADMIN_PASSWORD, make_settings

BASIC = ("system", ADMIN_PASSWORD)


class HashGate:
    """Holds every Argon2 verification until opened, and says when one is waiting."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.calls = 0
        self._verify = PasswordHasher.verify

    def verify(self, hasher: PasswordHasher, password_hash: str, password: str) -> bool:
        self.calls += 1
        self.entered.set()
        assert self.opened.wait(30), "the test never opened the gate"
        return self._verify(hasher, password_hash, password)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        # A plain function, so that it binds to the hasher like the method it replaces.
        def verify(hasher: PasswordHasher, password_hash: str, password: str) -> bool:
            return self.verify(hasher, password_hash, password)

        monkeypatch.setattr(PasswordHasher, "verify", verify)


@pytest.fixture
def app(database_url: str) -> Iterator[FastAPI]:
    application = create_app(make_settings(database_url, password_hash_concurrency=1))
    yield application
    application.state.services.dispose()


@pytest.fixture
def web(app: FastAPI) -> Iterator[TestClient]:
    """One client, usable from several threads (one event loop serves them all); it keeps no cookies."""
    with TestClient(app, base_url="http://127.0.0.1", client=("198.51.100.7", 40000)) as client:
        client.event_hooks = {"response": [lambda _response: client.cookies.clear()]}
        yield client


def test_past_the_permits_a_password_check_is_503_and_others_pass(
    web: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id, _ = logged_in(web)
    assert web.get(PROTECTED, auth=BASIC).status_code == 200  # verified once: cached from now on
    gate = HashGate()
    gate.install(monkeypatch)
    with ThreadPoolExecutor(1) as pool:
        holder = pool.submit(web.get, PROTECTED, auth=("system", "wrong password"))
        assert gate.entered.wait(30)
        try:
            for busy in (
                web.get(PROTECTED, auth=("anna", "another wrong password")),
                web.get("/api/auth-scheme", auth=("system", "a third one")),
                form_login(web, password="a fourth one"),
            ):
                assert busy.status_code == 503, busy.text
                assert busy.headers["content-type"] == "application/problem+json"
                assert busy.json()["code"] == "password_hashing_busy"
                assert int(busy.headers["Retry-After"]) >= 1
                assert "set-cookie" not in busy.headers
            # Neither a session nor credentials verified before need a hash: they are not held up.
            assert web.get(PROTECTED, headers=session_headers(session_id)).status_code == 200
            assert web.get(PROTECTED, auth=BASIC).status_code == 200
        finally:
            gate.opened.set()
        assert holder.result().status_code == 401
    assert gate.calls == 1  # the refused checks hashed nothing


def test_a_check_refused_as_busy_is_not_a_failed_login(
    app: FastAPI, web: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = HashGate()
    gate.install(monkeypatch)
    with ThreadPoolExecutor(1) as pool:
        holder = pool.submit(web.get, PROTECTED, auth=("anna", "wrong"))
        assert gate.entered.wait(30)
        try:
            for _ in range(app.state.settings.login_max_failures):
                assert web.get(PROTECTED, auth=("system", "wrong")).status_code == 503
        finally:
            gate.opened.set()
        holder.result()
    assert web.get(PROTECTED, auth=BASIC).status_code == 200


@pytest.mark.parametrize(("setting", "workers", "expected"), [(3, 4, 3), (0, 1, None), (0, 10_000, 1)])
def test_the_permits_default_to_the_cores_shared_among_the_workers(
    database_url: str, setting: int, workers: int, expected: int | None
) -> None:
    settings = make_settings(database_url, password_hash_concurrency=setting)
    assert hash_permits(settings, workers) == (available_cores() if expected is None else expected)


def test_a_new_users_password_is_hashed_while_every_check_permit_is_held(
    web: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creating a user hashes under the write lock: a flood of wrong passwords must not stall it."""
    assert web.get(PROTECTED, auth=BASIC).status_code == 200  # verified once: cached from now on
    gate = HashGate()
    gate.install(monkeypatch)
    with ThreadPoolExecutor(1) as pool:
        holder = pool.submit(web.get, PROTECTED, auth=("system", "wrong password"))
        assert gate.entered.wait(30)
        try:
            assert web.get(PROTECTED, auth=("anna", "another")).status_code == 503  # every permit held
            body = {"login": "newcomer", "password": "a fresh passphrase 42"}
            created = web.post("/api/administration/users", json=body, auth=BASIC)
            assert created.status_code == 201, created.text
            assert not holder.done()
        finally:
            gate.opened.set()
        assert holder.result().status_code == 401
