"""Login CSRF (API.md §1 rule 4): a form login sent from a page of another origin is refused."""

from __future__ import annotations

import pytest
from fastapi import FastAPI

from tests.api.auth_support import PROTECTED, bare_client, form_login
from tests.conftest import ADMIN_PASSWORD

LOGIN_PATHS = ["/j_service_security_check", "/api/j_service_security_check"]
OWN_ORIGIN = "http://127.0.0.1"  # the test client's base URL


@pytest.mark.parametrize("path", LOGIN_PATHS)
@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Referer": "https://evil.example/phish.html"},
        {"Origin": "null"},  # what a sandboxed frame of any site sends
        {"Origin": "http://127.0.0.1:8080"},  # another port is another origin
        {"Origin": "http://127.0.0.1.evil.example"},
        {"Origin": OWN_ORIGIN, "Referer": "https://evil.example/"},  # either header is enough
        {"Referer": "not a URL"},
    ],
    ids=["origin", "referer", "null", "port", "suffix", "referer-only-foreign", "unreadable"],
)
def test_a_form_login_from_another_origin_is_refused(
    app: FastAPI, path: str, headers: dict[str, str]
) -> None:
    web = bare_client(app)
    response = form_login(web, path=path, headers=headers)
    assert response.status_code == 403, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "cross_origin_login"
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize("path", LOGIN_PATHS)
@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl and scripts send neither header
        {"Origin": OWN_ORIGIN},
        {"Referer": f"{OWN_ORIGIN}/login.html?next=/"},
        {"Origin": "http://127.0.0.1:80"},  # the default port, spelt out
        {"Origin": "https://127.0.0.1"},  # behind a proxy that ends TLS, the service itself sees http
        {"Origin": "HTTP://127.0.0.1", "Referer": f"{OWN_ORIGIN}/"},
    ],
    ids=["neither", "origin", "referer", "default-port", "tls-proxy", "both"],
)
def test_a_form_login_without_or_from_the_own_origin_passes(
    app: FastAPI, path: str, headers: dict[str, str]
) -> None:
    response = form_login(bare_client(app), path=path, headers=headers)
    assert response.status_code == 200, response.text
    assert response.json() == {"user": "system"}


def test_a_refused_cross_origin_login_starts_no_session_and_is_not_a_failed_login(app: FastAPI) -> None:
    web = bare_client(app)
    for _ in range(app.state.settings.login_max_failures):
        response = form_login(web, password="wrong", headers={"Origin": "https://evil.example"})
        assert response.status_code == 403
    # The password was never checked, so nothing was counted against the account.
    assert form_login(web).status_code == 200


def test_basic_credentials_are_not_subject_to_the_login_origin_check(app: FastAPI) -> None:
    """Basic credentials cannot be planted by a foreign form; the origin check guards the form login."""
    response = bare_client(app).get(
        PROTECTED, auth=("system", ADMIN_PASSWORD), headers={"Origin": "https://tool.example"}
    )
    assert response.status_code == 200
