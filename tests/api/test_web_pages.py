"""The web interface's files: public, local, served with the package; and the challenge its script requests
get on 401 (a form login, not Basic, so that browsers show no password dialog)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from blockrepo.web.routes import STATIC_DIRECTORY

SCRIPT_REQUEST = {"X-Requested-With": "XMLHttpRequest"}


def test_the_page_is_public_html_that_loads_only_local_files(anon: TestClient) -> None:
    response = anon.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "www-authenticate" not in response.headers and "set-cookie" not in response.headers
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "http" not in policy
    assets = re.findall(r'(?:src|href)="(/web/[^"]+)"', response.text)
    assert {"/web/js/app.js", "/web/css/app.css"} <= set(assets)
    for asset in assets:
        loaded = anon.get(asset)
        assert loaded.status_code == 200, asset
        assert loaded.content == (STATIC_DIRECTORY / asset.removeprefix("/web/")).read_bytes()


def test_every_module_and_the_vendored_graph_library_are_served_as_javascript(anon: TestClient) -> None:
    scripts = sorted(STATIC_DIRECTORY.rglob("*.js"))
    assert any(path.name == "cytoscape.esm.min.js" for path in scripts)
    for path in scripts:
        response = anon.get(f"/web/{path.relative_to(STATIC_DIRECTORY).as_posix()}")
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/javascript"), path
    # Imports between modules name files that exist (a typo would only show in a browser).
    for path in STATIC_DIRECTORY.glob("js/*.js"):
        for target in re.findall(r'from "(\.{1,2}/[^"]+)"', path.read_text()):
            assert (path.parent / target).resolve().is_file(), f"{path.name} imports {target}"


def test_a_missing_file_is_404_and_the_api_is_still_protected(anon: TestClient) -> None:
    assert anon.get("/web/js/missing.js").status_code == 404
    response = anon.get("/api/metamodel")
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Basic ")
    assert response.headers["content-type"] == "application/problem+json"


def test_script_requests_get_a_form_login_challenge_instead_of_basic(anon: TestClient) -> None:
    response = anon.get("/api/metamodel", headers=SCRIPT_REQUEST)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("FormLogin ")
    assert response.json()["code"] == "unauthenticated"
    wrong = anon.post(
        "/j_service_security_check",
        data={"j_username": "system", "j_password": "wrong"},
        headers=SCRIPT_REQUEST,
    )
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"].startswith("FormLogin ")


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_a_request_for_another_sites_page_gets_no_basic_challenge(anon: TestClient, site: str) -> None:
    """A browser answers a Basic challenge with the credentials a foreign page put into the URL it sent the
    browser to, and keeps them for the origin: no Basic challenge, no such login (API.md 1.4, 1.6)."""
    for path in ("/api/metamodel", "/api/administration/users/current", "/favicon.ico"):
        response = anon.get(path, headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate"})
        if response.status_code == 401:
            assert response.headers["www-authenticate"].startswith("FormLogin "), path
    # Scripts, typed-in URLs and the service's own pages still get the Basic challenge.
    for headers in ({}, {"Sec-Fetch-Site": "none"}, {"Sec-Fetch-Site": "same-origin"}):
        response = anon.get("/api/metamodel", headers=headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Basic "), headers


def test_script_requests_with_a_session_are_answered_as_usual(client: TestClient) -> None:
    response = client.get("/api/metamodel", headers=SCRIPT_REQUEST)
    assert response.status_code == 200
    assert "www-authenticate" not in response.headers
