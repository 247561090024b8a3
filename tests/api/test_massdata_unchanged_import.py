"""Importing a file that matches the repository changes nothing (API.md 3): no revision, no history,
`updated: 0`, whatever order the relation lists come back in.

Before, re-importing an unchanged export of the demo reported `updated: 2` and wrote a revision: two
information systems' lists of an end held by the other side (`businessDomains`, `businessProcesses`) came
back in the order the import rewrote the relations."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.demo_repository import database_url, demo_repository, newest_revision, settings

__all__ = ["database_url", "demo_repository", "settings"]  # fixtures of the demo landscape

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _state(client: TestClient) -> dict[str, dict[int, dict[str, Any]]]:
    """Every element by type and id, relation lists as sets (their order is not part of the state)."""
    state: dict[str, dict[int, dict[str, Any]]] = {}
    for block_type in client.get("/api/metamodel").json()["types"]:
        response = client.get(f"/api/massdata/{block_type['name']}", params={"limit": 1000})
        assert response.status_code == 200 and response.json()["nextCursor"] is None
        state[block_type["name"]] = {
            element["id"][0]: {
                key: sorted(map(repr, value)) if value and isinstance(value[0], dict) else value
                for key, value in element.items()
            }
            for element in response.json()["items"]
        }
    return state


@pytest.mark.parametrize("mode", ["additive", "cud"])
@pytest.mark.parametrize("file_format", ["json", "xlsx"])
def test_importing_an_unchanged_export_changes_nothing(
    client: TestClient, mode: str, file_format: str
) -> None:
    exported = client.get("/api/massdata/export", params={"format": file_format})
    assert exported.status_code == 200
    revision, before = newest_revision(client), _state(client)
    response = client.post(
        "/api/massdata/import",
        params={"mode": mode},
        content=exported.content,
        headers={"Content-Type": "application/json" if file_format == "json" else XLSX},
    )
    assert response.status_code == 200, response.text
    assert response.json() == {"created": 0, "updated": 0, "deleted": 0, "failed": 0, "errors": []}
    assert newest_revision(client) == revision, "no revision"
    assert client.get("/api/history", params={"sinceRevision": revision}).json()["items"] == []
    assert _state(client) == before, "same elements, same revisions and stamps"


def test_an_import_that_changes_one_element_reports_and_records_only_that(client: TestClient) -> None:
    exported = client.get("/api/massdata/export").json()
    erp = next(r for r in exported["elements"]["InformationSystem"] if r["name"] == "ERP")
    erp["version"] = ["S/4HANA 2025"]
    revision = newest_revision(client)
    response = client.post("/api/massdata/import", json=exported)
    assert response.status_code == 200, response.text
    assert response.json()["updated"] == 1
    items = client.get("/api/history", params={"sinceRevision": revision}).json()["items"]
    changeset, completed = items
    assert (completed["entity"], completed["subject"], completed["operation"]) == (
        "administration",
        "import",
        "completed",
    )
    assert {c["property"]: c["new"] for c in completed["changes"]}["updated"] == 1
    assert changeset["name"] == "ERP"
    assert [c["property"] for c in changeset["changes"]] == ["version"], "no reordered relation lists"
