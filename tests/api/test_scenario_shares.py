"""A planning scenario shared with roles (issue 25, visibility): their members see it, or also write in it;
what only its owner does stays with the owner; permissions inside it stay those of main."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import client_as, create_attribute, create_group, create_role, create_user

SCENARIOS = "/api/scenarios"
EDIT = ["read", "update", "create", "delete"]


def _scenario(client: TestClient, name: str = "ERP migration") -> str:
    response = client.post(SCENARIOS, json={"name": name})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _share(client: TestClient, key: str, *shares: dict[str, Any]) -> Any:
    return client.put(f"{SCENARIOS}/{key}/shares", json={"shares": list(shares)})


def _team(app: FastAPI) -> None:
    create_group(app, "Finance")
    create_attribute(app, "Budget", "number", types=["InformationSystem"], group="Finance")
    create_role(app, "planners", types={"InformationSystem": EDIT}, functional=["VIEW_HISTORY"])
    create_role(app, "architects", types={"InformationSystem": EDIT}, functional=["VIEW_HISTORY"])
    create_role(app, "finance", groups={"Finance": (True, True)})
    create_user(app, "anna", "anna-password-1", roles=["planners"])
    create_user(app, "bernd", "bernd-password-1", roles=["architects"])
    create_user(app, "carl", "carl-password-1", roles=["architects", "finance"])
    create_user(app, "dora", "dora-password-1", roles=["planners"])


def test_a_role_shared_for_reading_sees_the_scenario_and_cannot_write_in_it(
    app: FastAPI, client: TestClient
) -> None:
    _team(app)
    erp = client.post("/api/element/InformationSystem", json={"name": ["ERP"], "Budget": [10]}).json()["id"][
        0
    ]
    with client_as(app, "anna", "anna-password-1") as anna:
        key = _scenario(anna)
        planned = anna.patch(
            f"/api/element/InformationSystem/{erp}",
            json={"description": ["planned"]},
            params={"scenario": key},
        )
        assert planned.status_code == 200, planned.text
    with client_as(app, "bernd", "bernd-password-1") as bernd:
        assert bernd.get(f"{SCENARIOS}/{key}").status_code == 404  # not shared yet
        assert bernd.get(SCENARIOS).json() == []
    with client_as(app, "anna", "anna-password-1") as anna:
        shared = _share(anna, key, {"role": "architects"})
        assert shared.status_code == 200, shared.text
        assert shared.json() == {"shares": [{"role": "architects", "access": "read"}]}
    with client_as(app, "bernd", "bernd-password-1") as bernd:
        assert [s["key"] for s in bernd.get(SCENARIOS).json()] == [key]
        read = bernd.get(f"/api/element/InformationSystem/{erp}", params={"scenario": key})
        assert read.status_code == 200 and read.json()["description"] == ["planned"]
        assert bernd.get(f"{SCENARIOS}/{key}/diff").status_code == 200
        history = bernd.get(f"/api/history/InformationSystem/{erp}", params={"scenario": key})
        assert history.status_code == 200 and history.json()["items"][0]["viaScenario"] == key
        assert bernd.get(f"{SCENARIOS}/{key}/shares").json()["shares"] == [
            {"role": "architects", "access": "read"}
        ]
        refused = bernd.patch(
            f"/api/element/InformationSystem/{erp}", json={"description": ["mine"]}, params={"scenario": key}
        )
        assert refused.status_code == 403, refused.text
        bulk = bernd.post(
            "/api/massdata/InformationSystem",
            json={"elements": [{"name": ["CRM"]}]},
            params={"scenario": key},
        )
        assert bulk.status_code == 403, bulk.text
        # Only the owner (or a supervisor) shares, closes and merges it.
        assert _share(bernd, key, {"role": "architects", "access": "write"}).status_code == 403
        assert bernd.post(f"{SCENARIOS}/{key}/close").status_code == 403
        assert bernd.post(f"{SCENARIOS}/{key}/merge", json={}).status_code in (403, 409)
    with client_as(app, "dora", "dora-password-1") as dora:  # another role: sees nothing
        assert dora.get(f"{SCENARIOS}/{key}").status_code == 404
        assert dora.get(f"{SCENARIOS}/{key}/shares").status_code == 404


def test_a_role_shared_for_writing_writes_in_the_scenario_within_its_own_rights(
    app: FastAPI, client: TestClient
) -> None:
    _team(app)
    erp = client.post("/api/element/InformationSystem", json={"name": ["ERP"], "Budget": [10]}).json()["id"][
        0
    ]
    with client_as(app, "anna", "anna-password-1") as anna:
        key = _scenario(anna)
        assert _share(anna, key, {"role": "architects", "access": "write"}).status_code == 200
    with client_as(app, "carl", "carl-password-1") as carl:  # an architect who may read Finance
        written = carl.patch(
            f"/api/element/InformationSystem/{erp}", json={"Budget": [12]}, params={"scenario": key}
        )
        assert written.status_code == 200, written.text
    with client_as(app, "bernd", "bernd-password-1") as bernd:  # an architect who may not
        seen = bernd.get(f"/api/element/InformationSystem/{erp}", params={"scenario": key}).json()
        assert "Budget" not in seen
        hidden = bernd.patch(
            f"/api/element/InformationSystem/{erp}", json={"Budget": [1]}, params={"scenario": key}
        )
        assert hidden.status_code == 400, hidden.text
        history = bernd.get(f"/api/history/InformationSystem/{erp}", params={"scenario": key}).json()["items"]
        assert all(change["property"] != "Budget" for item in history for change in item["changes"])
        created = bernd.post(
            "/api/element/InformationSystem", json={"name": ["Data hub"]}, params={"scenario": key}
        )
        assert created.status_code == 201, created.text
    changes = client.get(f"{SCENARIOS}/{key}/changes").json()["items"]
    assert [c["user"] for c in changes] == ["carl", "bernd"]
    with client_as(app, "anna", "anna-password-1") as anna:
        # The owner sees what she may read of it: not carl's change of a Finance value.
        assert [c["user"] for c in anna.get(f"{SCENARIOS}/{key}/changes").json()["items"]] == ["bernd"]
        # Unshared: the architects lose it at once.
        assert _share(anna, key).json() == {"shares": []}
    with client_as(app, "bernd", "bernd-password-1") as bernd:
        assert bernd.get(f"{SCENARIOS}/{key}").status_code == 404
        lost = bernd.patch(
            f"/api/element/InformationSystem/{erp}", json={"description": ["x"]}, params={"scenario": key}
        )
        assert lost.status_code == 404, lost.text


def test_bad_shares_answer_clearly_and_change_nothing(app: FastAPI, client: TestClient) -> None:
    _team(app)
    key = _scenario(client)
    assert _share(client, key, {"role": "planners"}).status_code == 200
    for shares, pointer, code in (
        ([{"role": "nobody"}], "/shares/0/role", "unknown_role"),
        ([{"role": "planners"}, {"role": "planners", "access": "write"}], "/shares/1/role", "duplicate_role"),
    ):
        refused = _share(client, key, *shares)
        assert refused.status_code == 400, refused.text
        assert (refused.json()["errors"][0]["pointer"], refused.json()["errors"][0]["code"]) == (
            pointer,
            code,
        )
    invalid = _share(client, key, {"role": "planners", "access": "admin"})
    assert invalid.status_code == 400, invalid.text
    assert client.put(f"{SCENARIOS}/nope/shares", json={"shares": []}).status_code == 404
    assert client.get(f"{SCENARIOS}/{key}/shares").json() == {
        "shares": [{"role": "planners", "access": "read"}]
    }
    # A deleted role shares nothing any more.
    roles = client.get("/api/administration/roles").json()
    planners = next(role["id"] for role in roles if role["name"] == "planners")
    assert client.delete(f"/api/administration/roles/{planners}").status_code == 204
    assert client.get(f"{SCENARIOS}/{key}/shares").json() == {"shares": []}
