"""Webhooks against live `blockrepo serve` processes (issue 26): a server killed (-9) in the middle of a
delivery and a receiver that is down for a while lose nothing, and what is sent again comes with the same
message id; two instances on one PostgreSQL deliver each message once and keep delivering when one dies."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD, PG_URL
from tests.e2e.conftest import LiveServer, StartServer, child_pids
from tests.webhook_receiver import Answer, Received, Receiver, verified

pytestmark = pytest.mark.e2e

ADMIN = ("system", ADMIN_PASSWORD)
SYSTEMS = "/api/element/InformationSystem"
# Loopback receivers only, a fast poll, and a short lease so that a dead instance's webhooks move on soon.
ENVIRONMENT = {
    "BLOCKREPO_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8",
    "BLOCKREPO_WEBHOOK_PUBLIC_TARGETS": "false",
    "BLOCKREPO_WEBHOOK_POLL": "0.2",
    "BLOCKREPO_WEBHOOK_LEASE": "3",
}
WAIT = 60.0


class Switch:
    """How the receiver answers, changed by the test as it goes."""

    def __init__(self) -> None:
        self.status = 200
        self.delay = 0.0
        self.arrived = threading.Event()

    def __call__(self, received: Received) -> Answer:
        self.arrived.set()
        return Answer(self.status, {"Retry-After": "1"} if self.status >= 500 else {}, self.delay)


@pytest.fixture
def switch() -> Switch:
    return Switch()


@pytest.fixture
def receiver(switch: Switch) -> Iterator[Receiver]:
    with Receiver(switch) as started:
        yield started


def subscribe(server: LiveServer, url: str) -> dict[str, Any]:
    response = httpx.post(
        f"{server.base_url}/api/webhooks",
        auth=ADMIN,
        json={"name": "sync", "url": url, "events": ["element.created"]},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def create(server: LiveServer, names: list[str]) -> None:
    with httpx.Client(base_url=server.base_url, auth=ADMIN, timeout=30) as client:
        for name in names:
            response = client.post(SYSTEMS, json={"name": [name]})
            assert response.status_code == 201, response.text


def kill_hard(server: LiveServer) -> None:
    """SIGKILL the server and every worker process: nothing gets to finish or clean up."""
    for pid in [*child_pids(server.process.pid), server.process.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    server.process.wait(timeout=30)


def wait_for_names(receiver: Receiver, expected: set[str], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not expected <= set(kept_names(receiver)):
        assert time.monotonic() < deadline, f"delivered so far: {kept_names(receiver)}"
        time.sleep(0.1)


def kept(receiver: Receiver) -> list[Received]:
    """The messages answered 2xx, in arrival order."""
    return list(receiver.received.queue)


def kept_names(receiver: Receiver) -> list[str]:
    return [event["element"]["name"] for m in kept(receiver) for event in m.json["data"]["events"]]


def assert_once_per_id_and_in_order(messages: list[Received], secret: str) -> None:
    """Every event belongs to one message id (a message sent again is the same message), and the events,
    each counted once, come in revision order."""
    by_id: dict[str, list[tuple[int, str]]] = {}
    first_seen: list[tuple[int, str]] = []
    owner: dict[tuple[int, str], str] = {}
    for message in messages:
        body = verified(message, secret)
        events = [(e["revision"], e["element"]["name"]) for e in body["data"]["events"]]
        if message.message_id in by_id:
            assert by_id[message.message_id] == events, "a message sent again changed its events"
            continue
        by_id[message.message_id] = events
        for event in events:
            assert event not in owner, f"{event} came in {owner.get(event)} and again in {message.message_id}"
            owner[event] = message.message_id
            first_seen.append(event)
    assert first_seen == sorted(first_seen)


def test_a_killed_server_and_a_receiver_that_is_down_lose_nothing(
    start_server: StartServer, database_url: str, switch: Switch, receiver: Receiver
) -> None:
    server = start_server(env=ENVIRONMENT)
    hook = subscribe(server, receiver.url)
    # 1. The receiver takes its time with the first message; the server is killed while it waits.
    switch.delay = 2.0
    create(server, ["A1"])
    assert switch.arrived.wait(WAIT), server.log()
    kill_hard(server)
    switch.delay = 0.0
    # 2. Writes while the receiver is down (503 with Retry-After), on a new server over the same database.
    switch.status = 503
    server = start_server(env=ENVIRONMENT)
    create(server, ["B1", "B2", "B3"])
    # A1 first (strictly in order): its message is tried again and again while the receiver is down.
    deadline = time.monotonic() + WAIT
    while len(receiver.log) < 3:
        assert time.monotonic() < deadline, (
            f"the server did not retry while the receiver was down:\n{server.log()}"
        )
        time.sleep(0.1)
    create(server, ["C1", "C2"])
    # 3. The receiver is back: everything arrives, in order, each event under one message id.
    switch.status = 200
    wait_for_names(receiver, {"A1", "B1", "B2", "B3", "C1", "C2"})
    messages = kept(receiver)
    assert_once_per_id_and_in_order(messages, hook["secret"])
    # A1 was received before the kill and sent again after it: the same message, the same id.
    a1 = [m.message_id for m in messages if m.json["data"]["events"][0]["element"]["name"] == "A1"]
    assert len(a1) == 2 and len(set(a1)) == 1
    log = httpx.get(
        f"{server.base_url}/api/webhooks/{hook['id']}/deliveries?status=failed", auth=ADMIN
    ).json()
    assert log["items"] and all(item["responseStatus"] == 503 for item in log["items"])


@pytest.mark.postgres
@pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL (BLOCKREPO_TEST_DATABASE_URL)")
def test_two_instances_deliver_each_message_once_and_survive_one_dying(
    start_server: StartServer, database_url: str, receiver: Receiver
) -> None:
    first = start_server("--workers", "2", env=ENVIRONMENT)
    second = start_server("--workers", "2", env=ENVIRONMENT)
    hooks = [subscribe(first, receiver.url) for _ in range(3)]
    names = [f"S{n:02d}" for n in range(40)]
    writers = [
        threading.Thread(target=create, args=(server, names[i::2]))
        for i, server in enumerate((first, second))
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    expected = {name: 3 for name in names}
    deadline = time.monotonic() + WAIT
    while sorted(kept_names(receiver)) != sorted(n for n, c in expected.items() for _ in range(c)):
        assert time.monotonic() < deadline, f"delivered so far: {sorted(kept_names(receiver))}"
        time.sleep(0.1)
    time.sleep(1.0)  # a second delivery of anything would arrive now
    messages = kept(receiver)
    ids = [m.message_id for m in messages]
    assert len(ids) == len(set(ids)), "a message was delivered twice"
    for hook in hooks:
        mine = [m for m in messages if m.message_id.startswith(f"msg_{hook['id']}_")]
        assert_once_per_id_and_in_order(mine, hook["secret"])
    # One instance dies: the other takes its webhooks over once their leases run out.
    kill_hard(first)
    create(second, ["after"])
    wait_for_names(receiver, {"after"})
    deadline = time.monotonic() + WAIT
    while kept_names(receiver).count("after") < 3:
        assert time.monotonic() < deadline, f"delivered so far: {kept_names(receiver)}"
        time.sleep(0.1)
