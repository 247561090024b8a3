"""Planning scenarios (issue 25, API.md section 11): work in a scenario with the element API, compare it with
main three ways, settle conflicts, merge it; main never sees a scenario's writes before the merge."""

from __future__ import annotations

import json
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


def _put(
    client: TestClient, type_name: str, element_id: int, body: dict[str, Any], scenario: str | None = None
) -> dict[str, Any]:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.patch(f"/api/element/{type_name}/{element_id}", json=body, params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _get(client: TestClient, type_name: str, element_id: int, scenario: str | None = None) -> dict[str, Any]:
    params = {} if scenario is None else {"scenario": scenario}
    response = client.get(f"/api/element/{type_name}/{element_id}", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _scenario(client: TestClient, name: str = "ERP migration", **extra: Any) -> str:
    response = client.post(SCENARIOS, json={"name": name, **extra})
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _diff(client: TestClient, key: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"{SCENARIOS}/{key}/diff", params=params)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _fields(page: dict[str, Any], element_id: int) -> dict[str, dict[str, Any]]:
    item = next(i for i in page["items"] if i["element"]["id"] == element_id)
    return {entry["field"]: entry for entry in item["fields"]}


def _ids(entries: list[dict[str, Any]]) -> set[int]:
    return {int(entry["id"]) for entry in entries}


def test_writes_in_a_scenario_stay_there_until_the_merge(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100]})
    finance = _create(client, "BusinessDomain", {"name": ["Finance"]})
    old = _create(client, "InformationSystem", {"name": ["Mainframe"]})
    key = _scenario(client, description="after the migration", effectiveDate="2027-07-01")

    changed = _put(client, "InformationSystem", erp, {"Costs": [80], "businessDomains": [finance]}, key)
    assert changed["Costs"] == [80] and _ids(changed["businessDomains"]) == {finance}
    crm = _create(client, "InformationSystem", {"name": ["CRM"], "businessDomains": [finance]}, key)
    assert client.delete(f"/api/element/InformationSystem/{old}", params={"scenario": key}).status_code == 204

    # Main is as it was; the scenario shows its own changes, the domain sees both systems come.
    assert _get(client, "InformationSystem", erp)["Costs"] == [100]
    assert client.get(f"/api/element/InformationSystem/{crm}").status_code == 404
    assert _get(client, "InformationSystem", old)["name"] == ["Mainframe"]
    assert _ids(_get(client, "BusinessDomain", finance)["informationSystems"]) == set()
    in_scenario = _get(client, "BusinessDomain", finance, key)
    assert _ids(in_scenario["informationSystems"]) == {erp, crm}
    assert client.get(f"/api/element/InformationSystem/{old}", params={"scenario": key}).status_code == 404
    header = client.get(f"/api/element/InformationSystem/{erp}", headers={"Blockrepo-Scenario": key})
    assert header.status_code == 200 and header.json()["Costs"] == [80]

    page = _diff(client, key)
    assert page["summary"] == {
        "InformationSystem": {"updated": 1, "created": 1, "deleted": 1},
        "BusinessDomain": {"updated": 1},
    }
    assert page["openConflicts"] == 0
    fields = _fields(page, erp)
    assert fields["Costs"] == {
        "field": "Costs",
        "base": [100],
        "scenario": [80],
        "main": [100],
        "state": "unchanged-in-main",
    }
    assert _ids(fields["businessDomains"]["added"]) == {finance}

    dry = client.post(f"{SCENARIOS}/{key}/merge", json={"dryRun": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["counts"] == {"create": 1, "update": 2, "delete": 1}
    assert _get(client, "InformationSystem", erp)["Costs"] == [100]

    merged = client.post(f"{SCENARIOS}/{key}/merge", json={})
    assert merged.status_code == 200, merged.text
    new_crm = merged.json()["created"][0]["id"]
    assert _get(client, "InformationSystem", erp)["Costs"] == [80]
    assert _ids(_get(client, "BusinessDomain", finance)["informationSystems"]) == {erp, new_crm}
    assert client.get(f"/api/element/InformationSystem/{old}").status_code == 404
    state = client.get(f"{SCENARIOS}/{key}").json()
    assert state["state"] == "merged" and state["mergedRevision"] == merged.json()["revision"]
    # A merged scenario takes no more writes.
    refused = client.patch(
        f"/api/element/InformationSystem/{erp}", json={"Costs": [1]}, params={"scenario": key}
    )
    assert refused.status_code == 409 and refused.json()["code"] == "scenario_not_open"


def test_a_field_changed_on_both_sides_is_a_conflict_until_settled(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100], "description": ["old"]})
    key = _scenario(client)
    _put(client, "InformationSystem", erp, {"Costs": [80], "description": ["planned"]}, key)
    _put(client, "InformationSystem", erp, {"Costs": [120], "description": ["planned"]})

    page = _diff(client, key)
    fields = _fields(page, erp)
    assert fields["Costs"]["state"] == "conflict" and fields["Costs"]["main"] == [120]
    assert fields["description"]["state"] == "changed"  # both wrote the same
    assert page["openConflicts"] == 1
    refused = client.post(f"{SCENARIOS}/{key}/merge", json={})
    assert refused.status_code == 409 and refused.json()["code"] == "scenario_conflicts"
    assert refused.json()["conflicts"][0]["field"] == "Costs"

    settled = client.post(
        f"{SCENARIOS}/{key}/resolutions",
        json={"element": erp, "field": "Costs", "take": "value", "value": [90]},
    )
    assert settled.status_code == 200, settled.text
    assert _diff(client, key)["openConflicts"] == 0
    assert _fields(_diff(client, key), erp)["Costs"]["resolution"] == {"take": "value", "value": [90]}
    assert client.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 200
    assert _get(client, "InformationSystem", erp)["Costs"] == [90]


