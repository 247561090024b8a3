"""Headers by what a response is (issue 22, findings 8 and 14): every HTML page the application serves, at any
path, refuses framing and sniffing; every API answer is nosniff and private; redirects are relative
whatever `Host` the request names."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.testclient import TestClient

HOSTILE = {"Host": "evil.example"}


def served_paths(app: FastAPI) -> list[str]:
    """Every path a GET may reach without parameters: each parameterless route and every file of every
    static mount, read from the application's routes (a new page or mount is covered without a change)."""
    paths: list[str] = []
    for route in app.routes:
        if isinstance(route, Mount) and isinstance(route.app, StaticFiles):
            directory = Path(str(route.app.directory))
            paths += [
                f"{route.path}/{file.relative_to(directory).as_posix()}"
                for file in sorted(directory.rglob("*"))
                if file.is_file()
            ]
        elif isinstance(route, Route | APIRoute) and "{" not in route.path and "GET" in (route.methods or ()):
            paths.append(route.path)
    return paths


def test_every_html_page_at_any_path_has_the_page_headers(app: FastAPI, anon: TestClient) -> None:
    html: list[str] = []
    for path in served_paths(app):
        response = anon.get(path, follow_redirects=False)
        assert response.headers.get("x-content-type-options") == "nosniff", path
        if not response.headers.get("content-type", "").startswith("text/html"):
            continue
        html.append(path)
        policy = response.headers.get("content-security-policy", "")
        assert "frame-ancestors 'none'" in policy, path
        assert response.headers.get("referrer-policy"), path
        assert response.headers.get("x-frame-options") == "DENY", path
    # The enumeration reaches every kind of page: the interface at both of its paths, the API description
    # and the helper page bundled with Swagger UI.
    assert {"/", "/web/index.html", "/api/7_4/", "/api/7_4/assets/oauth2-redirect.html"} <= set(html)


def test_the_interface_works_the_same_at_its_second_path(anon: TestClient) -> None:
    front, second = anon.get("/"), anon.get("/web/index.html")
    assert second.status_code == 200 and second.content == front.content
    assert second.headers["content-security-policy"] == front.headers["content-security-policy"]


def test_every_api_answer_is_nosniff_and_private(anon: TestClient, client: TestClient) -> None:
    """Every operation of the published description, as nobody and as the supervisor."""
    answered = 0
    for template, operations in anon.get("/api/7_4/openapi.json").json()["paths"].items():
        path = re.sub(r"\{type\}", "BusinessProcess", template)
        path = re.sub(r"\{[^}]*\}", "1", path)
        for method in operations:
            if method.upper() not in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
                continue
            if (method, template) == ("get", "/api/history/stream"):
                # It never ends, so an in-process client never gets it: tests/e2e/test_change_stream_live.py.
                continue
            for caller in (anon, client):
                response = caller.request(method.upper(), path, follow_redirects=False)
                assert response.headers.get("x-content-type-options") == "nosniff", (method, path)
                assert response.headers.get("cache-control") == "private, no-cache", (method, path)
                assert response.headers.get("vary") == "Cookie, Authorization", (method, path)
                answered += 1
    assert answered > 50


def test_an_error_a_stream_and_an_unknown_path_are_nosniff(anon: TestClient, client: TestClient) -> None:
    for response in (
        anon.get("/api/element/BusinessProcess/1"),  # 401 from the authentication middleware
        client.get("/api/nowhere"),  # 404 from the router
        client.get("/api/massdata/BusinessProcess", headers={"Accept": "application/x-ndjson"}),
        client.get("/api/element/BusinessProcess/1", headers={"API-Version": "0.1"}),
    ):
        assert response.headers["x-content-type-options"] == "nosniff", response.request.url
        assert response.headers["cache-control"] == "private, no-cache", response.request.url


@pytest.mark.parametrize(
    ("path", "target"),
    [
        ("/api/openapi.json", "/api/7_4/openapi.json"),
        ("/api/7_4", "/api/7_4/"),
        ("/api/openapi.json/", "/api/openapi.json"),  # Starlette's trailing-slash redirect
        ("/api/auth-scheme/", "/api/auth-scheme"),
        ("/api/massdata/BusinessProcess/", "/api/massdata/BusinessProcess"),
        ("/api/7_4/openapi.json/?x=1", "/api/7_4/openapi.json?x=1"),
    ],
)
def test_redirects_are_relative_whatever_the_host(client: TestClient, path: str, target: str) -> None:
    response = client.get(path, headers=HOSTILE, follow_redirects=False)
    assert response.status_code in (301, 302, 303, 307, 308), response.text
    assert response.headers["location"] == target
    assert response.headers["x-content-type-options"] == "nosniff"


def test_the_redirect_target_is_reached_on_the_same_server(client: TestClient) -> None:
    response = client.get("/api/openapi.json/", headers=HOSTILE)
    assert response.status_code == 200 and response.json()["openapi"].startswith("3.1")
    assert [hop.headers["location"] for hop in response.history] == [
        "/api/openapi.json",
        "/api/7_4/openapi.json",
    ]


@pytest.mark.parametrize(
    ("location", "relative"),
    [
        ("http://evil.example/api/x?a=1", "/api/x?a=1"),
        ("https://127.0.0.1:8080/api/7_4/", "/api/7_4/"),
        ("//evil.example/api/x", "/api/x"),
        ("/\\evil.example/api/x", "/evil.example/api/x"),
        ("\\\\evil.example/api/x", "/evil.example/api/x"),
        ("http://evil.example//other.example/x", "/other.example/x"),
        ("/api/element/BusinessProcess/7", "/api/element/BusinessProcess/7"),
        ("openapi.json", "openapi.json"),
    ],
)
def test_a_location_never_names_another_host(location: str, relative: str) -> None:
    from blockrepo.api.headers import relative_location  # new in issue 22: the other tests run without it

    assert relative_location(location.encode()) == relative.encode()
    target = httpx.URL("http://127.0.0.1:8080/api/7_4/").join(relative)
    assert target.host == "127.0.0.1"
