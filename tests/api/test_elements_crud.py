"""Element API basics over HTTP: create, read, update (PUT and PATCH), delete, ETags and status codes."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import create_attribute


def create(client: TestClient, type_name: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/api/element/{type_name}", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def test_create_returns_201_with_location_etag_and_element(client: TestClient) -> None:
    response = client.post(
        "/api/element/BusinessProcess",
        json={"name": ["Order handling"], "description": ["From order to invoice"]},
    )
    assert response.status_code == 201
    body = response.json()
    element_id = body["id"][0]
    assert response.headers["location"] == f"/api/element/BusinessProcess/{element_id}"
    assert response.headers["etag"] == 'W/"1"'
    assert body["type"] == ["BusinessProcess"]
    assert body["revision"] == [1]
    assert body["name"] == ["Order handling"]
    assert body["description"] == ["From order to invoice"]
    assert body["parent"] == [] and body["children"] == []
    assert body["lastModificationUser"] == ["system"]
    assert body["lastModificationTime"][0].endswith("Z")


def test_get_returns_the_element_with_etag(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    response = client.get(f"/api/element/BusinessProcess/{created['id'][0]}")
    assert response.status_code == 200
    assert response.headers["etag"] == 'W/"1"'
    assert response.headers["content-type"] == "application/json"
    assert response.json() == created


def test_key_order_is_fixed(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Criticality", "enum", types=["InformationSystem"], literals=["low", "high"])
    created = create(client, "InformationSystem", {"name": ["ERP"]})
    keys = list(created)
    assert keys[:7] == ["id", "type", "revision", "name", "description", "parent", "children"]
    assert keys[7:11] == ["version", "status", "runtimePeriod", "Criticality"]
    assert keys[-2:] == ["lastModificationTime", "lastModificationUser"]
    ends = keys[11:-2]
    assert "outgoingFlows" in ends and "businessProcesses" in ends
    assert all(created[key] == [] for key in ends)


def test_if_none_match_gives_304(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    response = client.get(url, headers={"If-None-Match": 'W/"1"'})
    assert response.status_code == 304
    assert response.headers["etag"] == 'W/"1"'
    assert client.get(url, headers={"If-None-Match": 'W/"7"'}).status_code == 200


@pytest.mark.parametrize("method", ["put", "patch"])
def test_update_is_partial_and_bumps_revision(client: TestClient, method: str) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"], "description": ["old text"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    response = client.request(method.upper(), url, json={"name": ["Invoicing"]})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["name"] == ["Invoicing"]
    assert body["description"] == ["old text"]  # not in the body: untouched
    assert body["revision"] == [2]
    assert response.headers["etag"] == 'W/"2"'
    assert client.get(url).json() == body


def test_empty_list_clears_a_property(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"], "description": ["text"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    assert client.put(url, json={"description": []}).json()["description"] == []


def test_update_that_changes_nothing_keeps_the_revision(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    response = client.put(url, json={"name": ["Billing"], "description": []})
    assert response.status_code == 200
    assert response.json()["revision"] == [1]
    assert response.headers["etag"] == 'W/"1"'


def test_read_only_keys_are_ignored_and_the_whole_get_body_round_trips(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"], "revision": [99], "type": ["Other"]})
    assert created["revision"] == [1] and created["type"] == ["BusinessProcess"]
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    response = client.put(url, json={**created, "lastModificationUser": ["mallory"], "children": [{"id": 5}]})
    assert response.status_code == 200, response.text
    assert response.json() == created


def test_id_in_the_body_must_match_the_path(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    element_id = created["id"][0]
    url = f"/api/element/BusinessProcess/{element_id}"
    assert client.put(url, json={"id": [element_id], "name": ["B2"]}).status_code == 200
    response = client.put(url, json={"id": [element_id + 1], "name": ["B3"]})
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"pointer": "/id", "code": "id_mismatch", "message": response.json()["errors"][0]["message"]}
    ]
    assert client.get(url).json()["name"] == ["B2"]


def test_name_is_required_on_create(client: TestClient) -> None:
    response = client.post("/api/element/BusinessProcess", json={"description": ["no name"]})
    assert response.status_code == 400
    assert response.json()["code"] == "validation_failed"
    assert [e["pointer"] for e in response.json()["errors"]] == ["/name"]


def test_name_cannot_be_cleared_or_blank(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    assert client.put(url, json={"name": []}).json()["errors"][0]["code"] == "mandatory"
    assert client.put(url, json={"name": ["   "]}).json()["errors"][0]["pointer"] == "/name/0"
    assert client.put(url, json={"name": ["x" * 256]}).json()["errors"][0]["code"] == "too_long"


def test_duplicate_name_in_type_is_409(client: TestClient) -> None:
    first = create(client, "BusinessProcess", {"name": ["Billing"]})
    response = client.post("/api/element/BusinessProcess", json={"name": ["Billing"]})
    assert response.status_code == 409
    assert response.json()["code"] == "name_conflict"
    # The same name in another type is fine.
    create(client, "BusinessUnit", {"name": ["Billing"]})
    other = create(client, "BusinessProcess", {"name": ["Invoicing"]})
    response = client.put(f"/api/element/BusinessProcess/{other['id'][0]}", json={"name": ["Billing"]})
    assert response.status_code == 409
    assert client.get(f"/api/element/BusinessProcess/{other['id'][0]}").json()["name"] == ["Invoicing"]
    assert first["name"] == ["Billing"]


def test_if_match_stale_gives_412_and_changes_nothing(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    assert client.put(url, json={"name": ["B2"]}, headers={"If-Match": 'W/"1"'}).status_code == 200
    response = client.put(url, json={"name": ["B3"]}, headers={"If-Match": 'W/"1"'})
    assert response.status_code == 412
    assert response.json()["code"] == "precondition_failed"
    assert client.get(url).json()["name"] == ["B2"]
    assert client.delete(url, headers={"If-Match": '"1"'}).status_code == 412
    assert client.get(url).status_code == 200


@pytest.mark.parametrize("tag", ['W/"2"', '"2"', "2", "*", 'W/"9", W/"2"'])
def test_if_match_accepts_weak_strong_bare_and_wildcard(client: TestClient, tag: str) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    client.put(url, json={"name": ["B2"]})
    response = client.patch(url, json={"name": ["B3"]}, headers={"If-Match": tag})
    assert response.status_code == 200, response.text


def test_if_match_garbage_is_412(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    assert client.put(url, json={"name": ["B2"]}, headers={"If-Match": "abc"}).status_code == 412


def test_delete_returns_204_and_the_element_is_gone(client: TestClient) -> None:
    created = create(client, "BusinessProcess", {"name": ["Billing"]})
    url = f"/api/element/BusinessProcess/{created['id'][0]}"
    response = client.delete(url)
    assert response.status_code == 204
    assert response.content == b""
    assert client.get(url).json()["code"] == "not_found"
    assert client.delete(url).status_code == 404


def test_unknown_type_is_404_unknown_type(client: TestClient) -> None:
    for response in (
        client.get("/api/element/NoSuchType/1"),
        client.post("/api/element/NoSuchType", json={"name": ["x"]}),
        client.put("/api/element/NoSuchType/1", json={}),
        client.delete("/api/element/NoSuchType/1"),
    ):
        assert response.status_code == 404
        assert response.json()["code"] == "unknown_type"


def test_unknown_id_is_404_not_found(client: TestClient) -> None:
    assert client.get("/api/element/BusinessProcess/999").json()["code"] == "not_found"
    assert client.put("/api/element/BusinessProcess/999", json={}).status_code == 404
    assert client.patch("/api/element/BusinessProcess/999", json={}).status_code == 404


def test_element_of_another_type_is_not_found(client: TestClient) -> None:
    created = create(client, "BusinessUnit", {"name": ["Sales"]})
    assert client.get(f"/api/element/BusinessProcess/{created['id'][0]}").status_code == 404


@pytest.mark.parametrize("raw_id", ["0", "-3", "abc", "1.5", "99999999999999999999"])
def test_id_must_be_a_positive_integer(client: TestClient, raw_id: str) -> None:
    response = client.get(f"/api/element/BusinessProcess/{raw_id}")
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "validation_failed"


def test_non_json_body_is_415(client: TestClient) -> None:
    response = client.post(
        "/api/element/BusinessProcess", content=b"name=x", headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


def test_malformed_json_is_400(client: TestClient) -> None:
    response = client.put(
        "/api/element/BusinessProcess/1", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["code"] == "malformed_json"


def test_body_must_be_an_object(client: TestClient) -> None:
    response = client.post("/api/element/BusinessProcess", json=[{"name": ["x"]}])
    assert response.status_code == 400
    assert response.json()["code"] == "validation_failed"


def test_body_over_the_limit_is_413(client: TestClient) -> None:
    big = "x" * (10 * 1024 * 1024 + 10)
    response = client.post("/api/element/BusinessProcess", json={"name": ["big"], "description": [big]})
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert client.post("/api/element/BusinessProcess", json={"name": ["big"]}).status_code == 201


def test_unsupported_method_is_405(client: TestClient) -> None:
    response = client.post("/api/element/BusinessProcess/1", json={})
    assert response.status_code == 405
    assert response.headers["content-type"] == "application/problem+json"
    assert client.delete("/api/element/BusinessProcess").status_code == 405


def test_openapi_documents_every_element_operation(client: TestClient) -> None:
    document = client.get("/api/7_4/openapi.json").json()
    item = document["paths"]["/api/element/{type}/{id}"]
    for method in ("get", "put", "patch", "delete"):
        operation = item[method]
        assert operation["summary"] and operation["description"]
        assert "404" in operation["responses"] and "403" in operation["responses"]
    for method in ("put", "patch"):
        assert "examples" in item[method]["requestBody"]["content"]["application/json"]
        assert "412" in item[method]["responses"]
    post = document["paths"]["/api/element/{type}"]["post"]
    assert "Location" in post["responses"]["201"]["headers"]
    assert post["responses"]["400"]["content"]["application/problem+json"]["example"]["errors"]
