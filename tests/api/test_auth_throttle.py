"""Login throttling (API.md §1 rule 4) and the optional per-user rate limit (§9), on the database store and
on Redis."""

from __future__ import annotations

import logging

import httpx
import pytest
from fastapi import FastAPI

from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.api.auth_support import PROTECTED, FakeClock, bare_client, form_login, install_clock
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import create_user

MAX_FAILURES = 3
WINDOW = 60


@pytest.fixture
def settings(database_url: str, auth_store: dict[str, str]) -> Settings:
    return make_settings(database_url, login_max_failures=MAX_FAILURES, login_window=WINDOW, **auth_store)


@pytest.fixture
def clock(app: FastAPI) -> FakeClock:
    return install_clock(app)


def basic(app: FastAPI, address: str, login: str, password: str) -> httpx.Response:
    return bare_client(app, address).get(PROTECTED, auth=(login, password))


def form(app: FastAPI, address: str, login: str, password: str) -> httpx.Response:
    return form_login(bare_client(app, address), login, password)


def assert_throttled(response: httpx.Response, retry_after: int) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == str(retry_after)
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "too_many_requests"
    assert "set-cookie" not in response.headers


def test_account_is_throttled_from_every_address(app: FastAPI, clock: FakeClock) -> None:
    for n in range(MAX_FAILURES):
        assert form(app, f"10.0.0.{n}", "system", "wrong").status_code == 401
        clock.advance(10)
    # The first failure leaves the window 60 s after it, 30 s after now.
    assert_throttled(form(app, "10.0.1.1", "system", ADMIN_PASSWORD), WINDOW - 30)
    assert_throttled(basic(app, "10.0.1.2", "system", ADMIN_PASSWORD), WINDOW - 30)
    assert_throttled(form(app, "10.0.1.3", "system", "wrong"), WINDOW - 30)
    clock.advance(WINDOW - 30)
    assert form(app, "10.0.1.1", "system", ADMIN_PASSWORD).status_code == 200


def test_address_is_throttled_for_every_account(app: FastAPI, clock: FakeClock) -> None:
    for n in range(MAX_FAILURES):
        assert form(app, "10.0.0.9", f"guess{n}", "wrong").status_code == 401
    assert_throttled(form(app, "10.0.0.9", "system", ADMIN_PASSWORD), WINDOW)
    assert_throttled(basic(app, "10.0.0.9", "system", ADMIN_PASSWORD), WINDOW)
    assert form(app, "10.0.0.10", "system", ADMIN_PASSWORD).status_code == 200
    clock.advance(WINDOW)
    assert form(app, "10.0.0.9", "system", ADMIN_PASSWORD).status_code == 200


def test_basic_and_form_failures_count_together(app: FastAPI, clock: FakeClock) -> None:
    assert basic(app, "10.0.0.1", "system", "wrong").status_code == 401
    assert form(app, "10.0.0.2", "system", "wrong").status_code == 401
    assert bare_client(app, "10.0.0.3").head("/api/auth-scheme", auth=("system", "wrong")).status_code == 401
    assert_throttled(form(app, "10.0.0.4", "system", ADMIN_PASSWORD), WINDOW)


def test_failures_below_the_limit_or_out_of_the_window_do_not_throttle(
    app: FastAPI, clock: FakeClock
) -> None:
    for _ in range(MAX_FAILURES - 1):
        assert form(app, "10.0.0.1", "system", "wrong").status_code == 401
    assert form(app, "10.0.0.1", "system", ADMIN_PASSWORD).status_code == 200
    clock.advance(WINDOW)
    for _ in range(MAX_FAILURES - 1):
        assert form(app, "10.0.0.1", "system", "wrong").status_code == 401
    assert form(app, "10.0.0.1", "system", ADMIN_PASSWORD).status_code == 200


