"""Login throttling (API.md §1 rule 4) and the optional per-user rate limit (§9), on the database store and
on Redis."""

from __future__ import annotations

import logging

import httpx
import pytest
from fastapi import FastAPI

from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.api.auth_support import PROTECTED, FakeClock, bare_client, cookie_value, form_login, install_clock
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import create_user

MAX_FAILURES = 3
MAX_FAILURES_PER_ADDRESS = 7
WINDOW = 60
ATTACKER = "203.0.113.66"


@pytest.fixture
def settings(database_url: str, auth_store: dict[str, str]) -> Settings:
    return make_settings(
        database_url,
        login_max_failures=MAX_FAILURES,
        login_max_failures_per_address=MAX_FAILURES_PER_ADDRESS,
        login_window=WINDOW,
        **auth_store,
    )


@pytest.fixture
def clock(app: FastAPI) -> FakeClock:
    return install_clock(app)


def basic(app: FastAPI, address: str, login: str, password: str) -> httpx.Response:
    return bare_client(app, address).get(PROTECTED, auth=(login, password))


def form(app: FastAPI, address: str, login: str, password: str) -> httpx.Response:
    return form_login(bare_client(app, address), login, password)


def fail(app: FastAPI, address: str, login: str, times: int) -> None:
    for _ in range(times):
        assert form(app, address, login, "wrong").status_code == 401


def assert_throttled(response: httpx.Response, retry_after: int) -> None:
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == str(retry_after)
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "too_many_requests"
    assert "set-cookie" not in response.headers


def assert_logs_in(app: FastAPI, address: str, login: str = "system", password: str = ADMIN_PASSWORD) -> None:
    """Form login, HTTP Basic and the Basic login path all accept these credentials from this address."""
    assert form(app, address, login, password).status_code == 200
    assert basic(app, address, login, password).status_code == 200
    assert bare_client(app, address).head("/api/auth-scheme", auth=(login, password)).status_code == 200


# Rule 1.4, sentence by sentence.


def test_failures_are_counted_per_account_and_address_and_per_address(app: FastAPI, clock: FakeClock) -> None:
    """Rule 1.4: Failed logins are counted per (account, client address) and per address."""
    create_user(app, "anna", "anna-password")
    fail(app, ATTACKER, "anna", MAX_FAILURES - 1)
    fail(app, "10.0.0.2", "anna", 1)  # another pair: does not add to (anna, attacker)
    assert form(app, ATTACKER, "system", "wrong").status_code == 401  # another pair too
    fail(app, ATTACKER, "anna", 1)
    assert_throttled(form(app, ATTACKER, "anna", "anna-password"), WINDOW)
    # The attacker's address has MAX_FAILURES + 1 failures over two accounts; the rest of its own limit,
    # spread so that no further pair reaches MAX_FAILURES, refuses it for every account.
    for n in range(MAX_FAILURES_PER_ADDRESS - MAX_FAILURES - 2):
        assert form(app, ATTACKER, f"guess{n}", "wrong").status_code == 401
    assert form(app, ATTACKER, "system", "wrong").status_code == 401
    assert_throttled(form(app, ATTACKER, "system", ADMIN_PASSWORD), WINDOW)


def test_account_from_one_address_is_refused_whatever_the_password_until_retry_after(
    app: FastAPI, clock: FakeClock
) -> None:
    """Rule 1.4: After 10 failures for one account from one address within 5 minutes (configurable),
    that address gets 429 with Retry-After for that account, whatever the password."""
    for _ in range(MAX_FAILURES):
        assert form(app, ATTACKER, "system", "wrong").status_code == 401
        clock.advance(10)
    # The first failure leaves the window 60 s after it, 30 s after now.
    assert_throttled(form(app, ATTACKER, "system", ADMIN_PASSWORD), WINDOW - 30)
    assert_throttled(form(app, ATTACKER, "system", "wrong"), WINDOW - 30)
    assert_throttled(basic(app, ATTACKER, "system", ADMIN_PASSWORD), WINDOW - 30)
    assert_throttled(bare_client(app, ATTACKER).get("/api/auth-scheme", auth=("system", "x")), WINDOW - 30)
    clock.advance(WINDOW - 30)
    assert form(app, ATTACKER, "system", ADMIN_PASSWORD).status_code == 200


