"""The fast lanes answer exactly as the routed path: the same requests (GET, PUT, PATCH, errors of each
kind, 304, If-Match, asOf, sessions with and without the CSRF token, Basic, a reader who sees fewer
properties) are replayed on two copies of one repository, one app with `lanes` on and one with them off,
and every answer must be the same in status, headers and body, request ids included (each request sends
its own), except dates, the modification time stamp in element bodies and cookie values."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.api.access_helpers import PASSWORD
from tests.api.auth_support import bare_client, cookie_value, form_login, session_headers
from tests.conftest import ADMIN_PASSWORD, cloned_database, make_settings

PROCESS = "/api/element/BusinessProcess"
UNMASKED_COOKIE_PARTS = ("path", "httponly", "samesite", "max-age", "secure", "expires")


def basic(login: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


SYSTEM = basic("system", ADMIN_PASSWORD)
ELLA = basic("ella", PASSWORD)


def comparable(response: Any, *, generated_id: bool = False) -> tuple[int, list[tuple[str, str]], Any]:
    """Status, headers (sorted; no Date, cookie values masked, a generated request id by its shape) and
    body (JSON parsed, without the modification time stamp), as two equivalent answers have them alike."""
    headers = []
    for name, value in response.headers.multi_items():
        lowered = name.lower()
        if lowered == "date":
            continue
        if lowered == "set-cookie":
            cookie_name, _, rest = value.partition("=")
            attributes = [part.strip().lower() for part in rest.split(";")[1:]]
            value = "; ".join([f"{cookie_name}=…", *sorted(attributes)])
        elif lowered == "x-request-id" and generated_id:
            value = "hex" if len(value) == 32 and all(c in "0123456789abcdef" for c in value) else value
        headers.append((lowered, value))
    body: Any = response.content
    if response.content and response.headers.get("content-type", "").startswith(
        ("application/json", "application/problem+json")
    ):
        body = orjson.loads(response.content)
        if isinstance(body, dict):
            body.pop("lastModificationTime", None)
            if generated_id and "requestId" in body:
                body["requestId"] = "hex"
    return response.status_code, sorted(headers), body


@dataclass
class Replay:
    """One app's answers to the scenario, in order, with a label each."""

    app: FastAPI
    answers: list[tuple[str, tuple[int, list[tuple[str, str]], Any]]] = field(default_factory=list)
    lane_answers: int = 0

    def send(self, client: TestClient, label: str, method: str, path: str, **options: Any) -> Any:
        headers = {"X-Request-Id": f"r{len(self.answers)}", **options.pop("headers", {})}
        response = client.request(method, path, headers=headers, **options)
        generated = headers["X-Request-Id"] != response.headers.get("x-request-id")
        self.answers.append((label, comparable(response, generated_id=generated)))
        return response


