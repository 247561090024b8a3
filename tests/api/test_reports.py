"""Saved reports through the API: each kind saved and checked, listed (own and shared), run as the caller
with the caller's rights, shared with roles to view or edit, hidden from everyone else, and deleted.

Cast: `carl` (roles Architects and Finance) owns the reports and reads the attribute group Costs; `anna`
(Architects: MASSDATA, read InformationSystem and BusinessProcess) runs what is shared with her role but
never sees Costs; `bernd` (Outsiders: MASSDATA, read InformationSystem) is shared nothing.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.access_helpers import PASSWORD, acting_as

SECRET = 987654


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def refused(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem: dict[str, Any] = response.json()
    assert problem["code"] == code, problem
    return problem


@pytest.fixture
def cast(client: TestClient) -> TestClient:
    ok(client.post("/api/administration/roles", json={"name": "Finance"}), 201)
    readers = {"InformationSystem": ["read"], "BusinessProcess": ["read"]}
    for name, types in (("Architects", readers), ("Outsiders", {"InformationSystem": ["read"]})):
        role = {"name": name, "typePermissions": types, "functionalPermissions": ["MASSDATA"]}
        ok(client.post("/api/administration/roles", json=role), 201)
    for login, roles in (
        ("carl", ["Architects", "Finance"]),
        ("anna", ["Architects"]),
        ("bernd", ["Outsiders"]),
    ):
        user = {"login": login, "password": PASSWORD, "roles": roles}
        ok(client.post("/api/administration/users", json=user), 201)
    group = {"name": "Costs", "permissions": [{"role": "Finance", "read": True, "write": True}]}
    ok(client.post("/api/administration/attributegroups", json=group), 201)
    costs = {"name": "Annual costs", "valueType": "number", "group": "Costs", "types": ["InformationSystem"]}
    ok(client.post("/api/administration/attributes", json=costs), 201)
    for name, amount in (("ERP", SECRET), ("CRM", 1200), ("Archive", 10)):
        ok(
            client.post("/api/element/InformationSystem", json={"name": [name], "Annual costs": [amount]}),
            201,
        )
    return client


LIST = {"name": "Systems starting with C or E", "kind": "list", "type": "InformationSystem", "sort": "name"}


def test_each_kind_is_saved_read_and_listed(app: FastAPI, cast: TestClient) -> None:
    with acting_as(app, "carl") as carl:
        listed = ok(carl.post("/api/reports", json={**LIST, "filter": '@name.startsWith("E")'}), 201)
        assert listed["kind"] == "list" and listed["type"] == "InformationSystem"
        assert listed["owner"] == "carl" and listed["access"] == "own" and listed["createdBy"] == "carl"
        query = {"name": "Processes", "kind": "query", "query": "InformationSystem/businessProcesses;"}
        queried = ok(carl.post("/api/reports", json=query), 201)
        assert queried["query"] == query["query"] and queried["type"] is None
        config = {"diagram": "landscape", "levels": [1, 2], "colour": {"by": "status"}}
        drawn = ok(carl.post("/api/reports", json={"name": "Map", "kind": "diagram", "config": config}), 201)
        assert drawn["config"] == config
        response = carl.post("/api/reports", json={"name": "x", "kind": "list", "type": "InformationSystem"})
        assert response.headers["location"] == f"/api/reports/{response.json()['id']}"
        assert ok(carl.get(f"/api/reports/{queried['id']}")) == queried
        names = [r["name"] for r in ok(carl.get("/api/reports"))]
        assert names == [listed["name"], "Processes", "Map", "x"]
        changed = ok(
            carl.patch(f"/api/reports/{listed['id']}", json={"name": "E systems", "description": "d"})
        )
        assert changed["name"] == "E systems" and changed["filter"] == '@name.startsWith("E")'
        kind_changed = ok(
            carl.patch(f"/api/reports/{listed['id']}", json={"kind": "query", "query": "BusinessProcess;"})
        )
        assert (
            kind_changed["type"] is None and kind_changed["filter"] is None and kind_changed["sort"] is None
        )
        refused(carl.get(f"/api/reports/{drawn['id']}/run"), 409, "report_not_runnable")
        ok(carl.delete(f"/api/reports/{drawn['id']}"), 204)
        refused(carl.get(f"/api/reports/{drawn['id']}"), 404, "unknown_report")
    # A supervisor sees every account's reports.
    assert len(ok(cast.get("/api/reports", params={"everyone": "true"}))) == 3


def test_run_as_owner_and_as_a_role_member_with_fewer_rights(app: FastAPI, cast: TestClient) -> None:
    with acting_as(app, "carl") as carl, acting_as(app, "anna") as anna:
        report = ok(carl.post("/api/reports", json={**LIST, "filter": '@name != "Archive"'}), 201)
        run = ok(carl.get(f"/api/reports/{report['id']}/run", params={"limit": 1, "count": "true"}))
        assert run["type"] == "InformationSystem" and run["total"] == 2
        assert [item["name"] for item in run["items"]] == [["CRM"]] and run["items"][0]["Annual costs"] == [
            1200
        ]
        following = ok(carl.get(f"/api/reports/{report['id']}/run", params={"cursor": run["nextCursor"]}))
        assert [item["name"] for item in following["items"]] == [["ERP"]] and following["nextCursor"] is None
        # Not shared yet: anna learns nothing of it.
        refused(anna.get(f"/api/reports/{report['id']}/run"), 404, "unknown_report")
        shares = {"shares": [{"role": "Architects"}]}
        assert ok(carl.put(f"/api/reports/{report['id']}/shares", json=shares)) == {
            "shares": [{"role": "Architects", "access": "view"}]
        }
        assert [r["access"] for r in ok(anna.get("/api/reports"))] == ["view"]
        run = ok(anna.get(f"/api/reports/{report['id']}/run"))
        assert [item["name"] for item in run["items"]] == [["CRM"], ["ERP"]]
        assert all("Annual costs" not in item for item in run["items"])
        assert str(SECRET) not in anna.get(f"/api/reports/{report['id']}/run").text
        streamed = anna.get(f"/api/reports/{report['id']}/run", headers={"Accept": "application/x-ndjson"})
        lines = [orjson.loads(line) for line in streamed.text.splitlines() if line]
        assert [line["name"] for line in lines] == [["CRM"], ["ERP"]]
        assert "Annual costs" not in streamed.text
        # A report filtering on what anna may not read is refused to her as the list itself is.
        secret = {**LIST, "name": "Expensive", "filter": '@"Annual costs" > 1000'}
        expensive = ok(carl.post("/api/reports", json=secret), 201)
        ok(carl.put(f"/api/reports/{expensive['id']}/shares", json=shares))
        assert len(ok(carl.get(f"/api/reports/{expensive['id']}/run"))["items"]) == 2
        as_list = anna.get("/api/massdata/InformationSystem", params={"filter": secret["filter"]})
        run_refused = anna.get(f"/api/reports/{expensive['id']}/run")
        assert run_refused.status_code == as_list.status_code == 400
        assert run_refused.json()["code"] == as_list.json()["code"]
        assert str(SECRET) not in run_refused.text
        # A field the caller may not see is left out for her, as if the report had not named it.
        named = {**LIST, "name": "With costs", "fields": ["name", "Annual costs"]}
        with_costs = ok(carl.post("/api/reports", json=named), 201)
        ok(carl.put(f"/api/reports/{with_costs['id']}/shares", json=shares))
        assert ok(carl.get(f"/api/reports/{with_costs['id']}/run"))["items"][0]["Annual costs"] == [10]
        assert all(
            set(item) == {"id", "name"}
            for item in ok(anna.get(f"/api/reports/{with_costs['id']}/run"))["items"]
        )
        # A query report answers as the query route does.
        query = {
            "name": "Query",
            "kind": "query",
            "query": 'InformationSystem[@name = "ERP"];',
            "fields": ["name"],
        }
        queried = ok(carl.post("/api/reports", json=query), 201)
        ok(carl.put(f"/api/reports/{queried['id']}/shares", json=shares))
        answer = ok(anna.get(f"/api/reports/{queried['id']}/run"))
        assert answer["query"] == query["query"] and answer["items"] == answer["result"]
        assert [item["name"] for item in answer["items"]] == [["ERP"]]


def test_view_and_edit_shares_and_another_user(app: FastAPI, cast: TestClient) -> None:
    with acting_as(app, "carl") as carl, acting_as(app, "anna") as anna, acting_as(app, "bernd") as bernd:
        report = ok(carl.post("/api/reports", json=LIST), 201)
        path = f"/api/reports/{report['id']}"
        for client in (anna, bernd):
            refused(client.get(path), 404, "unknown_report")
            refused(client.patch(path, json={"name": "mine"}), 404, "unknown_report")
            refused(client.get(f"{path}/shares"), 404, "unknown_report")
            refused(client.delete(path), 404, "unknown_report")
        ok(carl.put(f"{path}/shares", json={"shares": [{"role": "Architects", "access": "view"}]}))
        assert ok(anna.get(path))["access"] == "view"
        assert ok(anna.get(f"{path}/shares"))["shares"] == [{"role": "Architects", "access": "view"}]
        refused(anna.patch(path, json={"name": "mine"}), 403, "forbidden")
        ok(carl.put(f"{path}/shares", json={"shares": [{"role": "Architects", "access": "edit"}]}))
        changed = ok(anna.patch(path, json={"name": "anna's name"}))
        assert (
            changed["name"] == "anna's name" and changed["updatedBy"] == "anna" and changed["owner"] == "carl"
        )
        # Sharing and deleting stay with the owner and supervisors.
        refused(anna.put(f"{path}/shares", json={"shares": []}), 403, "forbidden")
        refused(anna.delete(path), 403, "forbidden")
        refused(bernd.get(path), 404, "unknown_report")
        assert ok(bernd.get("/api/reports")) == []
        refused(bernd.get("/api/reports", params={"everyone": "true"}), 403, "forbidden")
        problem = refused(
            carl.put(f"{path}/shares", json={"shares": [{"role": "Nobody"}]}), 400, "validation_failed"
        )
        assert problem["errors"][0]["pointer"] == "/shares/0/role"
        ok(cast.delete(path), 204)
        refused(carl.get(path), 404, "unknown_report")


def test_validation_errors(app: FastAPI, cast: TestClient) -> None:
    with acting_as(app, "carl") as carl:
        problem = refused(
            carl.post("/api/reports", json={**LIST, "filter": '@name = "x" &'}), 400, "query_syntax"
        )
        assert problem["position"]["line"] == 1 and problem["position"]["column"] >= 12
        assert problem["errors"][0]["pointer"] == "/filter"
        query = {"name": "q", "kind": "query", "query": "InformationSystem[@name = \n 1 2];"}
        problem = refused(carl.post("/api/reports", json=query), 400, "query_syntax")
        assert problem["position"]["line"] == 2 and problem["errors"][0]["pointer"] == "/query"
        problem = refused(
            carl.post("/api/reports", json={**query, "query": "Nothing;"}), 400, "query_invalid"
        )
        assert problem["errors"][0]["pointer"] == "/query"
        problem = refused(carl.post("/api/reports", json={**LIST, "sort": "nothing"}), 400, "invalid_sort")
        assert problem["errors"][0]["pointer"] == "/sort"
        problem = refused(
            carl.post("/api/reports", json={**LIST, "type": "Nothing"}), 400, "validation_failed"
        )
        assert problem["errors"] == [
            {
                "pointer": "/type",
                "code": "unknown_type",
                "message": "there is no building block type 'Nothing'",
            }
        ]
        problem = refused(
            carl.post("/api/reports", json={"name": "d", "kind": "diagram", "query": "Project;"}),
            400,
            "validation_failed",
        )
        assert {(e["pointer"], e["code"]) for e in problem["errors"]} == {
            ("/query", "not_for_kind"),
            ("/config", "mandatory"),
        }
        big = {"name": "d", "kind": "diagram", "config": {"nodes": ["x" * 1000] * 70}}
        problem = refused(carl.post("/api/reports", json=big), 400, "validation_failed")
        assert problem["errors"][0]["code"] == "too_large"
        refused(carl.post("/api/reports", json={**LIST, "name": "n" * 256}), 400, "validation_failed")
        refused(
            carl.post("/api/reports", json={**LIST, "description": "d" * 20_001}), 400, "validation_failed"
        )
        report = ok(carl.post("/api/reports", json=LIST), 201)
        refused(carl.patch(f"/api/reports/{report['id']}", json={"filter": "@"}), 400, "query_syntax")
        assert ok(carl.get(f"/api/reports/{report['id']}"))["filter"] is None
        assert len(ok(carl.get("/api/reports"))) == 1
    with acting_as(app, "bernd") as bernd:
        # Saving checks with the saver's rights: bernd may not read BusinessProcess.
        refused(bernd.post("/api/reports", json={**LIST, "type": "BusinessProcess"}), 403, "forbidden")


def test_creating_and_running_need_massdata(app: FastAPI, cast: TestClient) -> None:
    ok(
        cast.post(
            "/api/administration/roles", json={"name": "Plain", "typePermissions": {"Project": ["read"]}}
        ),
        201,
    )
    ok(
        cast.post(
            "/api/administration/users", json={"login": "paul", "password": PASSWORD, "roles": ["Plain"]}
        ),
        201,
    )
    report = ok(cast.post("/api/reports", json={"name": "Projects", "kind": "list", "type": "Project"}), 201)
    ok(cast.put(f"/api/reports/{report['id']}/shares", json={"shares": [{"role": "Plain"}]}))
    with acting_as(app, "paul") as paul:
        refused(paul.post("/api/reports", json={**LIST, "type": "Project"}), 403, "forbidden")
        assert ok(paul.get(f"/api/reports/{report['id']}"))["access"] == "view"
        refused(paul.get(f"/api/reports/{report['id']}/run"), 403, "forbidden")


def test_a_diagram_configuration_must_be_storable(app: FastAPI, cast: TestClient) -> None:
    for raw in (b'{"a": 1e400}', b'{"a": 123456789012345678901234567890}', b'{"a": -1e400}'):
        body = b'{"name": "d", "kind": "diagram", "config": ' + raw + b"}"
        response = cast.post("/api/reports", content=body, headers={"Content-Type": "application/json"})
        problem = refused(response, 400, "validation_failed")
        assert problem["errors"][0]["pointer"].startswith("/config"), problem
    deep = b'{"name": "d", "kind": "diagram", "config": ' + b'{"a": [' * 200 + b"1" + b"]}" * 200 + b"}"
    response = cast.post("/api/reports", content=deep, headers={"Content-Type": "application/json"})
    assert response.status_code in (201, 400), response.text
    assert len(ok(cast.get("/api/reports"))) == (1 if response.status_code == 201 else 0)
