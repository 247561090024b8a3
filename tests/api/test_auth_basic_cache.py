"""API.md §1 rule 5: repeated Basic credentials must not pay for a hash again. Counted by wrapping the
password verification, with clients that keep no cookies (a session would otherwise stand in for the
cache). Each test also shows the cache at work (a repeat costs no hash), so none passes with it disabled."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.api.auth_support import PROTECTED, FakeClock, bare_client, form_login
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import create_user

USERS = "/api/administration/users"
TTL = 60


class HashCounter:
    """Counts calls of `Passwords.verify` of one app."""

    def __init__(self, app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        passwords = app.state.services.passwords
        original = passwords.verify

        def counting_verify(password_hash: str | None, password: str) -> bool:
            self.calls += 1
            return bool(original(password_hash, password))

        monkeypatch.setattr(passwords, "verify", counting_verify)

    def cost(self, app: FastAPI, login: str, password: str, expected_status: int = 200) -> int:
        """Hashes paid by one Basic request (from a client without cookies) that must answer as expected."""
        before = self.calls
        response = bare_client(app).get(PROTECTED, auth=(login, password))
        assert response.status_code == expected_status, response.text
        if expected_status == 200:
            assert response.json()["login"] == login
        return self.calls - before


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, credential_cache_ttl=TTL)


@pytest.fixture
def hashes(app: FastAPI, monkeypatch: pytest.MonkeyPatch) -> HashCounter:
    return HashCounter(app, monkeypatch)


@pytest.fixture
def other_app(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FastAPI, HashCounter]]:
    """A second app instance over the same database: another worker process, with a cache of its own."""
    application = create_app(settings)
    yield application, HashCounter(application, monkeypatch)
    application.state.services.dispose()


def test_identical_basic_requests_cost_one_hash(app: FastAPI, hashes: HashCounter) -> None:
    assert [hashes.cost(app, "system", ADMIN_PASSWORD) for _ in range(10)] == [1] + [0] * 9
    # Wrong passwords are never cached: each one is verified.
    assert [hashes.cost(app, "system", "wrong", 401) for _ in range(3)] == [1, 1, 1]
    assert hashes.cost(app, "system", ADMIN_PASSWORD) == 0


def test_a_form_login_fills_the_cache_for_basic(app: FastAPI, hashes: HashCounter) -> None:
    assert form_login(bare_client(app)).status_code == 200
    assert hashes.calls == 1
    assert hashes.cost(app, "system", ADMIN_PASSWORD) == 0


def test_a_new_hash_is_paid_after_the_ttl(app: FastAPI, hashes: HashCounter) -> None:
    clock = FakeClock()
    app.state.services.credentials.clock = clock
    assert hashes.cost(app, "system", ADMIN_PASSWORD) == 1
    clock.advance(TTL - 1)
    assert hashes.cost(app, "system", ADMIN_PASSWORD) == 0
    clock.advance(2)  # TTL + 1 after the verification: using the entry did not extend it
    assert hashes.cost(app, "system", ADMIN_PASSWORD) == 1
    assert hashes.cost(app, "system", ADMIN_PASSWORD) == 0
    clock.advance(TTL + 1)
    assert hashes.cost(app, "system", ADMIN_PASSWORD) == 1


def test_the_cache_is_bounded_and_drops_the_least_recently_used(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(make_settings(database_url, credential_cache_size=3))
    try:
        for n in range(1, 5):
            create_user(app, f"user{n}", f"password-{n}")
        hashes = HashCounter(app, monkeypatch)
        cache = app.state.services.credentials

        def cost(n: int) -> int:
            return hashes.cost(app, f"user{n}", f"password-{n}")

        assert [cost(1), cost(2), cost(3)] == [1, 1, 1]
        assert len(cache) == 3
        assert cost(1) == 0  # user1 is now the most recently used; user2 the least
        assert cost(4) == 1
        assert len(cache) == 3
        assert [cost(1), cost(3), cost(4)] == [0, 0, 0]
        assert cost(2) == 1  # it was evicted (and now user1, read longest ago, is)
        assert len(cache) == 3
        assert [cost(3), cost(4), cost(2)] == [0, 0, 0]
        assert cost(1) == 1
    finally:
        app.state.services.dispose()


def test_a_password_change_invalidates_the_cached_credentials(
    app: FastAPI, client: TestClient, hashes: HashCounter
) -> None:
    user_id = create_user(app, "anna", "old-password")
    assert hashes.cost(app, "anna", "old-password") == 1
    assert hashes.cost(app, "anna", "old-password") == 0  # cached
    changed = client.put(f"{USERS}/{user_id}", json={"password": "new-password"})
    assert changed.status_code == 200, changed.text
    # The entry is gone: the old password is verified again (against the new hash) and fails.
    assert hashes.cost(app, "anna", "old-password", 401) == 1
    assert hashes.cost(app, "anna", "new-password") == 1
    assert hashes.cost(app, "anna", "new-password") == 0


def test_a_password_change_in_another_process_rejects_its_cached_entry(
    app: FastAPI, client: TestClient, other_app: tuple[FastAPI, HashCounter]
) -> None:
    other, other_hashes = other_app
    user_id = create_user(app, "anna", "old-password")
    assert other_hashes.cost(other, "anna", "old-password") == 1
    assert other_hashes.cost(other, "anna", "old-password") == 0  # cached in the other process
    assert client.put(f"{USERS}/{user_id}", json={"password": "new-password"}).status_code == 200
    other_hashes.cost(other, "anna", "old-password", 401)
    assert other_hashes.cost(other, "anna", "new-password") == 1
    assert other_hashes.cost(other, "anna", "new-password") == 0


def test_credentials_valid_again_are_accepted_at_once_by_another_process(
    app: FastAPI, client: TestClient, other_app: tuple[FastAPI, HashCounter]
) -> None:
    """An entry cached before the user's credentials version moved is verified again, not rejected: a
    password changed and changed back, or an account disabled and enabled again, works in every process
    at once instead of failing there until the entry expires."""
    other, other_hashes = other_app
    user_id = create_user(app, "anna", "first-password")
    assert other_hashes.cost(other, "anna", "first-password") == 1
    assert other_hashes.cost(other, "anna", "first-password") == 0
    for change in ({"password": "second-password"}, {"password": "first-password"}):
        assert client.put(f"{USERS}/{user_id}", json=change).status_code == 200
    assert other_hashes.cost(other, "anna", "first-password") == 1
    assert other_hashes.cost(other, "anna", "first-password") == 0
    assert other_hashes.cost(other, "anna", "second-password", 401) == 1

    for enabled in (False, True):
        assert client.put(f"{USERS}/{user_id}", json={"enabled": enabled}).status_code == 200
    assert other_hashes.cost(other, "anna", "first-password") == 1
    assert other_hashes.cost(other, "anna", "first-password") == 0


def test_a_disabled_user_is_refused_although_cached_in_another_process(
    app: FastAPI, client: TestClient, other_app: tuple[FastAPI, HashCounter]
) -> None:
    other, other_hashes = other_app
    user_id = create_user(app, "anna", "first-password")
    assert other_hashes.cost(other, "anna", "first-password") == 1
    assert other_hashes.cost(other, "anna", "first-password") == 0
    assert client.put(f"{USERS}/{user_id}", json={"enabled": False}).status_code == 200
    other_hashes.cost(other, "anna", "first-password", 401)
    other_hashes.cost(other, "anna", "first-password", 401)


def test_cache_keys_are_keyed_digests_that_hold_no_password(app: FastAPI, hashes: HashCounter) -> None:
    password = "an-unmistakable-password-4711"
    create_user(app, "anna", password)
    assert hashes.cost(app, "anna", password) == 1
    assert hashes.cost(app, "anna", password) == 0
    cache = app.state.services.credentials
    entries = dict(cache._entries)
    assert len(entries) == 1
    [(digest, (_, principal))] = entries.items()
    assert digest == cache.digest("anna", password)
    assert len(digest) == 32 and password.encode() not in digest
    assert password not in repr(entries)
    assert principal.login == "anna" and principal.via == "basic"


def test_a_login_with_a_colon_cannot_be_confused_with_a_password_that_has_one(
    app: FastAPI, hashes: HashCounter
) -> None:
    """`svc:ops` + `secret-one` and `svc` + `ops:secret-one` must be different cache keys. Basic cannot carry
    a ':' in the user id (RFC 7617), so `svc:ops:secret-one` is user `svc`, whatever the form login of
    user `svc:ops` (created directly here; the API and the CLI refuse such logins) put into the cache."""
    create_user(app, "svc:ops", "secret-one")
    web = bare_client(app)
    assert form_login(web, "svc:ops", "secret-one").status_code == 200
    header = "Basic " + base64.b64encode(b"svc:ops:secret-one").decode()
    response = web.get(PROTECTED, headers={"Authorization": header})
    assert response.status_code == 401, response.text