def test_deleted_on_one_side_and_changed_on_the_other_are_conflicts(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    changed_here = _create(client, "InformationSystem", {"name": ["Ledger"], "Costs": [1]})
    deleted_here = _create(client, "InformationSystem", {"name": ["Mainframe"], "Costs": [2]})
    target = _create(client, "BusinessDomain", {"name": ["Legacy"]})
    linked = _create(client, "InformationSystem", {"name": ["Archive"]})
    key = _scenario(client)
    _put(client, "InformationSystem", changed_here, {"Costs": [10]}, key)
    assert (
        client.delete(f"/api/element/InformationSystem/{deleted_here}", params={"scenario": key}).status_code
        == 204
    )
    _put(client, "InformationSystem", linked, {"businessDomains": [target]}, key)
    # Main meanwhile: deletes what the scenario changed, changes what it deleted, deletes a related element.
    assert client.delete(f"/api/element/InformationSystem/{changed_here}").status_code == 204
    _put(client, "InformationSystem", deleted_here, {"Costs": [3]})
    assert client.delete(f"/api/element/BusinessDomain/{target}").status_code == 204

    page = _diff(client, key)
    kinds = {
        (item["element"]["id"], conflict["kind"])
        for item in page["items"]
        for conflict in item.get("conflicts", [])
    }
    assert kinds == {
        (changed_here, "deletedInMain"),
        (deleted_here, "changedInMain"),
        (linked, "relationToDeleted"),
    }
    assert page["openConflicts"] == 3
    refused = client.post(
        f"{SCENARIOS}/{key}/resolutions", json={"element": changed_here, "field": "*", "take": "scenario"}
    )
    assert refused.status_code == 400 and refused.json()["errors"][0]["code"] == "take_not_allowed"
    for element, field, take in (
        (changed_here, "*", "main"),
        (deleted_here, "*", "scenario"),
        (linked, f"businessDomains/{target}", "main"),
    ):
        settled = client.post(
            f"{SCENARIOS}/{key}/resolutions", json={"element": element, "field": field, "take": take}
        )
        assert settled.status_code == 200, settled.text
    assert _diff(client, key)["openConflicts"] == 0
    merged = client.post(f"{SCENARIOS}/{key}/merge", json={})
    assert merged.status_code == 200, merged.text
    assert client.get(f"/api/element/InformationSystem/{deleted_here}").status_code == 404
    assert client.get(f"/api/element/InformationSystem/{changed_here}").status_code == 404
    assert _get(client, "InformationSystem", linked)["businessDomains"] == []


def test_a_merge_main_refuses_changes_nothing(app: FastAPI, client: TestClient) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    key = _scenario(client)
    _put(client, "InformationSystem", erp, {"description": ["planned"]}, key)
    _create(client, "InformationSystem", {"name": ["CRM"]}, key)
    # Main meanwhile makes an attribute mandatory that the planned system does not have.
    create_attribute(app, "Owner", "text", types=["InformationSystem"], mandatory=True)
    before = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    refused = client.post(f"{SCENARIOS}/{key}/merge", json={})
    assert refused.status_code == 409, refused.text
    assert refused.json()["code"] == "merge_refused" and refused.json()["element"]["name"] == "CRM"
    assert client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"] == before
    assert _get(client, "InformationSystem", erp)["description"] == []
    assert client.get(f"{SCENARIOS}/{key}").json()["state"] == "open"


def test_what_main_now_forbids_is_a_conflict_of_its_own_kind(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    create_attribute(app, "Tier", "enum", types=["InformationSystem"], literals=["gold", "silver"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    parent = _create(client, "BusinessProcess", {"name": ["Sales"]})
    child = _create(client, "BusinessProcess", {"name": ["Quotes"]})
    key = _scenario(client)
    _create(client, "InformationSystem", {"name": ["CRM"]}, key)
    _put(client, "InformationSystem", erp, {"Costs": [5], "Tier": ["gold"]}, key)
    _put(client, "BusinessProcess", parent, {"parent": [child]}, key)
    # Main meanwhile: takes the name, makes the child the parent's child, drops the attribute and the literal.
    _create(client, "InformationSystem", {"name": ["CRM"]})
    _put(client, "BusinessProcess", child, {"parent": [parent]})
    attributes = client.get("/api/administration/attributes").json()
    costs = next(a for a in attributes if a["name"] == "Costs")
    assert client.delete(f"/api/administration/attributes/{costs['id']}").status_code == 204
    tier = next(a for a in attributes if a["name"] == "Tier")
    kept = {k: v for k, v in tier.items() if k not in ("id",)}
    kept["literals"] = [literal for literal in tier["literals"] if literal["name"] != "gold"]
    changed = client.put(f"/api/administration/attributes/{tier['id']}", json=kept)
    assert changed.status_code == 200, changed.text

    page = _diff(client, key)
    kinds = {
        (item["element"]["name"], conflict["kind"], conflict["field"])
        for item in page["items"]
        for conflict in item.get("conflicts", [])
    }
    assert kinds == {
        ("CRM", "nameTaken", "name"),
        ("Sales", "cycle", "parent"),
        ("ERP", "metamodelChanged", "Costs"),
        ("ERP", "metamodelChanged", "Tier"),
    }
    assert client.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 409
    crm = next(item["element"]["id"] for item in page["items"] if item["element"]["name"] == "CRM")
    refused = client.post(
        f"{SCENARIOS}/{key}/resolutions", json={"element": crm, "field": "name", "take": "main"}
    )
    assert refused.status_code == 400  # a planned element needs a name of its own
    for element, field, take, value in (
        (crm, "name", "value", ["CRM (planned)"]),
        (parent, "parent", "main", None),
        (erp, "Costs", "main", None),
        (erp, "Tier", "value", ["silver"]),
    ):
        body = {"element": element, "field": field, "take": take, **({"value": value} if value else {})}
        settled = client.post(f"{SCENARIOS}/{key}/resolutions", json=body)
        assert settled.status_code == (400 if field == "Tier" else 200), settled.text
    assert (
        client.post(
            f"{SCENARIOS}/{key}/resolutions", json={"element": erp, "field": "Tier", "take": "main"}
        ).status_code
        == 200
    )
    merged = client.post(f"{SCENARIOS}/{key}/merge", json={})
    assert merged.status_code == 200, merged.text
    planned = merged.json()["created"][0]["id"]
    assert _get(client, "InformationSystem", planned)["name"] == ["CRM (planned)"]
    assert _get(client, "BusinessProcess", parent)["parent"] == []
    assert _get(client, "InformationSystem", erp).get("Tier") == []


def test_a_merge_is_one_revision_of_main_that_names_the_scenario(app: FastAPI, client: TestClient) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    process = _create(client, "BusinessProcess", {"name": ["Billing"]})
    key = _scenario(client)
    _put(client, "BusinessProcess", process, {"informationSystems": [erp], "description": ["planned"]}, key)
    merged = client.post(f"{SCENARIOS}/{key}/merge", json={}).json()
    history = client.get(f"/api/history/BusinessProcess/{process}").json()["items"]
    newest = history[0]
    assert newest["revision"] == merged["revision"] and newest["viaScenario"] == key
    neighbour = client.get(f"/api/history/InformationSystem/{erp}").json()["items"][0]
    assert neighbour["revision"] == merged["revision"] and neighbour["viaScenario"] == key
    older = history[-1]
    assert older["viaScenario"] is None


def test_a_scenario_from_a_past_revision_shows_main_as_it_was(app: FastAPI, client: TestClient) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "description": ["first"]})
    base = max(
        item["revision"]
        for item in client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    )
    _put(client, "InformationSystem", erp, {"description": ["second"]})
    key = _scenario(client, base=base)
    scenario = client.get(f"{SCENARIOS}/{key}").json()
    assert scenario["baseRevision"] == base and scenario["behindMain"] == 1
    assert _get(client, "InformationSystem", erp, key)["description"] == ["first"]
    etag = client.get(f"/api/element/InformationSystem/{erp}", params={"scenario": key}).headers["ETag"]
    stale = client.patch(
        f"/api/element/InformationSystem/{erp}",
        json={"name": ["ERP 2"]},
        params={"scenario": key},
        headers={"If-Match": 'W/"99"'},
    )
    assert stale.status_code == 412
    fresh = client.patch(
        f"/api/element/InformationSystem/{erp}",
        json={"name": ["ERP 2"]},
        params={"scenario": key},
        headers={"If-Match": etag},
    )
    assert fresh.status_code == 200, fresh.text
    assert _get(client, "InformationSystem", erp)["name"] == ["ERP"]


def test_scenarios_are_their_owners_and_show_only_what_the_reader_may_read(
    app: FastAPI, client: TestClient
) -> None:
    create_group(app, "Finance")
    create_attribute(app, "Budget", "number", types=["InformationSystem"], group="Finance")
    create_role(app, "planners", types={"InformationSystem": ["read", "update", "create", "delete"]})
    create_role(app, "finance", groups={"Finance": (True, True)})  # Finance is for this role alone
    create_user(app, "anna", "anna-password-1", roles=["planners"])
    create_user(app, "bernd", "bernd-password-1", roles=["planners"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Budget": [10]})
    with client_as(app, "anna", "anna-password-1") as anna:
        key = _scenario(anna)
        _put(anna, "InformationSystem", erp, {"description": ["planned"]}, key)
        assert "Budget" not in _get(anna, "InformationSystem", erp, key)
        assert "Budget" not in _get(anna, "InformationSystem", erp)  # as in main
        hidden = anna.patch(
            f"/api/element/InformationSystem/{erp}", json={"Budget": [1]}, params={"scenario": key}
        )
        in_main = anna.patch(f"/api/element/InformationSystem/{erp}", json={"Budget": [1]})
        assert hidden.status_code == in_main.status_code == 400, hidden.text  # a property she cannot see
        assert hidden.json()["errors"] == in_main.json()["errors"]
    _put(client, "InformationSystem", erp, {"Budget": [20]}, key)  # a supervisor sees every scenario
    assert "Budget" in _fields(_diff(client, key), erp)
    with client_as(app, "anna", "anna-password-1") as anna:
        assert "Budget" not in _fields(_diff(anna, key), erp)
        assert [s["key"] for s in anna.get(SCENARIOS).json()] == [key]
    with client_as(app, "bernd", "bernd-password-1") as bernd:
        assert bernd.get(f"{SCENARIOS}/{key}").status_code == 404
        assert bernd.get(f"/api/element/InformationSystem/{erp}", params={"scenario": key}).status_code == 404
        assert (
            bernd.patch(
                f"/api/element/InformationSystem/{erp}", json={"description": ["x"]}, params={"scenario": key}
            ).status_code
            == 404
        )
        assert bernd.get(SCENARIOS).json() == []
        assert bernd.get(SCENARIOS, params={"everyone": True}).status_code == 403


def test_bad_scenario_requests_answer_clearly_and_change_nothing(app: FastAPI, client: TestClient) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    assert client.get(f"/api/element/InformationSystem/{erp}", params={"scenario": "nope"}).status_code == 404
    assert client.get(f"{SCENARIOS}/nope/diff").status_code == 404
    key = _scenario(client)
    cases = [
        client.get(f"/api/element/InformationSystem/{erp}", params={"scenario": key, "asOf": 1}),
        client.get(
            f"/api/element/InformationSystem/{erp}",
            params={"scenario": key},
            headers={"Blockrepo-Scenario": "other"},
        ),
        client.get(f"{SCENARIOS}/{key}/diff", params={"against": "elsewhere"}),
        client.post(SCENARIOS, json={"name": "x", "effectiveDate": "someday"}),
        client.post(SCENARIOS, json={"name": "x", "base": 10**6}),
        client.post(SCENARIOS, json={"name": ""}),
        client.post(f"{SCENARIOS}/{key}/resolutions", json={"element": erp, "field": "name", "take": "main"}),
        client.patch(f"/api/element/InformationSystem/{erp}", json={"Nope": [1]}, params={"scenario": key}),
    ]
    assert [c.status_code for c in cases] == [400] * len(cases), [c.text for c in cases]
    # An operation that works on main only refuses a scenario, so that nothing meant for one lands on main.
    diffed = client.get("/api/history/diff", headers={"Blockrepo-Scenario": key})
    assert diffed.status_code == 400 and diffed.json()["code"] == "scenario_not_supported"
    feed = client.get("/api/history", headers={"Blockrepo-Scenario": key})
    assert feed.status_code == 400 and feed.json()["code"] == "scenario_not_supported"
    assert (
        client.get("/api/massdata/InformationSystem", params={"filter": '@name = "CRM"'}).json()["items"]
        == []
    )
    closed = client.post(f"{SCENARIOS}/{key}/close")
    assert closed.status_code == 200 and closed.json()["state"] == "closed"
    refused = client.post("/api/element/InformationSystem", json={"name": ["CRM"]}, params={"scenario": key})
    assert refused.status_code == 409 and refused.json()["code"] == "scenario_not_open"
    assert client.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 409
    assert client.post(f"{SCENARIOS}/{key}/reopen").json()["state"] == "open"
    assert _diff(client, key)["items"] == []


def test_sync_folds_main_in_and_honours_the_resolutions(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100], "description": ["old"]})
    crm = _create(client, "InformationSystem", {"name": ["CRM"], "Costs": [10]})
    shop = _create(client, "InformationSystem", {"name": ["Shop"], "Costs": [1]})
    domain = _create(client, "BusinessDomain", {"name": ["Sales"]})
    key = _scenario(client)
    _put(client, "InformationSystem", erp, {"Costs": [80], "businessDomains": [domain]}, key)
    _put(client, "InformationSystem", crm, {"Costs": [20]}, key)
    _put(client, "InformationSystem", shop, {"Costs": [2]}, key)
    # Main meanwhile: a field the scenario left alone, and the three the scenario changed too.
    _put(client, "InformationSystem", erp, {"description": ["new"], "Costs": [120]})
    _put(client, "InformationSystem", crm, {"Costs": [30]})
    _put(client, "InformationSystem", shop, {"Costs": [3]})
    assert client.get(f"{SCENARIOS}/{key}").json()["behindMain"] == 3
    refused = client.post(f"{SCENARIOS}/{key}/sync")
    assert refused.status_code == 409 and len(refused.json()["conflicts"]) == 3
    for element, take, value in ((erp, "main", None), (crm, "scenario", None), (shop, "value", [5])):
        body = {"element": element, "field": "Costs", "take": take, **({"value": value} if value else {})}
        assert client.post(f"{SCENARIOS}/{key}/resolutions", json=body).status_code == 200

    synced = client.post(f"{SCENARIOS}/{key}/sync")
    assert synced.status_code == 200, synced.text
    assert synced.json()["behindMain"] == 0
    seen = _get(client, "InformationSystem", erp, key)
    assert (
        seen["description"] == ["new"]
        and seen["Costs"] == [120]
        and _ids(seen["businessDomains"]) == {domain}
    )
    assert _get(client, "InformationSystem", crm, key)["Costs"] == [20]
    assert _get(client, "InformationSystem", shop, key)["Costs"] == [5]
    page = _diff(client, key)
    assert page["openConflicts"] == 0
    assert "Costs" not in _fields(page, erp) and _fields(page, crm)["Costs"]["state"] == "unchanged-in-main"
    assert client.get(f"{SCENARIOS}/{key}/resolutions").json() == []
    assert client.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 200
    assert [_get(client, "InformationSystem", i)["Costs"] for i in (erp, crm, shop)] == [[120], [20], [5]]
    assert _ids(_get(client, "BusinessDomain", domain)["informationSystems"]) == {erp}


def test_after_a_sync_related_elements_are_named_as_main_renamed_them(
    app: FastAPI, client: TestClient
) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    crm = _create(client, "InformationSystem", {"name": ["CRM"]})
    billing = _create(client, "BusinessProcess", {"name": ["Billing"]})
    key = _scenario(client)
    # The scenario relates Billing to both systems (each system gets a row of its own there) and renames
    # the CRM; main renames the ERP meanwhile.
    _put(client, "BusinessProcess", billing, {"informationSystems": [erp, crm]}, key)
    _put(client, "InformationSystem", crm, {"name": ["CRM 2"]}, key)
    _put(client, "InformationSystem", erp, {"name": ["ERP Cloud"]})
    assert client.post(f"{SCENARIOS}/{key}/sync").status_code == 200
    related = _get(client, "BusinessProcess", billing, key)["informationSystems"]
    assert {entry["id"]: entry["name"] for entry in related} == {erp: "ERP Cloud", crm: "CRM 2"}
    listed = client.get(
        "/api/massdata/BusinessProcess", params={"scenario": key, "fields": "name,informationSystems"}
    ).json()["items"]
    assert {e["id"]: e["name"] for e in listed[0]["informationSystems"]} == {erp: "ERP Cloud", crm: "CRM 2"}


def test_a_scenario_keeps_who_wrote_what_after_the_merge(app: FastAPI, client: TestClient) -> None:
    create_role(app, "planners", types={"InformationSystem": ["read", "update", "create", "delete"]})
    create_user(app, "anna", "anna-password-1", roles=["planners"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    with client_as(app, "anna", "anna-password-1") as anna:
        key = _scenario(anna)
        _put(anna, "InformationSystem", erp, {"description": ["first"]}, key)
        _put(anna, "InformationSystem", erp, {"description": ["second"]}, key)
    merged = client.post(f"{SCENARIOS}/{key}/merge", json={}).json()
    page = client.get(f"{SCENARIOS}/{key}/changes", params={"element": erp, "limit": 1}).json()
    assert [item["user"] for item in page["items"]] == ["anna"]
    rest = client.get(
        f"{SCENARIOS}/{key}/changes", params={"element": erp, "after": page["nextAfter"]}
    ).json()
    written = [*page["items"], *rest["items"]]
    assert [c["changes"][0]["new"] for c in written] == [["first"], ["second"]]
    assert all(c["viaScenario"] == key and c["mainRevision"] < merged["revision"] for c in written)
    newest = client.get(f"/api/history/InformationSystem/{erp}").json()["items"][0]
    assert newest["user"] == "system" and newest["viaScenario"] == key


def test_lists_and_queries_read_the_scenario(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100]})
    old = _create(client, "InformationSystem", {"name": ["Mainframe"], "Costs": [50]})
    finance = _create(client, "BusinessDomain", {"name": ["Finance"]})
    key = _scenario(client)
    _put(client, "InformationSystem", erp, {"Costs": [10], "businessDomains": [finance]}, key)
    crm = _create(client, "InformationSystem", {"name": ["CRM"], "Costs": [70]}, key)
    assert client.delete(f"/api/element/InformationSystem/{old}", params={"scenario": key}).status_code == 204
    _create(client, "InformationSystem", {"name": ["Main only"], "Costs": [1]})  # after the base

    listed = client.get(
        "/api/massdata/InformationSystem", params={"scenario": key, "sort": "-Costs", "count": True}
    )
    assert listed.status_code == 200, listed.text
    assert [(e["name"][0], e["Costs"]) for e in listed.json()["items"]] == [("CRM", [70]), ("ERP", [10])]
    assert listed.json()["total"] == 2
    cheap = client.get(
        "/api/massdata/InformationSystem",
        params={"filter": "@Costs < 50", "fields": "name"},
        headers={"Blockrepo-Scenario": key},
    )
    assert cheap.status_code == 200, cheap.text
    assert [e["name"] for e in cheap.json()["items"]] == [["ERP"]]
    query = client.post(
        "/api/massdata/query", json={"query": "BusinessDomain/informationSystems;"}, params={"scenario": key}
    )
    assert query.status_code == 200, query.text
    assert {e["id"][0] for e in query.json()["items"]} == {erp}
    streamed = client.get(
        "/api/massdata/InformationSystem",
        params={"scenario": key},
        headers={"Accept": "application/x-ndjson"},
    )
    assert sorted(json.loads(line)["name"][0] for line in streamed.text.splitlines()) == ["CRM", "ERP"]
    in_main = client.get("/api/massdata/InformationSystem", params={"sort": "name"}).json()["items"]
    assert [e["name"][0] for e in in_main] == ["ERP", "Main only", "Mainframe"]
    both = client.get("/api/massdata/InformationSystem", params={"scenario": key, "asOf": 1})
    assert both.status_code == 400
    assert crm > old


def test_a_merged_scenario_is_undone_by_merging_its_revert(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100], "description": ["kept"]})
    old = _create(client, "InformationSystem", {"name": ["Mainframe"], "Costs": [7]})
    finance = _create(client, "BusinessDomain", {"name": ["Finance"]})
    before = {i: _get(client, "InformationSystem", i) for i in (erp, old)}
    key = _scenario(client, name="Consolidation")
    _put(client, "InformationSystem", erp, {"Costs": [80], "businessDomains": [finance]}, key)
    _create(client, "InformationSystem", {"name": ["CRM"]}, key)
    assert client.delete(f"/api/element/InformationSystem/{old}", params={"scenario": key}).status_code == 204
    assert client.post(f"{SCENARIOS}/{key}/revert").json()["code"] == "not_merged"
    merged = client.post(f"{SCENARIOS}/{key}/merge", json={}).json()
    crm = merged["created"][0]["id"]

    revert = client.post(f"{SCENARIOS}/{key}/revert")
    assert revert.status_code == 201, revert.text
    undo = revert.json()["key"]
    assert revert.json()["name"] == "Revert of Consolidation"
    summary = _diff(client, undo)["summary"]
    assert summary["InformationSystem"] == {"updated": 1, "created": 1, "deleted": 1}
    assert client.post(f"{SCENARIOS}/{undo}/merge", json={}).status_code == 200
    restored = _get(client, "InformationSystem", erp)
    assert restored["Costs"] == before[erp]["Costs"] and restored["businessDomains"] == []
    assert client.get(f"/api/element/InformationSystem/{crm}").status_code == 404
    back = client.get("/api/massdata/InformationSystem", params={"filter": '@name = "Mainframe"'}).json()
    assert [e["Costs"] for e in back["items"]] == [[7]]
    assert _ids(_get(client, "BusinessDomain", finance)["informationSystems"]) == set()


