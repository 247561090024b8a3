"""A request's whole body arrives before any lock or transaction is taken (API.md §9): a client that sends
its body slowly holds up no other user's write, and one that stops sending gets 408. Forwarded headers are
believed only from the configured proxies (§1 rule 8)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.storage.transactions import begin_write
from tests.api.auth_support import bare_client
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import create_role, create_user

READER, READER_PASSWORD = "rita", "rita-reads-only-1"
PROXY = "198.51.100.7"
MAX_FAILURES = 3

# Each a modifying request a Reader may send (all refused in the end): path, method, the whole body.
TRICKLED = {
    "element POST": ("POST", "/api/element/BusinessProcess", b'{"name": ["Trickled"]}'),
    "element PUT with a query string": ("PUT", "/api/element/BusinessProcess/{id}?recursive=false", b"{}"),
    "element PATCH": ("PATCH", "/api/element/BusinessProcess/{id}", b'{"description": ["slow"]}'),
    "massdata bulk": ("POST", "/api/massdata/BusinessProcess", b'{"elements": [{"name": ["Slow"]}]}'),
    "administration": ("POST", "/api/administration/roles", b'{"name": "Slow"}'),
    "metamodel": ("POST", "/api/metamodel/types", b'{"name": "SlowType"}'),
}


@pytest.fixture
def app(database_url: str) -> Iterator[FastAPI]:
    application = create_app(make_settings(database_url, body_read_timeout=1))
    create_role(application, "readers", types={"BusinessProcess": ["read"]})
    create_user(application, READER, READER_PASSWORD, roles=["readers"])
    yield application
    application.state.services.dispose()


async def _held_back(gate: asyncio.Event, body: bytes) -> AsyncIterator[bytes]:
    """The body's first byte now, the rest once `gate` is set."""
    yield body[:1]
    await gate.wait()
    yield body[1:]


def _client(app: FastAPI, auth: tuple[str, str]) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", auth=auth, timeout=120
    )


@pytest.mark.parametrize("case", TRICKLED, ids=list(TRICKLED))
def test_a_body_sent_slowly_holds_up_no_other_write(app: FastAPI, case: str) -> None:
    method, path, body = TRICKLED[case]

    async def scenario() -> None:
        async with (
            _client(app, ("system", ADMIN_PASSWORD)) as admin,
            _client(app, (READER, READER_PASSWORD)) as reader,
        ):
            created = await admin.post("/api/element/BusinessProcess", json={"name": ["Target"]})
            assert created.status_code == 201, created.text
            element_id = created.json()["id"][0]
            gate = asyncio.Event()
            slow = asyncio.create_task(
                reader.request(
                    method,
                    path.format(id=element_id),
                    content=_held_back(gate, body),
                    headers={"Content-Type": "application/json", "Content-Length": str(len(body))},
                )
            )
            await asyncio.sleep(0)  # the reader's request starts first
            other = asyncio.create_task(
                admin.put(f"/api/element/BusinessProcess/{element_id}", json={"description": ["fast"]})
            )
            done, _ = await asyncio.wait({other}, timeout=60)
            gate.set()  # the rest of the reader's body, whatever happened
            answer = await slow
            assert other in done, "the other user's PUT waited for the reader's body"
            assert (await other).status_code == 200
            assert answer.status_code in (400, 403), answer.text

    asyncio.run(scenario())


async def _stalled(body: bytes) -> AsyncIterator[bytes]:
    yield body[:1]
    await asyncio.Event().wait()  # never more


def test_a_stalled_body_gets_408_and_the_connection_is_closed(app: FastAPI) -> None:
    async def scenario() -> httpx.Response:
        async with _client(app, ("system", ADMIN_PASSWORD)) as admin:
            body = b'{"name": ["Stalled"]}'
            return await asyncio.wait_for(
                admin.post(
                    "/api/element/BusinessProcess",
                    content=_stalled(body),
                    headers={"Content-Type": "application/json", "Content-Length": str(len(body))},
                ),
                timeout=60,
            )

    response = asyncio.run(scenario())
    assert response.status_code == 408
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["connection"] == "close"
    assert response.json()["code"] == "request_timeout"
    assert response.headers["x-request-id"] == response.json()["requestId"]


