"""Where the audit found the description and the service disagreeing, they now agree: empty `asOf=` and
`cursor=` mean "not given" everywhere, parameters the service refuses are not offered, and JSON numbers the
schema calls integers are taken as such."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

EMPTY_PARAMETER_READS = [
    ("/api/massdata/BusinessProcess", {"asOf": "", "cursor": ""}),
    ("/api/history", {"cursor": "", "from": "", "to": "", "sinceRevision": "", "limit": ""}),
    ("/api/history/BusinessProcess", {"cursor": "", "from": "", "to": ""}),
]


@pytest.mark.parametrize(("path", "params"), EMPTY_PARAMETER_READS)
def test_an_empty_parameter_is_one_not_given(client: TestClient, path: str, params: dict[str, str]) -> None:
    assert client.get(path, params=params).json() == client.get(path).json()


def test_an_empty_as_of_reads_an_element_as_it_is(client: TestClient) -> None:
    created = client.post("/api/element/BusinessProcess", json={"name": ["Order handling"]})
    assert created.status_code == 201
    path = created.headers["Location"]
    assert client.get(path, params={"asOf": ""}).json() == client.get(path).json()


def test_query_body_with_empty_or_null_as_of_reads_today(client: TestClient) -> None:
    for as_of in ("", None):
        response = client.post("/api/massdata/query", json={"query": "BusinessProcess;", "asOf": as_of})
        assert response.status_code == 200, response.text


def test_export_does_not_offer_as_of_and_refuses_it(client: TestClient, anon: TestClient) -> None:
    document: dict[str, Any] = anon.get("/api/7_4/openapi.json").json()
    names = [p.get("name") for p in document["paths"]["/api/massdata/export"]["get"]["parameters"]]
    assert "asOf" not in names
    assert client.get("/api/massdata/export", params={"asOf": "1"}).status_code == 400


def test_bulk_delete_takes_integral_numbers_as_ids(client: TestClient) -> None:
    created = client.post("/api/element/BusinessProcess", json={"name": ["Billing"]}).json()
    response = client.request(
        "DELETE", "/api/massdata/BusinessProcess", json={"ids": [float(created["id"][0])]}
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"deleted": 1}
    assert client.request("DELETE", "/api/massdata/BusinessProcess", json={"ids": [1.5]}).status_code == 400
