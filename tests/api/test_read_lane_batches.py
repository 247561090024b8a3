"""GETs by id that reach the read lane together (issue 24), with session cookies or with Basic credentials
verified before: on PostgreSQL their sessions (accounts) are looked up in one statement, and each request
still gets exactly the answer it would get alone, its own user's, whoever else came in the same batch."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
from collections.abc import Iterator

import httpx
import orjson
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.settings import Settings
from tests.api.auth_support import bare_client, logged_in
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import count_queries, create_role, create_user, engine_of

READER, READER_PASSWORD = "rita", "rita-password-1"


@pytest.fixture
def settings(database_url: str, auth_store: dict[str, str]) -> Settings:
    """Sessions in the database, then in Redis (the database holds their users)."""
    return make_settings(database_url, **auth_store)


@pytest.fixture
def web(app: FastAPI) -> Iterator[TestClient]:
    with bare_client(app) as client:
        yield client


def _requests_at_once(app: FastAPI, requests: list[tuple[str, str]]) -> list[httpx.Response]:
    """GET each (path, session cookie) in its own task, all started in the same turn of one event loop."""
    return _gets_at_once(app, [(path, {"Cookie": f"JSESSIONID={cookie}"}) for path, cookie in requests])


def _gets_at_once(app: FastAPI, requests: list[tuple[str, dict[str, str]]]) -> list[httpx.Response]:
    """GET each (path, headers) in its own task, all started in the same turn of one event loop, each by a
    client of its own (none sends back a cookie another's answer set)."""

    async def one(path: str, headers: dict[str, str]) -> httpx.Response:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("198.51.100.7", 4711)),
            base_url="http://127.0.0.1",
        ) as client:
            return await client.get(path, headers=headers)

    async def scenario() -> list[httpx.Response]:
        return await asyncio.gather(*(one(path, headers) for path, headers in requests))

    return asyncio.run(scenario())


def _reader_and_elements(app: FastAPI, client: TestClient) -> tuple[str, str]:
    """A reader of business processes only, and the paths of a process and an information system."""
    create_role(app, "process readers", types={"BusinessProcess": ["read"]})
    create_user(app, READER, READER_PASSWORD, roles=["process readers"])
    process = client.post("/api/element/BusinessProcess", json={"name": ["Billing"]}).json()["id"][0]
    system = client.post("/api/element/InformationSystem", json={"name": ["Ledger"]}).json()["id"][0]
    return f"/api/element/BusinessProcess/{process}", f"/api/element/InformationSystem/{system}"


def _answer(response: httpx.Response) -> tuple[int, bytes, str | None]:
    """Status, body and ETag; a problem's body without its request id (each request has its own)."""
    body = response.content
    if response.status_code >= 400:
        problem = response.json()
        del problem["requestId"]
        body = orjson.dumps(problem)
    return response.status_code, body, response.headers.get("etag")


def test_session_gets_arriving_together_are_resolved_together_each_as_its_own_user(
    app: FastAPI, client: TestClient, web: TestClient
) -> None:
    process_path, system_path = _reader_and_elements(app, client)
    admin_cookie, _ = logged_in(web)
    reader_cookie, _ = logged_in(web, READER, READER_PASSWORD)
    mixed = [
        (process_path, admin_cookie),
        (system_path, reader_cookie),  # the reader may not read systems
        (process_path, reader_cookie),
        (system_path, admin_cookie),
        (process_path, "not-a-session"),
        (process_path, admin_cookie),  # the same cookie twice in one batch
    ]
    # Each alone first (it also renders the bodies the lane serves from then on).
    alone = [_answer(_requests_at_once(app, [request])[0]) for request in mixed]
    assert [status for status, _, _ in alone] == [200, 403, 200, 200, 401, 200]
    assert alone[0] == alone[5]
    # The reader's view of the same process leaves out the relations to systems she may not read.
    assert b"informationSystems" in alone[0][1] and b"informationSystems" not in alone[2][1]
    assert b"Ledger" in alone[3][1] and b"Ledger" not in alone[1][1]

    together = _requests_at_once(app, mixed)
    assert [_answer(response) for response in together] == alone

    lane_only = [request for request, (status, _, _) in zip(mixed, alone, strict=True) if status == 200]
    with count_queries(engine_of(app)) as counter:
        answers = _requests_at_once(app, lane_only)
    assert [_answer(response) for response in answers] == [answer for answer in alone if answer[0] == 200]
    if engine_of(app).dialect.name == "sqlite":
        # SQLite answers a statement in the process: each request reads its own session.
        assert len(counter.statements) == len(lane_only)
    else:
        # One statement for the four requests: their two distinct cookies' sessions (with Redis, which
        # holds the sessions: their two users).
        assert len(counter.statements) == 1, counter.statements
        assert "ANY" in counter.statements[0]