def _throttled_after_spread_failures(app: FastAPI) -> int:
    """Fails MAX_FAILURES logins for `system`, each claiming another forwarded address, then logs in right
    from yet another: the status of that login (429 when the failures were counted against one address)."""
    client = bare_client(app, PROXY)
    for attempt in range(MAX_FAILURES):
        wrong = client.get(
            "/api/auth-scheme", auth=("system", "wrong"), headers={"X-Forwarded-For": f"203.0.113.{attempt}"}
        )
        assert wrong.status_code == 401
    right = client.get(
        "/api/auth-scheme", auth=("system", ADMIN_PASSWORD), headers={"X-Forwarded-For": "203.0.113.200"}
    )
    return right.status_code


@pytest.mark.parametrize(("trusted", "status"), [("", 429), (PROXY, 200), ("198.51.100.0/24", 200)])
def test_forwarded_addresses_count_only_from_trusted_proxies(
    database_url: str, trusted: str, status: int
) -> None:
    app = create_app(make_settings(database_url, login_max_failures=MAX_FAILURES, trusted_proxies=trusted))
    try:
        assert _throttled_after_spread_failures(app) == status
    finally:
        app.state.services.dispose()


def test_a_trusted_proxy_cannot_hide_repeated_failures_of_one_address(database_url: str) -> None:
    app = create_app(make_settings(database_url, login_max_failures=MAX_FAILURES, trusted_proxies=PROXY))
    try:
        client = bare_client(app, PROXY)
        forwarded = {"X-Forwarded-For": "203.0.113.9"}
        for _ in range(MAX_FAILURES):
            assert client.get("/api/auth-scheme", auth=("system", "x"), headers=forwarded).status_code == 401
        login = client.get("/api/auth-scheme", auth=("system", ADMIN_PASSWORD), headers=forwarded)
        assert login.status_code == 429
        # A client's own X-Forwarded-For put before the proxy's entry does not choose the address either.
        spoofed = {"X-Forwarded-For": "192.0.2.1, 203.0.113.9"}
        assert (
            client.get("/api/auth-scheme", auth=("system", ADMIN_PASSWORD), headers=spoofed).status_code
            == 429
        )
    finally:
        app.state.services.dispose()


def test_the_description_publishes_the_body_read_timeout(database_url: str) -> None:
    app = create_app(make_settings(database_url, body_read_timeout=7))
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            description = client.get("/api/7_4/openapi.json").json()["info"]["description"]
        assert "pauses longer than 7 s gets 408 `request_timeout`" in description
    finally:
        app.state.services.dispose()


# Bodies their route's model refuses: answered before the route's context takes the write lock.
REFUSED_MODEL_BODIES = {
    "administration": ("POST", "/api/administration/roles", {"name": 17}),
    "metamodel": ("POST", "/api/metamodel/types", {"name": ["not", "a", "name"]}),
}


@pytest.mark.parametrize("case", REFUSED_MODEL_BODIES, ids=list(REFUSED_MODEL_BODIES))
def test_a_body_its_model_refuses_takes_no_write_lock(app: FastAPI, case: str) -> None:
    method, path, body = REFUSED_MODEL_BODIES[case]
    services = app.state.services
    holding, release = threading.Event(), threading.Event()

    def hold_the_write_lock() -> None:
        with services.write_queue.turn(), services.write_sessions() as db:
            begin_write(db)
            holding.set()
            release.wait(60)
            db.rollback()

    holder = threading.Thread(target=hold_the_write_lock)
    holder.start()
    try:
        assert holding.wait(30)
        answers: list[httpx.Response] = []
        sender = threading.Thread(
            target=lambda: answers.append(
                TestClient(app, base_url="http://127.0.0.1").request(
                    method, path, json=body, auth=("system", ADMIN_PASSWORD)
                )
            )
        )
        sender.start()
        sender.join(30)
        assert answers, "the refused body waited for the write lock another request holds"
        assert answers[0].status_code == 400, answers[0].text
        assert answers[0].json()["code"] == "validation_failed"
    finally:
        release.set()
        holder.join()
