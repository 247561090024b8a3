"""Webhooks scoped to a planning scenario (`scope: "scenario:<key>"`, issue 26): the changes written in that
scenario only, in order, signed, each event naming the scenario and its change number, masked by the owner's
rights; main's writes never reach them, and a scenario's never reach main's webhooks."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.settings import Settings
from tests.conftest import make_settings
from tests.helpers import client_as, create_role, create_user
from tests.webhook_receiver import Receiver, verified

SYSTEMS = "/api/element/InformationSystem"
PROCESSES = "/api/element/BusinessProcess"
EVENTS = ["element.created", "element.updated", "element.deleted", "relation.added", "relation.removed"]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(
        database_url, webhook_delivery=True, webhook_poll=0.1, webhook_allowed_networks="127.0.0.0/8"
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as started:
        yield started


def _scenario(client: TestClient, name: str = "ERP migration") -> str:
    response = client.post("/api/scenarios", json={"name": name})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _subscribe(client: TestClient, url: str, scope: str, **fields: Any) -> dict[str, Any]:
    body = {"name": "plan watch", "url": url, "events": EVENTS, "scope": scope, **fields}
    response = client.post("/api/webhooks", json=body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def _created(client: TestClient, path: str, name: str, scenario: str | None = None) -> int:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.post(path, json={"name": [name]}, params=params)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def test_a_scenario_s_webhook_gets_its_changes_in_order_and_none_of_main_s(
    client: TestClient, receiver: Receiver
) -> None:
    key = _scenario(client)
    hook = _subscribe(client, receiver.url, f"scenario:{key}", payload="full")
    assert hook["scope"] == f"scenario:{key}" and hook["deliveredThrough"] == 0
    main_hook = _subscribe(client, receiver.url, "main")
    _created(client, SYSTEMS, "Only in main")
    planned = _created(client, SYSTEMS, "Planned ledger", key)
    changed = client.patch(f"{SYSTEMS}/{planned}", json={"description": ["moved"]}, params={"scenario": key})
    assert changed.status_code == 200, changed.text
    messages = receiver.events_until(
        lambda events: sum(1 for e in events if e.get("scenario") == key) >= 2 and len(events) >= 3
    )
    ours = [m for m in messages if m.json["data"].get("scenario") == key]
    theirs = [m for m in messages if m.json["data"].get("scenario") is None]
    for message in ours:
        verified(message, hook["secret"])
        assert message.message_id.startswith(f"msg_{hook['id']}_0_s")
    events = [e for m in ours for e in m.json["data"]["events"]]
    assert [(e["type"], e["element"]["name"]) for e in events] == [
        ("element.created", "Planned ledger"),
        ("element.updated", "Planned ledger"),
    ]
    numbers = [e["scenarioChange"] for e in events]
    assert numbers == sorted(numbers) and all(e["scenario"] == key for e in events)
    # `full`: the element as a read in the scenario renders it.
    assert events[-1]["current"]["description"] == ["moved"]
    # Main's webhook saw main's write only.
    assert [e["element"]["name"] for m in theirs for e in m.json["data"]["events"]] == ["Only in main"]
    for message in theirs:
        verified(message, main_hook["secret"])
    # The cursor counts the scenario's changes (moved once the 2xx is recorded, just after the receiver
    # has the message).
    deadline = time.monotonic() + 20
    while (through := client.get(f"/api/webhooks/{hook['id']}").json()["deliveredThrough"]) != numbers[-1]:
        assert time.monotonic() < deadline, through
        time.sleep(0.05)


def test_replay_in_a_scenario_sends_its_changes_again_with_new_ids(
    client: TestClient, receiver: Receiver
) -> None:
    key = _scenario(client)
    hook = _subscribe(client, receiver.url, f"scenario:{key}")
    _created(client, PROCESSES, "Planned process", key)
    first = receiver.events_until(lambda events: len(events) >= 1)
    replayed = client.post(f"/api/webhooks/{hook['id']}/replay", json={"fromRevision": 0})
    assert replayed.status_code == 200, replayed.text
    again = receiver.events_until(lambda events: len(events) >= 1)
    assert [e["element"]["name"] for m in again for e in m.json["data"]["events"]] == ["Planned process"]
    assert {m.message_id for m in again}.isdisjoint({m.message_id for m in first})


def test_the_owner_s_rights_mask_a_scenario_s_webhook(
    app: FastAPI, client: TestClient, receiver: Receiver
) -> None:
    create_role(app, "process planners", types={"BusinessProcess": ["read"]}, functional=["VIEW_HISTORY"])
    create_user(app, "pia", "pia-password-12", ["process planners"])
    key = _scenario(client)
    shares = {"shares": [{"role": "process planners", "access": "read"}]}
    assert client.put(f"/api/scenarios/{key}/shares", json=shares).status_code == 200
    with client_as(app, "pia", "pia-password-12") as pia:
        _subscribe(pia, receiver.url, f"scenario:{key}")
    _created(client, SYSTEMS, "Secret planned system", key)
    _created(client, PROCESSES, "Planned order handling", key)
    messages = receiver.events_until(lambda events: len(events) >= 1)
    assert [e["element"]["name"] for m in messages for e in m.json["data"]["events"]] == [
        "Planned order handling"
    ]
    assert b"Secret planned system" not in b"".join(m.body for m in receiver.log)


def test_a_scenario_scope_is_refused_for_an_unseen_scenario_and_for_main_s_events(
    app: FastAPI, client: TestClient, receiver: Receiver
) -> None:
    key = _scenario(client)
    body = {"name": "x", "url": receiver.url, "events": ["element.created"], "scope": "scenario:no-such-plan"}
    unknown = client.post("/api/webhooks", json=body)
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_scenario"
    mains = client.post(
        "/api/webhooks", json={**body, "scope": f"scenario:{key}", "events": ["metamodel.changed"]}
    )
    assert mains.status_code == 400, mains.text
    malformed = client.post("/api/webhooks", json={**body, "scope": "elsewhere"})
    assert malformed.status_code == 400
    create_role(app, "historians", types={"BusinessProcess": ["read"]}, functional=["VIEW_HISTORY"])
    create_user(app, "hal", "hal-password-123", ["historians"])
    with client_as(app, "hal", "hal-password-123") as hal:
        hidden = hal.post("/api/webhooks", json={**body, "scope": f"scenario:{key}"})
        assert hidden.status_code == 404
    hook = _subscribe(client, receiver.url, f"scenario:{key}")
    changed = client.patch(f"/api/webhooks/{hook['id']}", json={"events": ["token.created"]})
    assert changed.status_code == 400
    assert client.get("/api/webhooks").json()[0]["scope"] == f"scenario:{key}"


LIFECYCLE = [
    "scenario.proposed",
    "scenario.approved",
    "scenario.commented",
    "scenario.synced",
    "scenario.merged",
    "scenario.closed",
    "scenario.reopened",
    "scenario.reverted",
]


def test_what_happens_to_a_scenario_reaches_its_webhook_in_order(
    app: FastAPI, client: TestClient, receiver: Receiver
) -> None:
    create_role(app, "reviewers", types={"InformationSystem": ["read"]})
    create_user(app, "rita", "rita-password-12", ["reviewers"])
    key = _scenario(client)
    hook = _subscribe(client, receiver.url, f"scenario:{key}", events=[*EVENTS, *LIFECYCLE])
    planned = _created(client, SYSTEMS, "Planned ledger", key)
    proposed = client.post(
        f"/api/scenarios/{key}/review", json={"reviewers": ["rita"], "requiredApprovals": 1}
    )
    assert proposed.status_code == 200, proposed.text
    with client_as(app, "rita", "rita-password-12") as rita:
        commented = rita.post(f"/api/scenarios/{key}/comments", json={"element": planned, "text": "Why now?"})
        assert commented.status_code == 201, commented.text
        # A sync moves the scenario's version: approvals come after it.
        assert client.post(f"/api/scenarios/{key}/sync").status_code == 200
        assert rita.post(f"/api/scenarios/{key}/approvals").status_code == 200
    merged = client.post(f"/api/scenarios/{key}/merge", json={})
    assert merged.status_code == 200, merged.text
    messages = receiver.events_until(lambda events: any(e["type"] == "scenario.merged" for e in events))
    events = [e for m in messages for e in m.json["data"]["events"]]
    assert [e["type"] for e in events] == [
        "element.created",
        "scenario.proposed",
        "scenario.commented",
        "scenario.synced",
        "scenario.approved",
        "scenario.merged",
    ]
    by_type = {e["type"]: e for e in events}
    assert by_type["scenario.proposed"]["reviewers"] == ["rita"]
    assert (
        by_type["scenario.commented"]["text"] == "Why now?"
        and by_type["scenario.commented"]["user"] == "rita"
    )
    assert by_type["scenario.merged"]["counts"]["create"] == 1
    assert all(e["scenario"] == key for e in events)
    for message in messages:
        verified(message, hook["secret"])
    # Replaying from 0 sends the events again too, under new ids.
    assert client.post(f"/api/webhooks/{hook['id']}/replay", json={"fromRevision": 0}).status_code == 200
    again = receiver.events_until(lambda events: any(e["type"] == "scenario.merged" for e in events))
    assert [e["type"] for m in again for e in m.json["data"]["events"]] == [e["type"] for e in events]


def test_closing_and_reopening_reach_the_webhook_and_main_s_webhooks_take_no_scenario_events(
    client: TestClient, receiver: Receiver
) -> None:
    key = _scenario(client)
    _subscribe(client, receiver.url, f"scenario:{key}", events=LIFECYCLE)
    assert client.post(f"/api/scenarios/{key}/close").status_code == 200
    assert client.post(f"/api/scenarios/{key}/reopen").status_code == 200
    messages = receiver.events_until(lambda events: len(events) >= 2)
    assert [e["type"] for m in messages for e in m.json["data"]["events"]] == [
        "scenario.closed",
        "scenario.reopened",
    ]
    body = {"name": "x", "url": receiver.url, "events": ["scenario.merged"]}
    refused = client.post("/api/webhooks", json=body)
    assert refused.status_code == 400 and refused.json()["errors"][0]["code"] == "not_in_main", refused.text