def test_an_import_can_land_in_a_new_scenario_for_review(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100]})
    exported = client.get("/api/massdata/export").json()
    feed_before = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    systems = exported["elements"]["InformationSystem"]
    for record in systems:
        record["Costs"] = [50]
    systems.append({"name": "CRM", "Costs": [70]})
    landed = client.post(
        "/api/massdata/import", json=exported, params={"newScenario": "Costs from the finance sheet"}
    )
    assert landed.status_code == 200, landed.text
    key = landed.json()["scenario"]["key"]
    # Main is as it was: no element, no revision.
    assert _get(client, "InformationSystem", erp)["Costs"] == [100]
    assert (
        client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"] == feed_before
    )
    page = _diff(client, key)
    assert page["summary"] == {"InformationSystem": {"updated": 1, "created": 1}}
    assert _fields(page, erp)["Costs"]["scenario"] == [50]
    crm = next(i["element"]["id"] for i in page["items"] if i["action"] == "created")
    assert _get(client, "InformationSystem", crm, key)["Costs"] == [70]
    # Its id is kept from main's sequence: main's next element gets another.
    assert _create(client, "InformationSystem", {"name": ["Shop"]}) > crm
    assert client.post(f"{SCENARIOS}/{key}/merge", json={}).status_code == 200
    assert _get(client, "InformationSystem", erp)["Costs"] == [50]
    # A file that needs metamodel changes cannot land in a scenario: it would change main's metamodel.
    costs = next(a for a in exported["metamodel"]["attributes"] if a["name"] == "Costs")
    exported["metamodel"]["attributes"].append({**costs, "name": "Brand new"})
    refused = client.post("/api/massdata/import", json=exported, params={"newScenario": "needs more"})
    assert refused.status_code in (400, 409), refused.text


