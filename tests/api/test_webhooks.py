"""Webhooks (API.md section 11, issue 26): each a cursor over the committed revisions, delivered to a real
local receiver, signed per Standard Webhooks (checked with the reference verifier), in order, masked by the
owner's rights, retried with the same message id, and refused for internal targets."""

from __future__ import annotations

import queue
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.settings import Settings
from blockrepo.webhooks import service as webhook_service
from blockrepo.webhooks.models import Webhook
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import client_as, create_role, create_user, session_of
from tests.webhook_receiver import Answer, Received, Receiver, verified

SYSTEMS = "/api/element/InformationSystem"
PROCESSES = "/api/element/BusinessProcess"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(
        database_url,
        webhook_delivery=True,
        webhook_poll=0.1,
        webhook_allowed_networks="127.0.0.0/8",
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as started:
        yield started


def subscribe(client: TestClient, url: str, **fields: Any) -> dict[str, Any]:
    body = {"name": "sync", "url": url, "events": ["element.created", "element.updated", "element.deleted"]}
    response = client.post("/api/webhooks", json={**body, **fields})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def created(client: TestClient, path: str, name: str) -> int:
    response = client.post(path, json={"name": [name]})
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def logged(client: TestClient, hook_id: int, count: int, query: str = "") -> list[dict[str, Any]]:
    """The delivery log once it holds `count` attempts (the receiver sees a message before it is logged)."""
    deadline = time.monotonic() + 20
    while len(items := client.get(f"/api/webhooks/{hook_id}/deliveries{query}").json()["items"]) < count:
        assert time.monotonic() < deadline, f"the log holds only {items}"
        time.sleep(0.05)
    return items  # type: ignore[no-any-return]


def event_types(messages: list[Received]) -> list[tuple[str, str]]:
    return [(e["type"], e["element"]["name"]) for m in messages for e in m.json["data"]["events"]]


def test_changes_arrive_signed_in_order_and_are_logged(client: TestClient, receiver: Receiver) -> None:
    hook = subscribe(client, receiver.url)
    assert hook["secret"].startswith("whsec_")
    assert "secret" not in client.get(f"/api/webhooks/{hook['id']}").json()
    erp = created(client, SYSTEMS, "ERP")
    created(client, SYSTEMS, "CRM")
    assert client.patch(f"{SYSTEMS}/{erp}", json={"status": ["PLANNED"]}).status_code == 200
    assert client.delete(f"{SYSTEMS}/{erp}").status_code in (200, 204)
    messages = receiver.events_until(lambda events: len(events) >= 4)
    for message in messages:
        body = verified(message, hook["secret"])
        assert body["type"] == "changes"
        assert message.message_id.startswith(f"msg_{hook['id']}_0_")
    assert event_types(messages) == [
        ("element.created", "ERP"),
        ("element.created", "CRM"),
        ("element.updated", "ERP"),
        ("element.deleted", "ERP"),
    ]
    revisions = [e["revision"] for m in messages for e in m.json["data"]["events"]]
    assert revisions == sorted(revisions)
    updated = next(e for m in messages for e in m.json["data"]["events"] if e["type"] == "element.updated")
    assert [c["property"] for c in updated["changes"]] == ["status"]
    log = logged(client, hook["id"], len(messages), "?status=delivered")
    assert {item["messageId"] for item in log} == {m.message_id for m in messages}
    assert all(item["responseStatus"] == 200 for item in log)


def test_a_rejected_write_delivers_nothing(client: TestClient, receiver: Receiver) -> None:
    erp = created(client, SYSTEMS, "ERP")
    subscribe(client, receiver.url)
    refused = client.patch(f"{SYSTEMS}/{erp}", json={"status": ["PLANNED"], "version": "not a list"})
    assert refused.status_code == 400
    refused = client.patch(f"{SYSTEMS}/{erp}", json={"status": ["PLANNED"], "noSuchField": ["x"]})
    assert refused.status_code == 400
    created(client, SYSTEMS, "CRM")
    messages = receiver.events_until(lambda events: len(events) >= 1)
    assert event_types(messages) == [("element.created", "CRM")]
    assert receiver.received.empty()


def test_the_payload_shows_only_what_the_owner_may_read(
    app: FastAPI, client: TestClient, receiver: Receiver
) -> None:
    create_role(app, "process reader", types={"BusinessProcess": ["read"]}, functional=["VIEW_HISTORY"])
    create_user(app, "anna", "anna-password-1", ["process reader"])
    with client_as(app, "anna", "anna-password-1") as anna:
        hook = subscribe(anna, receiver.url, payload="full")
    created(client, SYSTEMS, "Secret system")
    created(client, PROCESSES, "Order handling")
    messages = receiver.events_until(lambda events: len(events) >= 1)
    assert event_types(messages) == [("element.created", "Order handling")]
    event = messages[0].json["data"]["events"][0]
    assert event["current"]["name"] == ["Order handling"] or event["current"]["name"] == "Order handling"
    assert b"Secret system" not in b"".join(m.body for m in receiver.log)
    assert verified(messages[0], hook["secret"])


def test_types_and_conditions_choose_the_events(client: TestClient, receiver: Receiver) -> None:
    subscribe(
        client,
        receiver.url,
        events=["element.updated"],
        types=["InformationSystem"],
        conditions=[{"property": "status", "new": "TARGET"}],
    )
    erp = created(client, SYSTEMS, "ERP")
    process = created(client, PROCESSES, "Order handling")
    assert client.patch(f"{SYSTEMS}/{erp}", json={"status": ["PLANNED"]}).status_code == 200
    assert client.patch(f"{PROCESSES}/{process}", json={"description": ["new"]}).status_code == 200
    assert client.patch(f"{SYSTEMS}/{erp}", json={"status": ["TARGET"]}).status_code == 200
    messages = receiver.events_until(lambda events: len(events) >= 1)
    events = messages[0].json["data"]["events"]
    assert [(e["type"], e["changes"][0]["new"]) for e in events] in (
        [("element.updated", ["TARGET"])],
        [("element.updated", "TARGET")],
    )


def test_a_receiver_that_is_down_gets_the_same_message_again(client: TestClient) -> None:
    failures = {"left": 2}

    def answer(received: Received) -> Answer:
        if failures["left"]:
            failures["left"] -= 1
            return Answer(503, {"Retry-After": "1"})
        return Answer()

    with Receiver(answer) as receiver:
        hook = subscribe(client, receiver.url)
        created(client, SYSTEMS, "ERP")
        message = receiver.next()
    attempts = [r.message_id for r in receiver.log]
    assert len(attempts) == 3 and len(set(attempts)) == 1
    assert verified(message, hook["secret"])
    log = logged(client, hook["id"], 3)
    assert [(item["status"], item["responseStatus"], item["attempt"]) for item in log] == [
        ("delivered", 200, 3),
        ("failed", 503, 2),
        ("failed", 503, 1),
    ]
    failed = client.get(f"/api/webhooks/{hook['id']}/deliveries?status=failed").json()["items"]
    assert len(failed) == 2


def test_410_disables_the_webhook_and_resume_enables_it(client: TestClient) -> None:
    gone = {"yes": True}
    with Receiver(lambda _: Answer(410) if gone["yes"] else Answer()) as receiver:
        hook = subscribe(client, receiver.url)
        created(client, SYSTEMS, "ERP")
        deadline = time.monotonic() + 20
        while (state := client.get(f"/api/webhooks/{hook['id']}").json())["active"]:
            assert time.monotonic() < deadline, "the webhook was not disabled"
            time.sleep(0.05)
        assert not state["active"] and "410" in state["disabledReason"]
        feed = client.get("/api/history").json()
        subjects = [c["subject"] for c in feed["items"] if c["entity"] == "administration"]
        assert f"webhook {hook['id']}" in subjects
        gone["yes"] = False
        assert client.post(f"/api/webhooks/{hook['id']}/resume").json()["active"]
        message = receiver.next()
        assert event_types([message]) == [("element.created", "ERP")]


def test_replay_delivers_again_under_new_ids(client: TestClient, receiver: Receiver) -> None:
    hook = subscribe(client, receiver.url, fromRevision=0)
    created(client, SYSTEMS, "ERP")
    first = receiver.events_until(lambda events: any(e["element"]["name"] == "ERP" for e in events))
    replayed = client.post(f"/api/webhooks/{hook['id']}/replay", json={"fromRevision": 0})
    assert replayed.status_code == 200, replayed.text
    again = receiver.events_until(lambda events: any(e["element"]["name"] == "ERP" for e in events))
    assert event_types(again)[-1] == ("element.created", "ERP")
    assert {m.message_id for m in again}.isdisjoint({m.message_id for m in first})
    assert all(m.message_id.startswith(f"msg_{hook['id']}_1_") for m in again)


def test_batching_gathers_a_window_into_one_message(client: TestClient, receiver: Receiver) -> None:
    subscribe(client, receiver.url, batchSeconds=2)
    for name in ("A", "B", "C", "D", "E"):
        created(client, SYSTEMS, name)
    message = receiver.next()
    assert event_types([message]) == [("element.created", name) for name in "ABCDE"]


def test_a_rotated_secret_signs_beside_the_old_one(client: TestClient, receiver: Receiver) -> None:
    hook = subscribe(client, receiver.url)
    rotated = client.post(f"/api/webhooks/{hook['id']}/secret", json={"overlapSeconds": 600}).json()
    assert rotated["secret"] != hook["secret"]
    created(client, SYSTEMS, "ERP")
    message = receiver.next()
    assert len(message.headers["webhook-signature"].split(" ")) == 2
    assert verified(message, hook["secret"]) == verified(message, rotated["secret"])


def test_a_test_send_is_signed_and_logged(client: TestClient, receiver: Receiver) -> None:
    hook = subscribe(client, receiver.url)
    answer = client.post(f"/api/webhooks/{hook['id']}/test")
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "delivered" and answer.json()["responseStatus"] == 200
    body = verified(receiver.next(), hook["secret"])
    assert body["type"] == "webhook.test"
    log = client.get(f"/api/webhooks/{hook['id']}/deliveries").json()["items"]
    assert log[0]["kind"] == "test"


def test_a_paused_webhook_sends_nothing_until_resumed(
    app: FastAPI, client: TestClient, receiver: Receiver
) -> None:
    hook = subscribe(client, receiver.url)
    assert client.post(f"/api/webhooks/{hook['id']}/pause").json()["active"] is False
    created(client, SYSTEMS, "ERP")
    with pytest.raises(queue.Empty):
        receiver.next(timeout=1.0)
    client.post(f"/api/webhooks/{hook['id']}/resume")
    assert event_types([receiver.next()]) == [("element.created", "ERP")]


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("http://127.0.0.1:9/hook", "target_not_allowed"),
        ("http://localhost/hook", "target_not_allowed"),
        ("http://169.254.169.254/latest/meta-data/", "target_not_allowed"),
        ("http://10.1.2.3/hook", "target_not_allowed"),
        ("http://[::1]/hook", "target_not_allowed"),
        ("http://[::ffff:127.0.0.1]/hook", "target_not_allowed"),
        ("http://0.0.0.0/hook", "target_not_allowed"),
        ("ftp://example.com/hook", "invalid_url"),
        ("http://user:secret@example.com/hook", "invalid_url"),
        ("not a url", "invalid_url"),
    ],
)
def test_internal_targets_are_refused(database_url: str, url: str, code: str) -> None:
    # Public targets allowed, as in production: the internal ones are still refused.
    app = create_app(make_settings(database_url, webhook_public_targets=True))
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            client.auth = ("system", ADMIN_PASSWORD)
            response = client.post(
                "/api/webhooks", json={"name": "x", "url": url, "events": ["element.created"]}
            )
            assert response.status_code == 400, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            assert [e["code"] for e in response.json()["errors"]] == [code]
            with session_of(app) as db:
                assert db.scalars(select(Webhook)).all() == []
    finally:
        app.state.services.dispose()


