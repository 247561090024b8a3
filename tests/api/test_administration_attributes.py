"""Administration API, attributes: every value type, literals, min/max/unit, activation on types and
relation types, and what happens to stored values when the definition changes."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.revisions.models import Change
from blockrepo.settings import Settings
from tests.api.access_helpers import acting_as, create_role, create_user, database

ATTRIBUTES = "/api/administration/attributes"


def create_attribute(client: TestClient, name: str, value_type: str, **fields: Any) -> dict[str, Any]:
    response = client.post(ATTRIBUTES, json={"name": name, "valueType": value_type, **fields})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def create_element(client: TestClient, type_name: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/api/element/{type_name}", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def element(client: TestClient, type_name: str, element_id: int) -> dict[str, Any]:
    response = client.get(f"/api/element/{type_name}/{element_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def element_changes(database_url: str, element_id: int) -> list[Change]:
    with database(database_url) as db:
        return list(
            db.scalars(select(Change).where(Change.element_id == element_id).order_by(Change.revision))
        )


@pytest.mark.parametrize(
    ("value_type", "extra", "value"),
    [
        ("text", {}, "Tier 1"),
        ("richtext", {}, "<p>Runs <b>everything</b></p>"),
        ("number", {"unit": "EUR", "min": 0, "max": 1000000}, 1500),
        ("date", {}, "2027-01-31"),
        ("dateInterval", {}, {"start": "2026-01-01", "end": None}),
        ("boolean", {}, True),
        ("enum", {"literals": [{"name": "low"}, {"name": "high", "color": "#c62828"}]}, "high"),
        ("responsibility", {}, "system"),
    ],
)
def test_every_value_type_round_trips_through_the_element_api(
    client: TestClient, value_type: str, extra: dict[str, Any], value: Any
) -> None:
    attribute = create_attribute(client, "Probe", value_type, types=["InformationSystem"], **extra)
    assert attribute["valueType"] == value_type and attribute["types"] == ["InformationSystem"]
    assert client.get(f"{ATTRIBUTES}/{attribute['id']}").json() == attribute
    properties = {
        p["name"]: p for p in client.get("/api/metamodel/types/InformationSystem").json()["properties"]
    }
    assert (
        properties["Probe"]["valueType"] == value_type
        and properties["Probe"]["group"] == "[Default Attribute Group]"
    )
    created = create_element(client, "InformationSystem", {"name": ["ERP"], "Probe": [value]})
    assert created["Probe"] == [value]
    assert "Probe" not in element(
        client, "Project", create_element(client, "Project", {"name": ["P"]})["id"][0]
    )


def test_number_attributes_keep_unit_and_range(client: TestClient) -> None:
    attribute = create_attribute(
        client, "Annual costs", "number", unit="EUR", min=0, max=100, types=["Project"]
    )
    assert (attribute["unit"], attribute["min"], attribute["max"]) == ("EUR", 0, 100)
    response = client.post("/api/element/Project", json={"name": ["P"], "Annual costs": [101]})
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/Annual costs/0"


def test_mandatory_and_multiple_reach_the_element_api(client: TestClient) -> None:
    create_attribute(client, "Owner", "text", mandatory=True, types=["Project"])
    create_attribute(
        client, "Tags", "enum", multiple=True, literals=[{"name": "a"}, {"name": "b"}], types=["Project"]
    )
    response = client.post("/api/element/Project", json={"name": ["P"]})
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/Owner"
    created = create_element(client, "Project", {"name": ["P"], "Owner": ["Anna"], "Tags": ["a", "b"]})
    assert created["Tags"] == ["a", "b"]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"name": "a/b", "valueType": "text"}, "/name"),
        ({"name": "zero\u200bwidth", "valueType": "text"}, "/name"),
        ({"name": "name", "valueType": "text"}, "/name"),
        ({"name": "lastModificationUser", "valueType": "text"}, "/name"),
        ({"name": "X", "valueType": "colour"}, "/valueType"),
        ({"name": "X", "valueType": "text", "literals": [{"name": "a"}]}, "/literals"),
        ({"name": "X", "valueType": "text", "unit": "EUR"}, "/unit"),
        ({"name": "X", "valueType": "number", "min": 5, "max": 1}, "/max"),
        ({"name": "X", "valueType": "enum", "literals": [{"name": "a"}, {"name": "a"}]}, "/literals/1/name"),
        (
            {"name": "X", "valueType": "enum", "literals": [{"name": "a", "color": "red"}]},
            "/literals/0/color",
        ),
        ({"name": "X", "valueType": "text", "types": ["Nope"]}, "/types/0"),
        ({"name": "X", "valueType": "text", "relationTypes": ["Nope"]}, "/relationTypes/0"),
        ({"name": "X", "valueType": "text", "group": "Nope"}, "/group"),
        ({"name": "X", "valueType": "text", "multiple": "yes"}, "/multiple"),
    ],
)
def test_invalid_attribute_bodies(client: TestClient, body: dict[str, Any], pointer: str) -> None:
    response = client.post(ATTRIBUTES, json=body)
    assert response.status_code == 400, response.text
    assert pointer in {e["pointer"] for e in response.json()["errors"]}
    assert client.get(ATTRIBUTES).json() == []


@pytest.mark.parametrize(
    ("name", "types"),
    [
        ("status", ["InformationSystem"]),  # a built-in of the type
        ("informationSystems", ["BusinessProcess"]),  # a relation end of the type
        ("criticality", []),  # another attribute, ignoring case
    ],
)
def test_attribute_names_must_not_clash(client: TestClient, name: str, types: list[str]) -> None:
    create_attribute(client, "Criticality", "text")
    response = client.post(ATTRIBUTES, json={"name": name, "valueType": "text", "types": types})
    assert response.status_code == 409 and response.json()["code"] == "name_conflict"


def test_relation_ends_must_not_clash_with_attributes(client: TestClient) -> None:
    create_attribute(client, "hosts", "text", types=["BusinessProcess"])
    body = {"source": "BusinessProcess", "sourceEnd": "hosts", "target": "Project", "targetEnd": "processes"}
    response = client.post("/api/metamodel/relationtypes", json=body)
    assert response.status_code == 409 and response.json()["errors"][0]["pointer"] == "/sourceEnd"


def test_value_type_changes_only_without_values(client: TestClient) -> None:
    attribute = create_attribute(client, "Owner", "text", types=["Project"])
    path = f"{ATTRIBUTES}/{attribute['id']}"
    response = client.put(path, json={"valueType": "responsibility"})
    assert response.status_code == 200 and response.json()["valueType"] == "responsibility"
    create_element(client, "Project", {"name": ["P"], "Owner": ["system"]})
    response = client.put(path, json={"valueType": "text"})
    assert response.status_code == 409 and response.json()["code"] == "in_use"
    assert client.get(path).json()["valueType"] == "responsibility"


def test_single_valued_only_when_no_element_holds_several(client: TestClient) -> None:
    attribute = create_attribute(client, "Tags", "text", multiple=True, types=["Project"])
    created = create_element(client, "Project", {"name": ["P"], "Tags": ["a", "b"]})
    path = f"{ATTRIBUTES}/{attribute['id']}"
    assert client.put(path, json={"multiple": False}).status_code == 409
    client.put(f"/api/element/Project/{created['id'][0]}", json={"Tags": ["a"]})
    assert client.put(path, json={"multiple": False}).json()["multiple"] is False


def test_deleting_an_attribute_deletes_its_values_into_history(client: TestClient, database_url: str) -> None:
    attribute = create_attribute(
        client,
        "Criticality",
        "enum",
        literals=[{"name": "low"}, {"name": "high"}],
        types=["Project", "InformationSystem"],
    )
    project = create_element(client, "Project", {"name": ["P"], "Criticality": ["high"]})
    system = create_element(client, "InformationSystem", {"name": ["ERP"], "Criticality": ["low"]})
    untouched = create_element(client, "Project", {"name": ["Q"]})
    assert client.delete(f"{ATTRIBUTES}/{attribute['id']}").status_code == 204
    assert client.get(f"{ATTRIBUTES}/{attribute['id']}").status_code == 404
    after = element(client, "Project", project["id"][0])
    assert "Criticality" not in after and after["revision"] == [2]
    assert element(client, "Project", untouched["id"][0])["revision"] == [1]
    last = element_changes(database_url, project["id"][0])[-1]
    assert last.operation == "updated"
    assert last.changes == [{"property": "Criticality", "old": ["high"], "new": []}]
    assert element_changes(database_url, system["id"][0])[-1].changes == [
        {"property": "Criticality", "old": ["low"], "new": []}
    ]
    with database(database_url) as db:
        deletion = db.scalars(
            select(Change).where(Change.subject == "attribute Criticality", Change.operation == "deleted")
        ).one()
    assert deletion.revision == last.revision  # one revision for the whole request


def test_literals_are_renamed_by_id_and_removed_with_their_values(
    client: TestClient, database_url: str
) -> None:
    attribute = create_attribute(
        client,
        "Tags",
        "enum",
        multiple=True,
        literals=[{"name": "a"}, {"name": "b"}, {"name": "c"}],
        types=["Project"],
    )
    ids = {lit["name"]: lit["id"] for lit in attribute["literals"]}
    created = create_element(client, "Project", {"name": ["P"], "Tags": ["a", "b"]})
    other = create_element(client, "Project", {"name": ["Q"], "Tags": ["c"]})
    response = client.put(
        f"{ATTRIBUTES}/{attribute['id']}",
        json={
            "literals": [{"id": ids["b"], "name": "bee"}, {"name": "c"}, {"name": "d", "color": "#00ff00"}]
        },
    )
    assert response.status_code == 200, response.text
    assert [lit["name"] for lit in response.json()["literals"]] == ["bee", "c", "d"]
    assert (
        response.json()["literals"][0]["id"] == ids["b"] and response.json()["literals"][1]["id"] == ids["c"]
    )
    renamed = element(client, "Project", created["id"][0])
    assert renamed["Tags"] == ["bee"]
    # The removal of `a` and the rename of `b` fold into one changeset and one new revision.
    assert renamed["revision"] == [created["revision"][0] + 1]
    assert element_changes(database_url, created["id"][0])[-1].changes == [
        {"property": "Tags", "old": ["a", "b"], "new": ["bee"]}
    ]
    # An element holding only an untouched literal is not touched.
    assert element(client, "Project", other["id"][0])["revision"] == other["revision"]
    assert len(element_changes(database_url, other["id"][0])) == 1


def test_renamed_literals_are_recorded_on_the_elements_and_relations_that_hold_them(
    client: TestClient, database_url: str
) -> None:
    """The values keep their literal ids, but element JSON and history name literals: a rename is an
    "updated" changeset of every holder, so the feed and `asOf` show the new name from then on and the old
    name before."""
    level = create_attribute(
        client, "Level", "enum", literals=[{"name": "low"}, {"name": "high"}], types=["InformationSystem"]
    )
    mode = create_attribute(
        client,
        "Mode",
        "enum",
        literals=[{"name": "batch"}, {"name": "online"}],
        relation_types=["BusinessProcess_InformationSystem"],
    )
    system = create_element(client, "InformationSystem", {"name": ["ERP"], "Level": ["low"]})
    process = create_element(
        client,
        "BusinessProcess",
        {
            "name": ["Sell"],
            "informationSystems": [{"id": system["id"][0], "attributes": {"Mode": ["batch"]}}],
        },
    )
    before = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"][-1][
        "revision"
    ]
    low, high = (lit["id"] for lit in level["literals"])
    response = client.put(
        f"{ATTRIBUTES}/{level['id']}",
        json={"literals": [{"id": low, "name": "minor"}, {"id": high, "name": "high"}]},
    )
    assert response.status_code == 200, response.text
    batch, online = (lit["id"] for lit in mode["literals"])
    response = client.put(
        f"{ATTRIBUTES}/{mode['id']}",
        json={"literals": [{"id": batch, "name": "bulk"}, {"id": online, "name": "online"}]},
    )
    assert response.status_code == 200, response.text

    now_system = element(client, "InformationSystem", system["id"][0])
    now_process = element(client, "BusinessProcess", process["id"][0])
    assert now_system["Level"] == ["minor"]
    assert now_process["informationSystems"][0]["attributes"] == {"Mode": ["bulk"]}
    assert element_changes(database_url, system["id"][0])[-2].changes == [
        {"property": "Level", "old": ["low"], "new": ["minor"]}
    ]
    assert element_changes(database_url, process["id"][0])[-1].changes == [
        {
            "property": "informationSystems",
            "added": [{"id": system["id"][0], "name": "ERP", "attributes": {"Mode": ["bulk"]}}],
            "removed": [{"id": system["id"][0], "name": "ERP", "attributes": {"Mode": ["batch"]}}],
        }
    ]
    newest = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"][-1][
        "revision"
    ]
    for type_name, current in (("InformationSystem", now_system), ("BusinessProcess", now_process)):
        path = f"/api/element/{type_name}/{current['id'][0]}"
        assert client.get(path, params={"asOf": newest}).json() == current
    then = client.get(f"/api/element/InformationSystem/{system['id'][0]}", params={"asOf": before}).json()
    assert then["Level"] == ["low"]


def test_deactivating_a_type_removes_values_there_only(client: TestClient, database_url: str) -> None:
    attribute = create_attribute(client, "Owner", "text", types=["Project", "InformationSystem"])
    project = create_element(client, "Project", {"name": ["P"], "Owner": ["Anna"]})
    system = create_element(client, "InformationSystem", {"name": ["ERP"], "Owner": ["Bernd"]})
    response = client.put(f"{ATTRIBUTES}/{attribute['id']}", json={"types": ["InformationSystem"]})
    assert response.status_code == 200 and response.json()["types"] == ["InformationSystem"]
    assert "Owner" not in element(client, "Project", project["id"][0])
    assert element(client, "InformationSystem", system["id"][0])["Owner"] == ["Bernd"]
    # Re-activating does not bring the old values back.
    client.put(f"{ATTRIBUTES}/{attribute['id']}", json={"types": ["InformationSystem", "Project"]})
    assert element(client, "Project", project["id"][0])["Owner"] == []


def test_relation_attributes(client: TestClient, database_url: str) -> None:
    response = client.get("/api/metamodel/relationtypes/InformationSystem_Project")
    assert response.json()["attributable"] is False
    attribute = create_attribute(client, "Share", "number", relationTypes=["InformationSystem_Project"])
    relation_type = client.get("/api/metamodel/relationtypes/InformationSystem_Project").json()
    assert relation_type["attributable"] is True and relation_type["attributes"] == ["Share"]
    project = create_element(client, "Project", {"name": ["P"]})
    system = create_element(
        client,
        "InformationSystem",
        {"name": ["ERP"], "projects": [{"id": project["id"][0], "attributes": {"Share": [60]}}]},
    )
    assert system["projects"] == [{"id": project["id"][0], "name": "P", "attributes": {"Share": [60]}}]
    assert element(client, "Project", project["id"][0])["informationSystems"][0]["attributes"] == {
        "Share": [60]
    }

    response = client.put(f"{ATTRIBUTES}/{attribute['id']}", json={"relationTypes": []})
    assert response.status_code == 200
    assert element(client, "InformationSystem", system["id"][0])["projects"] == [
        {"id": project["id"][0], "name": "P", "attributes": {}}
    ]
    assert element_changes(database_url, system["id"][0])[-1].changes == [
        {
            "property": "projects",
            "added": [{"id": project["id"][0], "name": "P", "attributes": {"Share": []}}],
            "removed": [{"id": project["id"][0], "name": "P", "attributes": {"Share": [60]}}],
        }
    ]
    assert element_changes(database_url, project["id"][0])[-1].changes[0]["property"] == "informationSystems"


def test_attribute_administration_needs_admin_attributes(client: TestClient, app: FastAPI) -> None:
    attribute = create_attribute(client, "Owner", "text")
    create_role(client, "Modellers", functionalPermissions=["EDIT_METAMODEL", "ADMIN_USERS"])
    create_user(client, "modeller", ["Modellers"])
    with acting_as(app, "modeller") as modeller:
        assert modeller.get(ATTRIBUTES).status_code == 403
        assert modeller.get(f"{ATTRIBUTES}/{attribute['id']}").status_code == 403
        assert modeller.post(ATTRIBUTES, json={"name": "X", "valueType": "text"}).status_code == 403
        assert modeller.put(f"{ATTRIBUTES}/{attribute['id']}", json={"mandatory": True}).status_code == 403
        assert modeller.delete(f"{ATTRIBUTES}/{attribute['id']}").status_code == 403


def test_admin_attributes_alone_lets_a_non_supervisor_administer_attributes(
    client: TestClient, app: FastAPI
) -> None:
    """ADMIN_ATTRIBUTES is enough: list, read, create, change and delete attributes (no type rights, no
    EDIT_METAMODEL); the definitions reach the element API."""
    create_role(client, "AttributeAdmins", functionalPermissions=["ADMIN_ATTRIBUTES"])
    create_user(client, "curator", ["AttributeAdmins"])
    project = create_element(client, "Project", {"name": ["Migration"]})["id"][0]
    with acting_as(app, "curator") as curator:
        me = curator.get("/api/administration/users/current").json()
        assert me["supervisor"] is False and me["functionalPermissions"] == ["ADMIN_ATTRIBUTES"]
        response = curator.post(
            ATTRIBUTES,
            json={
                "name": "Risk",
                "valueType": "enum",
                "literals": [{"name": "low"}, {"name": "high"}],
                "types": ["Project"],
            },
        )
        assert response.status_code == 201, response.text
        risk = response.json()
        assert curator.get(f"{ATTRIBUTES}/{risk['id']}").json() == risk
        assert [a["name"] for a in curator.get(ATTRIBUTES).json()] == ["Risk"]
    assert element(client, "Project", project)["Risk"] == []
    assert client.put(f"/api/element/Project/{project}", json={"Risk": ["high"]}).status_code == 200
    with acting_as(app, "curator") as curator:
        response = curator.put(
            f"{ATTRIBUTES}/{risk['id']}",
            json={
                "description": "Project risk",
                "literals": [{"name": "low"}, {"name": "high"}, {"name": "fatal"}],
            },
        )
        assert response.status_code == 200, response.text
        assert [lit["name"] for lit in response.json()["literals"]] == ["low", "high", "fatal"]
    assert client.put(f"/api/element/Project/{project}", json={"Risk": ["fatal"]}).status_code == 200
    with acting_as(app, "curator") as curator:
        assert curator.delete(f"{ATTRIBUTES}/{risk['id']}").status_code == 204
        assert curator.get(ATTRIBUTES).json() == []
    assert "Risk" not in element(client, "Project", project)


def test_new_attribute_is_writable_at_once_through_another_app_instance(
    client: TestClient, settings: Settings
) -> None:
    other_app = create_app(settings)
    try:
        with TestClient(other_app, base_url="http://127.0.0.1") as other:
            other.auth = client.auth
            assert other.post("/api/element/Project", json={"name": ["A"], "Budget": [5]}).status_code == 400
            create_attribute(client, "Budget", "number", types=["Project"])
            response = other.post("/api/element/Project", json={"name": ["B"], "Budget": [5]})
            assert response.status_code == 201 and response.json()["Budget"] == [5]
    finally:
        other_app.state.services.dispose()
