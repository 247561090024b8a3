"""Who may read history, and what of it: VIEW_HISTORY, type read, hidden attribute groups, relation ends."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.history_support import add_attribute, add_user, record_change, restrict_group


def _bp_with_secret_and_systems(app: FastAPI) -> int:
    return record_change(
        app,
        "created",
        "BusinessProcess",
        101,
        "Order handling",
        changes=[
            {"property": "name", "old": [], "new": ["Order handling"]},
            {"property": "Secret", "old": [], "new": ["classified"]},
            {"property": "Visible", "old": [], "new": ["open"]},
            {
                "property": "informationSystems",
                "added": [{"id": 17, "name": "ERP", "attributes": {"Secret": ["x"], "Visible": ["y"]}}],
                "removed": [],
            },
            {"property": "businessDomains", "added": [{"id": 5, "name": "Sales"}], "removed": []},
            {"property": "LongGone", "old": [], "new": ["deleted attribute"]},
        ],
    )


def _setup(app: FastAPI) -> int:
    secret_group = add_attribute(app, "Secret", ["BusinessProcess"], group="Confidential")
    add_attribute(app, "Visible", ["BusinessProcess"])
    add_user(app, "keeper", read_types=["BusinessProcess"], functional=["VIEW_HISTORY"])
    restrict_group(app, secret_group, "role-keeper")
    _bp_with_secret_and_systems(app)
    return secret_group


def _properties(items: list[dict[str, Any]]) -> list[str]:
    return [c["property"] for c in items[0]["changes"]]


def test_history_needs_view_history(app: FastAPI, client: TestClient) -> None:
    _setup(app)
    user = add_user(app, "plain", read_types=["BusinessProcess", "InformationSystem"])
    for path in ("/api/history", "/api/history/BusinessProcess", "/api/history/BusinessProcess/101"):
        response = client.get(path, auth=user)
        assert response.status_code == 403, path
        assert response.json()["code"] == "forbidden"


def test_element_and_type_history_need_read_on_the_type(app: FastAPI, client: TestClient) -> None:
    _setup(app)
    user = add_user(app, "historian", read_types=["InformationSystem"], functional=["VIEW_HISTORY"])
    for path in ("/api/history/BusinessProcess", "/api/history/BusinessProcess/101"):
        assert client.get(path, auth=user).status_code == 403
    assert client.get("/api/history/InformationSystem", auth=user).status_code == 200


def test_hidden_groups_and_unreadable_ends_are_left_out(app: FastAPI, client: TestClient) -> None:
    _setup(app)
    user = add_user(
        app, "reader", read_types=["BusinessProcess", "BusinessDomain"], functional=["VIEW_HISTORY"]
    )
    for path in ("/api/history/BusinessProcess/101", "/api/history/BusinessProcess"):
        items = client.get(path, auth=user).json()["items"]
        # Secret: group readable only by role-keeper; informationSystems: IS not readable; LongGone: unknown.
        assert _properties(items) == ["name", "Visible", "businessDomains"], path
    feed = client.get("/api/history", auth=user).json()["items"]
    element_items = [i for i in feed if i["entity"] == "element"]
    assert _properties(element_items) == ["name", "Visible", "businessDomains"]


def test_relation_attributes_in_hidden_groups_are_trimmed(app: FastAPI, client: TestClient) -> None:
    _setup(app)
    user = add_user(
        app, "mapper", read_types=["BusinessProcess", "InformationSystem"], functional=["VIEW_HISTORY"]
    )
    changes = client.get("/api/history/BusinessProcess/101", auth=user).json()["items"][0]["changes"]
    ends = {c["property"]: c for c in changes}
    assert ends["informationSystems"]["added"] == [
        {"id": 17, "name": "ERP", "attributes": {"Visible": ["y"]}}
    ]
    assert "Secret" not in ends


def test_group_readers_and_supervisors_see_everything(app: FastAPI, client: TestClient) -> None:
    _setup(app)
    keeper = ("keeper", "reader-password")
    assert "Secret" in _properties(
        client.get("/api/history/BusinessProcess/101", auth=keeper).json()["items"]
    )
    everything = _properties(client.get("/api/history/BusinessProcess/101").json()["items"])
    assert everything == ["name", "Secret", "Visible", "informationSystems", "businessDomains", "LongGone"]


def test_feed_shows_only_readable_types(app: FastAPI, client: TestClient) -> None:
    _setup(app)
    record_change(app, "created", "InformationSystem", 17, "ERP", changes=[])
    user = add_user(app, "bp-only", read_types=["BusinessProcess"], functional=["VIEW_HISTORY"])
    feed = client.get("/api/history", auth=user).json()["items"]
    assert {i["type"] for i in feed if i["entity"] == "element"} == {"BusinessProcess"}
    assert {i["type"] for i in client.get("/api/history").json()["items"] if i["entity"] == "element"} == {
        "BusinessProcess",
        "InformationSystem",
    }


def test_administration_changes_need_the_matching_permission(app: FastAPI, client: TestClient) -> None:
    _setup(app)
    metamodel_only = add_user(app, "historian", functional=["VIEW_HISTORY"])
    user_admin = add_user(app, "useradmin", functional=["VIEW_HISTORY", "ADMIN_USERS"])
    attribute_admin = add_user(app, "attradmin", functional=["VIEW_HISTORY", "ADMIN_ATTRIBUTES"])

    def subjects(auth: tuple[str, str]) -> set[str]:
        items = client.get("/api/history", params={"limit": 1000}, auth=auth).json()["items"]
        return {i["subject"] for i in items if i["entity"] == "administration"}

    assert subjects(metamodel_only) == set()
    assert subjects(user_admin) == {
        f"user {u}" for u in ("system", "keeper", "historian", "useradmin", "attradmin")
    }
    assert subjects(attribute_admin) == {"attribute Secret", "attribute Visible", "attribute group 2"}
    assert "user attradmin" in subjects(("system", "system-test-password"))
    # Metamodel changesets name attributes, groups and types: only those who see the whole metamodel see them.
    metamodel = client.get("/api/history", auth=metamodel_only).json()["items"]
    assert [i["subject"] for i in metamodel if i["entity"] == "metamodel"] == []
    metamodel = client.get("/api/history", auth=attribute_admin).json()["items"]
    assert [i["subject"] for i in metamodel if i["entity"] == "metamodel"] == ["default metamodel"]