def scenario(replay: Replay) -> None:
    app = replay.app
    lane = getattr(app, "lane", None)
    if lane is not None:
        answer = lane._answer

        def counted(*args: Any) -> Any:
            found = answer(*args)
            replay.lane_answers += found is not None
            return found

        lane._answer = counted
    with bare_client(app) as client:
        send = replay.send

        def ok(response: Any) -> Any:
            assert response.status_code < 300, response.text
            return response.json()

        # Setup, compared too: a reader (ella) who may not see the group Secret.
        ok(
            send(
                client,
                "role Insiders",
                "POST",
                "/api/administration/roles",
                headers=SYSTEM,
                json={"name": "Insiders"},
            )
        )
        ok(
            send(
                client,
                "role Editors",
                "POST",
                "/api/administration/roles",
                headers=SYSTEM,
                json={
                    "name": "Editors",
                    "typePermissions": {"BusinessProcess": ["read", "create", "update"]},
                },
            )
        )
        ok(
            send(
                client,
                "user ella",
                "POST",
                "/api/administration/users",
                headers=SYSTEM,
                json={"login": "ella", "password": PASSWORD, "roles": ["Editors"]},
            )
        )
        ok(
            send(
                client,
                "group Secret",
                "POST",
                "/api/administration/attributegroups",
                headers=SYSTEM,
                json={"name": "Secret", "permissions": [{"role": "Insiders", "read": True, "write": True}]},
            )
        )
        ok(
            send(
                client,
                "attribute",
                "POST",
                "/api/administration/attributes",
                headers=SYSTEM,
                json={
                    "name": "Secret notes",
                    "valueType": "text",
                    "group": "Secret",
                    "types": ["BusinessProcess"],
                },
            )
        )
        created = ok(
            send(
                client,
                "create",
                "POST",
                PROCESS,
                headers=SYSTEM,
                json={"name": ["P1"], "Secret notes": ["s"]},
            )
        )
        element = f"{PROCESS}/{created['id'][0]}"
        domain = ok(
            send(
                client,
                "create domain",
                "POST",
                "/api/element/BusinessDomain",
                headers=SYSTEM,
                json={"name": ["D"]},
            )
        )

        # GET by id: Basic (first verified by the routes, then repeated), 304 and not, errors of each kind.
        for attempt in range(3):
            first = send(client, f"GET Basic {attempt}", "GET", element, headers=SYSTEM)
        etag = first.headers["etag"]
        send(client, "GET 304", "GET", element, headers={**SYSTEM, "If-None-Match": etag})
        send(client, "GET 304 list", "GET", element, headers={**SYSTEM, "If-None-Match": f'W/"99", {etag}'})
        send(client, "GET 304 star", "GET", element, headers={**SYSTEM, "If-None-Match": "*"})
        send(client, "GET other tag", "GET", element, headers={**SYSTEM, "If-None-Match": 'W/"99"'})
        send(client, "GET API-Version", "GET", element, headers={**SYSTEM, "API-Version": "7.4"})
        send(client, "GET bad API-Version", "GET", element, headers={**SYSTEM, "API-Version": "6.0"})
        send(client, "GET generated id", "GET", element, headers={**SYSTEM, "X-Request-Id": "bad id!"})
        send(client, "GET asOf", "GET", f"{element}?asOf=1", headers=SYSTEM)
        send(client, "GET asOf now", "GET", f"{element}?asOf={created['revision'][0]}", headers=SYSTEM)
        send(client, "GET unknown parameter", "GET", f"{element}?asof=1", headers=SYSTEM)
        send(client, "GET unknown and known", "GET", f"{element}?asOf=1&fields=name", headers=SYSTEM)
        send(client, "GET unknown id", "GET", f"{PROCESS}/999999", headers=SYSTEM)
        send(client, "GET unknown type", "GET", "/api/element/Nothing/1", headers=SYSTEM)
        send(client, "GET id 0", "GET", f"{PROCESS}/0", headers=SYSTEM)
        send(client, "GET id too large", "GET", f"{PROCESS}/99999999999", headers=SYSTEM)
        send(client, "GET wrong password", "GET", element, headers=basic("system", "wrong"))
        send(client, "GET no credentials", "GET", element)
        send(client, "GET HEAD", "HEAD", element, headers=SYSTEM)

        # A reader who sees fewer properties: another ETag, no 304 for the full view's tag.
        for attempt in range(3):
            seen = send(client, f"GET ella {attempt}", "GET", element, headers=ELLA)
        send(client, "GET ella system's tag", "GET", element, headers={**ELLA, "If-None-Match": etag})
        send(
            client,
            "GET ella own tag",
            "GET",
            element,
            headers={**ELLA, "If-None-Match": seen.headers["etag"]},
        )
        send(
            client,
            "GET ella unreadable type",
            "GET",
            f"/api/element/BusinessDomain/{domain['id'][0]}",
            headers=ELLA,
        )

        # Sessions: GET with the cookie, writes with and without the CSRF token.
        login = form_login(client)
        session, csrf = cookie_value(login, "JSESSIONID"), cookie_value(login, "XSRF-TOKEN")
        for attempt in range(3):
            send(client, f"GET session {attempt}", "GET", element, headers=session_headers(session))
        send(client, "GET session and Basic", "GET", element, headers={**session_headers(session), **ELLA})
        send(client, "GET unknown session", "GET", element, headers=session_headers("nonsense"))
        body = {"description": ["by session"]}
        send(client, "PUT session no CSRF", "PUT", element, headers=session_headers(session), json=body)
        send(client, "PUT session CSRF", "PUT", element, headers=session_headers(session, csrf), json=body)
        send(
            client,
            "PUT session bad CSRF",
            "PUT",
            element,
            headers=session_headers(session, "x" * 40),
            json=body,
        )

        # Writes with Basic: PUT, PATCH, If-Match, errors of each kind.
        current = send(client, "PUT", "PUT", element, headers=SYSTEM, json={"description": ["one"]})
        send(client, "PATCH", "PATCH", element, headers=SYSTEM, json={"description": ["two"]})
        send(client, "PUT unchanged", "PUT", element, headers=SYSTEM, json={"description": ["two"]})
        send(
            client,
            "PUT If-Match stale",
            "PUT",
            element,
            headers={**SYSTEM, "If-Match": current.headers["etag"]},
            json={"description": ["three"]},
        )
        now = send(client, "GET now", "GET", element, headers=SYSTEM)
        send(
            client,
            "PATCH If-Match current",
            "PATCH",
            element,
            headers={**SYSTEM, "If-Match": now.headers["etag"]},
            json={"description": ["four"]},
        )
        send(
            client,
            "PUT If-Match garbage",
            "PUT",
            element,
            headers={**SYSTEM, "If-Match": "nonsense"},
            json={},
        )
        send(client, "PUT invalid", "PUT", element, headers=SYSTEM, json={"name": [1, 2]})
        send(client, "PUT unknown property", "PUT", element, headers=SYSTEM, json={"Nope": ["x"]})
        send(client, "PUT id mismatch", "PUT", element, headers=SYSTEM, json={"id": [12345]})
        send(client, "PUT not an object", "PUT", element, headers=SYSTEM, json=[1])
        send(
            client,
            "PUT malformed",
            "PUT",
            element,
            headers={**SYSTEM, "Content-Type": "application/json"},
            content=b"{",
        )
        send(
            client,
            "PUT charset",
            "PUT",
            element,
            headers={**SYSTEM, "Content-Type": "application/json; charset=utf-8"},
            content=b'{"description": ["five"]}',
        )
        send(
            client,
            "PUT not JSON",
            "PUT",
            element,
            headers={**SYSTEM, "Content-Type": "text/plain"},
            content=b"{}",
        )
        send(client, "PUT no body", "PUT", element, headers={**SYSTEM, "Content-Type": "application/json"})
        send(
            client, "PUT unknown id", "PUT", f"{PROCESS}/999999", headers=SYSTEM, json={"description": ["x"]}
        )
        send(client, "PUT unknown type", "PUT", "/api/element/Nothing/1", headers=SYSTEM, json={})
        send(client, "PUT id 0", "PUT", f"{PROCESS}/0", headers=SYSTEM, json={})
        send(client, "PUT query", "PUT", f"{element}?x=1", headers=SYSTEM, json={"description": ["six"]})
        send(client, "PATCH query", "PATCH", f"{element}?x=1", headers=SYSTEM, json={"description": ["six"]})
        send(client, "PUT wrong password", "PUT", element, headers=basic("system", "wrong"), json={})
        send(client, "PUT no credentials", "PUT", element, json={})
        send(
            client,
            "PUT cross-origin Basic",
            "PUT",
            element,
            headers={**SYSTEM, "Origin": "http://evil.example"},
            json={},
        )
        send(client, "PUT ella hidden", "PUT", element, headers=ELLA, json={"Secret notes": ["x"]})
        send(client, "PUT ella", "PUT", element, headers=ELLA, json={"description": ["by ella"]})
        send(
            client,
            "PUT ella unreadable type",
            "PUT",
            f"/api/element/BusinessDomain/{domain['id'][0]}",
            headers=ELLA,
            json={},
        )
        send(client, "PUT bad API-Version", "PUT", element, headers={**SYSTEM, "API-Version": "6.0"}, json={})
        send(client, "GET after", "GET", element, headers=SYSTEM)
        send(client, "GET ella after", "GET", element, headers=ELLA)
        send(client, "GET asOf after", "GET", f"{element}?asOf={created['revision'][0]}", headers=SYSTEM)


