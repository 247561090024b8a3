"""Number values: every finite JSON number within the attribute's min/max round trips; others get a 400
naming the pointer (values are stored as IEEE doubles, see elements/values.py).

`Annual costs` of the demo is a number with minimum 0 (no maximum)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.demo_repository import database_url, demo_repository, element_named, settings

__all__ = ["database_url", "demo_repository", "settings"]  # fixtures of the demo landscape

JSON = {"Content-Type": "application/json"}


def _erp_path(client: TestClient) -> str:
    return f"/api/element/InformationSystem/{element_named(client, 'InformationSystem', 'ERP')['id'][0]}"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e29", 1e29),
        ("1E+29", 1e29),
        ("100000000000000000000000000000", 1e29),  # beyond 64 bits: read as the double it is closest to
        ("1.5e300", 1.5e300),
        ("1.7976931348623157e308", 1.7976931348623157e308),
        ("5e-324", 5e-324),
        ("0.1", 0.1),
        ("123.456", 123.456),
        ("9007199254740991", 9007199254740991),
        ("2.5e3", 2500),
        ("0", 0),
    ],
)
def test_a_finite_number_round_trips_through_put_and_get(client: TestClient, text: str, value: Any) -> None:
    path = _erp_path(client)
    response = client.put(path, content=f'{{"Annual costs": [{text}]}}', headers=JSON)
    assert response.status_code == 200, response.text
    assert response.json()["Annual costs"] == [value]
    assert client.get(path).json()["Annual costs"] == [value]
    created = client.post(
        "/api/element/InformationSystem", content=f'{{"name": ["N"], "Annual costs": [{text}]}}', headers=JSON
    )
    assert created.status_code == 201, created.text
    assert client.get(created.headers["Location"]).json()["Annual costs"] == [value]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("1e309", "out_of_range"),
        ("-1e400", "out_of_range"),
        ("1" + "0" * 400, "out_of_range"),
        ("-1", "out_of_range"),  # below the minimum 0
        ("9007199254740993", "out_of_range"),  # an integer a double cannot hold exactly
    ],
)
def test_a_number_out_of_range_gets_400_naming_the_pointer(client: TestClient, text: str, code: str) -> None:
    path = _erp_path(client)
    before = client.get(path).json()
    response = client.put(path, content=f'{{"version": ["x"], "Annual costs": [{text}]}}', headers=JSON)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == "validation_failed"
    assert [(e["pointer"], e["code"]) for e in body["errors"]] == [("/Annual costs/0", code)]
    assert client.get(path).json() == before, "nothing changed"


def test_a_number_beyond_a_double_in_a_bulk_write_names_its_item(client: TestClient) -> None:
    response = client.post(
        "/api/massdata/InformationSystem",
        content='{"elements": [{"name": ["N1"], "Annual costs": [1e29]}, '
        '{"name": ["N2"], "Annual costs": [1e999]}]}',
        headers=JSON,
    )
    assert response.status_code == 400, response.text
    pointers = [e["pointer"] for e in response.json()["errors"]]
    assert any(p.endswith("/Annual costs/0") for p in pointers), pointers
    listing = client.get("/api/massdata/InformationSystem", params={"filter": '@name = "N1"'}).json()
    assert listing["items"] == [], "atomic: nothing written"


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e309 x"])
def test_non_json_numbers_are_malformed_json(client: TestClient, text: str) -> None:
    response = client.put(_erp_path(client), content=f'{{"Annual costs": [{text}]}}', headers=JSON)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "malformed_json"
