"""Every element write is recorded in the Change table in the same transaction, for every element whose
JSON changed (the element itself, the other ends of changed relations, old and new parents)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from sqlalchemy import select
from starlette.testclient import TestClient

from blockrepo.revisions.models import Change, Revision
from tests.helpers import create_attribute, session_of


def changes(app: FastAPI, element_id: int) -> list[tuple[int, str, list[dict[str, Any]]]]:
    with session_of(app) as db:
        return [
            (c.revision, c.operation, c.changes)
            for c in db.scalars(
                select(Change).where(Change.element_id == element_id).order_by(Change.revision)
            )
        ]


def last_revision(app: FastAPI) -> Revision:
    with session_of(app) as db:
        revision = db.scalars(select(Revision).order_by(Revision.id.desc()).limit(1)).one()
        db.expunge(revision)
        return revision


def create(client: TestClient, type_name: str, body: dict[str, Any]) -> int:
    response = client.post(f"/api/element/{type_name}", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def test_create_records_every_non_empty_property_as_new(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = create(client, "InformationSystem", {"name": ["ERP"], "Costs": [10], "status": ["CURRENT"]})
    [(revision, operation, recorded)] = changes(app, erp)
    assert operation == "created"
    assert recorded == [
        {"property": "name", "old": [], "new": ["ERP"]},
        {"property": "status", "old": [], "new": ["CURRENT"]},
        {"property": "Costs", "old": [], "new": [10]},
    ]
    row = last_revision(app)
    assert row.id == revision and row.user_login == "system"


def test_update_records_only_changed_properties_with_old_and_new(app: FastAPI, client: TestClient) -> None:
    bp = create(client, "BusinessProcess", {"name": ["Sell"], "description": ["old"]})
    response = client.put(
        f"/api/element/BusinessProcess/{bp}",
        json={"name": ["Sell"], "description": ["new"]},
        headers={"X-Request-ID": "req-42"},
    )
    assert response.status_code == 200
    history = changes(app, bp)
    assert history[-1][1:] == ("updated", [{"property": "description", "old": ["old"], "new": ["new"]}])
    assert last_revision(app).request_id == "req-42"


def test_a_no_op_update_records_nothing(app: FastAPI, client: TestClient) -> None:
    bp = create(client, "BusinessProcess", {"name": ["Sell"]})
    before = last_revision(app).id
    client.put(f"/api/element/BusinessProcess/{bp}", json={"name": ["Sell"]})
    assert last_revision(app).id == before
    assert len(changes(app, bp)) == 1


def test_relation_change_is_recorded_on_both_ends_in_one_revision(app: FastAPI, client: TestClient) -> None:
    tc = create(client, "TechnicalComponent", {"name": ["Oracle"]})
    erp = create(client, "InformationSystem", {"name": ["ERP"]})
    client.put(f"/api/element/InformationSystem/{erp}", json={"technicalComponents": [tc]})
    erp_rev, erp_op, erp_changes = changes(app, erp)[-1]
    tc_rev, tc_op, tc_changes = changes(app, tc)[-1]
    assert erp_rev == tc_rev
    assert (erp_op, tc_op) == ("updated", "updated")
    assert erp_changes == [
        {"property": "technicalComponents", "added": [{"id": tc, "name": "Oracle"}], "removed": []}
    ]
    assert tc_changes == [
        {"property": "informationSystems", "added": [{"id": erp, "name": "ERP"}], "removed": []}
    ]
    client.put(f"/api/element/TechnicalComponent/{tc}", json={"informationSystems": []})
    assert changes(app, erp)[-1][2] == [
        {"property": "technicalComponents", "added": [], "removed": [{"id": tc, "name": "Oracle"}]}
    ]


def test_create_with_relations_and_parent_records_the_neighbours(app: FastAPI, client: TestClient) -> None:
    parent = create(client, "BusinessProcess", {"name": ["Top"]})
    erp = create(client, "InformationSystem", {"name": ["ERP"]})
    child = create(
        client, "BusinessProcess", {"name": ["Child"], "parent": [parent], "informationSystems": [erp]}
    )
    revision = changes(app, child)[0][0]
    assert changes(app, parent)[-1] == (
        revision,
        "updated",
        [{"property": "children", "added": [{"id": child, "name": "Child"}], "removed": []}],
    )
    assert changes(app, erp)[-1] == (
        revision,
        "updated",
        [
            {
                "property": "businessProcesses",
                "added": [{"id": child, "name": "Child", "attributes": {}}],
                "removed": [],
            }
        ],
    )


def test_delete_records_old_values_and_the_other_ends(app: FastAPI, client: TestClient) -> None:
    tc = create(client, "TechnicalComponent", {"name": ["Oracle"]})
    root = create(client, "InformationSystem", {"name": ["Root"]})
    erp = create(
        client, "InformationSystem", {"name": ["ERP"], "technicalComponents": [tc], "parent": [root]}
    )
    assert client.delete(f"/api/element/InformationSystem/{erp}").status_code == 204
    revision, operation, recorded = changes(app, erp)[-1]
    assert operation == "deleted"
    assert recorded == [
        {"property": "name", "old": ["ERP"], "new": []},
        {"property": "parent", "old": [{"id": root, "name": "Root"}], "new": []},
        {"property": "technicalComponents", "old": [{"id": tc, "name": "Oracle"}], "new": []},
    ]
    assert changes(app, tc)[-1] == (
        revision,
        "updated",
        [{"property": "informationSystems", "added": [], "removed": [{"id": erp, "name": "ERP"}]}],
    )
    assert changes(app, root)[-1] == (
        revision,
        "updated",
        [{"property": "children", "added": [], "removed": [{"id": erp, "name": "ERP"}]}],
    )


def test_recursive_delete_records_every_deleted_element_once(app: FastAPI, client: TestClient) -> None:
    root = create(client, "BusinessProcess", {"name": ["Root"]})
    child = create(client, "BusinessProcess", {"name": ["Child"], "parent": [root]})
    client.delete(f"/api/element/BusinessProcess/{root}?recursive=true")
    root_history, child_history = changes(app, root), changes(app, child)
    assert root_history[-1][1] == "deleted" and child_history[-1][1] == "deleted"
    assert root_history[-1][0] == child_history[-1][0]
    assert {"property": "children", "old": [{"id": child, "name": "Child"}], "new": []} in root_history[-1][2]


def test_relation_attribute_change_is_recorded_as_removed_and_added(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    erp = create(client, "InformationSystem", {"name": ["ERP"]})
    bp = create(
        client,
        "BusinessProcess",
        {"name": ["Sell"], "informationSystems": [{"id": erp, "attributes": {"Share": [1]}}]},
    )
    client.put(
        f"/api/element/BusinessProcess/{bp}",
        json={"informationSystems": [{"id": erp, "attributes": {"Share": [2]}}]},
    )
    assert changes(app, bp)[-1][2] == [
        {
            "property": "informationSystems",
            "added": [{"id": erp, "name": "ERP", "attributes": {"Share": [2]}}],
            "removed": [{"id": erp, "name": "ERP", "attributes": {"Share": [1]}}],
        }
    ]
    assert changes(app, erp)[-1][2] == [
        {
            "property": "businessProcesses",
            "added": [{"id": bp, "name": "Sell", "attributes": {"Share": [2]}}],
            "removed": [{"id": bp, "name": "Sell", "attributes": {"Share": [1]}}],
        }
    ]


def test_failed_write_records_nothing(app: FastAPI, client: TestClient) -> None:
    before = last_revision(app).id
    assert client.post("/api/element/BusinessProcess", json={"name": ["A"], "nope": [1]}).status_code == 400
    assert last_revision(app).id == before


def test_every_write_gets_the_next_revision(app: FastAPI, client: TestClient) -> None:
    start = last_revision(app).id
    bp = create(client, "BusinessProcess", {"name": ["A"]})
    client.put(f"/api/element/BusinessProcess/{bp}", json={"name": ["B"]})
    client.delete(f"/api/element/BusinessProcess/{bp}")
    assert [revision for revision, _, _ in changes(app, bp)] == [start + 1, start + 2, start + 3]
