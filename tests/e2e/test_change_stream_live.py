"""`GET /api/history/stream` against a live `blockrepo serve` (issue 26): the change feed as Server-Sent
Events, each changeset as the feed gives it, `id:` the revision once it was sent whole, resumable with
`Last-Event-ID`, and masked by the reader's permissions."""

from __future__ import annotations

import datetime as dt
import json
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer, StartServer

pytestmark = pytest.mark.e2e

ADMIN = ("system", ADMIN_PASSWORD)
WAIT = 20.0


@dataclass
class Stream:
    """The events one open stream has received so far: ("change", changeset) and ("id", revision)."""

    events: queue.Queue[tuple[str, Any]] = field(default_factory=queue.Queue)

    def changes_until(self, revision: int) -> list[dict[str, Any]]:
        """The changesets received until the stream names `revision` as sent (fails after WAIT seconds)."""
        changes = []
        while True:
            kind, value = self.events.get(timeout=WAIT)
            if kind == "change":
                changes.append(value)
            elif kind == "id" and value >= revision:
                return changes


@contextmanager
def opened(
    server: LiveServer, auth: tuple[str, str] | None, query: str = "", **headers: str
) -> Iterator[Stream]:
    stream = Stream()
    stop = threading.Event()
    started = threading.Event()
    failure: list[BaseException] = []
    client = httpx.Client(timeout=WAIT)

    def read() -> None:
        try:
            with client.stream(
                "GET", f"{server.base_url}/api/history/stream{query}", auth=auth, headers=headers
            ) as response:
                assert response.status_code == 200, response.read()
                assert response.headers["content-type"].startswith("text/event-stream")
                # The headers every data answer has (tests/api/test_response_headers.py cannot read this one).
                assert response.headers["x-content-type-options"] == "nosniff"
                assert response.headers["cache-control"] == "private, no-cache"
                assert response.headers["vary"] == "Cookie, Authorization"
                started.set()
                kind, data = "message", ""
                for line in response.iter_lines():
                    if stop.is_set():
                        return
                    if line.startswith("event: "):
                        kind = line[len("event: ") :]
                    elif line.startswith("data: "):
                        data = line[len("data: ") :]
                    elif line.startswith(":"):
                        stream.events.put(("comment", line))
                    elif line.startswith("id: "):
                        stream.events.put(("id", int(line[len("id: ") :])))
                    elif line == "" and data:
                        stream.events.put((kind, json.loads(data)))
                        kind, data = "message", ""
        except BaseException as exc:
            if not stop.is_set():  # closing the client from the test ends the read with an error
                failure.append(exc)
            started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(WAIT), "the stream did not open"
    if failure:
        raise failure[0]
    try:
        yield stream
    finally:
        stop.set()
        client.close()  # ends the stream: the server sees the connection go
        reader.join(WAIT)


@pytest.fixture
def streaming_server(start_server: StartServer) -> LiveServer:
    """A server whose streams send a heartbeat every half second (a closed test client is noticed then)."""
    return start_server(env={"BLOCKREPO_STREAM_HEARTBEAT": "0.5"})


def write(server: LiveServer, method: str, path: str, auth: tuple[str, str] = ADMIN, **body: Any) -> int:
    """The revision a write made (the newest of the feed after it: the tests write one at a time)."""
    response = httpx.request(method, f"{server.base_url}{path}", json=body or None, auth=auth, timeout=WAIT)
    assert response.status_code in (200, 201), response.text
    feed = httpx.get(f"{server.base_url}/api/history", params={"limit": 1000}, auth=ADMIN, timeout=WAIT)
    return int(feed.json()["items"][-1]["revision"])


def test_changes_arrive_live_and_resume_after_the_last_event_id(streaming_server: LiveServer) -> None:
    with opened(streaming_server, ADMIN) as stream:
        first = write(streaming_server, "POST", "/api/element/BusinessProcess", name=["Streamed"])
        received = stream.changes_until(first)
        assert [(c["revision"], c["operation"], c["name"]) for c in received] == [
            (first, "created", "Streamed")
        ]
        element = received[0]["id"]
        second = write(
            streaming_server, "PATCH", f"/api/element/BusinessProcess/{element}", description=["one"]
        )
        third = write(
            streaming_server, "PATCH", f"/api/element/BusinessProcess/{element}", description=["two"]
        )
        later = stream.changes_until(third)
        assert [c["revision"] for c in later] == [second, third]
        assert later[0]["via"] == "basic"
    # A client that reconnects after `first` gets exactly what came after it, once each.
    with opened(streaming_server, ADMIN, **{"Last-Event-ID": str(first)}) as resumed:
        again = resumed.changes_until(third)
        assert [c["revision"] for c in again] == [second, third]