def test_refused_attempts_are_not_verified_and_do_not_extend_the_cool_down(
    app: FastAPI, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    passwords = app.state.services.passwords
    verified: list[str | None] = []
    original_verify = passwords.verify

    def counting_verify(password_hash: str | None, password: str) -> bool:
        verified.append(password_hash)
        return bool(original_verify(password_hash, password))

    monkeypatch.setattr(passwords, "verify", counting_verify)
    for _ in range(MAX_FAILURES):
        assert form(app, "10.0.0.1", "system", "wrong").status_code == 401
    assert len(verified) == MAX_FAILURES
    for _ in range(5):
        clock.advance(WINDOW / 10)
        assert form(app, "10.0.0.1", "system", "wrong").status_code == 429
    assert len(verified) == MAX_FAILURES
    clock.advance(WINDOW / 2)
    assert form(app, "10.0.0.1", "system", ADMIN_PASSWORD).status_code == 200


def test_unknown_users_are_verified_against_the_dummy_hash_and_counted(
    app: FastAPI, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    passwords = app.state.services.passwords
    verified: list[str | None] = []
    original_verify = passwords.verify

    def counting_verify(password_hash: str | None, password: str) -> bool:
        verified.append(password_hash)
        return bool(original_verify(password_hash, password))

    monkeypatch.setattr(passwords, "verify", counting_verify)
    for _ in range(MAX_FAILURES):
        assert form(app, "10.0.0.1", "nobody", "guess").status_code == 401
    assert verified == [None] * MAX_FAILURES  # each one paid for a (dummy) hash
    assert_throttled(form(app, "10.0.0.2", "nobody", "guess"), WINDOW)


def test_failures_and_refusals_are_logged(
    app: FastAPI, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="blockrepo.auth"):
        for _ in range(MAX_FAILURES):
            form(app, "10.0.0.7", "system", "wrong")
        basic(app, "10.0.0.7", "system", ADMIN_PASSWORD)
    messages = [r.getMessage() for r in caplog.records if r.name == "blockrepo.auth"]
    assert messages[:MAX_FAILURES] == ["login failed for 'system' from 10.0.0.7 (form)"] * MAX_FAILURES
    assert messages[MAX_FAILURES].startswith(
        "login refused for 'system' from 10.0.0.7 (basic): too many failures"
    )
    assert ADMIN_PASSWORD not in caplog.text


def test_sessions_keep_working_while_the_account_cools_down(app: FastAPI, clock: FakeClock) -> None:
    """Throttling guards password checks; a session already established is not a password check."""
    web = bare_client(app, "10.0.0.1")
    response = form_login(web)
    session_cookie = response.headers["set-cookie"].split(";", 1)[0]
    for _ in range(MAX_FAILURES):
        form(app, "10.0.0.2", "system", "wrong")
    assert web.get(PROTECTED, headers={"Cookie": session_cookie}).status_code == 200


# --- per-user rate limit ------------------------------------------------------------------------------


def test_rate_limit_is_off_by_default(app: FastAPI) -> None:
    assert app.state.services.auth.rate_limiter is None
    web = bare_client(app)
    assert {web.get(PROTECTED, auth=("system", ADMIN_PASSWORD)).status_code for _ in range(20)} == {200}


def test_rate_limit_answers_429_with_retry_after(database_url: str, auth_store: dict[str, str]) -> None:
    app = create_app(make_settings(database_url, rate_limit=0.5, **auth_store))
    try:
        clock = install_clock(app)
        clock.now = 1_000_000_000.5  # 0.5 s into a 2-second window
        web = bare_client(app)
        assert web.get(PROTECTED, auth=("system", ADMIN_PASSWORD)).status_code == 200
        limited = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD))
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "2"  # ceil(1.5)
        assert limited.json()["code"] == "too_many_requests"
        clock.advance(1.5)
        assert web.get(PROTECTED, auth=("system", ADMIN_PASSWORD)).status_code == 200
    finally:
        app.state.services.dispose()


def test_rate_limit_counts_each_user_apart(database_url: str, auth_store: dict[str, str]) -> None:
    app = create_app(make_settings(database_url, rate_limit=3, **auth_store))
    try:
        create_user(app, "anna", "anna-password")
        clock = install_clock(app)
        clock.now = 2_000_000_000.0
        web = bare_client(app)
        assert [web.get(PROTECTED, auth=("system", ADMIN_PASSWORD)).status_code for _ in range(4)] == [
            200,
            200,
            200,
            429,
        ]
        assert web.get(PROTECTED, auth=("anna", "anna-password")).status_code == 200
    finally:
        app.state.services.dispose()
