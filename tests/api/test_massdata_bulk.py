"""POST and DELETE /api/massdata/{type}: atomic, perItem and dryRun bulk writes, upserts by name, references
to elements created earlier in the request, set-based SQL and history recorded like single writes."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select
from starlette.testclient import TestClient

from blockrepo.elements.models import Element
from blockrepo.revisions.models import Change, Revision
from tests.api.history_support import all_pages
from tests.api.test_history_replay import replay
from tests.helpers import (
    client_as,
    count_queries,
    create_attribute,
    create_role,
    create_user,
    engine_of,
    session_of,
)

BULK = "/api/massdata/BusinessProcess"


@pytest.fixture
def attributes(app: FastAPI) -> None:
    create_attribute(app, "Costs", "number", types=["BusinessProcess", "InformationSystem"])
    create_attribute(app, "Criticality", "enum", types=["BusinessProcess"], literals=["low", "high"])
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])


def systems(client: TestClient, *names: str) -> list[int]:
    ids = []
    for name in names:
        response = client.post("/api/element/InformationSystem", json={"name": [name]})
        assert response.status_code == 201
        ids.append(response.json()["id"][0])
    return ids


def post(client: TestClient, body: dict[str, Any], path: str = BULK) -> Any:
    return client.post(path, json=body)


def element(client: TestClient, element_id: int, type_name: str = "BusinessProcess") -> dict[str, Any]:
    response = client.get(f"/api/element/{type_name}/{element_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def count_elements(app: FastAPI) -> int:
    with session_of(app) as db:
        return int(db.scalar(select(func.count()).select_from(Element)) or 0)


def revisions(app: FastAPI) -> int:
    with session_of(app) as db:
        return int(db.scalar(select(func.count()).select_from(Revision)) or 0)


# --- atomic --------------------------------------------------------------------------------------------


def test_atomic_creates_with_references_to_earlier_items(
    app: FastAPI, client: TestClient, attributes: None
) -> None:
    erp, crm = systems(client, "ERP", "CRM")
    response = post(
        client,
        {
            "elements": [
                {"name": ["Sales"], "Criticality": ["high"]},
                {
                    "name": ["Order handling"],
                    "parent": [{"name": "Sales"}],
                    "Costs": [12.5],
                    "informationSystems": [{"id": erp, "attributes": {"Share": [60]}}, {"name": "CRM"}],
                },
                {
                    "name": ["Invoicing"],
                    "parent": [{"name": "Sales"}],
                    "predecessors": [{"name": "Order handling"}],
                },
            ]
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["created"], body["updated"], body["failed"]) == (3, 0, 0)
    assert [r["status"] for r in body["results"]] == [201, 201, 201]
    sales, order, invoicing = (r["id"] for r in body["results"])
    assert element(client, sales)["children"] == [
        {"id": order, "name": "Order handling"},
        {"id": invoicing, "name": "Invoicing"},
    ]
    assert element(client, order)["informationSystems"] == [
        {"id": erp, "name": "ERP", "attributes": {"Share": [60]}},
        {"id": crm, "name": "CRM", "attributes": {"Share": []}},
    ]
    assert element(client, order)["successors"] == [{"id": invoicing, "name": "Invoicing"}]
    assert element(client, erp, "InformationSystem")["businessProcesses"] == [
        {"id": order, "name": "Order handling", "attributes": {"Share": [60]}}
    ]
    assert element(client, erp, "InformationSystem")["revision"] == [2]


def test_atomic_failure_writes_nothing(app: FastAPI, client: TestClient, attributes: None) -> None:
    systems(client, "ERP")
    before_elements, before_revisions = count_elements(app), revisions(app)
    response = post(
        client,
        {
            "elements": [
                {"name": ["Good"]},
                {"name": ["Bad"], "Costs": ["many"]},
                {"name": ["Also bad"], "informationSystems": [{"name": "Nothing"}]},
                {"name": ["Good"]},
            ]
        },
    )
    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "validation_failed"
    assert {e["pointer"] for e in problem["errors"]} == {
        "/elements/1/Costs/0",
        "/elements/2/informationSystems/0",
        "/elements/3/name/0",
    }
    assert [r["status"] for r in problem["results"]] == [201, 400, 400, 409]
    assert count_elements(app) == before_elements
    assert revisions(app) == before_revisions


# --- perItem -------------------------------------------------------------------------------------------


def test_per_item_reports_each_index(app: FastAPI, client: TestClient, attributes: None) -> None:
    existing = post(client, {"elements": [{"name": ["Existing"]}]}).json()["results"][0]["id"]
    response = post(
        client,
        {
            "mode": "perItem",
            "elements": [
                {"name": ["Fine"], "Costs": [1]},
                {"name": ["Broken"], "Costs": [1, 2]},
                {"name": ["Existing"]},
                {"id": [999999], "Costs": [3]},
                {"id": existing, "Criticality": ["low"]},
                {"name": ["Child of broken"], "parent": [{"name": "Broken"}]},
                {"name": ["Child of fine"], "parent": [{"name": "Fine"}]},
                "not an object",
            ],
        },
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert [(r["index"], r["status"]) for r in body["results"]] == [
        (0, 201),
        (1, 400),
        (2, 409),
        (3, 404),
        (4, 200),
        (5, 400),
        (6, 201),
        (7, 400),
    ]
    assert (body["created"], body["updated"], body["failed"]) == (2, 1, 5)
    assert body["results"][1]["errors"][0]["pointer"] == "/Costs/1"
    assert body["results"][2]["errors"][0]["code"] == "name_conflict"
    assert body["results"][5]["errors"][0]["code"] == "failed_dependency"
    assert body["results"][4]["id"] == existing
    assert element(client, existing)["Criticality"] == ["low"]
    fine = body["results"][0]["id"]
    assert element(client, body["results"][6]["id"])["parent"] == [{"id": fine, "name": "Fine"}]
    listed = client.get(BULK, params={"fields": "name"}).json()["items"]
    assert sorted(i["name"][0] for i in listed) == ["Child of fine", "Existing", "Fine"]


# --- dryRun --------------------------------------------------------------------------------------------


def test_dry_run_reports_and_writes_nothing(app: FastAPI, client: TestClient, attributes: None) -> None:
    existing = post(client, {"elements": [{"name": ["Existing"]}]}).json()["results"][0]["id"]
    before_elements, before_revisions = count_elements(app), revisions(app)
    response = post(
        client,
        {
            "dryRun": True,
            "match": "name",
            "elements": [{"name": ["Existing"], "Costs": [5]}, {"name": ["New"]}],
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert body["dryRun"] is True
    assert [(r["status"], r["id"]) for r in body["results"]] == [(200, existing), (201, None)]
    assert count_elements(app) == before_elements
    assert revisions(app) == before_revisions
    assert element(client, existing)["Costs"] == []


def test_dry_run_of_a_failing_atomic_request_is_the_same_400(client: TestClient, attributes: None) -> None:
    response = post(client, {"dryRun": True, "elements": [{"name": ["A"], "Costs": ["x"]}]})
    assert response.status_code == 400
    assert response.json()["results"][0]["status"] == 400


# --- upserts and updates -------------------------------------------------------------------------------


def test_match_by_name_upserts(app: FastAPI, client: TestClient, attributes: None) -> None:
    first = post(client, {"elements": [{"name": ["Sales"], "Costs": [1]}, {"name": ["Hiring"]}]}).json()
    sales, hiring = (r["id"] for r in first["results"])
    second = post(
        client,
        {
            "match": "name",
            "elements": [
                {"name": ["Sales"], "Costs": [2]},
                {"name": ["Buying"], "parent": [{"name": "Sales"}]},
            ],
        },
    ).json()
    assert (second["results"][0]["status"], second["results"][0]["id"]) == (200, sales)
    assert second["results"][1]["status"] == 201
    assert element(client, sales)["Costs"] == [2]
    assert element(client, sales)["revision"] == [2]  # created; then one request updated it and added a child
    assert element(client, hiring)["revision"] == [1]
    without_match = post(client, {"elements": [{"name": ["Sales"]}]})
    assert without_match.status_code == 400
    assert without_match.json()["results"][0]["status"] == 409


def test_updates_are_partial_and_replace_relation_ends(
    app: FastAPI, client: TestClient, attributes: None
) -> None:
    erp, crm = systems(client, "ERP", "CRM")
    created = post(
        client,
        {"elements": [{"name": ["Sell"], "Costs": [1], "Criticality": ["low"], "informationSystems": [erp]}]},
    ).json()
    sell = created["results"][0]["id"]
    response = post(client, {"elements": [{"id": [sell], "Costs": [], "informationSystems": [crm]}]})
    assert response.status_code == 200, response.text
    after = element(client, sell)
    assert after["Costs"] == [] and after["Criticality"] == ["low"]
    assert [e["id"] for e in after["informationSystems"]] == [crm]
    assert after["revision"] == [2]
    assert element(client, erp, "InformationSystem")["businessProcesses"] == []


def test_moving_an_element_under_its_descendant_is_a_cycle(client: TestClient, attributes: None) -> None:
    created = post(
        client, {"elements": [{"name": ["Root"]}, {"name": ["Child"], "parent": [{"name": "Root"}]}]}
    ).json()
    root, child = (r["id"] for r in created["results"])
    response = post(client, {"elements": [{"id": root, "parent": [child]}]})
    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "cycle"
    swap = post(
        client,
        {"mode": "perItem", "elements": [{"id": child, "parent": []}, {"id": root, "parent": [child]}]},
    )
    assert [r["status"] for r in swap.json()["results"]] == [200, 200]
    assert element(client, root)["parent"] == [{"id": child, "name": "Child"}]


def test_single_valued_partner_cannot_be_claimed_twice(client: TestClient) -> None:
    flow = client.post("/api/element/InformationFlow", json={"name": ["Orders"]}).json()["id"][0]
    response = post(
        client,
        {"elements": [{"name": ["A"], "outgoingFlows": [flow]}, {"name": ["B"], "outgoingFlows": [flow]}]},
        "/api/massdata/InformationSystem",
    )
    assert response.status_code == 400
    assert response.json()["errors"][0] == {
        "pointer": "/elements/1/outgoingFlows/0",
        "code": "cardinality",
        "message": response.json()["errors"][0]["message"],
    }


# --- limits and envelope ------------------------------------------------------------------------------


def test_more_than_10000_elements_is_413(client: TestClient) -> None:
    response = post(client, {"elements": [{"name": [f"E{i}"]} for i in range(10_001)]})
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({}, "/elements"),
        ({"elements": [], "mode": "sometimes"}, "/mode"),
        ({"elements": [], "match": "colour"}, "/match"),
        ({"elements": [], "dryRun": "yes"}, "/dryRun"),
        ({"elements": [], "extra": 1}, "/extra"),
    ],
)
def test_malformed_envelopes_are_400(client: TestClient, body: dict[str, Any], pointer: str) -> None:
    response = post(client, body)
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == pointer


def test_non_json_is_415(client: TestClient) -> None:
    response = client.post(
        BULK, content=b"name=x", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 415


# --- set-based -----------------------------------------------------------------------------------------


def test_statement_count_does_not_grow_with_the_number_of_elements(
    app: FastAPI, client: TestClient, attributes: None
) -> None:
    (erp,) = systems(client, "ERP")

    def batch(prefix: str, size: int) -> dict[str, Any]:
        return {
            "elements": [
                {
                    "name": [f"{prefix}{i}"],
                    "Costs": [i],
                    "Criticality": ["low"],
                    "informationSystems": [{"id": erp, "attributes": {"Share": [i]}}],
                    **({"parent": [{"name": f"{prefix}0"}]} if i else {}),
                }
                for i in range(size)
            ]
        }

    post(client, batch("warm", 2))
    with count_queries(engine_of(app)) as small:
        assert post(client, batch("s", 10)).status_code == 200
    with count_queries(engine_of(app)) as large:
        assert post(client, batch("l", 300)).status_code == 200
    assert large.count == small.count

    def updates(size: int) -> dict[str, Any]:
        return {"elements": [{"name": [f"l{i}"], "Costs": [i + 1]} for i in range(size)], "match": "name"}

    with count_queries(engine_of(app)) as few:
        assert post(client, updates(10)).json()["updated"] == 10
    with count_queries(engine_of(app)) as many:
        assert post(client, updates(300)).json()["updated"] == 300
    assert few.count == many.count


# --- history -------------------------------------------------------------------------------------------


def test_history_matches_single_writes(app: FastAPI, client: TestClient, attributes: None) -> None:
    (erp,) = systems(client, "ERP")
    body = {"Costs": [7], "informationSystems": [{"id": erp, "attributes": {"Share": [5]}}]}
    single = client.post("/api/element/BusinessProcess", json={"name": ["Single"], **body}).json()["id"][0]
    bulk_id = post(client, {"elements": [{"name": ["Bulk"], **body}]}).json()["results"][0]["id"]
    with session_of(app) as db:
        rows = {
            c.element_id: c
            for c in db.scalars(select(Change).where(Change.element_id.in_([single, bulk_id, erp])))
        }
        single_changes = [c for c in rows[single].changes if c["property"] != "name"]
        bulk_changes = [c for c in rows[bulk_id].changes if c["property"] != "name"]
        erp_changes = db.scalars(
            select(Change.changes).where(Change.element_id == erp).order_by(Change.revision)
        ).all()
    assert single_changes == bulk_changes
    assert erp_changes[-1] == [
        {
            "property": "businessProcesses",
            "added": [{"id": bulk_id, "name": "Bulk", "attributes": {"Share": [5]}}],
            "removed": [],
        }
    ]


def test_the_feed_replays_random_bulk_writes(app: FastAPI, client: TestClient, attributes: None) -> None:
    rng = random.Random(74)
    is_ids = systems(client, "S0", "S1", "S2", "S3")
    names: list[str] = []
    for step in range(8):
        elements: list[dict[str, Any]] = []
        for i in range(rng.randint(3, 12)):
            if names and rng.random() < 0.4:
                item: dict[str, Any] = {"name": [rng.choice(names)]}
            else:
                item = {"name": [f"P{step}-{i}"]}
                names.append(item["name"][0])
            if rng.random() < 0.5:
                item["Costs"] = [rng.randint(1, 9)] if rng.random() < 0.8 else []
            if rng.random() < 0.4 and len(names) > 1:
                item["parent"] = [{"name": rng.choice(names)}] if rng.random() < 0.8 else []
            if rng.random() < 0.5:
                item["informationSystems"] = [
                    {"id": s, "attributes": {"Share": [rng.randint(1, 99)]}}
                    for s in rng.sample(is_ids, rng.randint(0, 3))
                ]
            if rng.random() < 0.3 and len(names) > 1:
                item["successors"] = [{"name": n} for n in rng.sample(names, min(2, len(names)))]
            elements.append(item)
        response = post(client, {"mode": "perItem", "match": "name", "elements": elements})
        assert response.status_code == 200, response.text
        # Items may fail (a cycle, a name not created yet, themselves as successor); the rest is written.
        names = [
            i["name"][0] for i in client.get(BULK, params={"fields": "name", "limit": 1000}).json()["items"]
        ]
    feed = all_pages(client, "/api/history", {"limit": 50})
    elements_state, _ = replay(feed)
    assert len([k for k in elements_state if k[0] == "BusinessProcess"]) == len(names)
    for (type_name, element_id), state in elements_state.items():
        current = element(client, element_id, type_name)
        rebuilt = {key: state.get(key, []) for key in current}
        rebuilt.update(id=[element_id], type=[type_name], revision=[state["revision"]])
        assert rebuilt == current, f"{type_name} {element_id}"


# --- permissions ---------------------------------------------------------------------------------------


def test_bulk_needs_massdata_and_type_rights(app: FastAPI, client: TestClient) -> None:
    create_role(app, "editor", types={"BusinessProcess": ["read", "create", "update", "delete"]})
    create_role(app, "bulk-reader", types={"BusinessProcess": ["read", "update"]}, functional=["MASSDATA"])
    create_user(app, "editor", "editor-password", ["editor"])
    create_user(app, "bulky", "bulky-password", ["bulk-reader"])
    existing = post(client, {"elements": [{"name": ["Existing"]}]}).json()["results"][0]["id"]
    with client_as(app, "editor", "editor-password") as editor:
        assert post(editor, {"elements": [{"name": ["X"]}]}).status_code == 403
    with client_as(app, "bulky", "bulky-password") as bulky:
        response = post(
            bulky, {"mode": "perItem", "elements": [{"name": ["X"]}, {"id": existing, "description": ["d"]}]}
        )
        assert [r["status"] for r in response.json()["results"]] == [403, 200]
        assert bulky.request("DELETE", BULK, json={"ids": [existing]}).status_code == 403


# --- bulk delete ---------------------------------------------------------------------------------------


def test_bulk_delete(app: FastAPI, client: TestClient, attributes: None) -> None:
    (erp,) = systems(client, "ERP")
    created = post(
        client,
        {
            "elements": [
                {"name": ["Root"]},
                {"name": ["Child"], "parent": [{"name": "Root"}], "informationSystems": [erp]},
                {"name": ["Other"]},
            ]
        },
    ).json()
    root, child, other = (r["id"] for r in created["results"])
    missing = client.request("DELETE", BULK, json={"ids": [other, 999999]})
    assert missing.status_code == 404
    assert missing.json()["errors"][0]["pointer"] == "/ids/1"
    blocked = client.request("DELETE", BULK, json={"ids": [root]})
    assert blocked.status_code == 409 and blocked.json()["code"] == "has_children"
    assert client.get(f"/api/element/BusinessProcess/{other}").status_code == 200
    deleted = client.request("DELETE", BULK, params={"recursive": "true"}, json={"ids": [root, other]})
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"deleted": 3}
    assert client.get(BULK).json()["items"] == []
    erp_json = element(client, erp, "InformationSystem")
    assert erp_json["businessProcesses"] == [] and erp_json["revision"] == [3]
    with session_of(app) as db:
        operations = db.scalars(
            select(Change.operation).where(Change.element_id.in_([root, child, other]))
        ).all()
    assert sorted(operations) == ["created", "created", "created", "deleted", "deleted", "deleted"]


def test_bulk_delete_body_problems(client: TestClient) -> None:
    assert client.request("DELETE", BULK, json={"ids": ["x"]}).status_code == 400
    assert client.request("DELETE", BULK, json={}).status_code == 400
    assert client.request("DELETE", BULK, json={"ids": list(range(1, 10_002))}).status_code == 413


def test_bulk_created_elements_record_what_single_creates_record(app: FastAPI, client: TestClient) -> None:
    """Every kind of property a created element can hold (each value type, several values, a parent, source
    and target ends, relation attributes) is recorded by a bulk create as by a single one, and reads back
    the same."""
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    create_attribute(app, "Criticality", "enum", types=["InformationSystem"], literals=["low", "high"])
    create_attribute(app, "Go-live", "date", types=["InformationSystem"])
    create_attribute(app, "Cloud", "boolean", types=["InformationSystem"])
    create_attribute(app, "Tags", "text", types=["InformationSystem"], multiple=True)
    create_attribute(app, "Notes", "richtext", types=["InformationSystem"])
    create_attribute(app, "Owner", "responsibility", types=["InformationSystem"])
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    (parent,) = systems(client, "Parent")
    component = client.post("/api/element/TechnicalComponent", json={"name": ["Server"]}).json()["id"][0]
    processes = [
        client.post("/api/element/BusinessProcess", json={"name": [name]}).json()["id"][0]
        for name in ("Sell", "Buy")
    ]
    body = {
        "description": ["runs *the* shop"],
        "parent": [{"id": parent}],
        "status": ["PLANNED"],
        "runtimePeriod": [{"start": "2026-01-01", "end": None}],
        "Costs": [1500.25],
        "Criticality": ["high"],
        "Go-live": ["2027-03-01"],
        "Cloud": [False],
        "Tags": ["b", "a", "c"],
        "Notes": ["<p>x</p>"],
        "Owner": ["system"],
        "technicalComponents": [{"name": "Server"}],
        "businessProcesses": [{"id": processes[1], "attributes": {"Share": [3]}}, {"id": processes[0]}],
    }
    single = client.post("/api/element/InformationSystem", json={"name": ["Single"], **body})
    assert single.status_code == 201, single.text
    written = post(
        client,
        {"elements": [{"name": ["Other"]}, {"name": ["Bulk"], **body}]},
        "/api/massdata/InformationSystem",
    )
    assert written.status_code == 200, written.text
    ids = {"Single": single.json()["id"][0], "Bulk": written.json()["results"][1]["id"]}

    def created(element_id: int) -> list[dict[str, Any]]:
        (changeset,) = [
            item
            for item in client.get(f"/api/history/InformationSystem/{element_id}").json()["items"]
            if item["operation"] == "created"
        ]
        return [change for change in changeset["changes"] if change["property"] != "name"]

    assert created(ids["Bulk"]) == created(ids["Single"])
    assert [change["property"] for change in created(ids["Bulk"])] == [
        "description", "parent", "status", "runtimePeriod", "Costs", "Criticality", "Go-live", "Cloud",
        "Tags", "Notes", "Owner", "technicalComponents", "businessProcesses",
    ]  # fmt: skip

    # What the parent and the other ends record of each: the same, but for the element's id and name.
    def mirrored(type_name: str, neighbour: int) -> list[Any]:
        latest = client.get(f"/api/history/{type_name}/{neighbour}").json()["items"][:2]
        text = orjson.dumps([item["changes"] for item in reversed(latest)]).decode()
        return orjson.loads(text.replace(f'"id":{ids["Bulk"]},"name":"Bulk"', '"id":0,"name":"X"'))

    for type_name, neighbour in (
        ("InformationSystem", parent),
        ("TechnicalComponent", component),
        ("BusinessProcess", processes[1]),
    ):
        single_record, bulk_record = mirrored(type_name, neighbour)
        assert bulk_record == orjson.loads(
            orjson.dumps(single_record).replace(
                f'"id":{ids["Single"]},"name":"Single"'.encode(), b'"id":0,"name":"X"'
            )
        )
        assert b'"id":0,"name":"X"' in orjson.dumps(bulk_record)
    stored = {name: element(client, element_id, "InformationSystem") for name, element_id in ids.items()}
    for rendered in stored.values():
        for key in ("id", "name", "lastModificationTime"):
            rendered.pop(key)
    assert stored["Bulk"] == stored["Single"]
    assert component in [entry["id"] for entry in stored["Bulk"]["technicalComponents"]]


def test_bulk_values_of_one_attribute_with_different_columns_are_stored_as_given(client: TestClient) -> None:
    """Date intervals with a start, an end or both (one attribute, other typed columns left empty) in
    one bulk write read back exactly as written."""
    periods = [
        {"start": "2026-01-01", "end": None},
        {"start": None, "end": "2027-06-30"},
        {"start": "2025-02-03", "end": "2025-04-05"},
        {"start": "2026-01-01", "end": None},
    ]
    body = {"elements": [{"name": [f"Period {i}"], "runtimePeriod": [p]} for i, p in enumerate(periods)]}
    written = post(client, body, "/api/massdata/InformationSystem")
    assert written.status_code == 200, written.text
    for result, period in zip(written.json()["results"], periods, strict=True):
        assert element(client, result["id"], "InformationSystem")["runtimePeriod"] == [period]
