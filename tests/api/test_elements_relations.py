"""Relation ends through the Element API: both ends change together, references by id or name,
attributes on attributable relations, cardinalities and ordering."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import create_attribute


def create(client: TestClient, type_name: str, body: dict[str, Any]) -> int:
    response = client.post(f"/api/element/{type_name}", json=body)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def get(client: TestClient, type_name: str, element_id: int) -> dict[str, Any]:
    response = client.get(f"/api/element/{type_name}/{element_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_setting_an_end_shows_on_both_ends_and_bumps_both(client: TestClient) -> None:
    erp = create(client, "InformationSystem", {"name": ["ERP"]})
    tc = create(client, "TechnicalComponent", {"name": ["Oracle"]})
    response = client.put(f"/api/element/InformationSystem/{erp}", json={"technicalComponents": [tc]})
    assert response.status_code == 200, response.text
    assert response.json()["technicalComponents"] == [{"id": tc, "name": "Oracle"}]
    other = get(client, "TechnicalComponent", tc)
    assert other["informationSystems"] == [{"id": erp, "name": "ERP"}]
    assert other["revision"] == [2]
    # Clearing from the other end removes it on both.
    client.put(f"/api/element/TechnicalComponent/{tc}", json={"informationSystems": []})
    assert get(client, "InformationSystem", erp)["technicalComponents"] == []
    assert get(client, "InformationSystem", erp)["revision"] == [3]


def test_references_by_id_object_and_name(client: TestClient) -> None:
    a = create(client, "TechnicalComponent", {"name": ["A"]})
    b = create(client, "TechnicalComponent", {"name": ["B"]})
    c = create(client, "TechnicalComponent", {"name": ["C"]})
    erp = create(
        client,
        "InformationSystem",
        {"name": ["ERP"], "technicalComponents": [b, {"id": a}, {"name": "C"}]},
    )
    assert get(client, "InformationSystem", erp)["technicalComponents"] == [
        {"id": b, "name": "B"},
        {"id": a, "name": "A"},
        {"id": c, "name": "C"},
    ]


def test_source_end_keeps_the_order_given(client: TestClient) -> None:
    a = create(client, "TechnicalComponent", {"name": ["A"]})
    b = create(client, "TechnicalComponent", {"name": ["B"]})
    erp = create(client, "InformationSystem", {"name": ["ERP"], "technicalComponents": [a, b]})
    response = client.put(f"/api/element/InformationSystem/{erp}", json={"technicalComponents": [b, a]})
    assert [e["id"] for e in response.json()["technicalComponents"]] == [b, a]
    assert response.json()["revision"] == [2]
    # A reorder changes neither of the other ends.
    assert get(client, "TechnicalComponent", a)["revision"] == [2]


def test_adding_via_the_target_end_appends_on_the_source_end(client: TestClient) -> None:
    a = create(client, "TechnicalComponent", {"name": ["A"]})
    erp = create(client, "InformationSystem", {"name": ["ERP"], "technicalComponents": [a]})
    b = create(client, "TechnicalComponent", {"name": ["B"], "informationSystems": [erp]})
    assert [e["id"] for e in get(client, "InformationSystem", erp)["technicalComponents"]] == [a, b]


def test_unknown_and_wrong_type_targets_are_listed(client: TestClient) -> None:
    bu = create(client, "BusinessUnit", {"name": ["Sales"]})
    response = client.post(
        "/api/element/InformationSystem",
        json={
            "name": ["ERP"],
            "technicalComponents": [999, {"name": "Nope"}, bu, "x", {"nm": 1}, {"id": 0}, True],
        },
    )
    assert response.status_code == 400
    got = [(e["pointer"], e["code"]) for e in response.json()["errors"]]
    assert sorted(got) == sorted(
        [
            ("/technicalComponents/0", "unknown_target"),
            ("/technicalComponents/1", "unknown_target"),
            ("/technicalComponents/2", "wrong_type"),
            ("/technicalComponents/3", "wrong_type"),
            ("/technicalComponents/4", "wrong_type"),
            ("/technicalComponents/5", "unknown_target"),
            ("/technicalComponents/6", "wrong_type"),
        ]
    )


def test_a_target_listed_twice_is_an_error(client: TestClient) -> None:
    a = create(client, "TechnicalComponent", {"name": ["A"]})
    response = client.post(
        "/api/element/InformationSystem", json={"name": ["ERP"], "technicalComponents": [a, {"name": "A"}]}
    )
    assert response.json()["errors"] == [
        {
            "pointer": "/technicalComponents/1",
            "code": "duplicate",
            "message": f"technicalComponents lists element {a} twice",
        }
    ]


def test_single_valued_end_takes_one_value(client: TestClient) -> None:
    a = create(client, "InformationSystem", {"name": ["A"]})
    b = create(client, "InformationSystem", {"name": ["B"]})
    response = client.post("/api/element/InformationFlow", json={"name": ["F"], "sourceSystem": [a, b]})
    assert response.json()["errors"][0]["pointer"] == "/sourceSystem/1"
    assert response.json()["errors"][0]["code"] == "too_many_values"
    flow = create(client, "InformationFlow", {"name": ["F"], "sourceSystem": [a], "targetSystem": [b]})
    assert get(client, "InformationSystem", a)["outgoingFlows"] == [{"id": flow, "name": "F"}]
    assert get(client, "InformationSystem", b)["incomingFlows"] == [{"id": flow, "name": "F"}]
    # Replacing the single value moves the flow from A to B.
    client.put(f"/api/element/InformationFlow/{flow}", json={"sourceSystem": [b]})
    assert get(client, "InformationSystem", a)["outgoingFlows"] == []
    assert get(client, "InformationSystem", b)["outgoingFlows"] == [{"id": flow, "name": "F"}]


def test_taking_a_flow_that_has_another_source_system_is_rejected(client: TestClient) -> None:
    a = create(client, "InformationSystem", {"name": ["A"]})
    b = create(client, "InformationSystem", {"name": ["B"]})
    flow = create(client, "InformationFlow", {"name": ["F"], "sourceSystem": [a]})
    free = create(client, "InformationFlow", {"name": ["G"]})
    response = client.put(f"/api/element/InformationSystem/{b}", json={"outgoingFlows": [free, flow]})
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/outgoingFlows/1"
    assert response.json()["errors"][0]["code"] == "cardinality"
    assert get(client, "InformationSystem", b)["outgoingFlows"] == []  # nothing changed
    assert get(client, "InformationFlow", flow)["sourceSystem"] == [{"id": a, "name": "A"}]
    # Re-listing a flow that already has this system as source is fine.
    response = client.put(f"/api/element/InformationSystem/{a}", json={"outgoingFlows": [flow, free]})
    assert response.status_code == 200, response.text
    assert get(client, "InformationFlow", free)["sourceSystem"] == [{"id": a, "name": "A"}]


def test_generalisation_is_single_on_the_specialisation_side(client: TestClient) -> None:
    base = create(client, "BusinessObject", {"name": ["Party"]})
    other = create(client, "BusinessObject", {"name": ["Thing"]})
    person = create(client, "BusinessObject", {"name": ["Person"], "generalisation": [base]})
    assert get(client, "BusinessObject", base)["specialisations"] == [{"id": person, "name": "Person"}]
    response = client.put(f"/api/element/BusinessObject/{other}", json={"specialisations": [person]})
    assert response.json()["errors"][0]["code"] == "cardinality"


def test_self_relation_both_ends_and_no_self_reference(client: TestClient) -> None:
    old = create(client, "InformationSystem", {"name": ["Old"]})
    new = create(client, "InformationSystem", {"name": ["New"], "predecessors": [old]})
    assert get(client, "InformationSystem", old)["successors"] == [{"id": new, "name": "New"}]
    response = client.put(f"/api/element/InformationSystem/{new}", json={"successors": [new]})
    assert response.json()["errors"][0]["code"] == "self_reference"


def test_deleting_an_element_removes_its_relations_and_bumps_the_other_end(client: TestClient) -> None:
    tc = create(client, "TechnicalComponent", {"name": ["Oracle"]})
    erp = create(client, "InformationSystem", {"name": ["ERP"], "technicalComponents": [tc]})
    assert get(client, "TechnicalComponent", tc)["revision"] == [2]
    assert client.delete(f"/api/element/InformationSystem/{erp}").status_code == 204
    other = get(client, "TechnicalComponent", tc)
    assert other["informationSystems"] == []
    assert other["revision"] == [3]


@pytest.fixture
def share(app: FastAPI) -> int:
    """A number attribute activated for the business mapping relation BusinessProcess -> InformationSystem."""
    return create_attribute(
        app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"], max_value=100
    )


@pytest.mark.usefixtures("share")
def test_relation_attributes_are_written_and_shown_on_both_ends(client: TestClient) -> None:
    erp = create(client, "InformationSystem", {"name": ["ERP"]})
    crm = create(client, "InformationSystem", {"name": ["CRM"]})
    bp = create(
        client,
        "BusinessProcess",
        {
            "name": ["Sell"],
            "informationSystems": [{"id": erp, "attributes": {"Share": [60]}}, {"name": "CRM"}],
        },
    )
    assert get(client, "BusinessProcess", bp)["informationSystems"] == [
        {"id": erp, "name": "ERP", "attributes": {"Share": [60]}},
        {"id": crm, "name": "CRM", "attributes": {"Share": []}},
    ]
    assert get(client, "InformationSystem", erp)["businessProcesses"] == [
        {"id": bp, "name": "Sell", "attributes": {"Share": [60]}}
    ]
    # Re-listing without "attributes" keeps them; with "attributes" replaces them.
    client.put(
        f"/api/element/BusinessProcess/{bp}",
        json={"informationSystems": [erp, {"id": crm, "attributes": {"Share": [40]}}]},
    )
    assert get(client, "BusinessProcess", bp)["informationSystems"] == [
        {"id": erp, "name": "ERP", "attributes": {"Share": [60]}},
        {"id": crm, "name": "CRM", "attributes": {"Share": [40]}},
    ]
    assert get(client, "InformationSystem", crm)["revision"] == [3]  # created, linked, attribute changed
    # Written from the other end as well.
    client.put(
        f"/api/element/InformationSystem/{erp}",
        json={"businessProcesses": [{"id": bp, "attributes": {"Share": [10]}}]},
    )
    assert get(client, "BusinessProcess", bp)["informationSystems"][0]["attributes"] == {"Share": [10]}


@pytest.mark.usefixtures("share")
def test_relation_attribute_errors(client: TestClient) -> None:
    erp = create(client, "InformationSystem", {"name": ["ERP"]})
    tc = create(client, "TechnicalComponent", {"name": ["TC"]})
    response = client.post(
        "/api/element/BusinessProcess",
        json={
            "name": ["Sell"],
            "informationSystems": [{"id": erp, "attributes": {"Share": [101], "Colour": ["x"]}}],
        },
    )
    got = {e["pointer"]: e["code"] for e in response.json()["errors"]}
    assert got == {
        "/informationSystems/0/attributes/Share/0": "out_of_range",
        "/informationSystems/0/attributes/Colour": "unknown_property",
    }
    response = client.put(
        f"/api/element/InformationSystem/{erp}", json={"technicalComponents": [{"id": tc, "attributes": {}}]}
    )
    assert response.json()["errors"][0] == {
        "pointer": "/technicalComponents/0/attributes",
        "code": "not_attributable",
        "message": "relations of InformationSystem_TechnicalComponent carry no attributes",
    }


def test_relation_attributes_are_deleted_with_the_relation(
    app: FastAPI, client: TestClient, share: int
) -> None:
    from sqlalchemy import func, select

    from blockrepo.elements.models import RelationValue
    from tests.helpers import session_of

    erp = create(client, "InformationSystem", {"name": ["ERP"]})
    bp = create(
        client,
        "BusinessProcess",
        {"name": ["Sell"], "informationSystems": [{"id": erp, "attributes": {"Share": [5]}}]},
    )
    client.put(f"/api/element/BusinessProcess/{bp}", json={"informationSystems": []})
    with session_of(app) as db:
        assert (
            db.scalar(
                select(func.count()).select_from(RelationValue).where(RelationValue.attribute_id == share)
            )
            == 0
        )