def test_a_session_ended_meanwhile_is_not_served_from_a_batch(
    app: FastAPI, client: TestClient, web: TestClient
) -> None:
    """A logout seen by the next batch: its requests go the documented way and answer 401."""
    process = client.post("/api/element/BusinessProcess", json={"name": ["Billing"]}).json()["id"][0]
    path = f"/api/element/BusinessProcess/{process}"
    ended, csrf_token = logged_in(web)
    kept, _ = logged_in(web, "system", ADMIN_PASSWORD)
    before = _requests_at_once(app, [(path, ended), (path, kept)])
    assert [response.status_code for response in before] == [200, 200]
    logout = web.post(
        "/j_service_logout", headers={"Cookie": f"JSESSIONID={ended}", "X-XSRF-TOKEN": csrf_token}
    )
    assert logout.status_code == 204
    after = _requests_at_once(app, [(path, ended), (path, kept), (path, ended)])
    assert [response.status_code for response in after] == [401, 200, 401]
    assert after[1].content == before[1].content


def _basic(login: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}


def test_basic_gets_arriving_together_are_resolved_together_each_with_its_own_session(
    app: FastAPI, client: TestClient
) -> None:
    process_path, system_path = _reader_and_elements(app, client)
    admin, reader = _basic("system", ADMIN_PASSWORD), _basic(READER, READER_PASSWORD)
    mixed = [
        (process_path, admin),
        (system_path, reader),  # the reader may not read systems
        (process_path, reader),
        (system_path, admin),
        (process_path, admin),  # the same credentials twice in one batch
        (process_path, _basic(READER, "a wrong password")),
    ]
    for _ in range(2):  # the first round verifies the credentials, the second is served by the lane
        alone = [_answer(_gets_at_once(app, [request])[0]) for request in mixed]
    assert [status for status, _, _ in alone] == [200, 403, 200, 200, 200, 401]
    assert b"informationSystems" in alone[0][1] and b"informationSystems" not in alone[2][1]

    together = _gets_at_once(app, mixed)
    assert [_answer(response) for response in together] == alone
    cookies = [response.cookies.get("JSESSIONID") for response in together if response.status_code == 200]
    assert None not in cookies and len(set(cookies)) == len(cookies)  # a session of its own for each

    lane_only = [request for request, (status, _, _) in zip(mixed, alone, strict=True) if status == 200]
    with count_queries(engine_of(app)) as counter:
        answers = _gets_at_once(app, lane_only)
    assert [_answer(response) for response in answers] == [a for a in alone if a[0] == 200]
    if engine_of(app).dialect.name == "sqlite":
        assert len(counter.statements) == len(lane_only)
    else:
        # One statement for the four requests, each with its two users' accounts.
        assert len(counter.statements) == 1, counter.statements
        assert "ANY" in counter.statements[0]


def _mint(client: TestClient, **fields: object) -> str:
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    response = client.post("/api/tokens", json={"name": "lane", "expiresAt": expires, **fields})
    assert response.status_code == 201, response.text
    return str(response.json()["token"])


def test_token_gets_arriving_together_are_resolved_together_each_with_its_own_rights(
    app: FastAPI, client: TestClient
) -> None:
    process_path, system_path = _reader_and_elements(app, client)
    reader_client = TestClient(app, base_url="http://127.0.0.1")
    reader_client.auth = (READER, READER_PASSWORD)
    admin = {"Authorization": f"Bearer {_mint(client)}"}
    processes_only = {"Authorization": f"Bearer {_mint(client, types=['BusinessProcess'])}"}
    reader = {"Authorization": f"Bearer {_mint(reader_client)}"}
    mixed = [
        (process_path, admin),
        (system_path, processes_only),  # the token may not read systems, though its owner may
        (process_path, processes_only),
        (system_path, reader),  # the reader may not read systems
        (process_path, reader),
        (process_path, admin),  # the same token twice in one batch
        (process_path, {"Authorization": "Bearer brp_" + "0" * 50}),
    ]
    for _ in range(2):  # the first round records each token's first use; the second is served by the lane
        alone = [_answer(_gets_at_once(app, [request])[0]) for request in mixed]
    assert [status for status, _, _ in alone] == [200, 403, 200, 403, 200, 200, 401]
    assert b"informationSystems" in alone[0][1] and b"informationSystems" not in alone[2][1]
    assert alone[0] == alone[5]

    together = _gets_at_once(app, mixed)
    assert [_answer(response) for response in together] == alone
    assert not any(response.cookies for response in together)  # a token never gets a session

    lane_only = [request for request, (status, _, _) in zip(mixed, alone, strict=True) if status == 200]
    with count_queries(engine_of(app)) as counter:
        answers = _gets_at_once(app, lane_only)
    assert [_answer(response) for response in answers] == [a for a in alone if a[0] == 200]
    if engine_of(app).dialect.name == "sqlite":
        assert len(counter.statements) == len(lane_only)
    else:
        # One statement for the four requests and their three tokens.
        assert len(counter.statements) == 1, counter.statements
        assert "ANY" in counter.statements[0]