def test_a_reader_sees_only_what_the_feed_shows_them(streaming_server: LiveServer) -> None:
    base = streaming_server.base_url
    role = {
        "name": "process watchers",
        "typePermissions": {"BusinessProcess": ["read"]},
        "functionalPermissions": ["VIEW_HISTORY"],
    }
    assert httpx.post(f"{base}/api/administration/roles", json=role, auth=ADMIN).status_code == 201
    user = {"login": "watcher", "password": "watcher-password-1", "roles": ["process watchers"]}
    assert httpx.post(f"{base}/api/administration/users", json=user, auth=ADMIN).status_code == 201
    watcher = ("watcher", "watcher-password-1")
    refused = httpx.get(f"{base}/api/history/stream?type=InformationSystem", auth=watcher, timeout=WAIT)
    assert refused.status_code == 403
    with opened(streaming_server, watcher) as stream:
        hidden = write(streaming_server, "POST", "/api/element/InformationSystem", name=["Hidden system"])
        shown = write(streaming_server, "POST", "/api/element/BusinessProcess", name=["Shown process"])
        received = stream.changes_until(shown)
    assert [c["name"] for c in received] == ["Shown process"]
    assert hidden < shown


def test_filters_and_bad_positions(streaming_server: LiveServer) -> None:
    base = streaming_server.base_url
    for query, code in (
        ("?operation=renamed", "validation_failed"),
        ("?sinceRevision=abc", "validation_failed"),
    ):
        response = httpx.get(f"{base}/api/history/stream{query}", auth=ADMIN, timeout=WAIT)
        assert response.status_code == 400 and response.json()["code"] == code
    assert httpx.get(f"{base}/api/history/stream?type=Nope", auth=ADMIN, timeout=WAIT).status_code == 404
    assert httpx.get(f"{base}/api/history/stream", timeout=WAIT).status_code == 401
    created = write(streaming_server, "POST", "/api/element/BusinessProcess", name=["Filtered"])
    with opened(streaming_server, ADMIN, **{"Last-Event-ID": str(created - 1)}) as everything:
        assert [c["operation"] for c in everything.changes_until(created)] == ["created"]
    element = httpx.get(f"{base}/api/history", params={"sinceRevision": created - 1}, auth=ADMIN).json()[
        "items"
    ][0]["id"]
    updated = write(streaming_server, "PATCH", f"/api/element/BusinessProcess/{element}", description=["x"])
    with opened(streaming_server, ADMIN, f"?operation=updated&sinceRevision={created - 1}") as only_updates:
        assert [c["revision"] for c in only_updates.changes_until(updated)] == [updated]


def test_an_idle_stream_sends_heartbeats_and_a_disabled_reader_s_stream_ends(
    streaming_server: LiveServer,
) -> None:
    base = streaming_server.base_url
    role = {
        "name": "historians",
        "typePermissions": {"Project": ["read"]},
        "functionalPermissions": ["VIEW_HISTORY"],
    }
    assert httpx.post(f"{base}/api/administration/roles", json=role, auth=ADMIN).status_code == 201
    user = {"login": "ida", "password": "ida-password-123", "roles": ["historians"]}
    created = httpx.post(f"{base}/api/administration/users", json=user, auth=ADMIN)
    assert created.status_code == 201
    with opened(streaming_server, ("ida", "ida-password-123")) as stream:
        kinds = {stream.events.get(timeout=WAIT)[0] for _ in range(3)}
        assert "comment" in kinds  # the opening comment and heartbeats while nothing changes
        disabled = {key: value for key, value in user.items() if key != "password"} | {"enabled": False}
        changed = httpx.put(
            f"{base}/api/administration/users/{created.json()['id']}", json=disabled, auth=ADMIN
        )
        assert changed.status_code == 200, changed.text
        while True:
            kind, value = stream.events.get(timeout=WAIT)
            if kind == "end":
                assert value["code"] == "unauthenticated"
                break


def test_a_stream_opened_with_a_token_ends_when_the_token_is_revoked(streaming_server: LiveServer) -> None:
    base = streaming_server.base_url
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    minted = httpx.post(f"{base}/api/tokens", json={"name": "stream", "expiresAt": expires}, auth=ADMIN)
    assert minted.status_code == 201, minted.text
    token = minted.json()
    with opened(streaming_server, None, Authorization=f"Bearer {token['token']}") as stream:
        created = write(streaming_server, "POST", "/api/element/BusinessProcess", name=["Before revocation"])
        assert [c["name"] for c in stream.changes_until(created)] == ["Before revocation"]
        assert httpx.delete(f"{base}/api/tokens/{token['id']}", auth=ADMIN).status_code == 204
        while True:
            kind, value = stream.events.get(timeout=WAIT)
            if kind == "end":
                assert value["code"] == "unauthenticated"
                break
            assert kind != "change", value  # nothing after the revocation
