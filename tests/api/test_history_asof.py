"""`asOf` on the element GET: change, relate, rename, move, delete, then read every element at each earlier
revision (and time) and compare with what was read then."""

from __future__ import annotations

import time
from typing import Any

from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.history.repository import current_revision
from tests.api.history_support import all_pages
from tests.helpers import create_attribute, create_group, create_role, create_user, session_of

Snapshot = dict[tuple[str, int], tuple[int, Any, str | None]]


def _revision(app: FastAPI) -> int:
    with session_of(app) as db:
        return current_revision(db)


def _read_all(client: TestClient, known: list[tuple[str, int]], as_of: int | str | None = None) -> Snapshot:
    params = {} if as_of is None else {"asOf": as_of}
    out: Snapshot = {}
    for type_name, element_id in known:
        response = client.get(f"/api/element/{type_name}/{element_id}", params=params)
        assert response.status_code in (200, 404), response.text
        body = response.json() if response.status_code == 200 else None
        out[(type_name, element_id)] = (response.status_code, body, response.headers.get("etag"))
    return out


class Story:
    """Runs writes through the API and keeps what every element read like after each of them."""

    def __init__(self, app: FastAPI, client: TestClient) -> None:
        self.app, self.client = app, client
        self.known: list[tuple[str, int]] = []
        self.snapshots: list[tuple[int, Snapshot]] = []

    def write(self, method: str, path: str, body: Any = None, *, status: int = 200) -> Any:
        response = self.client.request(method, path, json=body)
        assert response.status_code == status, response.text
        result = response.json() if response.content else None
        if method == "POST":
            assert result is not None
            self.known.append((result["type"][0], result["id"][0]))
        self.snapshots.append((_revision(self.app), _read_all(self.client, self.known)))
        time.sleep(0.002)  # distinct millisecond stamps, so that each revision has a time of its own
        return result


def _run_story(app: FastAPI, client: TestClient) -> Story:
    create_attribute(app, "Criticality", "enum", types=["BusinessProcess"], literals=["low", "high"])
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    story = Story(app, client)
    erp = story.write("POST", "/api/element/InformationSystem", {"name": ["ERP"], "Costs": [100]}, status=201)
    crm = story.write("POST", "/api/element/InformationSystem", {"name": ["CRM"]}, status=201)
    sales = story.write("POST", "/api/element/BusinessProcess", {"name": ["Sales"]}, status=201)
    order = story.write(
        "POST",
        "/api/element/BusinessProcess",
        {"name": ["Order"], "description": ["v1"], "Criticality": ["low"], "parent": [sales["id"][0]]},
        status=201,
    )
    bp = f"/api/element/BusinessProcess/{order['id'][0]}"
    story.write("PUT", bp, {"description": ["v2"], "Criticality": ["high"]})
    story.write("PUT", bp, {"informationSystems": [erp["id"][0]]})
    story.write(
        "PUT", bp, {"informationSystems": [erp["id"][0], {"id": crm["id"][0], "attributes": {"Share": [40]}}]}
    )
    story.write("PUT", f"/api/element/InformationSystem/{erp['id'][0]}", {"name": ["ERP 2"], "Costs": []})
    story.write(
        "PUT", bp, {"informationSystems": [erp["id"][0], {"id": crm["id"][0], "attributes": {"Share": [60]}}]}
    )
    story.write(
        "PUT", bp, {"informationSystems": [{"id": crm["id"][0], "attributes": {"Share": [60]}}, erp["id"][0]]}
    )
    hr = story.write("POST", "/api/element/InformationSystem", {"name": ["HR"]}, status=201)
    story.write("PUT", bp, {"informationSystems": [hr["id"][0], erp["id"][0], crm["id"][0]]})
    sub = story.write(
        "POST", "/api/element/BusinessProcess", {"name": ["Sub"], "parent": [order["id"][0]]}, status=201
    )
    story.write("PATCH", f"/api/element/BusinessProcess/{sub['id'][0]}", {"parent": [sales["id"][0]]})
    story.write("PUT", bp, {"name": ["Order handling"], "informationSystems": [crm["id"][0]]})
    story.write("DELETE", bp, status=204)
    story.write("DELETE", f"/api/element/BusinessProcess/{sales['id'][0]}?recursive=true", status=204)
    return story


