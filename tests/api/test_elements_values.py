"""Every value type round-trips through the Element API; built-ins, multiple values and limits."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import create_attribute, create_user


@pytest.fixture
def attributes(app: FastAPI) -> None:
    on = ["InformationSystem"]
    create_attribute(app, "Note", "text", types=on)
    create_attribute(app, "Notes", "richtext", types=on)
    create_attribute(app, "Costs", "number", types=on, min_value=0, max_value=1_000_000, unit="EUR")
    create_attribute(app, "Go-live", "date", types=on)
    create_attribute(app, "Support", "dateInterval", types=on)
    create_attribute(app, "Cloud", "boolean", types=on)
    create_attribute(app, "Criticality", "enum", types=on, literals=["low", "medium", "high"])
    create_attribute(app, "Tags", "enum", types=on, literals=["a", "b", "c"], multiple=True)
    create_attribute(app, "Responsible", "responsibility", types=on, multiple=True)
    create_user(app, "anna", "anna-password")


FULL: dict[str, Any] = {
    "name": ["ERP"],
    "description": ["<p>The core system</p>"],
    "version": ["7.1"],
    "status": ["CURRENT"],
    "runtimePeriod": [{"start": "2019-01-01", "end": None}],
    "Note": ["runs on premises"],
    "Notes": ["<ul><li>one</li></ul>"],
    "Costs": [1500],
    "Go-live": ["2019-03-01"],
    "Support": [{"start": "2019-01-01", "end": "2029-12-31"}],
    "Cloud": [False],
    "Criticality": ["high"],
    "Tags": ["c", "a"],
    "Responsible": ["anna", "system"],
}


@pytest.mark.usefixtures("attributes")
def test_every_value_type_round_trips(client: TestClient) -> None:
    response = client.post("/api/element/InformationSystem", json=FULL)
    assert response.status_code == 201, response.text
    created = response.json()
    for key, value in FULL.items():
        assert created[key] == value, key
    assert isinstance(created["Costs"][0], int)
    again = client.get(f"/api/element/InformationSystem/{created['id'][0]}").json()
    assert again == created


@pytest.mark.usefixtures("attributes")
def test_fractional_numbers_stay_fractional(client: TestClient) -> None:
    created = client.post("/api/element/InformationSystem", json={"name": ["A"], "Costs": [12.75]}).json()
    assert created["Costs"] == [12.75]


@pytest.mark.usefixtures("attributes")
def test_each_key_replaces_the_whole_list_and_empty_clears(client: TestClient) -> None:
    created = client.post("/api/element/InformationSystem", json=FULL).json()
    url = f"/api/element/InformationSystem/{created['id'][0]}"
    body = client.put(url, json={"Tags": ["b"], "Costs": [], "status": ["PLANNED"]}).json()
    assert body["Tags"] == ["b"]
    assert body["Costs"] == []
    assert body["status"] == ["PLANNED"]
    assert body["Criticality"] == ["high"]  # untouched
    body = client.put(url, json={"Tags": ["a", "b", "c"], "runtimePeriod": []}).json()
    assert body["Tags"] == ["a", "b", "c"]
    assert body["runtimePeriod"] == []


@pytest.mark.usefixtures("attributes")
def test_single_valued_property_takes_at_most_one_value(client: TestClient) -> None:
    response = client.post(
        "/api/element/InformationSystem",
        json={"name": ["A"], "Costs": [1, 2], "status": ["CURRENT", "PLANNED"], "description": ["a", "b"]},
    )
    assert response.status_code == 400
    pointers = {e["pointer"]: e["code"] for e in response.json()["errors"]}
    assert pointers == {
        "/Costs/1": "too_many_values",
        "/status/1": "too_many_values",
        "/description/1": "too_many_values",
    }


@pytest.mark.usefixtures("attributes")
def test_value_errors_are_listed_with_pointers(client: TestClient) -> None:
    response = client.post(
        "/api/element/InformationSystem",
        json={
            "name": ["A"],
            "Note": [7],
            "Costs": [-5],
            "Go-live": ["2019-02-30"],
            "Support": [{"start": "2020-01-01", "end": "2019-01-01"}],
            "Cloud": ["yes"],
            "Criticality": ["extreme"],
            "Tags": ["a", "zzz", "a"],
            "Responsible": ["nobody", "anna"],
            "status": ["RETIRED"],
            "runtimePeriod": ["2020"],
        },
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_failed"
    got = {e["pointer"]: e["code"] for e in body["errors"]}
    assert got == {
        "/Note/0": "wrong_type",
        "/Costs/0": "out_of_range",
        "/Go-live/0": "bad_date",
        "/Support/0": "bad_interval",
        "/Cloud/0": "wrong_type",
        "/Criticality/0": "unknown_literal",
        "/Tags/1": "unknown_literal",
        "/Tags/2": "duplicate",
        "/Responsible/0": "unknown_user",
        "/status/0": "unknown_literal",
        "/runtimePeriod/0": "wrong_type",
    }
    assert all(e["message"] for e in body["errors"])
    assert (
        client.post("/api/element/InformationSystem", json={"name": ["A"]}).status_code == 201
    )  # nothing written


@pytest.mark.usefixtures("attributes")
def test_unknown_property_and_non_array_values(client: TestClient) -> None:
    response = client.post(
        "/api/element/InformationSystem", json={"name": "A", "Colour": ["red"], "Costs": 5}
    )
    got = {e["pointer"]: e["code"] for e in response.json()["errors"]}
    assert got == {"/name": "not_an_array", "/Colour": "unknown_property", "/Costs": "not_an_array"}


def test_attribute_of_another_type_is_unknown(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    response = client.post("/api/element/BusinessProcess", json={"name": ["A"], "Costs": [1]})
    assert response.json()["errors"][0] == {
        "pointer": "/Costs",
        "code": "unknown_property",
        "message": "BusinessProcess has no property 'Costs'",
    }


def test_pointer_escapes_slash_and_tilde(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "In/Out~", "number", types=["BusinessProcess"])
    response = client.post("/api/element/BusinessProcess", json={"name": ["A"], "In/Out~": ["x"]})
    assert response.json()["errors"][0]["pointer"] == "/In~1Out~0/0"


def test_mandatory_attribute_is_required_on_create_and_cannot_be_cleared(
    app: FastAPI, client: TestClient
) -> None:
    create_attribute(app, "Owner", "text", types=["BusinessProcess"], mandatory=True)
    response = client.post("/api/element/BusinessProcess", json={"name": ["A"]})
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"pointer": "/Owner", "code": "mandatory", "message": "Owner is mandatory"}
    ]
    created = client.post("/api/element/BusinessProcess", json={"name": ["A"], "Owner": ["me"]}).json()
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    assert client.put(url, json={"Owner": []}).json()["errors"][0]["code"] == "mandatory"
    assert client.put(url, json={"description": ["ok"]}).status_code == 200


def test_nul_characters_are_rejected_not_500(client: TestClient) -> None:
    response = client.post(
        "/api/element/BusinessProcess", json={"name": ["a\u0000b"], "parent": [{"name": "x\u0000"}]}
    )
    assert response.status_code == 400
    assert {e["code"] for e in response.json()["errors"]} == {"invalid_character"}


def test_thousands_of_references_are_validated_without_a_server_error(client: TestClient) -> None:
    names = [{"name": f"missing {i}"} for i in range(3000)]
    ids = list(range(100_000, 103_000))
    response = client.post(
        "/api/element/InformationSystem",
        json={"name": ["Big"], "technicalComponents": names, "projects": ids},
    )
    assert response.status_code == 400
    assert len(response.json()["errors"]) == 6000


@pytest.mark.usefixtures("attributes")
def test_one_400_lists_body_and_lookup_problems_together(client: TestClient) -> None:
    response = client.post(
        "/api/element/InformationSystem",
        json={
            "name": ["ERP"],
            "Costs": ["cheap"],
            "parent": [{"name": "No such parent"}],
            "technicalComponents": [4242],
            "Responsible": ["ghost"],
            "Colour": ["red"],
        },
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_failed"
    assert {e["pointer"]: e["code"] for e in body["errors"]} == {
        "/Costs/0": "wrong_type",
        "/parent/0": "unknown_target",
        "/technicalComponents/0": "unknown_target",
        "/Responsible/0": "unknown_user",
        "/Colour": "unknown_property",
    }
    assert body["detail"].startswith("5 problem(s)")
    assert (
        client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).status_code == 201
    )  # not taken