def test_others_webhooks_are_not_theirs_to_see(app: FastAPI, client: TestClient, receiver: Receiver) -> None:
    hook = subscribe(client, receiver.url)
    create_role(app, "historian", functional=["VIEW_HISTORY"])
    create_user(app, "anna", "anna-password-1", ["historian"])
    with client_as(app, "anna", "anna-password-1") as anna:
        assert anna.get(f"/api/webhooks/{hook['id']}").status_code == 404
        assert anna.delete(f"/api/webhooks/{hook['id']}").status_code == 404
        assert anna.get("/api/webhooks").json() == []
        assert anna.get("/api/webhooks?everyone=true").status_code == 403
    assert [h["id"] for h in client.get("/api/webhooks?everyone=true").json()] == [hook["id"]]


def test_an_import_is_one_import_completed_event(client: TestClient, receiver: Receiver) -> None:
    created(client, SYSTEMS, "ERP")
    subscribe(client, receiver.url, events=["import.completed"])
    exported = client.get("/api/massdata/export").json()
    assert client.post("/api/massdata/import", json=exported).status_code == 200  # unchanged: no event
    erp = next(r for r in exported["elements"]["InformationSystem"] if r["name"] == "ERP")
    erp["version"] = ["S/4HANA 2025"]
    assert client.post("/api/massdata/import", json=exported).status_code == 200
    (message,) = receiver.events_until(lambda events: len(events) >= 1)
    (event,) = message.json["data"]["events"]
    assert event["type"] == "import.completed"
    assert {c["property"]: c["new"] for c in event["changes"]}["updated"] == 1


def test_the_target_is_resolved_before_the_write_lock_is_taken(
    app: FastAPI, client: TestClient, receiver: Receiver, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    # A name server an attacker runs can answer slowly: the lookup must hold up no writer.
    if not database_url.startswith("sqlite"):
        pytest.skip("looks at SQLite's write lock")
    path = database_url.split("///", 1)[1]
    lock_free: list[bool] = []
    check = webhook_service.check_target

    def observed(url: str, *args: Any, **kwargs: Any) -> None:
        probe = sqlite3.connect(path, timeout=0)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
            lock_free.append(True)
        except sqlite3.OperationalError:
            lock_free.append(False)
        finally:
            probe.close()
        check(url, *args, **kwargs)

    monkeypatch.setattr(webhook_service, "check_target", observed)
    hook = subscribe(client, receiver.url)
    changed = client.patch(f"/api/webhooks/{hook['id']}", json={"url": receiver.url + "/v2"})
    assert changed.status_code == 200, changed.text
    assert lock_free == [True, True]
