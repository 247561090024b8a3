"""CSRF cookie-to-header protection (API.md §1 rule 3), on the database store and on Redis."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.api.auth_support import bare_client, cookie_value, form_login, logged_in, session_headers
from tests.conftest import ADMIN_PASSWORD, make_settings

ELEMENTS = "/api/element/BusinessProcess"


@pytest.fixture
def settings(database_url: str, auth_store: dict[str, str]) -> Settings:
    return make_settings(database_url, **auth_store)


@pytest.fixture
def web(app: FastAPI) -> TestClient:
    return bare_client(app)


@pytest.fixture
def element_id(client: TestClient) -> int:
    response = client.post(ELEMENTS, json={"name": ["Order handling"]})
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def modify(web: TestClient, method: str, element_id: int, headers: dict[str, str]) -> int:
    """One modifying request of each kind; the status it gets."""
    if method == "POST":
        return web.post(ELEMENTS, json={"name": ["Invoicing"]}, headers=headers).status_code
    if method == "DELETE":
        return web.delete(f"{ELEMENTS}/{element_id}", headers=headers).status_code
    body = {"description": [f"changed by {method}"]}
    return web.request(method, f"{ELEMENTS}/{element_id}", json=body, headers=headers).status_code


OK = {"POST": 201, "PUT": 200, "PATCH": 200, "DELETE": 204}
METHODS = sorted(OK)


@pytest.mark.parametrize("method", METHODS)
def test_modifying_request_with_session_cookie_alone_is_403_missing(
    web: TestClient, element_id: int, method: str
) -> None:
    session_id, _ = logged_in(web)
    response = web.request(
        method,
        ELEMENTS if method == "POST" else f"{ELEMENTS}/{element_id}",
        json={"name": ["Invoicing"]} if method == "POST" else {"description": ["x"]},
        headers=session_headers(session_id),
    )
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "csrf_token_missing"
    assert body["requestId"] == response.headers["x-request-id"]


@pytest.mark.parametrize("method", METHODS)
def test_modifying_request_with_the_token_succeeds(web: TestClient, element_id: int, method: str) -> None:
    session_id, token = logged_in(web)
    assert modify(web, method, element_id, session_headers(session_id, token)) == OK[method]


@pytest.mark.parametrize("method", METHODS)
def test_wrong_token_is_403_invalid(web: TestClient, element_id: int, method: str) -> None:
    session_id, token = logged_in(web)
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
    response = web.request(
        method,
        f"{ELEMENTS}/{element_id}",
        json={"description": ["x"]},
        headers=session_headers(session_id, wrong),
    )
    assert response.status_code == 403
    assert response.json()["code"] == "csrf_token_invalid"


def test_token_of_another_session_is_invalid(web: TestClient, element_id: int) -> None:
    first, first_token = logged_in(web)
    second, second_token = logged_in(web)
    assert first_token != second_token
    for session_id, token in ((first, second_token), (second, first_token)):
        response = web.put(
            f"{ELEMENTS}/{element_id}",
            json={"description": ["x"]},
            headers=session_headers(session_id, token),
        )
        assert response.status_code == 403
        assert response.json()["code"] == "csrf_token_invalid"


def test_a_rejected_request_changes_nothing(web: TestClient, client: TestClient, element_id: int) -> None:
    session_id, _ = logged_in(web)
    before = client.get(f"{ELEMENTS}/{element_id}").json()
    response = web.put(
        f"{ELEMENTS}/{element_id}", json={"description": ["forged"]}, headers=session_headers(session_id)
    )
    assert response.status_code == 403
    assert client.get(f"{ELEMENTS}/{element_id}").json() == before


def test_non_ascii_token_is_invalid_not_an_error(web: TestClient, element_id: int) -> None:
    session_id, _ = logged_in(web)
    headers: dict[str, str | bytes] = {
        "Cookie": f"JSESSIONID={session_id}",
        "X-XSRF-TOKEN": "t\u00f6ken".encode(),
    }
    response = web.put(f"{ELEMENTS}/{element_id}", json={"description": ["x"]}, headers=headers)
    assert response.status_code == 403
    assert response.json()["code"] == "csrf_token_invalid"


def test_empty_token_header_counts_as_missing(web: TestClient, element_id: int) -> None:
    session_id, _ = logged_in(web)
    headers = {"Cookie": f"JSESSIONID={session_id}", "X-XSRF-TOKEN": ""}
    response = web.put(f"{ELEMENTS}/{element_id}", json={"description": ["x"]}, headers=headers)
    assert response.json()["code"] == "csrf_token_missing"


def test_the_token_stays_valid_for_the_session(web: TestClient, element_id: int) -> None:
    session_id, token = logged_in(web)
    for n in range(5):
        response = web.put(
            f"{ELEMENTS}/{element_id}",
            json={"description": [f"v{n}"]},
            headers=session_headers(session_id, token),
        )
        assert response.status_code == 200
        assert "set-cookie" not in response.headers


def test_login_rotates_the_token(web: TestClient, element_id: int) -> None:
    old_session, old_token = logged_in(web)
    response = form_login(web, headers=session_headers(old_session, old_token))
    new_session, new_token = cookie_value(response, "JSESSIONID"), cookie_value(response, "XSRF-TOKEN")
    assert new_token != old_token
    stale = web.put(
        f"{ELEMENTS}/{element_id}",
        json={"description": ["x"]},
        headers=session_headers(new_session, old_token),
    )
    assert stale.json()["code"] == "csrf_token_invalid"
    fresh = web.put(
        f"{ELEMENTS}/{element_id}",
        json={"description": ["x"]},
        headers=session_headers(new_session, new_token),
    )
    assert fresh.status_code == 200


def test_reading_needs_no_token(web: TestClient, element_id: int) -> None:
    session_id, _ = logged_in(web)
    headers = session_headers(session_id)
    assert web.get(f"{ELEMENTS}/{element_id}", headers=headers).status_code == 200
    assert web.head(f"{ELEMENTS}/{element_id}", headers=headers).status_code in (200, 405)
    assert web.options(f"{ELEMENTS}/{element_id}", headers=headers).status_code != 403


@pytest.mark.parametrize("method", METHODS)
def test_credentials_in_the_same_request_are_exempt(web: TestClient, element_id: int, method: str) -> None:
    session_id, _ = logged_in(web)
    headers = session_headers(session_id)
    status = web.request(
        method,
        ELEMENTS if method == "POST" else f"{ELEMENTS}/{element_id}",
        json={"name": ["Invoicing"]} if method == "POST" else {"description": ["x"]},
        headers=headers,
        auth=("system", ADMIN_PASSWORD),
    ).status_code
    assert status == OK[method]


def test_login_post_is_exempt(web: TestClient) -> None:
    session_id, _ = logged_in(web)
    response = form_login(web, headers=session_headers(session_id))
    assert response.status_code == 200


def test_logout_with_a_session_needs_the_token(web: TestClient) -> None:
    session_id, token = logged_in(web)
    refused = web.post("/j_service_logout", headers=session_headers(session_id))
    assert refused.status_code == 403
    assert refused.json()["code"] == "csrf_token_missing"
    assert web.get("/api/j_service_security_check", headers=session_headers(session_id)).status_code == 200
    assert web.post("/j_service_logout", headers=session_headers(session_id, token)).status_code == 204


def test_the_token_cookie_alone_authenticates_nothing(web: TestClient, element_id: int) -> None:
    _, token = logged_in(web)
    response = web.put(
        f"{ELEMENTS}/{element_id}",
        json={"description": ["x"]},
        headers={"Cookie": f"XSRF-TOKEN={token}", "X-XSRF-TOKEN": token},
    )
    assert response.status_code == 401


def test_csrf_off_lets_the_cookie_alone_modify(database_url: str, auth_store: dict[str, str]) -> None:
    app = create_app(make_settings(database_url, csrf_enabled=False, **auth_store))
    try:
        web = bare_client(app)
        assert web.get("/api/auth-scheme").json()["csrfEnabled"] is False
        response = form_login(web)
        assert response.status_code == 200
        assert "XSRF-TOKEN" not in response.headers.get("set-cookie", "")
        session_id = cookie_value(response, "JSESSIONID")
        created = web.post(ELEMENTS, json={"name": ["Invoicing"]}, headers=session_headers(session_id))
        assert created.status_code == 201
        element = created.json()["id"][0]
        for method in ("PUT", "PATCH"):
            updated = web.request(
                method,
                f"{ELEMENTS}/{element}",
                json={"description": [method]},
                headers=session_headers(session_id),
            )
            assert updated.status_code == 200
        assert web.delete(f"{ELEMENTS}/{element}", headers=session_headers(session_id)).status_code == 204
        assert web.post("/j_service_logout", headers=session_headers(session_id)).status_code == 204
    finally:
        app.state.services.dispose()
