"""Caching across readers (issue 22, finding 5): element answers are private to their reader and vary on the
credentials, an ETag names what the reader sees so one reader's tag never gets a 304 for a body another
would not get, and If-Match still compares the revision; the GET lane and the routed GET answer alike."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from blockrepo.app import create_app
from tests.api.auth_support import bare_client, logged_in, session_headers
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import create_attribute, create_group, create_role, create_user

ROUTED = {"asOf": ""}  # an empty asOf is none; the lane answers only a GET without a query string
# Headers that differ between any two answers whichever path gives them.
PER_ANSWER = {"x-request-id", "set-cookie", "date"}


@pytest.fixture
def element(app: FastAPI, client: TestClient) -> str:
    """A business process with `Annual costs` in the group Finance, which `anna` (reader) may not read and
    `carla` (controller) may; `system` sees everything."""
    create_group(app, "Finance")
    create_attribute(app, "Annual costs", "number", types=["BusinessProcess"], group="Finance")
    create_role(app, "reader", types={"BusinessProcess": ["read", "update"]})
    create_role(app, "controller", types={"BusinessProcess": ["read"]}, groups={"Finance": (True, False)})
    create_user(app, "anna", "anna-password", ["reader"])
    create_user(app, "carla", "carla-password", ["reader", "controller"])
    created = client.post("/api/element/BusinessProcess", json={"name": ["Pay"], "Annual costs": [120000]})
    assert created.status_code == 201, created.text
    return f"/api/element/BusinessProcess/{created.json()['id'][0]}"


class LaneSpy:
    """Counts the requests the element GET lane passes on to the application (0: the lane answered)."""

    def __init__(self, app: FastAPI) -> None:
        self.lane = app.lane  # type: ignore[attr-defined]
        self.inner = self.lane.app
        self.passed = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.passed += 1
        await self.inner(scope, receive, send)


@pytest.fixture
def spy(app: FastAPI) -> Iterator[LaneSpy]:
    spy = LaneSpy(app)
    spy.lane.app = spy
    yield spy
    spy.lane.app = spy.inner


@pytest.fixture
def web(app: FastAPI) -> Iterator[TestClient]:
    with bare_client(app) as client:
        yield client


def sessions(web: TestClient) -> dict[str, dict[str, str]]:
    return {
        "system": session_headers(logged_in(web, "system", ADMIN_PASSWORD)[0]),
        "anna": session_headers(logged_in(web, "anna", "anna-password")[0]),
    }


def laned(web: TestClient, spy: LaneSpy, url: str, headers: dict[str, str]) -> httpx.Response:
    """A GET the lane answers (asserted)."""
    before = spy.passed
    response = web.get(url, headers=headers)
    assert spy.passed == before, "the lane passed the request on"
    return response


def routed(web: TestClient, spy: LaneSpy, url: str, headers: dict[str, str]) -> httpx.Response:
    """The same GET through the application's middleware and the routed `get_element` (asserted)."""
    before = spy.passed
    response = web.get(url, headers=headers, params=ROUTED)
    assert spy.passed == before + 1
    return response


def assert_private(response: httpx.Response) -> None:
    assert response.headers["cache-control"] == "private, no-cache"
    assert response.headers["vary"] == "Cookie, Authorization"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_element_answers_are_private_and_alike_on_the_lane_and_the_route(
    web: TestClient, spy: LaneSpy, element: str
) -> None:
    for who, headers in sessions(web).items():
        web.get(element, headers=headers)  # warms the lane's caches
        lane = laned(web, spy, element, headers)
        route = routed(web, spy, element, headers)
        assert lane.status_code == route.status_code == 200, who
        assert lane.content == route.content
        assert_private(lane)
        assert_private(route)
        strip = lambda r: {k: v for k, v in r.headers.items() if k not in PER_ANSWER}  # noqa: E731
        assert strip(lane) == strip(route), who
        for not_modified in (
            laned(web, spy, element, {**headers, "If-None-Match": lane.headers["etag"]}),
            routed(web, spy, element, {**headers, "If-None-Match": lane.headers["etag"]}),
        ):
            assert not_modified.status_code == 304
            assert not_modified.headers["etag"] == lane.headers["etag"]
            assert_private(not_modified)