def test_a_scenario_element_has_a_tag_of_its_own(app: FastAPI, client: TestClient) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "description": ["main"]})
    key = _scenario(client)
    other = _scenario(client, name="Option B")
    path = f"/api/element/InformationSystem/{erp}"
    in_main = client.get(path).headers["ETag"]
    # The same element at the same revision in two scenarios and in main: three tags, so a browser that
    # kept main's copy never gets a 304 for the scenario's request (the header is not in the URL).
    tags = {client.get(path, headers={"Blockrepo-Scenario": k}).headers["ETag"] for k in (key, other)}
    assert len(tags | {in_main}) == 3
    revalidated = client.get(path, headers={"Blockrepo-Scenario": key, "If-None-Match": in_main})
    assert revalidated.status_code == 200 and revalidated.json()["description"] == ["main"]
    tag = client.get(path, params={"scenario": key}).headers["ETag"]
    assert client.get(path, params={"scenario": key}, headers={"If-None-Match": tag}).status_code == 304
    changed = client.patch(
        path, json={"description": ["planned"]}, params={"scenario": key}, headers={"If-Match": tag}
    )
    assert changed.status_code == 200 and changed.headers["ETag"] != tag
    assert client.get(path, headers={"If-None-Match": changed.headers["ETag"]}).status_code == 200