def test_failures_out_of_the_window_or_below_the_limit_do_not_throttle(
    app: FastAPI, clock: FakeClock
) -> None:
    fail(app, ATTACKER, "system", MAX_FAILURES - 1)
    assert form(app, ATTACKER, "system", ADMIN_PASSWORD).status_code == 200
    clock.advance(WINDOW)
    fail(app, ATTACKER, "system", MAX_FAILURES - 1)
    assert form(app, ATTACKER, "system", ADMIN_PASSWORD).status_code == 200


def test_address_is_refused_for_every_account_after_its_own_limit(app: FastAPI, clock: FakeClock) -> None:
    """Rule 1.4: After 100 failures from one address across accounts, that address gets 429 for every
    credential check."""
    for n in range(MAX_FAILURES_PER_ADDRESS):
        # Never MAX_FAILURES for one account: only the address limit is reached.
        assert form(app, ATTACKER, f"guess{n}", "wrong").status_code == 401
    assert_throttled(form(app, ATTACKER, "system", ADMIN_PASSWORD), WINDOW)
    assert_throttled(basic(app, ATTACKER, "system", ADMIN_PASSWORD), WINDOW)
    assert_throttled(bare_client(app, ATTACKER).get("/api/auth-scheme", auth=("anna", "x")), WINDOW)
    assert_throttled(form(app, ATTACKER, "someone-new", "x"), WINDOW)
    clock.advance(WINDOW)
    assert_logs_in(app, ATTACKER)


def test_failures_from_one_address_never_refuse_a_correct_login_from_another(
    app: FastAPI, clock: FakeClock
) -> None:
    """Rule 1.4: Nobody can lock anyone else out: failures from one address never refuse a correct login from
    another."""
    # The account limit from one address and the address limit, both reached by the attacker ...
    fail(app, ATTACKER, "system", MAX_FAILURES)
    for n in range(MAX_FAILURES_PER_ADDRESS - MAX_FAILURES):
        assert form(app, ATTACKER, f"guess{n}", "wrong").status_code == 401
    assert_throttled(form(app, ATTACKER, "system", ADMIN_PASSWORD), WINDOW)
    # ... and failures for the supervisor spread over many addresses (the attack that locked it out).
    for n in range(10):
        fail(app, f"10.9.0.{n}", "system", MAX_FAILURES)
    assert_logs_in(app, "198.51.100.20")


def test_failures_for_one_account_never_refuse_another_account(app: FastAPI, clock: FakeClock) -> None:
    """Rule 1.4: failures for one account never refuse another account (below the address limit)."""
    create_user(app, "anna", "anna-password")
    fail(app, ATTACKER, "anna", MAX_FAILURES)
    assert_throttled(form(app, ATTACKER, "anna", "anna-password"), WINDOW)
    assert_logs_in(app, ATTACKER, "system", ADMIN_PASSWORD)


def test_sessions_and_verified_basic_credentials_keep_working_during_an_attack(
    app: FastAPI, clock: FakeClock
) -> None:
    """Rule 1.4: A valid session cookie or already verified Basic credentials keep working during an attack,
    even one from the user's own address that throttles both the account and the address."""
    office = "192.0.2.10"
    session_cookie = f"JSESSIONID={cookie_value(form(app, office, 'system', ADMIN_PASSWORD), 'JSESSIONID')}"
    assert basic(app, office, "system", ADMIN_PASSWORD).status_code == 200  # verified: now cached
    fail(app, office, "system", MAX_FAILURES)
    for n in range(MAX_FAILURES_PER_ADDRESS - MAX_FAILURES):
        assert form(app, office, f"guess{n}", "wrong").status_code == 401
    assert_throttled(form(app, office, "system", "wrong"), WINDOW)
    assert_throttled(basic(app, office, "anna", "anna-password"), WINDOW)

    web = bare_client(app, office)
    assert web.get(PROTECTED, headers={"Cookie": session_cookie}).status_code == 200
    assert basic(app, office, "system", ADMIN_PASSWORD).status_code == 200
    # A browser that sends its Basic credentials along with the session cookie is not refused either.
    both = web.get(PROTECTED, headers={"Cookie": session_cookie}, auth=("system", "stale"))
    assert both.status_code == 200
    assert both.json()["login"] == "system"