def test_a_readers_etag_names_what_the_reader_sees(
    app: FastAPI, web: TestClient, spy: LaneSpy, element: str
) -> None:
    readers = sessions(web)
    web.get(element, headers=readers["anna"])
    system = laned(web, spy, element, readers["system"])
    anna = laned(web, spy, element, readers["anna"])
    revision = system.json()["revision"][0]
    assert system.json()["Annual costs"] == [120000] and "Annual costs" not in anna.json()
    # Who sees every key keeps the documented tag; who sees less gets the revision and a digest.
    assert system.headers["etag"] == f'W/"{revision}"'
    assert (
        anna.headers["etag"].startswith(f'W/"{revision}.') and anna.headers["etag"] != system.headers["etag"]
    )
    assert routed(web, spy, element, readers["anna"]).headers["etag"] == anna.headers["etag"]
    # Another user with the same rights shares the tag (and the body); one who sees more does not.
    create_user(app, "ute", "ute-password", ["reader"])
    with bare_client(app) as other:
        ute = other.get(element, headers=session_headers(logged_in(other, "ute", "ute-password")[0]))
        carla = other.get(element, headers=session_headers(logged_in(other, "carla", "carla-password")[0]))
    assert ute.headers["etag"] == anna.headers["etag"] and ute.content == anna.content
    assert carla.json()["Annual costs"] == [120000]
    assert carla.headers["etag"] not in (anna.headers["etag"], system.headers["etag"])


def test_no_304_for_a_body_the_reader_would_not_get(web: TestClient, spy: LaneSpy, element: str) -> None:
    """The audit's case: system's copy in the browser's cache, revalidated by anna with system's tag."""
    readers = sessions(web)
    for who in readers:
        web.get(element, headers=readers[who])
    tags = {who: laned(web, spy, element, readers[who]).headers["etag"] for who in readers}
    for reader, other in (("anna", "system"), ("system", "anna")):
        for read in (laned, routed):
            response = read(web, spy, element, {**readers[reader], "If-None-Match": tags[other]})
            assert response.status_code == 200, (reader, read.__name__)
            assert response.headers["etag"] == tags[reader]
            assert ("Annual costs" in response.json()) is (reader == "system")
            both = read(
                web, spy, element, {**readers[reader], "If-None-Match": f"{tags[other]}, {tags[reader]}"}
            )
            assert both.status_code == 304


@pytest.fixture
def unlaned(database_url: str) -> Iterator[TestClient]:
    """The same repository served without the lanes: every write takes the routed path (a PUT or PATCH
    takes no query parameter that would send it there)."""
    application = create_app(make_settings(database_url, lanes=False))
    try:
        with bare_client(application) as client:
            yield client
    finally:
        application.state.services.dispose()


def test_if_match_compares_the_revision_of_either_form(
    web: TestClient, unlaned: TestClient, spy: LaneSpy, element: str, client: TestClient
) -> None:
    session_id, token = logged_in(web, "anna", "anna-password")
    anna = session_headers(session_id, token)
    stale = web.get(element, headers=anna).headers["etag"]
    revision = int(stale.split('"')[1].split(".")[0])
    # The write lane (PUT) and the routed PATCH both take anna's tag, and answer with her next tag.
    put = web.put(element, json={"description": ["one"]}, headers={**anna, "If-Match": stale})
    assert put.status_code == 200, put.text
    assert put.headers["etag"] == web.get(element, headers=anna).headers["etag"]
    assert put.headers["etag"].startswith(f'W/"{revision + 1}.')
    assert_private(put)
    patch = unlaned.patch(
        element, json={"description": ["two"]}, headers={**anna, "If-Match": put.headers["etag"]}
    )
    assert patch.status_code == 200, patch.text
    assert patch.headers["etag"] == web.get(element, headers=anna).headers["etag"]
    # A stale tag, in either form, is still 412 and changes nothing.
    for tag in (stale, f'W/"{revision}"', put.headers["etag"]):
        for path in (web, unlaned):
            refused = path.put(element, json={"description": ["lost"]}, headers={**anna, "If-Match": tag})
            assert refused.status_code == 412, (tag, path is web)
    assert client.get(element).json()["description"] == ["two"]
    # The plain revision still works too (the web interface's delete sends it).
    current = client.get(element).json()["revision"][0]
    assert (
        web.put(
            element, json={"description": ["three"]}, headers={**anna, "If-Match": f'W/"{current}"'}
        ).status_code
        == 200
    )
