"""Slow and half-sent requests against a live `blockrepo serve` (API.md §9): a Reader trickling a body holds
up no other user's write, a stalled body gets 408 and its connection is closed, and so is a connection whose
request head never ends. Forwarded addresses count only from trusted proxies (§1 rule 8)."""

from __future__ import annotations

import socket
import threading
import time
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI

from blockrepo.app import create_app
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.e2e.conftest import LiveServer, StartServer
from tests.helpers import create_role, create_user

pytestmark = pytest.mark.e2e

READER, READER_PASSWORD = "rita", "rita-reads-only-1"
READER_AUTH = "Basic cml0YTpyaXRhLXJlYWRzLW9ubHktMQ=="  # rita:rita-reads-only-1
HALF_OPEN = 40


def add_reader(database_url: str) -> None:
    """A user who may only read business processes, written before the server starts."""
    app: FastAPI = create_app(make_settings(database_url))
    try:
        create_role(app, "readers", types={"BusinessProcess": ["read"]})
        create_user(app, READER, READER_PASSWORD, roles=["readers"])
    finally:
        app.state.services.dispose()


def connect(server: LiveServer) -> socket.socket:
    address = urlsplit(server.base_url)
    assert address.hostname is not None and address.port is not None
    connection = socket.create_connection((address.hostname, address.port), timeout=60)
    return connection


def head(method: str, path: str, length: int, authorization: str = READER_AUTH) -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {authorization}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def read_to_end(connection: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (socket.timeout if it never does)."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
    return received


@pytest.mark.parametrize(
    ("method", "path"),
    # A query string takes the PUT past the write lane; one that names no parameter, since a PUT takes none
    # (an unknown one is refused with 400, after the body has arrived all the same).
    [("POST", "/api/element/BusinessProcess"), ("PUT", "/api/element/BusinessProcess/{id}?&")],
    ids=["POST", "PUT with a query string"],
)
def test_a_reader_trickling_a_body_holds_up_no_other_write(
    start_server: StartServer, database_url: str, method: str, path: str
) -> None:
    add_reader(database_url)
    server = start_server()
    with httpx.Client(base_url=server.base_url, auth=("system", ADMIN_PASSWORD), timeout=120) as admin:
        created = admin.post("/api/element/BusinessProcess", json={"name": ["Target"]})
        assert created.status_code == 201, created.text
        element_id = created.json()["id"][0]
        body = b'{"description": ["' + b" " * 2000 + b'"]}'
        trickle = connect(server)
        trickle.sendall(head(method, path.format(id=element_id), len(body)) + body[:1])
        time.sleep(0.5)  # the reader's request is in the server before the other PUT starts
        answers: list[int] = []

        def other_put() -> None:
            response = admin.put(f"/api/element/BusinessProcess/{element_id}", json={"description": ["x"]})
            answers.append(response.status_code)

        other = threading.Thread(target=other_put)
        other.start()
        sent = 1
        while other.is_alive() and sent < len(body) - 1:
            trickle.sendall(body[sent : sent + 1])  # a byte at a time, never pausing long
            sent += 1
            other.join(timeout=0.05)
        still_trickling = not other.is_alive() and sent < len(body) - 1
        trickle.sendall(body[sent:])
        other.join()
        answer = read_to_end_of_response(trickle)
        trickle.close()
    assert still_trickling, "the other user's PUT waited until the reader's body was complete"
    assert answers == [200]
    assert answer.split(b" ", 2)[1] in (b"400", b"403"), answer[:200]


def read_to_end_of_response(connection: socket.socket) -> bytes:
    """The first response on a kept-alive connection (its head and whatever body arrived with it)."""
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = connection.recv(65536)
        if not chunk:
            break
        received += chunk
    return received


def test_a_stalled_body_gets_408_and_the_connection_is_closed(
    start_server: StartServer, database_url: str
) -> None:
    add_reader(database_url)
    server = start_server(env={"BLOCKREPO_BODY_READ_TIMEOUT": "1"})
    stalled = connect(server)
    stalled.sendall(head("POST", "/api/element/BusinessProcess", 100) + b'{"name": ')
    answer = read_to_end(stalled)  # ends only when the server closes the connection
    stalled.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"application/problem+json" in answer
    assert b'"code":"request_timeout"' in answer


def test_connections_with_an_unfinished_head_are_closed(start_server: StartServer) -> None:
    server = start_server(env={"BLOCKREPO_HEADER_READ_TIMEOUT": "1"})
    half_open = [connect(server) for _ in range(HALF_OPEN)]
    for index, connection in enumerate(half_open):
        if index % 2:  # the others sent nothing at all
            connection.sendall(b"GET /api/auth-scheme HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    # One more that sends a whole request first and then half of the next one on the same connection.
    kept_alive = connect(server)
    kept_alive.sendall(b"GET /api/auth-scheme HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert read_to_end_of_response(kept_alive).startswith(b"HTTP/1.1 200 ")
    kept_alive.sendall(b"GET /api/auth-scheme HTTP/1.1\r\nHo")
    for connection in half_open:
        answer = read_to_end(connection)  # ends only when the server closes the connection
        connection.close()
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert b'"code":"request_timeout"' in answer
    # After the body of the first answer: the 408 of the unfinished second head, then the end.
    assert read_to_end(kept_alive).endswith(b'"code":"request_timeout","requestId":null,"errors":[]}')
    kept_alive.close()
    assert httpx.get(f"{server.base_url}/api/auth-scheme", timeout=30).status_code == 200


def spread_failures_then_log_in(server: LiveServer) -> int:
    """Three failed logins of `system` from loopback, each claiming another forwarded address, then a right
    one claiming yet another: the status of that login (429 when the failures counted against loopback)."""
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for attempt in range(3):
            wrong = client.get(
                "/api/auth-scheme",
                auth=("system", "wrong"),
                headers={"X-Forwarded-For": f"203.0.113.{attempt}"},
            )
            assert wrong.status_code == 401
        right = client.get(
            "/api/auth-scheme",
            auth=("system", ADMIN_PASSWORD),
            headers={"X-Forwarded-For": "203.0.113.200", "Forwarded": "for=203.0.113.201"},
        )
        return right.status_code


@pytest.mark.parametrize(
    ("env", "status"),
    [
        # uvicorn alone believes loopback, and FORWARDED_ALLOW_IPS: neither may leak through.
        ({}, 429),
        ({"FORWARDED_ALLOW_IPS": "*"}, 429),
        ({"BLOCKREPO_TRUSTED_PROXIES": "127.0.0.1"}, 200),
    ],
    ids=["default", "FORWARDED_ALLOW_IPS ignored", "loopback trusted"],
)
def test_forwarded_addresses_count_only_from_trusted_proxies(
    start_server: StartServer, env: dict[str, str], status: int
) -> None:
    server = start_server(env={"BLOCKREPO_LOGIN_MAX_FAILURES": "3", **env})
    assert spread_failures_then_log_in(server) == status