def test_a_scenario_compares_with_main_as_it_stood_at_a_revision_or_a_time(
    app: FastAPI, client: TestClient
) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    create_role(app, "planners", types={"InformationSystem": ["read", "update", "create", "delete"]})
    create_user(app, "anna", "anna-password-1", roles=["planners"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100]})
    key = _scenario(client)
    base = int(client.get(f"{SCENARIOS}/{key}").json()["baseRevision"])
    _put(client, "InformationSystem", erp, {"Costs": [80]}, key)
    first = int(_put(client, "InformationSystem", erp, {"Costs": [90]})["revision"][0])
    revision = int(client.get("/api/history", params={"sinceRevision": 0}).json()["items"][-1]["revision"])
    moment = client.get("/api/history", params={"sinceRevision": 0}).json()["items"][-1]["timestamp"]
    _put(client, "InformationSystem", erp, {"Costs": [80]})  # main now agrees with the scenario
    assert first > 1

    now = _fields(_diff(client, key), erp)["Costs"]
    assert (now["state"], now["main"]) == ("changed", [80])
    for against in (f"revision:{revision}", f"time:{moment}"):
        then = _diff(client, key, against=against)
        costs = _fields(then, erp)["Costs"]
        assert (costs["state"], costs["main"]) == ("conflict", [90])
        assert then["openConflicts"] == 1
    at_base = _fields(_diff(client, key, against=f"revision:{base}"), erp)["Costs"]
    assert (at_base["state"], at_base["main"]) == ("unchanged-in-main", [100])

    for bad, code in (
        ("revision:x", "invalid_value"),
        ("mainline", "invalid_value"),
        (f"revision:{base - 1}", "before_base"),
        (f"revision:{revision + 100}", "future_revision"),
        ("time:yesterday", None),
    ):
        response = client.get(f"{SCENARIOS}/{key}/diff", params={"against": bad})
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["errors"][0]["pointer"] == "query:against"
        assert code is None or response.json()["errors"][0]["code"] == code
    with client_as(app, "anna", "anna-password-1") as anna:  # main's past is history: VIEW_HISTORY
        own = _scenario(anna, "anna's plan")
        _put(anna, "InformationSystem", erp, {"Costs": [70]}, own)
        assert anna.get(f"{SCENARIOS}/{own}/diff").status_code == 200
        past = anna.get(f"{SCENARIOS}/{own}/diff", params={"against": f"revision:{revision + 1}"})
        assert past.status_code == 403, past.text


