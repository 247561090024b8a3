"""One write core: the same change written through the element API, a bulk write or an import is recorded
identically, and importing what the repository already holds changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.testclient import TestClient

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