def _expected(story: Story, snapshot: Snapshot) -> Snapshot:
    """What was read then, and "not found" for the elements created later."""
    return {key: snapshot.get(key, (404, None, None)) for key in story.known}


def test_every_earlier_revision_reads_as_it_was_read_then(app: FastAPI, client: TestClient) -> None:
    story = _run_story(app, client)
    assert len(story.snapshots) == 17
    for revision, snapshot in story.snapshots:
        assert _read_all(client, story.known, revision) == _expected(story, snapshot), f"as of {revision}"


def test_as_of_a_time_is_the_last_revision_at_or_before_it(app: FastAPI, client: TestClient) -> None:
    story = _run_story(app, client)
    stamps = {i["revision"]: i["timestamp"] for i in all_pages(client, "/api/history", {"limit": 1000})}
    for revision, snapshot in story.snapshots:
        expected = _expected(story, snapshot)
        assert _read_all(client, story.known, stamps[revision]) == expected, f"as of {stamps[revision]}"


def test_as_of_the_current_revision_is_the_current_element(app: FastAPI, client: TestClient) -> None:
    story = _run_story(app, client)
    revision = _revision(app)
    assert _read_all(client, story.known, revision) == _read_all(client, story.known)


def test_before_creation_and_after_deletion_the_element_is_not_found(
    app: FastAPI, client: TestClient
) -> None:
    before = _revision(app)
    created = client.post("/api/element/Project", json={"name": ["P"]}).json()
    path = f"/api/element/Project/{created['id'][0]}"
    assert client.delete(path).status_code == 204
    assert client.get(path, params={"asOf": before}).status_code == 404
    assert client.get(path, params={"asOf": before + 1}).json()["name"] == ["P"]
    assert client.get(path, params={"asOf": before + 2}).status_code == 404
    assert client.get(path, params={"asOf": 0}).status_code == 404
    # The id belongs to a Project: as another type it never existed.
    assert (
        client.get(f"/api/element/ItService/{created['id'][0]}", params={"asOf": before + 1}).status_code
        == 404
    )


def test_bad_as_of_gets_400(client: TestClient) -> None:
    created = client.post("/api/element/Project", json={"name": ["P"]}).json()
    path = f"/api/element/Project/{created['id'][0]}"
    for value in (
        "yesterday",
        "-1",
        "1.5",
        "2026-02-30T00:00:00Z",
        "999999",
        "9" * 30,
        "³",
        "2026-13-01T00:00:00Z",
        "2026-11-24T10:00:00+24:00",
    ):
        response = client.get(path, params={"asOf": value})
        assert response.status_code == 400, value
        assert response.json()["errors"][0]["pointer"] == "query:asOf"
    assert client.get(path, params={"asOf": "2999-01-01T00:00:00Z"}).json()["name"] == ["P"]
    assert client.get(path, params={"asOf": "2000-01-01"}).status_code == 404
    # Valid ISO-8601 times that fall before year 1 in UTC: before every revision, not malformed.
    assert client.get(path, params={"asOf": "0001-01-01T00:00+05:00"}).status_code == 404