def _delete(client: TestClient, type_name: str, element_id: int, scenario: str) -> None:
    response = client.delete(f"/api/element/{type_name}/{element_id}", params={"scenario": scenario})
    assert response.status_code == 204, response.text


def _by_id(page: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(item["element"]["id"]): item for item in page["items"]}


def test_two_scenarios_compare_as_two_plans(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100], "description": ["old"]})
    crm = _create(client, "InformationSystem", {"name": ["CRM"], "Costs": [10]})
    shop = _create(client, "InformationSystem", {"name": ["Shop"], "Costs": [1]})
    ledger = _create(client, "InformationSystem", {"name": ["Ledger"], "Costs": [5]})
    portal = _create(client, "InformationSystem", {"name": ["Portal"]})
    old = _create(client, "InformationSystem", {"name": ["Mainframe"], "Costs": [50]})
    finance = _create(client, "BusinessDomain", {"name": ["Finance"]})
    hr = _create(client, "BusinessDomain", {"name": ["HR"]})
    option_a = _scenario(client, "Option A")
    option_b = _scenario(client, "Option B")
    # Option A: cheaper ERP, dearer CRM in HR, a new billing system, the ledger kept but cheaper.
    _put(client, "InformationSystem", erp, {"Costs": [80], "description": ["planned"]}, option_a)
    _put(client, "InformationSystem", erp, {"businessDomains": [finance]}, option_a)
    _put(client, "InformationSystem", crm, {"Costs": [20], "businessDomains": [hr]}, option_a)
    _put(client, "InformationSystem", ledger, {"Costs": [4]}, option_a)
    _put(client, "InformationSystem", portal, {"description": ["both"]}, option_a)
    billing = _create(client, "InformationSystem", {"name": ["Billing Cloud"]}, option_a)
    # Option B: the same description and domain for the ERP, other costs, the CRM in finance, a dearer
    # shop, the ledger and the mainframe gone.
    _put(client, "InformationSystem", erp, {"Costs": [90], "description": ["planned"]}, option_b)
    _put(client, "InformationSystem", erp, {"businessDomains": [finance]}, option_b)
    _put(client, "InformationSystem", crm, {"businessDomains": [finance]}, option_b)
    _put(client, "InformationSystem", shop, {"Costs": [2]}, option_b)
    _put(client, "InformationSystem", portal, {"description": ["both"]}, option_b)
    _delete(client, "InformationSystem", ledger, option_b)
    _delete(client, "InformationSystem", old, option_b)

    page = _diff(client, option_a, against=f"scenario:{option_b}", limit=1000)
    base = client.get(f"{SCENARIOS}/{option_b}").json()["baseRevision"]
    assert page["scenario"]["key"] == option_a
    assert page["against"] == {"scenario": option_b, "name": "Option B", "baseRevision": base}
    assert "openConflicts" not in page and page["nextCursor"] is None
    assert page["summary"] == {
        "InformationSystem": {"updated": 4, "unchanged": 2, "created": 1},
        "BusinessDomain": {"updated": 2},
    }
    assert page["otherSummary"] == {
        "InformationSystem": {"updated": 4, "deleted": 2, "unchanged": 1},
        "BusinessDomain": {"updated": 1, "unchanged": 1},
    }
    items = _by_id(page)
    assert list(items) == sorted(items) == sorted([erp, crm, shop, ledger, portal, old, billing, finance, hr])
    assert all("conflicts" not in item for item in page["items"])
    states = {i: (item["action"], item["otherAction"], item["state"]) for i, item in items.items()}
    assert states == {
        erp: ("updated", "updated", "differs"),
        crm: ("updated", "updated", "differs"),
        shop: ("unchanged", "updated", "onlyThere"),
        ledger: ("updated", "deleted", "differs"),
        portal: ("updated", "updated", "same"),
        old: ("unchanged", "deleted", "onlyThere"),
        billing: ("created", "unchanged", "onlyHere"),
        finance: ("updated", "updated", "differs"),
        hr: ("updated", "unchanged", "onlyHere"),
    }
    fields = _fields(page, erp)
    assert fields["Costs"] == {
        "field": "Costs",
        "base": [100],
        "scenario": [80],
        "other": [90],
        "state": "differs",
    }
    assert fields["description"] == {
        "field": "description",
        "base": ["old"],
        "scenario": ["planned"],
        "other": ["planned"],
        "state": "same",
    }
    domains = fields["businessDomains"]
    assert domains["state"] == "same" and domains["removed"] == domains["otherRemoved"] == []
    assert _ids(domains["added"]) == _ids(domains["otherAdded"]) == {finance}
    fields = _fields(page, crm)
    assert (fields["Costs"]["scenario"], fields["Costs"]["other"], fields["Costs"]["state"]) == (
        [20],
        [10],
        "onlyHere",
    )
    domains = fields["businessDomains"]
    assert domains["state"] == "differs"
    assert (_ids(domains["added"]), _ids(domains["otherAdded"])) == ({hr}, {finance})
    assert _fields(page, shop) == {
        "Costs": {"field": "Costs", "base": [1], "scenario": [1], "other": [2], "state": "onlyThere"}
    }
    costs = _fields(page, ledger)["Costs"]
    assert (costs["base"], costs["scenario"], costs["other"], costs["state"]) == ([5], [4], [], "differs")
    assert _fields(page, ledger)["name"]["state"] == "onlyThere"  # B deletes it: its name goes too
    gone = _fields(page, old)
    assert gone["name"] == {
        "field": "name",
        "base": ["Mainframe"],
        "scenario": ["Mainframe"],
        "other": [],
        "state": "onlyThere",
    }
    assert gone["Costs"]["state"] == "onlyThere" and gone["Costs"]["other"] == []
    assert _fields(page, portal)["description"]["state"] == "same"
    new = _fields(page, billing)["name"]
    assert (new["base"], new["scenario"], new["other"], new["state"]) == (
        [],
        ["Billing Cloud"],
        [],
        "onlyHere",
    )
    systems = _fields(page, finance)["informationSystems"]
    assert systems["state"] == "differs"
    assert (_ids(systems["added"]), _ids(systems["otherAdded"])) == ({erp}, {erp, crm})
    systems = _fields(page, hr)["informationSystems"]
    assert systems["state"] == "onlyHere" and systems["otherAdded"] == systems["otherRemoved"] == []

    # The other way round, what one plan alone changed is the other's.
    reverse = _diff(client, option_b, against=f"scenario:{option_a}", limit=1000)
    back = _by_id(reverse)
    assert (back[shop]["action"], back[shop]["state"]) == ("updated", "onlyHere")
    assert back[billing]["state"] == "onlyThere"
    assert _fields(reverse, erp)["Costs"] == {
        "field": "Costs",
        "base": [100],
        "scenario": [90],
        "other": [80],
        "state": "differs",
    }
    # Comparing two plans is no merge: both are as they were, and their own diffs still have no conflict.
    assert _diff(client, option_a)["openConflicts"] == _diff(client, option_b)["openConflicts"] == 0


