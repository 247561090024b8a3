"""Login CSRF (API.md §1 rules 4 and 6): logins sent for a page of another origin, or from a URL, fail.

A form or Basic login that a browser sends for a page of another origin is refused, and credentials in a
URL log nobody in."""

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


# --- the Basic login paths and credentials in the URL (rules 1.4 and 1.6) ----------------------------

BASIC_LOGIN_PATHS = ["/api/j_service_security_check", "/api/auth-scheme"]
FOREIGN_PAGES = [
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},  # a link or a script's navigation
    {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},  # an image from another port
    {"Referer": "https://evil.example/phish.html"},
    {"Origin": "https://evil.example"},
]
FOREIGN_PAGE_IDS = ["cross-site", "same-site", "referer", "origin"]


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("path", BASIC_LOGIN_PATHS)
@pytest.mark.parametrize("headers", FOREIGN_PAGES, ids=FOREIGN_PAGE_IDS)
def test_a_basic_login_a_browser_sends_for_another_origin_is_refused(
    app: FastAPI, method: str, path: str, headers: dict[str, str]
) -> None:
    """Credentials the browser remembers, or that a foreign page put into the URL it navigates to
    (`http://attacker:pw@host/…`), log nobody in: the page would choose whose session its visitor gets."""
    response = bare_client(app).request(method, path, headers=headers, auth=("system", ADMIN_PASSWORD))
    assert response.status_code == 403
    assert "set-cookie" not in response.headers
    if method == "GET":
        assert response.json()["code"] == "cross_origin_login"


@pytest.mark.parametrize("path", BASIC_LOGIN_PATHS)
@pytest.mark.parametrize(
    "headers",
    [{}, {"Sec-Fetch-Site": "none"}, {"Sec-Fetch-Site": "same-origin", "Referer": "http://127.0.0.1/"}],
    ids=["script", "typed-in", "own-page"],
)
def test_a_basic_login_of_a_script_or_the_own_origin_passes(
    app: FastAPI, path: str, headers: dict[str, str]
) -> None:
    response = bare_client(app).get(path, headers=headers, auth=("system", ADMIN_PASSWORD))
    assert response.status_code == 200, response.text
    assert "JSESSIONID=" in response.headers["set-cookie"]


def test_a_refused_cross_origin_basic_login_is_not_a_failed_login(app: FastAPI) -> None:
    web = bare_client(app)
    for _ in range(app.state.settings.login_max_failures):
        refused = web.get(BASIC_LOGIN_PATHS[0], headers=FOREIGN_PAGES[0], auth=("system", "wrong"))
        assert refused.status_code == 403
    assert web.get(BASIC_LOGIN_PATHS[0], auth=("system", ADMIN_PASSWORD)).status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        *((method, path) for method in ("GET", "HEAD") for path in BASIC_LOGIN_PATHS),
        *(("POST", path) for path in LOGIN_PATHS),
    ],
)
@pytest.mark.parametrize(
    "query",
    [
        {"j_username": "system", "j_password": ADMIN_PASSWORD},
        {"j_password": ADMIN_PASSWORD},
        {"j%5Fusername": "system"},  # spelt with an escape, still the field
    ],
    ids=["both", "password", "escaped"],
)
def test_credentials_in_the_url_log_nobody_in(
    app: FastAPI, method: str, path: str, query: dict[str, str]
) -> None:
    """Even beside valid Basic credentials or a valid form: the request as a whole is refused, so a link
    carrying credentials never starts a session."""
    raw_query = "&".join(f"{name}={value}" for name, value in query.items())
    response = bare_client(app).request(
        method,
        f"{path}?{raw_query}",
        auth=("system", ADMIN_PASSWORD),
        data={"j_username": "system", "j_password": ADMIN_PASSWORD} if method == "POST" else None,
    )
    assert response.status_code == 400
    assert "set-cookie" not in response.headers
    if method != "HEAD":
        assert response.json()["code"] == "credentials_in_url"


def test_a_form_login_a_browser_marks_cross_site_is_refused_without_origin_or_referer(app: FastAPI) -> None:
    response = form_login(bare_client(app), headers={"Sec-Fetch-Site": "cross-site"})
    assert response.status_code == 403
    assert response.json()["code"] == "cross_origin_login"
