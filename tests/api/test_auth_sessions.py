"""Sessions (API.md §1 rules 0-2): auth scheme, form and Basic login, cookies, expiry, fixation, logout,
on the database store and on Redis."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from sqlalchemy import update
from starlette.testclient import TestClient

from blockrepo.access.models import User
from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.api.auth_support import (
    PROTECTED,
    FakeClock,
    bare_client,
    cookie_value,
    form_login,
    install_clock,
    logged_in,
    session_headers,
    set_cookies,
)
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import count_queries, create_user, session_of

IDLE = 300
MAX_AGE = 3600
TOUCH = 5
SESSION_COOKIE = re.compile(r"^JSESSIONID=([A-Za-z0-9_-]{43}); Path=/; HttpOnly; SameSite=Lax$")
CSRF_COOKIE = re.compile(r"^XSRF-TOKEN=([A-Za-z0-9_-]{43}); Path=/; SameSite=Lax$")


@pytest.fixture
def settings(database_url: str, auth_store: dict[str, str]) -> Settings:
    return make_settings(
        database_url,
        session_idle_timeout=IDLE,
        session_max_age=MAX_AGE,
        session_touch_interval=TOUCH,
        **auth_store,
    )


@pytest.fixture
def clock(app: FastAPI) -> FakeClock:
    return install_clock(app)


@pytest.fixture
def web(app: FastAPI, clock: FakeClock) -> TestClient:
    return bare_client(app)


def whoami(web: TestClient, session_id: str) -> int:
    return web.get(PROTECTED, headers=session_headers(session_id)).status_code


# --- auth scheme --------------------------------------------------------------------------------------


def test_auth_scheme_is_public_and_sets_no_cookie_without_credentials(web: TestClient) -> None:
    response = web.get("/api/auth-scheme")
    assert response.status_code == 200
    assert response.json() == {
        "scheme": "basic",
        "formLogin": "/j_service_security_check",
        "csrfEnabled": True,
        "apiVersion": "7.4",
    }
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_auth_scheme_with_credentials_sets_both_cookies(web: TestClient, method: str) -> None:
    response = web.request(method, "/api/auth-scheme", auth=("system", ADMIN_PASSWORD))
    assert response.status_code == 200
    cookies = set_cookies(response)
    assert SESSION_COOKIE.match(cookies["JSESSIONID"]), cookies
    assert CSRF_COOKIE.match(cookies["XSRF-TOKEN"]), cookies
    assert whoami(web, cookie_value(response, "JSESSIONID")) == 200


def test_auth_scheme_with_wrong_credentials_is_401(web: TestClient) -> None:
    response = web.head("/api/auth-scheme", auth=("system", "wrong"))
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Basic realm="blockrepo", charset="UTF-8"'
    assert "set-cookie" not in response.headers


# --- form login --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/j_service_security_check", "/api/j_service_security_check"])
def test_form_login_starts_a_session_that_authenticates_alone(web: TestClient, path: str) -> None:
    response = form_login(web, path=path)
    assert response.status_code == 200
    assert response.json() == {"user": "system"}
    cookies = set_cookies(response)
    assert SESSION_COOKIE.match(cookies["JSESSIONID"])
    assert CSRF_COOKIE.match(cookies["XSRF-TOKEN"])
    session_id = cookie_value(response, "JSESSIONID")
    me = web.get(PROTECTED, headers=session_headers(session_id))
    assert me.status_code == 200
    assert me.json()["login"] == "system"
    assert "set-cookie" not in me.headers  # the session is reused, not renewed


def test_form_login_accepts_multipart(web: TestClient) -> None:
    response = web.post(
        "/j_service_security_check",
        files={"j_username": (None, "system"), "j_password": (None, ADMIN_PASSWORD)},
    )
    assert response.status_code == 200
    assert response.json() == {"user": "system"}


def test_form_login_with_wrong_password_is_401_without_cookie(web: TestClient) -> None:
    response = form_login(web, password="wrong")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert "set-cookie" not in response.headers


def test_form_login_of_unknown_user_is_401(web: TestClient) -> None:
    assert form_login(web, login="nobody", password="x").status_code == 401


def test_form_login_without_fields_is_400(web: TestClient) -> None:
    response = web.post("/j_service_security_check", data={"j_username": "system"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_failed"
    assert [e["pointer"] for e in body["errors"]] == ["/j_password"]


def test_form_login_with_json_is_415(web: TestClient) -> None:
    response = web.post("/j_service_security_check", json={"j_username": "system", "j_password": "x"})
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


def test_disabled_user_cannot_log_in(app: FastAPI, web: TestClient) -> None:
    create_user(app, "anna", "anna-password")
    with session_of(app) as db:
        db.execute(update(User).where(User.login == "anna").values(enabled=False))
    assert form_login(web, "anna", "anna-password").status_code == 401


# --- Basic login and Basic on any endpoint -------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_basic_login_path_sets_the_cookies(web: TestClient, method: str) -> None:
    response = web.request(method, "/api/j_service_security_check", auth=("system", ADMIN_PASSWORD))
    assert response.status_code == 200
    assert set(set_cookies(response)) == {"JSESSIONID", "XSRF-TOKEN"}
    assert whoami(web, cookie_value(response, "JSESSIONID")) == 200


def test_basic_login_path_without_credentials_is_401(web: TestClient) -> None:
    response = web.get("/api/j_service_security_check")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Basic")


def test_basic_login_path_with_a_session_only_names_its_user(web: TestClient) -> None:
    session_id, _ = logged_in(web)
    response = web.get("/api/j_service_security_check", headers=session_headers(session_id))
    assert response.status_code == 200
    assert response.json() == {"user": "system"}
    assert "set-cookie" not in response.headers


def test_basic_request_without_session_starts_one(web: TestClient) -> None:
    response = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD))
    assert response.status_code == 200
    assert SESSION_COOKIE.match(set_cookies(response)["JSESSIONID"])
    assert whoami(web, cookie_value(response, "JSESSIONID")) == 200


def test_basic_request_with_own_valid_session_keeps_it(web: TestClient) -> None:
    session_id, _ = logged_in(web)
    response = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD), headers=session_headers(session_id))
    assert response.status_code == 200
    assert "set-cookie" not in response.headers
    assert whoami(web, session_id) == 200


def test_credentials_of_another_user_win_over_the_cookie(app: FastAPI, web: TestClient) -> None:
    create_user(app, "anna", "anna-password", roles=["Supervisor"])
    system_session, _ = logged_in(web)
    response = web.get(PROTECTED, auth=("anna", "anna-password"), headers=session_headers(system_session))
    assert response.status_code == 200
    assert response.json()["login"] == "anna"
    anna_session = cookie_value(response, "JSESSIONID")
    assert anna_session != system_session
    assert web.get(PROTECTED, headers=session_headers(anna_session)).json()["login"] == "anna"
    # The replaced session is gone, so the old cookie cannot be mixed up with the new user's.
    assert whoami(web, system_session) == 401


def test_wrong_credentials_with_a_valid_cookie_are_401(web: TestClient) -> None:
    session_id, _ = logged_in(web)
    response = web.get(PROTECTED, auth=("system", "wrong"), headers=session_headers(session_id))
    assert response.status_code == 401


def test_empty_authorization_header_is_no_credentials(web: TestClient) -> None:
    session_id, _ = logged_in(web)
    assert web.get(PROTECTED, headers={**session_headers(session_id), "Authorization": ""}).status_code == 200
    assert web.get(PROTECTED, headers={"Authorization": ""}).json()["detail"] == "authentication required"


def test_unknown_cookie_is_treated_as_absent(web: TestClient) -> None:
    forged = "A" * 43
    response = web.get(PROTECTED, headers=session_headers(forged))
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    with_basic = web.get(PROTECTED, auth=("system", ADMIN_PASSWORD), headers=session_headers(forged))
    assert with_basic.status_code == 200
    assert cookie_value(with_basic, "JSESSIONID") != forged


def test_malformed_cookie_is_treated_as_absent(web: TestClient) -> None:
    assert web.get(PROTECTED, headers={"Cookie": "JSESSIONID=..%%;;"}).status_code == 401


def test_session_ids_are_random_and_distinct(web: TestClient) -> None:
    ids = {logged_in(web)[0] for _ in range(20)}
    assert len(ids) == 20
    assert all(SESSION_COOKIE.match(f"JSESSIONID={i}; Path=/; HttpOnly; SameSite=Lax") for i in ids)


def test_secure_flag_when_configured(database_url: str, auth_store: dict[str, str]) -> None:
    app = create_app(make_settings(database_url, cookie_secure=True, **auth_store))
    with bare_client(app) as web:
        cookies = set_cookies(form_login(web))
    app.state.services.dispose()
    assert cookies["JSESSIONID"].endswith("; HttpOnly; SameSite=Lax; Secure")
    assert cookies["XSRF-TOKEN"].endswith("; SameSite=Lax; Secure")
    assert "HttpOnly" not in cookies["XSRF-TOKEN"]


# --- fixation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/j_service_security_check"),
        ("POST", "/api/j_service_security_check"),
        ("GET", "/api/j_service_security_check"),
        ("HEAD", "/api/j_service_security_check"),
        ("GET", "/api/auth-scheme"),
        ("HEAD", "/api/auth-scheme"),
    ],
)
def test_login_never_keeps_an_id_sent_before_it(web: TestClient, method: str, path: str) -> None:
    before, before_token = logged_in(web)
    planted = "P" * 43  # an id an attacker chose and planted in the victim's browser
    for sent in (before, planted):
        if method == "POST":
            response = form_login(web, path=path, headers=session_headers(sent))
        else:
            response = web.request(
                method, path, auth=("system", ADMIN_PASSWORD), headers=session_headers(sent)
            )
        assert response.status_code == 200
        after = cookie_value(response, "JSESSIONID")
        assert after not in (before, planted)
        assert cookie_value(response, "XSRF-TOKEN") != before_token
        assert whoami(web, after) == 200
    assert whoami(web, before) == 401  # the pre-login session ended
    assert whoami(web, planted) == 401


# --- expiry -------------------------------------------------------------------------------------------


def test_idle_session_expires(web: TestClient, clock: FakeClock) -> None:
    session_id, _ = logged_in(web)
    clock.advance(IDLE - 1)
    assert whoami(web, session_id) == 200
    clock.advance(IDLE + 1)
    assert whoami(web, session_id) == 401
    clock.advance(-IDLE)  # expired sessions are deleted, not just refused
    assert whoami(web, session_id) == 401


def test_activity_keeps_a_session_alive_past_the_idle_timeout(web: TestClient, clock: FakeClock) -> None:
    session_id, _ = logged_in(web)
    for _ in range(5):
        clock.advance(IDLE * 0.6)
        assert whoami(web, session_id) == 200


def test_idle_expiry_is_on_time_within_the_touch_slack(web: TestClient, clock: FakeClock) -> None:
    """A request within TOUCH seconds of the last write-back is not written back, so a session may end
    up to TOUCH seconds early, never late."""
    early, _ = logged_in(web)
    late, _ = logged_in(web)
    clock.advance(TOUCH - 1)
    assert whoami(web, early) == 200  # neither request is written back
    assert whoami(web, late) == 200
    clock.advance(IDLE - TOUCH)  # the last request was IDLE - TOUCH ago: still valid
    assert whoami(web, early) == 200
    clock.advance(TOUCH)  # the last request was IDLE ago: expired, not a moment later
    assert whoami(web, late) == 401


def test_the_current_user_tells_a_session_its_idle_timeout(web: TestClient) -> None:
    """The web interface learns from it how often an open edit form shows activity (issue 27); Basic
    credentials keep no session alive, so they get null."""
    session_id, _ = logged_in(web)
    assert web.get(PROTECTED, headers=session_headers(session_id)).json()["sessionIdleTimeout"] == IDLE
    assert web.get(PROTECTED, auth=("system", ADMIN_PASSWORD)).json()["sessionIdleTimeout"] is None


def test_the_keep_alive_request_renews_a_session(web: TestClient, clock: FakeClock) -> None:
    """What an open edit form sends while its user works: it names the user and renews the session."""
    session_id, _ = logged_in(web)
    for _ in range(5):
        clock.advance(IDLE * 0.6)
        response = web.get("/api/j_service_security_check", headers=session_headers(session_id))
        assert response.status_code == 200 and response.json() == {"user": "system"}
    assert whoami(web, session_id) == 200


def test_absolute_lifetime_ends_an_active_session(web: TestClient, clock: FakeClock) -> None:
    session_id, _ = logged_in(web)
    elapsed = 0.0
    while elapsed + IDLE / 2 < MAX_AGE:
        clock.advance(IDLE / 2)
        elapsed += IDLE / 2
        assert whoami(web, session_id) == 200
    clock.advance(MAX_AGE - elapsed)
    assert whoami(web, session_id) == 401


def test_session_lookup_touches_the_store_at_most_once_per_interval(
    app: FastAPI, web: TestClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = app.state.services.auth.sessions.store
    touches: list[float] = []
    original_touch = store.touch

    def counting_touch(session: object, last_seen_at: float, expires_at: float) -> None:
        touches.append(last_seen_at)
        original_touch(session, last_seen_at, expires_at)

    monkeypatch.setattr(store, "touch", counting_touch)
    session_id, _ = logged_in(web)
    for _ in range(10):
        clock.advance(TOUCH / 20)
        assert whoami(web, session_id) == 200
    assert touches == []
    clock.advance(TOUCH)
    assert whoami(web, session_id) == 200
    assert whoami(web, session_id) == 200
    assert touches == [pytest.approx(clock.now, abs=1e-6)]


def test_database_session_lookup_is_one_read(
    app: FastAPI, web: TestClient, clock: FakeClock, auth_store: dict[str, str]
) -> None:
    if auth_store:
        pytest.skip("counts SQL statements of the database store")
    session_id, _ = logged_in(web)
    with count_queries(app.state.services.engine) as counter:
        clock.advance(0.1)
        assert web.get("/api/auth-scheme", headers=session_headers(session_id)).status_code == 200
    # The session row and its user in one join; nothing written.
    assert [s for s in counter.statements if "auth_session" in s] == [
        next(s for s in counter.statements if s.startswith("SELECT") and "auth_session" in s)
    ]
    assert not [s for s in counter.statements if s.split()[0] in ("INSERT", "UPDATE", "DELETE")]


# --- the account changes ------------------------------------------------------------------------------


def test_disabling_the_user_ends_the_session(app: FastAPI, web: TestClient) -> None:
    create_user(app, "anna", "anna-password")
    session_id, _ = logged_in(web, "anna", "anna-password")
    assert whoami(web, session_id) == 200
    with session_of(app) as db:
        db.execute(
            update(User)
            .where(User.login == "anna")
            .values(enabled=False, credentials_version=User.credentials_version + 1)
        )
    assert whoami(web, session_id) == 401


def test_password_change_ends_the_session(app: FastAPI, web: TestClient) -> None:
    create_user(app, "anna", "anna-password")
    session_id, _ = logged_in(web, "anna", "anna-password")
    with session_of(app) as db:
        db.execute(
            update(User)
            .where(User.login == "anna")
            .values(
                password_hash=app.state.services.passwords.hash("new-password"),
                credentials_version=User.credentials_version + 1,
            )
        )
    assert whoami(web, session_id) == 401
    assert form_login(web, "anna", "new-password").status_code == 200


def test_cached_basic_credentials_of_a_disabled_user_start_no_session(app: FastAPI, web: TestClient) -> None:
    create_user(app, "anna", "anna-password")
    assert web.get(PROTECTED, auth=("anna", "anna-password")).status_code == 200  # now cached
    with session_of(app) as db:
        db.execute(
            update(User)
            .where(User.login == "anna")
            .values(enabled=False, credentials_version=User.credentials_version + 1)
        )
    response = web.get("/api/auth-scheme", auth=("anna", "anna-password"))
    assert response.status_code == 401
    assert "set-cookie" not in response.headers


# --- logout -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/j_service_logout", "/api/j_service_logout"])
def test_logout_ends_the_session_and_expires_both_cookies(web: TestClient, path: str) -> None:
    session_id, token = logged_in(web)
    response = web.post(path, headers=session_headers(session_id, token))
    assert response.status_code == 204
    cookies = set_cookies(response)
    assert cookies["JSESSIONID"].startswith("JSESSIONID=; Path=/; Max-Age=0;")
    assert cookies["XSRF-TOKEN"].startswith("XSRF-TOKEN=; Path=/; Max-Age=0;")
    after = web.get(PROTECTED, headers=session_headers(session_id))
    assert after.status_code == 401
    assert after.json()["code"] == "unauthenticated"


def test_logout_without_a_session_is_204(web: TestClient) -> None:
    assert web.post("/j_service_logout").status_code == 204
    assert web.post("/j_service_logout", headers=session_headers("Q" * 43)).status_code == 204


def test_logout_leaves_other_sessions_of_the_user(web: TestClient) -> None:
    first, first_token = logged_in(web)
    second, _ = logged_in(web)
    assert web.post("/j_service_logout", headers=session_headers(first, first_token)).status_code == 204
    assert whoami(web, first) == 401
    assert whoami(web, second) == 200


# --- the store fails ----------------------------------------------------------------------------------


def test_an_unreachable_store_gives_503_not_a_crash(database_url: str) -> None:
    app = create_app(make_settings(database_url, redis_url="redis://127.0.0.1:1/0"))
    try:
        web = bare_client(app)
        login = form_login(web)
        assert login.status_code == 503
        assert login.json()["code"] == "service_unavailable"
        with_cookie = web.get(PROTECTED, headers=session_headers("S" * 43))
        assert with_cookie.status_code == 503
        assert with_cookie.headers["content-type"] == "application/problem+json"
        assert web.get(PROTECTED, auth=("system", ADMIN_PASSWORD)).status_code == 503
        # Without credentials or cookie the store is never asked.
        assert web.get(PROTECTED).status_code == 401
        assert web.get("/api/auth-scheme").status_code == 200
    finally:
        app.state.services.dispose()
