"""History read in a planning scenario (API.md section 11: history requests take `scenario`): an element's
or a type's changesets as the scenario sees them, its own newest first, then main's up to its base."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import client_as, create_attribute, create_group, create_role, create_user

SCENARIOS = "/api/scenarios"


def _create(client: TestClient, type_name: str, body: dict[str, Any], scenario: str | None = None) -> int:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.post(f"/api/element/{type_name}", json=body, params=params)
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def _patch(
    client: TestClient, type_name: str, element_id: int, body: dict[str, Any], scenario: str | None = None
) -> None:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.patch(f"/api/element/{type_name}/{element_id}", json=body, params=params)
    assert response.status_code == 200, response.text


def _scenario(client: TestClient, name: str = "ERP migration") -> str:
    response = client.post(SCENARIOS, json={"name": name})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _history(client: TestClient, path: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/history/{path}", params=params)
    assert response.status_code == 200, response.text
    assert response.json()["nextCursor"] is None
    return list(response.json()["items"])


def _walk(client: TestClient, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every item of a history read one page of `limit` at a time, following the cursors."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        response = client.get(
            f"/api/history/{path}", params={**params, **({"cursor": cursor} if cursor else {})}
        )
        assert response.status_code == 200, response.text
        page = response.json()
        assert len(page["items"]) <= int(params["limit"])
        items.extend(page["items"])
        cursor = page["nextCursor"]
        if cursor is None:
            return items


def _described(items: list[dict[str, Any]]) -> list[tuple[str, str | None, list[Any]]]:
    return [
        (
            item["operation"],
            item.get("viaScenario"),
            [change.get("new") for change in item["changes"] if change["property"] == "description"],
        )
        for item in items
    ]


def test_an_elements_history_in_a_scenario_is_its_own_changes_on_main_up_to_the_base(
    app: FastAPI, client: TestClient
) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "description": ["one"]})
    _patch(client, "InformationSystem", erp, {"description": ["two"]})
    key = _scenario(client)
    base = int(client.get(f"{SCENARIOS}/{key}").json()["baseRevision"])
    _patch(client, "InformationSystem", erp, {"description": ["main after the base"]})
    _patch(client, "InformationSystem", erp, {"description": ["planned"]}, key)
    _patch(client, "InformationSystem", erp, {"description": ["planned again"]}, key)

    main = _history(client, f"InformationSystem/{erp}")
    planned = _history(client, f"InformationSystem/{erp}", scenario=key)
    assert _described(planned) == [
        ("updated", key, [["planned again"]]),
        ("updated", key, [["planned"]]),
        ("updated", None, [["two"]]),
        ("created", None, [["one"]]),
    ]
    assert [item["scenarioChange"] for item in planned[:2]] == sorted(
        (item["scenarioChange"] for item in planned[:2]), reverse=True
    )
    assert all(item["revision"] >= base for item in planned[:2])
    assert planned[2:] == main[1:]  # main's own changesets as main shows them, up to the base
    assert all("scenarioChange" not in item for item in main)
    # The header names the scenario alike; main's history is untouched by the scenario.
    by_header = client.get(f"/api/history/InformationSystem/{erp}", headers={"Blockrepo-Scenario": key})
    assert by_header.status_code == 200 and by_header.json()["items"] == planned
    assert _described(main)[0] == ("updated", None, [["main after the base"]])


def test_history_in_a_scenario_pages_through_both_parts_without_a_gap_or_a_repeat(
    app: FastAPI, client: TestClient
) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    crm = _create(client, "InformationSystem", {"name": ["CRM"]})
    for step in range(3):
        _patch(client, "InformationSystem", erp, {"description": [f"main {step}"]})
    key = _scenario(client)
    for step in range(3):
        _patch(client, "InformationSystem", erp, {"description": [f"plan {step}"]}, key)
    added = _create(client, "InformationSystem", {"name": ["Data hub"]}, key)
    _patch(client, "InformationSystem", crm, {"description": ["plan"]}, key)

    for path in (f"InformationSystem/{erp}", "InformationSystem"):
        whole = _history(client, path, scenario=key, limit=1000)
        for limit in (1, 2, 3, 4, 7):
            assert _walk(client, path, scenario=key, limit=limit) == whole, (path, limit)
    every = _history(client, "InformationSystem", scenario=key, limit=1000)
    assert {item["id"] for item in every} == {erp, crm, added}
    assert [item["viaScenario"] for item in every[:5]] == [key] * 5
    assert all(item["viaScenario"] is None for item in every[5:])

    # A scenario-only element has its scenario history; main and other scenarios never knew it.
    created = _history(client, f"InformationSystem/{added}", scenario=key)
    assert [item["operation"] for item in created] == ["created"]
    assert client.get(f"/api/history/InformationSystem/{added}").status_code == 404
    other = _scenario(client, "another plan")
    missing = client.get(f"/api/history/InformationSystem/{added}", params={"scenario": other})
    assert missing.status_code == 404, missing.text
    assert client.get(f"/api/history/BusinessProcess/{added}", params={"scenario": key}).status_code == 404

    # A cursor belongs to its listing: another scenario's, or main's, is refused.
    cursor = client.get(f"/api/history/InformationSystem/{erp}", params={"scenario": key, "limit": 1}).json()[
        "nextCursor"
    ]
    for params in ({"scenario": other, "cursor": cursor}, {"cursor": cursor}):
        refused = client.get(f"/api/history/InformationSystem/{erp}", params=params)
        assert refused.status_code == 400 and refused.json()["code"] == "invalid_cursor", refused.text


def test_an_element_main_created_after_the_base_has_no_history_in_the_scenario(
    app: FastAPI, client: TestClient
) -> None:
    key = _scenario(client)
    later = _create(client, "InformationSystem", {"name": ["Later"]})
    assert client.get(f"/api/history/InformationSystem/{later}", params={"scenario": key}).status_code == 404
    assert _history(client, "InformationSystem", scenario=key) == []
    assert client.get("/api/history/InformationSystem", params={"scenario": "nope"}).status_code == 404


def test_bounds_apply_to_both_parts(app: FastAPI, client: TestClient) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    _patch(client, "InformationSystem", erp, {"description": ["main"]})
    key = _scenario(client)
    base = int(client.get(f"{SCENARIOS}/{key}").json()["baseRevision"])
    _patch(client, "InformationSystem", erp, {"description": ["main later"]})
    _patch(client, "InformationSystem", erp, {"description": ["planned"]}, key)
    planned = _history(client, f"InformationSystem/{erp}", scenario=key)
    assert _described(_history(client, f"InformationSystem/{erp}", scenario=key, to=base - 1)) == [
        ("created", None, [])
    ]
    # The scenario's change was made when main stood past the base: `to=base` ends before it.
    assert planned[0]["revision"] == base + 1
    assert _history(client, f"InformationSystem/{erp}", scenario=key, to=base) == planned[1:]
    since = _history(client, f"InformationSystem/{erp}", scenario=key, **{"from": base + 1})
    assert _described(since) == [("updated", key, [["planned"]])]


def test_history_in_a_scenario_shows_only_what_the_reader_may_read(app: FastAPI, client: TestClient) -> None:
    create_group(app, "Finance")
    create_attribute(app, "Budget", "number", types=["InformationSystem"], group="Finance")
    create_role(
        app,
        "planners",
        types={"InformationSystem": ["read", "update", "create", "delete"]},
        functional=["VIEW_HISTORY"],
    )
    create_role(app, "finance", groups={"Finance": (True, True)})
    create_role(app, "no history", types={"InformationSystem": ["read", "update", "create", "delete"]})
    create_user(app, "anna", "anna-password-1", roles=["planners"])
    create_user(app, "bernd", "bernd-password-1", roles=["planners"])
    create_user(app, "carl", "carl-password-1", roles=["no history"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Budget": [10]})
    with client_as(app, "anna", "anna-password-1") as anna:
        key = _scenario(anna)
        _patch(anna, "InformationSystem", erp, {"description": ["planned"]}, key)
    _patch(client, "InformationSystem", erp, {"Budget": [20]}, key)  # a change anna may not read
    with client_as(app, "anna", "anna-password-1") as anna:
        seen = _history(anna, f"InformationSystem/{erp}", scenario=key)
        assert [item["operation"] for item in seen] == ["updated", "created"]
        assert all(change["property"] != "Budget" for item in seen for change in item["changes"])
    every = _history(client, f"InformationSystem/{erp}", scenario=key)
    assert [item["operation"] for item in every] == ["updated", "updated", "created"]
    with client_as(app, "bernd", "bernd-password-1") as bernd:  # not his scenario
        hidden = bernd.get(f"/api/history/InformationSystem/{erp}", params={"scenario": key})
        assert hidden.status_code == 404, hidden.text
    with client_as(app, "carl", "carl-password-1") as carl:  # may not read history: learns nothing
        refused = carl.get("/api/history/InformationSystem", params={"scenario": key})
        assert refused.status_code == 403, refused.text
