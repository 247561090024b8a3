"""Smoke tests of the shared layers: auth gate, problem+json, common headers."""

from __future__ import annotations

from starlette.testclient import TestClient


def test_unauthenticated_request_gets_401_with_challenge(anon: TestClient) -> None:
    response = anon.get("/api/element/BusinessProcess/1")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Basic realm="blockrepo", charset="UTF-8"'
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "unauthenticated"


def test_wrong_password_gets_401(anon: TestClient) -> None:
    response = anon.get("/api/element/BusinessProcess/1", auth=("system", "wrong"))
    assert response.status_code == 401


def test_unknown_path_is_problem_json(client: TestClient) -> None:
    response = client.get("/api/no-such-thing")
    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "not_found"
    assert body["requestId"] == response.headers["x-request-id"]
    assert response.headers["api-version"] == "7.4"


def test_request_id_is_echoed(client: TestClient) -> None:
    response = client.get("/api/no-such-thing", headers={"X-Request-ID": "abc-123"})
    assert response.headers["x-request-id"] == "abc-123"


def test_unsupported_api_version_is_400(client: TestClient) -> None:
    response = client.get("/api/no-such-thing", headers={"API-Version": "6.0"})
    assert response.status_code == 400
    assert response.json()["code"] == "unsupported_api_version"
    assert "7.4" in response.json()["detail"]