@pytest.fixture(params=[True, False], ids=["loop reads", "no loop reads"])
def replays(
    request: pytest.FixtureRequest, template_database: str, tmp_path: Path
) -> Iterator[tuple[Replay, Replay]]:
    """The app with lanes, with short reads on the event loop or not (then the read lane stands aside), and
    the app without."""
    with (
        cloned_database(template_database, tmp_path) as on_url,
        cloned_database(template_database, tmp_path) as off_url,
    ):
        on = create_app(make_settings(on_url, lanes=True, loop_reads=request.param))
        off = create_app(make_settings(off_url, lanes=False))
        try:
            yield Replay(on), Replay(off)
        finally:
            on.state.services.dispose()
            off.state.services.dispose()


def test_the_lanes_answer_as_the_routes(replays: tuple[Replay, Replay]) -> None:
    on, off = replays
    scenario(on)
    scenario(off)
    assert [label for label, _ in on.answers] == [label for label, _ in off.answers]
    differences = [
        (label, lane, routed)
        for (label, lane), (_, routed) in zip(on.answers, off.answers, strict=True)
        if lane != routed
    ]
    assert differences == []
    # The comparison is not vacuous: the read lane answered the plain GETs itself (Basic repeated, the
    # session, the 304s, the reader who sees less) when it may read on the loop; the routed app has none.
    if on.app.state.settings.loop_reads:
        assert on.lane_answers >= 10
    else:
        assert on.lane_answers == 0
    assert getattr(off.app, "lane", None) is None
