"""One write core: the same change written through the element API, a bulk write or an import is recorded
identically, and importing what the repository already holds changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.elements.write import persistence
from tests.api.massdata_landscape import build_landscape


def _create(client: TestClient, type_name: str, name: str) -> int:
    response = client.post(f"/api/element/{type_name}", json={"name": [name]})
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def _history(client: TestClient, type_name: str, element_id: int) -> list[dict[str, Any]]:
    response = client.get(f"/api/history/{type_name}/{element_id}")
    assert response.status_code == 200, response.text
    return response.json()["items"]  # type: ignore[no-any-return]


def _recorded(changeset: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    return changeset["operation"], changeset["changes"]


def test_the_same_change_is_recorded_identically_by_single_bulk_and_import_writes(client: TestClient) -> None:
    server = _create(client, "TechnicalComponent", "Server")
    single, bulk, imported = (
        _create(client, "InformationSystem", name) for name in ("Alpha", "Beta", "Gamma")
    )
    change = {"description": ["runs the shop"], "technicalComponents": [{"id": server}]}

    put = client.put(f"/api/element/InformationSystem/{single}", json=change)
    assert put.status_code == 200, put.text
    written = client.post("/api/massdata/InformationSystem", json={"elements": [{"id": bulk, **change}]})
    assert written.status_code == 200, written.text
    document = {
        "format": "blockrepo-export",
        "apiVersion": "7.4",
        "elements": {
            "InformationSystem": [
                {"name": "Gamma", "description": "runs the shop", "technicalComponents": ["Server"]}
            ]
        },
    }
    response = client.post(
        "/api/massdata/import", content=orjson.dumps(document), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["updated"] == 1

    latest = [_history(client, "InformationSystem", element_id)[0] for element_id in (single, bulk, imported)]
    assert _recorded(latest[0]) == _recorded(latest[1]) == _recorded(latest[2])
    assert _recorded(latest[0]) == (
        "updated",
        [
            {"property": "description", "old": [], "new": ["runs the shop"]},
            {"property": "technicalComponents", "added": [{"id": server, "name": "Server"}], "removed": []},
        ],
    )
    # The component at the other end records each of the three once, in the same shape.
    mirrored = _history(client, "TechnicalComponent", server)[:3]
    assert [item["changes"] for item in reversed(mirrored)] == [
        [
            {
                "property": "informationSystems",
                "added": [{"id": element_id, "name": name}],
                "removed": [],
            }
        ]
        for element_id, name in ((single, "Alpha"), (bulk, "Beta"), (imported, "Gamma"))
    ]


def test_importing_an_unchanged_export_changes_nothing(
    app: FastAPI, client: TestClient, tmp_path: Path
) -> None:
    build_landscape(app, client)
    before = client.get("/api/massdata/export")
    assert before.status_code == 200, before.text
    feed_before = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]

    response = client.post(
        "/api/massdata/import", content=before.content, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 200, response.text
    report = response.json()
    assert (report["created"], report["updated"], report["deleted"], report["failed"]) == (0, 0, 0, 0)
    after = client.get("/api/massdata/export")
    # Same repository revision, same ids, same order: no revision was made and nothing was rewritten.
    assert orjson.loads(after.content) == orjson.loads(before.content)
    feed_after = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    assert feed_after == feed_before


def _normalized(value: Any, element_id: int, name: str) -> Any:
    """A history record with the element's own id and name replaced, so that records of different
    elements that went through the same change compare equal."""
    if isinstance(value, dict):
        return {key: _normalized(item, element_id, name) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_normalized(item, element_id, name) for item in value]
    if value == name:
        return "<name>"
    if value == element_id and not isinstance(value, bool):
        return "<id>"
    return value


def _import(client: TestClient, records: list[dict[str, Any]], mode: str = "additive") -> dict[str, Any]:
    document = {"format": "blockrepo-export", "elements": {"InformationSystem": records}}
    response = client.post(
        "/api/massdata/import",
        params={"mode": mode},
        content=orjson.dumps(document),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_create_update_and_delete_are_recorded_identically_by_single_bulk_and_import_writes(
    client: TestClient,
) -> None:
    """The whole life of an element (created with values and a relation; values, description, parent and
    relation changed; deleted), written once through the element API, once through bulk writes and once
    through imports: its own history, and what the elements at the other end record, are the same."""
    server, server_2 = (_create(client, "TechnicalComponent", name) for name in ("Server", "Server 2"))
    platform = _create(client, "InformationSystem", "Platform")
    created = {"version": ["1"], "status": ["PLANNED"]}
    changed = {"version": ["2"], "status": ["CURRENT"], "description": ["runs the shop"]}
    bulk = "/api/massdata/InformationSystem"

    response = client.post(
        "/api/element/InformationSystem",
        json={"name": ["Alpha"], **created, "technicalComponents": [{"id": server}]},
    )
    assert response.status_code == 201, response.text
    alpha = int(response.json()["id"][0])
    response = client.put(
        f"/api/element/InformationSystem/{alpha}",
        json={**changed, "parent": [{"id": platform}], "technicalComponents": [{"id": server_2}]},
    )
    assert response.status_code == 200, response.text
    assert client.delete(f"/api/element/InformationSystem/{alpha}").status_code == 204

    response = client.post(
        bulk, json={"elements": [{"name": ["Beta"], **created, "technicalComponents": [{"id": server}]}]}
    )
    assert response.status_code == 200, response.text
    beta = int(response.json()["results"][0]["id"])
    update = {"id": beta, **changed, "parent": [{"id": platform}], "technicalComponents": [{"id": server_2}]}
    response = client.post(bulk, json={"elements": [update]})
    assert response.status_code == 200, response.text
    assert client.request("DELETE", bulk, json={"ids": [beta]}).json() == {"deleted": 1}

    report = _import(client, [{"name": "Gamma", **created, "technicalComponents": ["Server"]}])
    assert report["created"] == 1
    gamma = next(
        item["id"][0]
        for item in client.get(bulk, params={"fields": "name"}).json()["items"]
        if item["name"] == ["Gamma"]
    )
    whole_state = {
        "name": "Gamma",
        "description": "runs the shop",
        "version": ["2"],
        "status": ["CURRENT"],
        "parent": "Platform",
        "technicalComponents": ["Server 2"],
    }
    assert _import(client, [{"name": "Platform"}, whole_state])["updated"] == 2  # Gamma and its new parent
    assert _import(client, [{"name": "Platform"}], mode="cud")["deleted"] == 1

    lives = [
        [
            _normalized(_recorded(changeset), element_id, name)
            for changeset in reversed(_history(client, "InformationSystem", element_id))
        ]
        for element_id, name in ((alpha, "Alpha"), (beta, "Beta"), (gamma, "Gamma"))
    ]
    assert [operation for operation, _ in lives[0]] == ["created", "updated", "deleted"]
    assert lives[0] == lives[1] == lives[2]
    assert lives[0][1][1] == [
        {"property": "description", "old": [], "new": ["runs the shop"]},
        {"property": "parent", "old": [], "new": [{"id": platform, "name": "Platform"}]},
        {"property": "version", "old": ["1"], "new": ["2"]},
        {"property": "status", "old": ["PLANNED"], "new": ["CURRENT"]},
        {
            "property": "technicalComponents",
            "added": [{"id": server_2, "name": "Server 2"}],
            "removed": [{"id": server, "name": "Server"}],
        },
    ]
    # The other ends: each server and the parent record each element's arrival and departure alike.
    for other_type, other_id, count in (
        ("TechnicalComponent", server, 2),
        ("TechnicalComponent", server_2, 2),
        ("InformationSystem", platform, 2),
    ):
        mirrored = list(reversed(_history(client, other_type, other_id)))[1:]  # after its own creation
        assert len(mirrored) == 3 * count, (other_type, mirrored)
        per_element = [
            [
                _normalized(_recorded(changeset), element_id, name)
                for changeset in mirrored[index * count : (index + 1) * count]
            ]
            for index, (element_id, name) in enumerate(((alpha, "Alpha"), (beta, "Beta"), (gamma, "Gamma")))
        ]
        assert per_element[0] == per_element[1] == per_element[2], other_type


def _large_write(
    client: TestClient, prefix: str, count: int, components: list[int], updated: list[int]
) -> list[int]:
    """`count` new information systems with a value, a description and two components,
    plus updates of `updated`; returns the ids of the created ones."""
    items: list[dict[str, Any]] = [
        {
            "name": [f"{prefix} {n:04d}"],
            "description": [f"system {n}"],
            "Costs": [n * 2.5 + 0.25],  # never an id: `_normalized` would take it for one
            "technicalComponents": [{"id": components[n % 3]}, {"id": components[(n + 1) % 3]}],
        }
        for n in range(count)
    ]
    items += [{"id": element_id, "Costs": [7.5], "technicalComponents": []} for element_id in updated]
    response = client.post("/api/massdata/InformationSystem", json={"elements": items})
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["results"][:count]]


def _as_written(client: TestClient, element_ids: list[int]) -> list[Any]:
    """Each element and its history with its own name and id taken out: what two writes can share."""
    seen = []
    for element_id in element_ids:
        element = client.get(f"/api/element/InformationSystem/{element_id}").json()
        del element["lastModificationTime"]
        history = [_recorded(changeset) for changeset in _history(client, "InformationSystem", element_id)]
        seen.append(_normalized([element, history], element_id, element["name"][0]))
    return seen


def test_a_write_large_enough_for_the_insert_pipeline_stores_and_records_what_a_smaller_path_does(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One write runs its inserts on a second thread (storage.write_pipeline), the other as one thread.
    attribute = {"name": "Costs", "valueType": "number", "types": ["InformationSystem"]}
    assert client.post("/api/administration/attributes", json=attribute).status_code == 201
    components = [_create(client, "TechnicalComponent", f"Component {n}") for n in range(3)]
    first_updated = [_create(client, "InformationSystem", f"Updated by the first {n}") for n in range(3)]
    second_updated = [_create(client, "InformationSystem", f"Updated by the second {n}") for n in range(3)]
    components_history = [len(_history(client, "TechnicalComponent", c)) for c in components]

    count = persistence.PIPELINE_MIN_CREATES
    piped = _large_write(client, "Piped", count, components, first_updated)
    monkeypatch.setattr(persistence, "PIPELINE_MIN_CREATES", count + 1)
    plain = _large_write(client, "Plain", count, components, second_updated)

    assert _as_written(client, piped) == _as_written(client, plain)
    assert _as_written(client, first_updated) == _as_written(client, second_updated)
    for component, known in zip(components, components_history, strict=True):
        history = _history(client, "TechnicalComponent", component)
        assert len(history) == known + 2  # one changeset per write
        added = [[entry["name"] for entry in item["changes"][0]["added"]] for item in history[:2]]
        assert [name.replace("Plain", "Piped") for name in added[0]] == added[1]
        listed_by = [n for n in range(count) if component in (components[n % 3], components[(n + 1) % 3])]
        assert len(added[1]) == len(listed_by)


def _without_ids(value: Any, suffix: str) -> Any:
    if isinstance(value, dict):
        return {key: _without_ids(item, suffix) for key, item in value.items() if key != "id"}
    if isinstance(value, list | tuple):
        return [_without_ids(item, suffix) for item in value]
    return value.removesuffix(suffix) if isinstance(value, str) else value


def _imported_histories(client: TestClient, suffix: str) -> dict[str, Any]:
    records: dict[str, list[dict[str, Any]]] = {
        "TechnicalComponent": [
            {"name": f"Server A{suffix}"},
            {"name": f"Server B{suffix}", "description": "big"},
        ],
        "InformationSystem": [
            {"name": f"Shop{suffix}", "technicalComponents": [f"Server B{suffix}", f"Server A{suffix}"]},
            # A process the system lists on its target end: the process holds the relation's source end.
            {
                "name": f"CRM{suffix}",
                "technicalComponents": [f"Server B{suffix}"],
                "businessProcesses": [f"Buy{suffix}"],
            },
        ],
        "BusinessProcess": [
            {"name": f"Sell{suffix}", "informationSystems": [f"CRM{suffix}", f"Shop{suffix}"]},
            {"name": f"Buy{suffix}"},
        ],
    }
    document = {"format": "blockrepo-export", "elements": records}
    response = client.post(
        "/api/massdata/import", content=orjson.dumps(document), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text
    histories = {}
    for type_name, of_type in records.items():
        for record in of_type:
            found = client.get(f"/api/massdata/{type_name}", params={"filter": f"@name = '{record['name']}'"})
            assert found.status_code == 200, found.text
            (element,) = found.json()["items"]
            history = [_recorded(changeset) for changeset in _history(client, type_name, element["id"][0])]
            histories[record["name"].removesuffix(suffix)] = _without_ids(history, suffix)
    return histories


def test_elements_an_import_lists_by_name_are_recorded_as_reading_them_back_records_them(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The components and systems that later records list are recorded from the drafts and what lists them
    # (`persistence.receivers`); read back from the database instead, they are recorded the same.
    from_drafts = _imported_histories(client, "")
    monkeypatch.setattr(persistence, "receivers", lambda groups: {})
    assert _imported_histories(client, " (read back)") == from_drafts
    assert from_drafts["Server B"] == [
        [
            "created",
            [
                {"property": "name", "old": [], "new": ["Server B"]},
                {"property": "description", "old": [], "new": ["big"]},
                {"property": "informationSystems", "old": [], "new": [{"name": "Shop"}, {"name": "CRM"}]},
            ],
        ]
    ]


def test_a_large_write_never_hands_out_the_id_of_a_deleted_element(client: TestClient) -> None:
    # On SQLite a large write hands out the ids itself (elements.write.repository.insert_named_elements), as
    # AUTOINCREMENT does: history knows an element by its id forever.
    def bulk_create(prefix: str) -> list[int]:
        items = [{"name": [f"{prefix} {n}"]} for n in range(persistence.PIPELINE_MIN_CREATES)]
        response = client.post("/api/massdata/TechnicalComponent", json={"elements": items})
        assert response.status_code == 200, response.text
        return [item["id"] for item in response.json()["results"]]

    first = bulk_create("First")
    assert first == list(range(first[0], first[0] + len(first)))
    newest = first[-10:]
    deleted = client.request("DELETE", "/api/massdata/TechnicalComponent", json={"ids": newest})
    assert deleted.status_code == 200, deleted.text
    second = bulk_create("Second")
    assert second[0] > max(first)
    assert second == list(range(second[0], second[0] + len(second)))
    assert _create(client, "TechnicalComponent", "Single") > max(second)
