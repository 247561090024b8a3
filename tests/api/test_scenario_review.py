"""Reviewing planning scenarios (issue 25): reviewers (and, once a scenario is proposed, holders of
APPROVE_SCENARIOS) see, comment and approve; approvals count for the version they approved; an owner does
not approve their own scenario; merging needs MERGE_SCENARIOS, a proposed scenario its approvals, and a
protected main changes only by such merges (a supervisor may break glass)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.helpers import client_as, create_role, create_user

SCENARIOS = "/api/scenarios"
PLANNER_RIGHTS = {"InformationSystem": ["read", "update", "create", "delete"]}


def _people(app: FastAPI) -> None:
    create_role(app, "planners", types=PLANNER_RIGHTS)
    create_role(app, "mergers", types=PLANNER_RIGHTS, functional=["MERGE_SCENARIOS"])
    create_user(app, "anna", "anna-password-1", roles=["mergers"])
    create_user(app, "bernd", "bernd-password-1", roles=["planners"])
    create_user(app, "carl", "carl-password-1", roles=["planners"])


def _erp(client: TestClient) -> int:
    made = client.post("/api/element/InformationSystem", json={"name": ["ERP"]})
    assert made.status_code == 201, made.text
    return int(made.json()["id"][0])


def _planned(anna: TestClient, erp: int, text: str = "planned") -> str:
    key = str(anna.post(SCENARIOS, json={"name": "ERP migration"}).json()["key"])
    changed = anna.patch(
        f"/api/element/InformationSystem/{erp}", json={"description": [text]}, params={"scenario": key}
    )
    assert changed.status_code == 200, changed.text
    return key


def test_approvals_count_for_the_version_they_approved(app: FastAPI, client: TestClient) -> None:
    _people(app)
    erp = _erp(client)
    with (
        client_as(app, "anna", "anna-password-1") as anna,
        client_as(app, "bernd", "bernd-password-1") as bernd,
        client_as(app, "carl", "carl-password-1") as carl,
    ):
        key = _planned(anna, erp)
        assert bernd.get(f"{SCENARIOS}/{key}").status_code == 404  # not a reviewer yet
        proposed = anna.post(
            f"{SCENARIOS}/{key}/review", json={"reviewers": ["bernd"], "requiredApprovals": 1}
        )
        assert proposed.status_code == 200, proposed.text
        assert proposed.json()["review"]["approved"] is False
        # The reviewer sees the scenario, its diff and its elements, comments, but does not write in it.
        assert [s["key"] for s in bernd.get(SCENARIOS).json()] == [key]
        assert bernd.get(f"{SCENARIOS}/{key}/diff").json()["items"][0]["element"]["id"] == erp
        said = bernd.post(
            f"{SCENARIOS}/{key}/comments", json={"element": erp, "field": "description", "text": "Why?"}
        )
        assert said.status_code == 201, said.text
        assert [c["author"] for c in anna.get(f"{SCENARIOS}/{key}/comments").json()] == ["bernd"]
        refused = bernd.patch(
            f"/api/element/InformationSystem/{erp}", json={"description": ["x"]}, params={"scenario": key}
        )
        assert refused.status_code == 403, refused.text
        assert carl.post(f"{SCENARIOS}/{key}/approvals").status_code == 404  # neither owner nor reviewer

        merge = anna.post(f"{SCENARIOS}/{key}/merge", json={})
        assert merge.status_code == 409 and merge.json()["code"] == "approval_required"
        own = anna.post(f"{SCENARIOS}/{key}/approvals")
        assert own.status_code == 403 and own.json()["code"] == "self_approval"
        approved = bernd.post(f"{SCENARIOS}/{key}/approvals")
        assert approved.status_code == 200 and approved.json()["review"]["approved"] is True
        # A change after the approval makes it lapse.
        anna.patch(
            f"/api/element/InformationSystem/{erp}",
            json={"description": ["planned again"]},
            params={"scenario": key},
        )
        review = anna.get(f"{SCENARIOS}/{key}").json()["review"]
        assert review["approved"] is False and review["approvals"] == []
        assert anna.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 409
        assert bernd.post(f"{SCENARIOS}/{key}/approvals").status_code == 200
        # Merging needs MERGE_SCENARIOS: the reviewer has not got it, the owner has.
        assert bernd.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 403
        assert bernd.post(f"{SCENARIOS}/{key}/merge", json={"dryRun": True}).status_code == 200
        merged = anna.post(f"{SCENARIOS}/{key}/merge", json={})
        assert merged.status_code == 200, merged.text
    assert client.get(f"/api/element/InformationSystem/{erp}").json()["description"] == ["planned again"]


def test_bad_reviews_are_refused(app: FastAPI, client: TestClient) -> None:
    _people(app)
    erp = _erp(client)
    with (
        client_as(app, "anna", "anna-password-1") as anna,
        client_as(app, "bernd", "bernd-password-1") as bernd,
    ):
        key = _planned(anna, erp)
        assert bernd.post(f"{SCENARIOS}/{key}/review", json={"reviewers": ["carl"]}).status_code == 404
        unknown = anna.post(f"{SCENARIOS}/{key}/review", json={"reviewers": ["nobody-here"]})
        assert unknown.status_code == 400 and unknown.json()["errors"][0]["pointer"] == "/reviewers/0"
        too_many = anna.post(
            f"{SCENARIOS}/{key}/review", json={"reviewers": ["bernd"], "requiredApprovals": 2}
        )
        assert too_many.status_code == 400
        assert anna.post(f"{SCENARIOS}/{key}/approvals").status_code == 409  # not proposed
        field_alone = anna.post(f"{SCENARIOS}/{key}/comments", json={"field": "description", "text": "x"})
        assert field_alone.status_code == 400


@pytest.fixture
def self_approving(database_url: str) -> Iterator[FastAPI]:
    application = create_app(make_settings(database_url, protected_main=True, scenario_self_approval=True))
    yield application
    application.state.services.dispose()


def test_a_protected_main_changes_only_by_approved_merges(self_approving: FastAPI) -> None:
    app = self_approving
    _people(app)
    with TestClient(app, base_url="http://127.0.0.1") as system:
        system.auth = ("system", ADMIN_PASSWORD)
        erp = _erp(system)  # a supervisor may break glass
        with client_as(app, "anna", "anna-password-1") as anna:
            direct = anna.patch(f"/api/element/InformationSystem/{erp}", json={"description": ["direct"]})
            assert direct.status_code == 403 and direct.json()["code"] == "main_protected"
            made = anna.post("/api/element/InformationSystem", json={"name": ["CRM"]})
            assert made.status_code == 403
            bulk: dict[str, Any] = {"elements": [{"name": ["CRM"]}]}
            assert anna.post("/api/massdata/InformationSystem", json=bulk).status_code == 403
            key = _planned(anna, erp)
            unreviewed = anna.post(f"{SCENARIOS}/{key}/merge", json={})
            assert unreviewed.status_code == 409 and unreviewed.json()["code"] == "approval_required"
            anna.post(f"{SCENARIOS}/{key}/review", json={"reviewers": ["anna"]})
            assert anna.post(f"{SCENARIOS}/{key}/approvals").status_code == 200  # allowed by the setting
            merged = anna.post(f"{SCENARIOS}/{key}/merge", json={})
            assert merged.status_code == 200, merged.text
        assert system.get(f"/api/element/InformationSystem/{erp}").json()["description"] == ["planned"]
        history = system.get(f"/api/history/InformationSystem/{erp}").json()["items"]
        assert history[0]["viaScenario"] == key and history[0]["user"] == "anna"


def test_approve_scenarios_lets_one_approve_without_being_asked(app: FastAPI, client: TestClient) -> None:
    _people(app)
    create_role(app, "approvers", types=PLANNER_RIGHTS, functional=["APPROVE_SCENARIOS"])
    create_user(app, "dora", "dora-password-1", roles=["approvers"])
    erp = _erp(client)
    with client_as(app, "anna", "anna-password-1") as anna, client_as(app, "dora", "dora-password-1") as dora:
        key = _planned(anna, erp)
        assert dora.get(f"{SCENARIOS}/{key}").status_code == 404  # not proposed yet: anna's alone
        anna.post(f"{SCENARIOS}/{key}/review", json={"reviewers": ["bernd"]})
        assert [s["key"] for s in dora.get(SCENARIOS).json()] == [key]
        approved = dora.post(f"{SCENARIOS}/{key}/approvals")
        assert approved.status_code == 200 and approved.json()["review"]["approved"] is True
        assert (
            dora.patch(
                f"/api/element/InformationSystem/{erp}", json={"description": ["x"]}, params={"scenario": key}
            ).status_code
            == 403
        )


def test_a_required_rule_stops_the_merge_of_a_scenario_that_breaks_it(
    app: FastAPI, client: TestClient
) -> None:
    _people(app)
    erp = _erp(client)
    rule = client.post(
        "/api/scenario-rules",
        json={
            "name": "Systems are described",
            "query": "InformationSystem[@description = null];",
            "required": True,
        },
    )
    assert rule.status_code == 201, rule.text
    advice = client.post(
        "/api/scenario-rules",
        json={"name": "Advice", "query": "InformationSystem[count(businessDomains) = 0];"},
    )
    assert advice.status_code == 201
    with client_as(app, "anna", "anna-password-1") as anna:
        key = _planned(anna, erp)  # describes the ERP
        made = anna.post("/api/element/InformationSystem", json={"name": ["CRM"]}, params={"scenario": key})
        crm = made.json()["id"][0]
        checked = anna.get(f"{SCENARIOS}/{key}/checks").json()
        assert checked["mergeable"] is False
        by_name = {c["rule"]["name"]: c for c in checked["checks"]}
        assert by_name["Systems are described"]["violations"] == [
            {"id": crm, "type": "InformationSystem", "name": "CRM"}
        ]
        assert by_name["Advice"]["count"] == 2
        dry = anna.post(f"{SCENARIOS}/{key}/merge", json={"dryRun": True})
        assert dry.status_code == 200 and len(dry.json()["checks"]) == 2
        refused = anna.post(f"{SCENARIOS}/{key}/merge", json={})
        assert refused.status_code == 409 and refused.json()["code"] == "checks_failed"
        assert refused.json()["checks"][0]["rule"]["name"] == "Systems are described"
        anna.patch(
            f"/api/element/InformationSystem/{crm}", json={"description": ["CRM"]}, params={"scenario": key}
        )
        assert anna.get(f"{SCENARIOS}/{key}/checks").json()["mergeable"] is True
        assert anna.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 200
        # Rules are a supervisor's to set.
        assert (
            anna.post("/api/scenario-rules", json={"name": "x", "query": "InformationSystem;"}).status_code
            == 403
        )
    bad = client.post("/api/scenario-rules", json={"name": "Broken", "query": "Nope[;"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["pointer"].startswith("/query")
    assert (
        client.post("/api/scenario-rules", json={"name": "Advice", "query": "InformationSystem;"}).status_code
        == 409
    )
    assert client.delete(f"/api/scenario-rules/{rule.json()['id']}").status_code == 204
    assert [r["name"] for r in client.get("/api/scenario-rules").json()] == ["Advice"]
