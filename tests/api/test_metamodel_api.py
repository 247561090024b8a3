"""Metamodel API: reading the metamodel, editing types and relation types, and visibility per caller."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.elements.models import Element
from blockrepo.revisions.models import Change
from blockrepo.settings import Settings
from tests.api.access_helpers import (
    acting_as,
    create_role,
    create_user,
    database,
    insert_element,
    insert_relation,
)


def metamodel_revision(client: TestClient) -> int:
    return int(client.get("/api/metamodel").json()["revision"])


def test_whole_metamodel_lists_the_default_types_and_relations(client: TestClient) -> None:
    response = client.get("/api/metamodel")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"revision", "types", "relationTypes", "attributes", "attributeGroups"}
    names = [t["name"] for t in body["types"]]
    assert len(names) == 14 and names[0] == "BusinessDomain" and "InformationSystem" in names
    relation_names = {r["name"] for r in body["relationTypes"]}
    assert {"InformationFlow_sourceSystem", "BusinessProcess_InformationSystem"} <= relation_names
    assert [g["name"] for g in body["attributeGroups"]] == ["[Default Attribute Group]"]


def test_one_type_lists_builtins_attributes_and_ends(client: TestClient) -> None:
    body = client.get("/api/metamodel/types/InformationSystem").json()
    properties = {p["name"]: p for p in body["properties"]}
    assert properties["name"]["mandatory"] is True and properties["name"]["readOnly"] is False
    assert properties["id"]["readOnly"] is True and properties["lastModificationTime"]["readOnly"] is True
    assert properties["status"]["valueType"] == "enum"
    assert [lit["name"] for lit in properties["status"]["literals"]] == [
        "CURRENT",
        "PLANNED",
        "TARGET",
        "INACTIVE",
    ]
    assert properties["parent"]["target"] == "InformationSystem"
    ends = {e["name"]: e for e in body["relationEnds"]}
    assert ends["businessProcesses"]["type"] == "BusinessProcess"
    assert ends["businessProcesses"]["attributable"] is True
    assert ends["outgoingFlows"]["opposite"] == "sourceSystem" and ends["outgoingFlows"]["side"] == "target"
    assert ends["predecessors"]["type"] == "InformationSystem"


def test_unknown_type_and_relation_type_are_404(client: TestClient) -> None:
    response = client.get("/api/metamodel/types/Nope")
    assert response.status_code == 404 and response.json()["code"] == "unknown_type"
    assert client.get("/api/metamodel/relationtypes/Nope").status_code == 404


def test_create_type_then_edit_and_delete_it(client: TestClient, database_url: str) -> None:
    before = metamodel_revision(client)
    response = client.post(
        "/api/metamodel/types",
        json={
            "name": "DataCenter",
            "displayName": "Data Center",
            "abbreviation": "DC",
            "description": "Sites",
        },
    )
    assert response.status_code == 201, response.text
    assert response.headers["location"] == "/api/metamodel/types/DataCenter"
    created = response.json()
    assert created["displayName"] == "Data Center" and created["hierarchical"] is True
    assert {p["name"] for p in created["properties"]} >= {"name", "description", "parent", "children"}
    assert metamodel_revision(client) == before + 1
    assert "DataCenter" in [t["name"] for t in client.get("/api/metamodel/types").json()]

    response = client.put(
        "/api/metamodel/types/DataCenter",
        json={**created, "displayName": "Data Centre", "hidden": True, "abbreviation": "DCE"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["displayName"] == "Data Centre" and response.json()["hidden"] is True
    assert metamodel_revision(client) == before + 2

    assert client.delete("/api/metamodel/types/DataCenter").status_code == 204
    assert client.get("/api/metamodel/types/DataCenter").status_code == 404
    with database(database_url) as db:
        subjects = [
            (c.operation, c.subject) for c in db.scalars(select(Change).where(Change.entity == "metamodel"))
        ]
    assert ("created", "type DataCenter") in subjects
    assert ("updated", "type DataCenter") in subjects
    assert ("deleted", "type DataCenter") in subjects


@pytest.mark.parametrize(
    ("name", "status", "pointer"),
    [
        ("Data Center", 400, "/name"),
        ("9Lives", 400, "/name"),
        ("query", 400, "/name"),
        ("export", 400, "/name"),
        ("lastModificationDate", 400, "/name"),
        ("children", 400, "/name"),
        ("informationsystem", 409, None),
    ],
)
def test_type_names_are_validated(client: TestClient, name: str, status: int, pointer: str | None) -> None:
    before = metamodel_revision(client)
    response = client.post("/api/metamodel/types", json={"name": name})
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    if pointer:
        assert response.json()["errors"][0]["pointer"] == pointer
    assert metamodel_revision(client) == before


def test_bad_bodies_are_rejected_with_pointers(client: TestClient) -> None:
    response = client.post("/api/metamodel/types", json={"name": "Fine", "hidden": "yes", "colour": 1})
    assert response.status_code == 400
    assert {e["pointer"] for e in response.json()["errors"]} == {"/hidden", "/colour"}
    response = client.post(
        "/api/metamodel/types", content=b"name=Fine", headers={"content-type": "text/plain"}
    )
    assert response.status_code == 415
    response = client.post("/api/metamodel/types", content=b"{", headers={"content-type": "application/json"})
    assert response.status_code == 400 and response.json()["code"] == "malformed_json"
    response = client.put("/api/metamodel/types/Project", json={"name": "Programme"})
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/name"


def test_type_with_elements_cannot_be_deleted(client: TestClient, database_url: str) -> None:
    insert_element(database_url, "Project", "Migration")
    response = client.delete("/api/metamodel/types/Project")
    assert response.status_code == 409 and response.json()["code"] == "in_use"
    assert client.get("/api/metamodel/types/Project").status_code == 200


def test_type_with_parented_elements_cannot_become_flat(client: TestClient, database_url: str) -> None:
    parent = insert_element(database_url, "Project", "Programme")
    insert_element(database_url, "Project", "Phase 1", parent_id=parent)
    response = client.put("/api/metamodel/types/Project", json={"hierarchical": False})
    assert response.status_code == 409
    response = client.put("/api/metamodel/types/Product", json={"hierarchical": False})
    assert response.status_code == 200 and response.json()["hierarchical"] is False
    assert "parent" not in {p["name"] for p in response.json()["properties"]}


def test_deleting_a_type_deletes_its_relation_types(client: TestClient) -> None:
    client.post("/api/metamodel/types", json={"name": "DataCenter"})
    response = client.post(
        "/api/metamodel/relationtypes",
        json={
            "source": "DataCenter",
            "sourceEnd": "servers",
            "target": "InfrastructureElement",
            "targetEnd": "sites",
        },
    )
    assert response.status_code == 201
    assert client.delete("/api/metamodel/types/DataCenter").status_code == 204
    assert client.get("/api/metamodel/relationtypes/DataCenter_InfrastructureElement").status_code == 404
    ends = {
        e["name"] for e in client.get("/api/metamodel/types/InfrastructureElement").json()["relationEnds"]
    }
    assert "sites" not in ends


def test_create_relation_type_adds_an_end_on_both_types(client: TestClient) -> None:
    client.post("/api/metamodel/types", json={"name": "DataCenter"})
    response = client.post(
        "/api/metamodel/relationtypes",
        json={
            "source": "DataCenter",
            "sourceEnd": "informationSystems",
            "target": "InformationSystem",
            "targetEnd": "dataCenter",
            "targetMultiple": False,
        },
    )
    assert response.status_code == 201, response.text
    assert response.headers["location"] == "/api/metamodel/relationtypes/DataCenter_InformationSystem"
    assert response.json()["targetMultiple"] is False
    ends = {e["name"]: e for e in client.get("/api/metamodel/types/InformationSystem").json()["relationEnds"]}
    assert ends["dataCenter"]["multiple"] is False and ends["dataCenter"]["type"] == "DataCenter"


@pytest.mark.parametrize(
    ("body", "status", "pointer"),
    [
        ({"sourceEnd": "informationSystems"}, 409, "/sourceEnd"),  # BusinessProcess has that end already
        ({"targetEnd": "Criticality x"}, 400, "/targetEnd"),
        ({"targetEnd": "name"}, 400, "/targetEnd"),
        ({"targetEnd": "status"}, 409, "/targetEnd"),  # a built-in of InformationSystem
        ({"target": "Nope"}, 400, "/target"),
        ({"name": "BusinessProcess_InformationSystem"}, 409, "/name"),
        ({"name": "count"}, 400, "/name"),
    ],
)
def test_relation_type_names_are_validated(
    client: TestClient, body: dict[str, Any], status: int, pointer: str
) -> None:
    base = {
        "source": "BusinessProcess",
        "sourceEnd": "hosts",
        "target": "InformationSystem",
        "targetEnd": "hosted",
    }
    before = metamodel_revision(client)
    response = client.post("/api/metamodel/relationtypes", json={**base, "name": "BP_hosts", **body})
    assert response.status_code == status, response.text
    assert pointer in {e["pointer"] for e in response.json()["errors"]}
    assert metamodel_revision(client) == before


def test_self_relation_needs_two_end_names(client: TestClient) -> None:
    body = {
        "name": "Project_x",
        "source": "Project",
        "sourceEnd": "follows",
        "target": "Project",
        "targetEnd": "follows",
    }
    assert client.post("/api/metamodel/relationtypes", json=body).status_code == 400
    body["targetEnd"] = "followers"
    assert client.post("/api/metamodel/relationtypes", json=body).status_code == 201


def test_relation_type_update_keeps_names_and_checks_cardinality(
    client: TestClient, database_url: str
) -> None:
    path = "/api/metamodel/relationtypes/InformationSystem_Project"
    response = client.put(path, json={"sourceEnd": "programmes"})
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/sourceEnd"
    system = insert_element(database_url, "InformationSystem", "ERP")
    for name in ("P1", "P2"):
        insert_relation(
            database_url, "InformationSystem_Project", system, insert_element(database_url, "Project", name)
        )
    response = client.put(path, json={"sourceMultiple": False})
    assert response.status_code == 409
    response = client.put(path, json={"targetMultiple": False, "description": "who changes a system"})
    assert response.status_code == 200, response.text
    assert (
        response.json()["targetMultiple"] is False
        and response.json()["description"] == "who changes a system"
    )


def test_deleting_a_relation_type_removes_relations_into_history(
    client: TestClient, database_url: str
) -> None:
    system = insert_element(database_url, "InformationSystem", "ERP")
    projects = [insert_element(database_url, "Project", name) for name in ("P1", "P2")]
    for project in projects:
        insert_relation(database_url, "InformationSystem_Project", system, project)
    assert client.delete("/api/metamodel/relationtypes/InformationSystem_Project").status_code == 204
    assert "projects" not in {
        e["name"] for e in client.get("/api/metamodel/types/InformationSystem").json()["relationEnds"]
    }
    with database(database_url) as db:
        revisions = dict(((i, r) for i, r in db.execute(select(Element.id, Element.revision))))
        changes = {c.element_id: c for c in db.scalars(select(Change).where(Change.entity == "element"))}
    assert revisions == {system: 2, projects[0]: 2, projects[1]: 2}
    assert changes[system].operation == "updated"
    assert changes[system].changes == [
        {
            "property": "projects",
            "added": [],
            "removed": [{"id": projects[0], "name": "P1"}, {"id": projects[1], "name": "P2"}],
        }
    ]
    assert changes[projects[1]].changes == [
        {"property": "informationSystems", "added": [], "removed": [{"id": system, "name": "ERP"}]}
    ]


def test_metamodel_edits_need_edit_metamodel(client: TestClient, app: FastAPI) -> None:
    create_role(client, "Readers", typePermissions={"BusinessProcess": ["read"]})
    create_role(client, "Modellers", functionalPermissions=["EDIT_METAMODEL"])
    create_user(client, "reader", ["Readers"])
    create_user(client, "modeller", ["Modellers"])
    with acting_as(app, "reader") as reader:
        assert reader.post("/api/metamodel/types", json={"name": "DataCenter"}).status_code == 403
        assert reader.put("/api/metamodel/types/Project", json={"hidden": True}).status_code == 403
        assert reader.delete("/api/metamodel/types/Project").status_code == 403
        assert reader.delete("/api/metamodel/relationtypes/InformationSystem_Project").status_code == 403
    with acting_as(app, "modeller") as modeller:
        assert modeller.post("/api/metamodel/types", json={"name": "DataCenter"}).status_code == 201
        assert modeller.get("/api/metamodel/types/DataCenter").status_code == 200


def test_readers_see_only_readable_types_and_ends(client: TestClient, app: FastAPI) -> None:
    create_role(
        client, "Readers", typePermissions={"BusinessProcess": ["read"], "InformationSystem": ["read"]}
    )
    create_user(client, "reader", ["Readers"])
    with acting_as(app, "reader") as reader:
        body = reader.get("/api/metamodel").json()
        assert [t["name"] for t in body["types"]] == ["BusinessProcess", "InformationSystem"]
        assert {r["name"] for r in body["relationTypes"]} == {
            "BusinessProcess_InformationSystem",
            "BusinessProcess_successors",
            "InformationSystem_successors",
            "InformationSystem_parentComponents",
        }
        ends = {e["name"] for e in reader.get("/api/metamodel/types/BusinessProcess").json()["relationEnds"]}
        assert ends == {"informationSystems", "predecessors", "successors"}
        assert reader.get("/api/metamodel/types/Project").status_code == 403
        assert reader.get("/api/metamodel/relationtypes/InformationSystem_Project").status_code == 403


def test_a_change_is_seen_at_once_by_another_app_instance(client: TestClient, settings: Settings) -> None:
    other_app = create_app(settings)
    try:
        with TestClient(other_app, base_url="http://127.0.0.1") as other:
            other.auth = client.auth
            assert other.get("/api/metamodel/types/DataCenter").status_code == 404  # caches the snapshot
            assert client.post("/api/metamodel/types", json={"name": "DataCenter"}).status_code == 201
            assert other.get("/api/metamodel/types/DataCenter").status_code == 200
            assert (
                client.put("/api/metamodel/types/DataCenter", json={"displayName": "DC"}).status_code == 200
            )
            assert other.get("/api/metamodel/types/DataCenter").json()["displayName"] == "DC"
    finally:
        other_app.state.services.dispose()
