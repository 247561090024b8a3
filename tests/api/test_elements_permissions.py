"""Permissions on the Element API: type rights (403), properties in unreadable attribute groups and ends to
unreadable types are absent, and writing them is 403 with nothing changed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import client_as, create_attribute, create_group, create_role, create_user


@pytest.fixture
def landscape(app: FastAPI, client: TestClient) -> dict[str, int]:
    """Attributes in three groups, some elements, and the users `bernd` (business editor) and `anna`
    (reader of business processes)."""
    create_group(app, "Finance")
    create_group(app, "Operations")
    create_attribute(app, "Costs", "number", types=["BusinessProcess"], group="Finance")
    create_attribute(
        app, "Criticality", "enum", types=["BusinessProcess"], group="Operations", literals=["low", "high"]
    )
    create_attribute(app, "Note", "text", types=["BusinessProcess"])
    create_role(app, "finance", groups={"Finance": (True, True)})
    create_role(app, "ops", groups={"Operations": (True, True)})
    create_role(
        app,
        "business-editor",
        types={"BusinessProcess": ["read", "create", "update", "delete"], "InformationSystem": ["read"]},
        groups={"Operations": (True, False)},
    )
    create_role(app, "reader", types={"BusinessProcess": ["read"]})
    create_user(app, "bernd", "bernd-password", ["business-editor"])
    create_user(app, "anna", "anna-password", ["reader"])
    erp = client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).json()["id"][0]
    domain = client.post("/api/element/BusinessDomain", json={"name": ["Sales"]}).json()["id"][0]
    bp = client.post(
        "/api/element/BusinessProcess",
        json={
            "name": ["Sell"],
            "Costs": [100],
            "Criticality": ["high"],
            "Note": ["n"],
            "informationSystems": [erp],
            "businessDomains": [domain],
        },
    ).json()["id"][0]
    return {"erp": erp, "domain": domain, "bp": bp}


@pytest.fixture
def bernd(app: FastAPI) -> Iterator[TestClient]:
    with client_as(app, "bernd", "bernd-password") as client:
        yield client


@pytest.fixture
def anna(app: FastAPI) -> Iterator[TestClient]:
    with client_as(app, "anna", "anna-password") as client:
        yield client


def test_unreadable_properties_and_ends_are_absent(
    client: TestClient, bernd: TestClient, landscape: dict[str, int]
) -> None:
    url = f"/api/element/BusinessProcess/{landscape['bp']}"
    full = client.get(url).json()
    assert {"Costs", "Criticality", "Note", "businessDomains", "informationSystems"} <= set(full)
    seen = bernd.get(url).json()
    assert "Costs" not in seen  # Finance is readable only by role finance
    assert "businessDomains" not in seen  # bernd may not read BusinessDomain
    assert seen["Criticality"] == ["high"] and seen["Note"] == ["n"]
    assert seen["informationSystems"] == [{"id": landscape["erp"], "name": "ERP", "attributes": {}}]
    assert list(seen) == [key for key in full if key in seen]  # same order, only fewer keys


def test_writing_an_unreadable_property_is_400_like_an_unknown_one_and_an_unwritable_one_403(
    client: TestClient, bernd: TestClient, landscape: dict[str, int]
) -> None:
    # What bernd may not read (Costs, the end to unreadable BusinessDomain) is answered exactly as a
    # key the type does not have; what he reads but may not write is 403.
    url = f"/api/element/BusinessProcess/{landscape['bp']}"
    for body, pointer, status, code in (
        ({"Costs": [5]}, "/Costs", 400, "unknown_property"),
        ({"Criticality": ["low"]}, "/Criticality", 403, "forbidden"),  # Operations: writable by ops only
        ({"businessDomains": []}, "/businessDomains", 400, "unknown_property"),
        ({"name": ["Renamed"], "Costs": []}, "/Costs", 400, "unknown_property"),
    ):
        response = bernd.put(url, json=body)
        assert response.status_code == status, body
        assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [(pointer, code)]
    full = client.get(url).json()
    assert full["name"] == ["Sell"] and full["Costs"] == [100] and full["revision"] == [1]
    assert full["businessDomains"] == [{"id": landscape["domain"], "name": "Sales"}]


def test_permitted_writes_keep_hidden_values_and_answer_without_them(
    client: TestClient, bernd: TestClient, landscape: dict[str, int]
) -> None:
    url = f"/api/element/BusinessProcess/{landscape['bp']}"
    response = bernd.put(url, json={"name": ["Selling"], "Note": ["changed"], "informationSystems": []})
    assert response.status_code == 200, response.text
    assert "Costs" not in response.json() and "businessDomains" not in response.json()
    full = client.get(url).json()
    assert full["Costs"] == [100] and full["businessDomains"] != []
    assert full["lastModificationUser"] == ["bernd"]
    created = bernd.post(
        "/api/element/BusinessProcess", json={"name": ["New"], "informationSystems": [landscape["erp"]]}
    )
    assert created.status_code == 201, created.text


def test_type_permissions(bernd: TestClient, anna: TestClient, landscape: dict[str, int]) -> None:
    erp_url = f"/api/element/InformationSystem/{landscape['erp']}"
    assert bernd.get(erp_url).status_code == 200
    assert bernd.put(erp_url, json={"name": ["X"]}).status_code == 403
    assert bernd.delete(erp_url).status_code == 403
    assert bernd.post("/api/element/InformationSystem", json={"name": ["X"]}).status_code == 403
    assert bernd.get(f"/api/element/BusinessDomain/{landscape['domain']}").status_code == 403
    bp_url = f"/api/element/BusinessProcess/{landscape['bp']}"
    assert anna.get(bp_url).status_code == 200
    for response in (
        anna.put(bp_url, json={"Note": ["x"]}),
        anna.patch(bp_url, json={"Note": ["x"]}),
        anna.post("/api/element/BusinessProcess", json={"name": ["Y"]}),
        anna.delete(bp_url),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
    assert bernd.delete(bp_url).status_code == 204


def test_anna_sees_ends_only_to_types_she_may_read(anna: TestClient, landscape: dict[str, int]) -> None:
    seen = anna.get(f"/api/element/BusinessProcess/{landscape['bp']}").json()
    assert "informationSystems" not in seen and "businessDomains" not in seen
    assert "predecessors" in seen  # a self relation: BusinessProcess is readable