def test_as_of_needs_view_history_and_hides_what_the_reader_may_not_read(
    app: FastAPI, client: TestClient
) -> None:
    create_group(app, "Money")
    create_attribute(app, "Budget", "number", types=["BusinessProcess"], group="Money")
    create_attribute(app, "Owner", "text", types=["BusinessProcess"])
    create_role(app, "Controllers", groups={"Money": (True, False)})
    create_role(app, "Readers", types={"BusinessProcess": ["read"]})
    create_role(app, "Historians", types={"BusinessProcess": ["read"]}, functional=["VIEW_HISTORY"])
    create_user(app, "reader", "pw-reader-1", ["Readers"])
    create_user(app, "historian", "pw-historian-1", ["Historians"])
    system = client.get("/api/element/InformationSystem/1")
    assert system.status_code == 404
    erp = client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).json()["id"][0]
    created = client.post(
        "/api/element/BusinessProcess",
        json={"name": ["Billing"], "Budget": [5], "Owner": ["me"], "informationSystems": [erp]},
    ).json()
    path = f"/api/element/BusinessProcess/{created['id'][0]}"
    revision = _revision(app)
    assert client.put(path, json={"Budget": [7]}).status_code == 200
    assert client.get(path, params={"asOf": revision}, auth=("reader", "pw-reader-1")).status_code == 403
    then = client.get(path, params={"asOf": revision}, auth=("historian", "pw-historian-1"))
    assert then.status_code == 200
    assert then.json()["Owner"] == ["me"]
    assert "Budget" not in then.json() and "informationSystems" not in then.json()
    now = client.get(path, auth=("historian", "pw-historian-1")).json()
    assert set(then.json()) == set(now)
    assert client.get(path, params={"asOf": revision}).json()["Budget"] == [5]


def test_removed_relation_attributes_keep_the_others(app: FastAPI, client: TestClient) -> None:
    """Deleting an attribute records partial relation entries (only that attribute): the fold keeps the
    relation's other attributes, so asOf the newest revision still equals the current element."""
    attributes = "/api/administration/attributes"
    relation_types = ["BusinessProcess_InformationSystem"]
    for name in ("Share", "Note"):
        body = {"name": name, "valueType": "text", "relationTypes": relation_types}
        assert client.post(attributes, json=body).status_code == 201
    level = client.post(
        attributes,
        json={
            "name": "Level",
            "valueType": "enum",
            "types": ["BusinessProcess"],
            "literals": [{"name": "a"}, {"name": "b"}],
        },
    ).json()
    erp = client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).json()["id"][0]
    order = client.post(
        "/api/element/BusinessProcess",
        json={
            "name": ["Order"],
            "Level": ["b"],
            "informationSystems": [{"id": erp, "attributes": {"Share": ["60"], "Note": ["main"]}}],
        },
    ).json()["id"][0]
    note = next(a for a in client.get(attributes).json() if a["name"] == "Note")
    assert client.delete(f"{attributes}/{note['id']}").status_code in (200, 204)
    response = client.put(f"{attributes}/{level['id']}", json={"literals": [{"name": "a"}]})
    assert response.status_code == 200, response.text
    known = [("BusinessProcess", order), ("InformationSystem", erp)]
    current = _read_all(client, known)
    assert current[("BusinessProcess", order)][1]["informationSystems"][0]["attributes"] == {"Share": ["60"]}
    assert current[("BusinessProcess", order)][1]["Level"] == []
    assert _read_all(client, known, _revision(app)) == current


def test_renamed_attributes_read_under_their_name_of_today(app: FastAPI, client: TestClient) -> None:
    attributes = "/api/administration/attributes"
    created = client.post(
        attributes,
        json={
            "name": "Owner",
            "valueType": "text",
            "types": ["BusinessProcess"],
            "relationTypes": ["BusinessProcess_InformationSystem"],
        },
    )
    assert created.status_code == 201, created.text
    erp = client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).json()["id"][0]
    order = client.post(
        "/api/element/BusinessProcess",
        json={
            "name": ["Order"],
            "Owner": ["anna"],
            "informationSystems": [{"id": erp, "attributes": {"Owner": ["it"]}}],
        },
    ).json()["id"][0]
    before_rename = _revision(app)
    renamed = client.put(f"{attributes}/{created.json()['id']}", json={"name": "Lead"})
    assert renamed.status_code == 200, renamed.text
    path = f"/api/element/BusinessProcess/{order}"
    then = client.get(path, params={"asOf": before_rename}).json()
    assert then["Lead"] == ["anna"] and "Owner" not in then
    assert then["informationSystems"][0]["attributes"] == {"Lead": ["it"]}
    assert client.put(path, json={"Lead": ["bernd"]}).status_code == 200
    known = [("BusinessProcess", order), ("InformationSystem", erp)]
    assert _read_all(client, known, _revision(app)) == _read_all(client, known)
    assert client.get(path, params={"asOf": before_rename}).json()["Lead"] == ["anna"]
