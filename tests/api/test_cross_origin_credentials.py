"""Login CSRF through credentials on any path (API.md §1 rules 3, 4 and 6): Basic credentials a browser sends
for a page of another origin act for that request only, start no session and leave the caller's own alone.

The attack: a page elsewhere sends its visitor to `http://attacker:pw@repo/api/...`; the browser answers the
401 with the URL's credentials. Before, any data path answered with a new session of the attacker's account
and ended the visitor's own ("credentials win")."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.auth.csrf import sent_for_another_origin
from tests.api.auth_support import PROTECTED, bare_client, logged_in, session_headers
from tests.conftest import ADMIN_PASSWORD
from tests.helpers import create_user

ATTACKER = ("mallory", "Attacker-Passw0rd-long")
ELEMENTS = "/api/element/BusinessProcess"
FOREIGN_PAGES = [
    {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"},  # a link or a script's navigation
    {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"},  # another port of the same host
    {"Referer": "https://evil.example/phish.html"},  # a browser without fetch metadata
    {"Origin": "https://evil.example"},
]
FOREIGN_PAGE_IDS = ["cross-site", "same-site", "referer", "origin"]
DATA_PATHS = [PROTECTED, "/api/metamodel", "/api/massdata/BusinessProcess"]


@pytest.fixture
def attacker(app: FastAPI) -> tuple[str, str]:
    create_user(app, *ATTACKER, roles=["Supervisor"])
    return ATTACKER


@pytest.mark.parametrize("path", DATA_PATHS)
@pytest.mark.parametrize("headers", FOREIGN_PAGES, ids=FOREIGN_PAGE_IDS)
def test_foreign_credentials_on_a_data_path_set_no_cookie_and_keep_the_visitors_session(
    app: FastAPI, attacker: tuple[str, str], path: str, headers: dict[str, str]
) -> None:
    web = bare_client(app)
    session_id, _token = logged_in(web)
    response = web.get(path, headers={**headers, **session_headers(session_id)}, auth=attacker)
    assert response.status_code == 200, response.text
    assert "set-cookie" not in response.headers
    if path == PROTECTED:
        assert response.json()["login"] == attacker[0]  # the credentials act, for this request only
    own = web.get(PROTECTED, headers=session_headers(session_id))
    assert own.status_code == 200, own.text
    assert own.json()["login"] == "system"


@pytest.mark.parametrize("headers", FOREIGN_PAGES, ids=FOREIGN_PAGE_IDS)
def test_the_read_lane_hands_foreign_credentials_no_session(
    app: FastAPI, client: TestClient, attacker: tuple[str, str], headers: dict[str, str]
) -> None:
    """The GET lane answers repeated Basic credentials itself; sent for another origin's page it passes them
    to the middleware, which serves them without a session."""
    element = client.post(ELEMENTS, json={"name": ["Order handling"]}).json()["id"][0]
    web = bare_client(app)
    path = f"{ELEMENTS}/{element}"
    assert web.get(path, auth=attacker).status_code == 200  # verified once: the lane knows them now
    response = web.get(path, headers=headers, auth=attacker)
    assert response.status_code == 200, response.text
    assert "set-cookie" not in response.headers


@pytest.mark.parametrize(
    "headers",
    [{}, {"Sec-Fetch-Site": "none"}, {"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1"}],
    ids=["script", "typed-in", "own-page"],
)
def test_credentials_of_a_script_or_the_own_origin_still_get_a_session(
    app: FastAPI, headers: dict[str, str]
) -> None:
    response = bare_client(app).get(PROTECTED, headers=headers, auth=("system", ADMIN_PASSWORD))
    assert response.status_code == 200, response.text
    assert "JSESSIONID=" in response.headers["set-cookie"]


def test_a_foreign_form_login_is_refused_before_the_visitors_session_ends(
    app: FastAPI, attacker: tuple[str, str]
) -> None:
    web = bare_client(app)
    session_id, _token = logged_in(web)
    refused = web.post(
        "/j_service_security_check",
        data={"j_username": attacker[0], "j_password": attacker[1]},
        headers={"Referer": "https://evil.example/", **session_headers(session_id)},
    )
    assert refused.status_code == 403 and refused.json()["code"] == "cross_origin_login"
    assert "set-cookie" not in refused.headers
    assert web.get(PROTECTED, headers=session_headers(session_id)).json()["login"] == "system"


def test_one_cross_origin_test_reads_referer_only_when_asked() -> None:
    """The write check reads `Sec-Fetch-Site` and `Origin` (browsers send `Origin` on every modifying
    request for a page); the logins and credentials also read `Referer`."""
    host = [(b"host", b"127.0.0.1")]
    foreign_referer = [*host, (b"referer", b"https://evil.example/x")]
    assert sent_for_another_origin(foreign_referer, "http", referer=True)
    assert not sent_for_another_origin(foreign_referer, "http", referer=False)
    for foreign in ([(b"origin", b"null")], [(b"sec-fetch-site", b"Same-Site")], [(b"origin", b"http://x")]):
        assert sent_for_another_origin([*host, *foreign], "http", referer=False)
    own = [*host, (b"origin", b"http://127.0.0.1:80"), (b"referer", b"http://127.0.0.1/page")]
    assert not sent_for_another_origin(own, "http", referer=True)
    assert not sent_for_another_origin([*host, (b"origin", b"")], "http", referer=True)