def test_two_plans_page_with_a_cursor_of_their_own(app: FastAPI, client: TestClient) -> None:
    ids = [_create(client, "InformationSystem", {"name": [f"System {n}"]}) for n in range(5)]
    option_a = _scenario(client, "Option A")
    option_b = _scenario(client, "Option B")
    for n, element_id in enumerate(ids):
        if n % 2 == 0:
            _put(client, "InformationSystem", element_id, {"description": ["A"]}, option_a)
        if n != 2:
            _put(client, "InformationSystem", element_id, {"description": ["B"]}, option_b)
    _put(client, "InformationSystem", ids[1], {"description": ["A"]}, option_a)
    _put(client, "InformationSystem", ids[1], {"description": []}, option_a)  # and back: no change in A
    against = f"scenario:{option_b}"
    whole = _diff(client, option_a, against=against)

    page = _diff(client, option_a, against=against, limit=1)
    assert page["summary"] == whole["summary"] and page["otherSummary"] == whole["otherSummary"]
    seen = list(page["items"])
    while page["nextCursor"] is not None:
        page = _diff(client, option_a, against=against, limit=1, cursor=page["nextCursor"])
        assert len(page["items"]) == 1 and "summary" not in page and "otherSummary" not in page
        assert page["against"]["scenario"] == option_b
        seen += page["items"]
    assert seen == whole["items"]
    assert [item["element"]["id"] for item in seen] == ids
    assert [item["state"] for item in seen] == ["differs", "onlyThere", "onlyHere", "onlyThere", "differs"]
    # A cursor belongs to its comparison.
    cursor = _diff(client, option_a, against=against, limit=1)["nextCursor"]
    for other in ({"against": "main"}, {"against": f"scenario:{option_a}"}):
        response = client.get(f"{SCENARIOS}/{option_a}/diff", params={**other, "cursor": cursor})
        assert response.status_code == 400, response.text
        assert response.json()["errors"][0]["pointer"] == "query:cursor"