def test_a_session_does_not_let_throttled_credentials_of_another_user_through(
    app: FastAPI, clock: FakeClock
) -> None:
    create_user(app, "anna", "anna-password")
    session_cookie = f"JSESSIONID={cookie_value(form(app, ATTACKER, 'anna', 'anna-password'), 'JSESSIONID')}"
    fail(app, ATTACKER, "system", MAX_FAILURES)
    refused = bare_client(app, ATTACKER).get(
        PROTECTED, headers={"Cookie": session_cookie}, auth=("system", ADMIN_PASSWORD)
    )
    assert_throttled(refused, WINDOW)


def test_unknown_users_are_verified_against_the_dummy_hash_and_counted(
    app: FastAPI, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 1.4: Unknown users cost the same time as known ones (verify against a dummy hash)."""
    passwords = app.state.services.passwords
    verified: list[str | None] = []
    original_verify = passwords.verify

    def counting_verify(password_hash: str | None, password: str) -> bool:
        verified.append(password_hash)
        return bool(original_verify(password_hash, password))

    monkeypatch.setattr(passwords, "verify", counting_verify)
    for _ in range(MAX_FAILURES):
        assert form(app, ATTACKER, "nobody", "guess").status_code == 401
    assert basic(app, ATTACKER, "nobody\x00", "guess").status_code == 401
    assert verified == [None] * (MAX_FAILURES + 1)  # each one paid for a (dummy) hash
    assert_throttled(form(app, ATTACKER, "nobody", "guess"), WINDOW)


def test_failures_and_refusals_are_logged_with_account_and_address(
    app: FastAPI, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """Rule 1.4: Failures are logged with the account and address."""
    with caplog.at_level(logging.WARNING, logger="blockrepo.auth"):
        fail(app, "10.0.0.7", "system", MAX_FAILURES)
        basic(app, "10.0.0.7", "system", ADMIN_PASSWORD)
    messages = [r.getMessage() for r in caplog.records if r.name == "blockrepo.auth"]
    assert messages[:MAX_FAILURES] == ["login failed for 'system' from 10.0.0.7 (form)"] * MAX_FAILURES
    assert messages[MAX_FAILURES].startswith(
        "login refused for 'system' from 10.0.0.7 (basic): too many failures"
    )
    assert ADMIN_PASSWORD not in caplog.text


def test_basic_and_form_failures_count_together(app: FastAPI, clock: FakeClock) -> None:
    assert basic(app, ATTACKER, "system", "wrong").status_code == 401
    assert form(app, ATTACKER, "system", "wrong").status_code == 401
    assert bare_client(app, ATTACKER).head("/api/auth-scheme", auth=("system", "wrong")).status_code == 401
    assert_throttled(form(app, ATTACKER, "system", ADMIN_PASSWORD), WINDOW)


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
    fail(app, ATTACKER, "system", MAX_FAILURES)
    assert len(verified) == MAX_FAILURES
    for _ in range(5):
        clock.advance(WINDOW / 10)
        assert form(app, ATTACKER, "system", "wrong").status_code == 429
    assert len(verified) == MAX_FAILURES
    clock.advance(WINDOW / 2)
    assert form(app, ATTACKER, "system", ADMIN_PASSWORD).status_code == 200


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
