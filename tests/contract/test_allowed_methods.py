"""`OPTIONS` on any resource answers 204 and an unsupported method 405, both with `Allow` listing exactly the
methods the resource serves."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

ELEMENT = "/api/element/BusinessProcess/1"


@pytest.mark.parametrize(
    ("path", "allow"),
    [
        (ELEMENT, "GET, PUT, PATCH, DELETE, OPTIONS"),
        ("/api/element/BusinessProcess", "POST, OPTIONS"),
        ("/api/massdata/BusinessProcess", "GET, POST, DELETE, OPTIONS"),
        ("/api/massdata/query", "POST, OPTIONS"),
        ("/api/massdata/export", "GET, OPTIONS"),
        ("/api/administration/users/current", "GET, OPTIONS"),
        ("/api/auth-scheme", "GET, HEAD, OPTIONS"),
        ("/api/7_4/openapi.json", "GET, HEAD, OPTIONS"),
        ("/api/7_4/assets/swagger-ui.css", "GET, HEAD, OPTIONS"),
    ],
)
def test_options_answers_204_with_the_methods_of_the_resource(
    client: TestClient, path: str, allow: str
) -> None:
    response = client.options(path)
    assert response.status_code == 204
    assert response.headers["Allow"] == allow
    assert response.content == b""


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("POST", ELEMENT, "GET, PUT, PATCH, DELETE, OPTIONS"),
        ("GET", "/api/massdata/query", "POST, OPTIONS"),
        ("DELETE", "/api/massdata/export", "GET, OPTIONS"),
        ("PUT", "/api/administration/users/current", "GET, OPTIONS"),
        ("DELETE", "/api/metamodel", "GET, OPTIONS"),
    ],
)
def test_an_unsupported_method_gets_405_with_allow(
    client: TestClient, method: str, path: str, allow: str
) -> None:
    before = client.get("/api/history").json()
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["Allow"] == allow
    assert response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == "method_not_allowed"
    assert client.get("/api/history").json() == before


def test_options_on_a_path_nothing_serves_is_404(client: TestClient) -> None:
    assert client.options("/api/nothing-here").status_code == 404


def test_options_on_a_protected_resource_needs_authentication(anon: TestClient) -> None:
    assert anon.options(ELEMENT).status_code == 401
    assert anon.options("/api/auth-scheme").status_code == 204