def test_two_plans_compare_from_different_bases_each_as_it_sees_itself(
    app: FastAPI, client: TestClient
) -> None:
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Costs": [100], "description": ["first"]})
    earlier = _scenario(client, "Option B")
    _put(client, "InformationSystem", erp, {"Costs": [110], "description": ["second"]})  # main moves on
    later = _scenario(client, "Option A")
    _put(client, "InformationSystem", erp, {"description": ["A's"]}, later)
    _put(client, "InformationSystem", erp, {"Costs": [90]}, earlier)

    page = _diff(client, later, against=f"scenario:{earlier}")
    assert page["against"]["baseRevision"] < page["scenario"]["baseRevision"]
    # `base` is the path's scenario's base; the other plan's values are as it has them, from its own base.
    assert _fields(page, erp) == {
        "description": {
            "field": "description",
            "base": ["second"],
            "scenario": ["A's"],
            "other": ["first"],
            "state": "onlyHere",
        },
        "Costs": {"field": "Costs", "base": [110], "scenario": [110], "other": [90], "state": "onlyThere"},
    }


def test_two_plans_show_only_what_the_reader_may_read(app: FastAPI, client: TestClient) -> None:
    create_group(app, "Finance")
    create_attribute(app, "Budget", "number", types=["InformationSystem"], group="Finance")
    create_role(app, "planners", types={"InformationSystem": ["read", "update", "create", "delete"]})
    create_role(app, "finance", groups={"Finance": (True, True)})  # Finance is for this role alone
    create_user(app, "anna", "anna-password-1", roles=["planners"])
    create_user(app, "bernd", "bernd-password-1", roles=["planners"])
    erp = _create(client, "InformationSystem", {"name": ["ERP"], "Budget": [10]})
    crm = _create(client, "InformationSystem", {"name": ["CRM"], "Budget": [1]})
    with client_as(app, "anna", "anna-password-1") as anna:
        option_a = _scenario(anna, "Option A")
        option_b = _scenario(anna, "Option B")
        _put(anna, "InformationSystem", erp, {"description": ["A"]}, option_a)
        _put(anna, "InformationSystem", erp, {"description": ["B"]}, option_b)
    # A supervisor changes the budget in both of anna's plans, and the CRM's in B alone.
    _put(client, "InformationSystem", erp, {"Budget": [30]}, option_a)
    _put(client, "InformationSystem", erp, {"Budget": [20]}, option_b)
    _put(client, "InformationSystem", crm, {"Budget": [2]}, option_b)
    against = f"scenario:{option_b}"
    seen_all = _diff(client, option_a, against=against)
    budget = _fields(seen_all, erp)["Budget"]
    assert (budget["scenario"], budget["other"], budget["state"]) == ([30], [20], "differs")
    assert _by_id(seen_all)[crm]["state"] == "onlyThere"
    with client_as(app, "anna", "anna-password-1") as anna:
        page = _diff(anna, option_a, against=against)
        assert set(_fields(page, erp)) == {"description"}
        assert crm not in _by_id(page)  # all B changed of it is hidden from her: no change she may see
        assert page["summary"] == {"InformationSystem": {"updated": 1}}
        assert page["otherSummary"] == {"InformationSystem": {"updated": 1}}
        assert "Budget" not in json.dumps(page)
    with client_as(app, "bernd", "bernd-password-1") as bernd:
        own = _scenario(bernd, "bernd's plan")
        _put(bernd, "InformationSystem", erp, {"description": ["bernd"]}, own)
        hidden = bernd.get(f"{SCENARIOS}/{own}/diff", params={"against": against})
        assert hidden.status_code == 404 and hidden.json()["code"] == "unknown_scenario"
        assert bernd.get(f"{SCENARIOS}/{option_a}/diff", params={"against": against}).status_code == 404
    with client_as(app, "anna", "anna-password-1") as anna:
        assert (
            anna.get(f"{SCENARIOS}/{option_a}/diff", params={"against": f"scenario:{own}"}).status_code == 404
        )


def test_bad_scenarios_to_compare_with_answer_clearly(app: FastAPI, client: TestClient) -> None:
    erp = _create(client, "InformationSystem", {"name": ["ERP"]})
    key = _scenario(client)
    _put(client, "InformationSystem", erp, {"description": ["planned"]}, key)
    for bad in (
        "scenario:",
        "scenario",
        "scenario:Option B",
        "scenario:a/b",
        "scenario:-x",
        f"scenario:{'x' * 65}",
    ):
        response = client.get(f"{SCENARIOS}/{key}/diff", params={"against": bad})
        assert response.status_code == 400, (bad, response.text)
        assert response.json()["errors"][0]["pointer"] == "query:against"
        assert response.json()["errors"][0]["code"] == "invalid_value"
    unknown = client.get(f"{SCENARIOS}/{key}/diff", params={"against": "scenario:nope-000000"})
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_scenario"
    itself = _diff(client, key, against=f"scenario:{key}")
    assert [(item["state"], item["fields"][0]["state"]) for item in itself["items"]] == [("same", "same")]
