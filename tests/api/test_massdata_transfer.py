"""Export and import: JSON and xlsx round trips (export, import into an empty repository, export again:
identical but for ids), atomic failures, cud, reports, history and permissions."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from openpyxl import load_workbook
from sqlalchemy import func, select
from starlette.testclient import TestClient

from blockrepo.demo import load_demo
from blockrepo.elements.models import Element
from blockrepo.settings import Settings
from tests.api.history_support import all_pages
from tests.api.massdata_landscape import build_landscape, empty_repository
from tests.api.test_history_replay import replay
from tests.api.workbooks import header_keys, type_titles
from tests.conftest import make_settings
from tests.helpers import client_as, create_role, create_user, engine_of, session_of

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.fixture
def landscape(app: FastAPI, client: TestClient) -> None:
    build_landscape(app, client)


def export_json(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/api/massdata/export", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return orjson.loads(response.content)  # type: ignore[no-any-return]


def without_ids(document: dict[str, Any]) -> dict[str, Any]:
    copy = orjson.loads(orjson.dumps(document))
    copy.pop("revision")
    copy.pop("revisionMark")  # marks the exporting repository's revision: differs as the revision does
    for records in copy["elements"].values():
        for record in records:
            record.pop("id")
    return copy  # type: ignore[no-any-return]


def import_file(
    client: TestClient, content: bytes, media_type: str = "application/json", **params: Any
) -> Any:
    return client.post(
        "/api/massdata/import", content=content, headers={"Content-Type": media_type}, params=params
    )


def element_count(app: FastAPI) -> int:
    with session_of(app) as db:
        return int(db.scalar(select(func.count()).select_from(Element)) or 0)


# --- round trips -----------------------------------------------------------------------------------------


def test_json_round_trip_through_an_empty_repository(
    client: TestClient, landscape: None, template_database: str, tmp_path: Path
) -> None:
    first = export_json(client)
    assert first["format"] == "blockrepo-export" and first["apiVersion"] == "7.4"
    processes = [r["name"] for r in first["elements"]["BusinessProcess"]]
    assert processes == ["Sell", "Quote", "Order", "Order entry", "Order check", "Pay"]  # hierarchy order
    order = next(r for r in first["elements"]["BusinessProcess"] if r["name"] == "Order")
    assert order["informationSystems"] == [
        {"name": "ERP", "attributes": {"Share": [60], "Mode": ["online"]}},
        {"name": "CRM", "attributes": {"Share": [40]}},
    ]
    with empty_repository(template_database, tmp_path) as (_, other):
        response = import_file(other, orjson.dumps(first))
        assert response.status_code == 200, response.text
        report = response.json()
        assert report["created"] == sum(len(r) for r in first["elements"].values())
        assert (report["updated"], report["deleted"], report["failed"], report["errors"]) == (0, 0, 0, [])
        second = export_json(other)
        assert without_ids(second) == without_ids(first)
        again = import_file(other, orjson.dumps(first))
        assert again.json()["created"] == 0 and again.json()["updated"] == 0
        assert without_ids(export_json(other)) == without_ids(first)


def test_imported_elements_read_like_the_originals(
    client: TestClient, landscape: None, template_database: str, tmp_path: Path
) -> None:
    first = export_json(client)
    with empty_repository(template_database, tmp_path) as (_, other):
        assert import_file(other, orjson.dumps(first)).status_code == 200
        for type_name in ("InformationSystem", "BusinessProcess", "TechnicalComponent"):
            original = client.get(
                f"/api/massdata/{type_name}", params={"sort": "name", "limit": 1000}
            ).json()["items"]
            copied = other.get(f"/api/massdata/{type_name}", params={"sort": "name", "limit": 1000}).json()[
                "items"
            ]

            def comparable(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
                strip = ("id", "revision", "lastModificationTime", "lastModificationUser")
                out = []
                for item in items:
                    item = {k: v for k, v in item.items() if k not in strip}
                    for key, value in item.items():
                        if value and isinstance(value[0], dict) and "id" in value[0]:
                            item[key] = sorted(
                                ({k: v for k, v in e.items() if k != "id"} for e in value),
                                key=lambda e: e["name"],
                            )
                    out.append(item)
                return out

            assert comparable(copied) == comparable(original), type_name


def _workbook_rows(content: bytes) -> dict[str, list[list[Any]]]:
    """Every sheet's rows, a type's under its type name with the keys as its first row."""
    workbook = load_workbook(io.BytesIO(content), read_only=True)
    types = {title: name for name, title in type_titles(workbook).items()}
    sheets = {}
    for sheet in workbook.worksheets:
        rows = [list(row) for row in sheet.iter_rows(values_only=True)]
        if sheet.title in types:
            rows[0] = list(header_keys(workbook, sheet))
            rows = [row[1:] for row in rows]  # ids differ between repositories
        if sheet.title == "_index":
            rows = [row for row in rows if row[0] not in ("(export)", "(revisionMark)")]
        sheets[types.get(sheet.title, sheet.title)] = rows
    workbook.close()
    return sheets


def test_xlsx_round_trip_through_an_empty_repository(
    client: TestClient, landscape: None, template_database: str, tmp_path: Path
) -> None:
    response = client.get("/api/massdata/export", params={"format": "xlsx"})
    assert response.status_code == 200
    assert response.headers["content-type"] == XLSX
    first = response.content
    sheets = _workbook_rows(first)
    assert sheets["InformationSystem"][0][:3] == ["name", "description", "parent"]
    crm = next(row for row in sheets["InformationSystem"] if row[0] == "CRM")
    header = sheets["InformationSystem"][0]
    assert crm[header.index("version")] == "=SUM(A1)"  # text, never a formula
    assert "BusinessProcess_Informat" in "".join(sheets)  # the relation sheet with attributes
    with empty_repository(template_database, tmp_path) as (_, other):
        imported = import_file(other, first, XLSX)
        assert imported.status_code == 200, imported.text
        assert imported.json()["failed"] == 0
        second = other.get("/api/massdata/export", params={"format": "xlsx"}).content
        assert _workbook_rows(second) == sheets
        assert without_ids(export_json(other)) == without_ids(export_json(client))


def test_the_demo_repository_round_trips_in_json_and_xlsx(
    app: FastAPI, client: TestClient, settings: Settings, template_database: str, tmp_path: Path
) -> None:
    """The must-show of the massdata issue on the demo landscape itself: export, import into an empty
    repository, export again: identical but for ids, in JSON and in xlsx."""
    result = load_demo(engine_of(app), make_settings(settings.database_url, demo_password="demo-password"))
    assert result.loaded
    first = export_json(client)
    assert sum(len(records) for records in first["elements"].values()) == 178
    assert len(first["elements"]) == 14
    workbook = client.get("/api/massdata/export", params={"format": "xlsx"}).content
    with empty_repository(template_database, tmp_path) as (_, other):
        response = import_file(other, orjson.dumps(first))
        assert response.status_code == 200, response.text
        assert (response.json()["created"], response.json()["failed"]) == (178, 0)
        assert without_ids(export_json(other)) == without_ids(first)
    with empty_repository(template_database, tmp_path) as (_, other):
        response = import_file(other, workbook, XLSX)
        assert response.status_code == 200, response.text
        assert (response.json()["created"], response.json()["failed"]) == (178, 0)
        again = other.get("/api/massdata/export", params={"format": "xlsx"}).content
        assert _workbook_rows(again) == _workbook_rows(workbook)
        assert without_ids(export_json(other)) == without_ids(first)


# --- modes, failures, reports ----------------------------------------------------------------------------


def test_atomic_failure_imports_nothing(app: FastAPI, client: TestClient, landscape: None) -> None:
    document = export_json(client)
    document["elements"]["InformationSystem"].append({"name": "New one", "Annual costs": ["a lot"]})
    document["elements"]["InformationSystem"].append({"name": "Broken", "parent": "Nobody"})
    document["elements"]["BusinessProcess"].append({"name": "Another", "informationSystems": ["Ghost"]})
    before = element_count(app)
    response = import_file(client, orjson.dumps(document))
    assert response.status_code == 400
    problem = response.json()
    pointers = {e["pointer"] for e in problem["errors"]}
    n = len(document["elements"]["InformationSystem"])
    assert f"/elements/InformationSystem/{n - 2}/Annual costs/0" in pointers
    assert f"/elements/InformationSystem/{n - 1}/parent" in pointers
    assert any(
        p.startswith("/elements/BusinessProcess/") and p.endswith("/informationSystems/0") for p in pointers
    )
    assert problem["report"]["failed"] == 3
    assert element_count(app) == before


def test_cud_deletes_what_the_file_leaves_out(app: FastAPI, client: TestClient, landscape: None) -> None:
    document = export_json(client, types="InformationSystem")
    document["elements"]["InformationSystem"] = [
        r for r in document["elements"]["InformationSystem"] if r["name"] not in ("Shop", "Ünïcødé; système")
    ]
    for record in document["elements"]["InformationSystem"]:
        if record["name"] == "ERP":
            record["Annual costs"] = [1]
    additive = import_file(client, orjson.dumps(document), dryRun="true")
    erp = next(r for r in document["elements"]["InformationSystem"] if r["name"] == "ERP")
    assert additive.json() == {
        "created": 0,
        "updated": 1,
        "deleted": 0,
        "failed": 0,
        "errors": [],
        "dryRun": True,
        "rows": [
            {
                "action": "update",
                "type": "InformationSystem",
                "name": "ERP",
                "id": erp["id"],
                "record": document["elements"]["InformationSystem"].index(erp),
            }
        ],
    }
    response = import_file(client, orjson.dumps(document), mode="cud")
    assert response.status_code == 200, response.text
    # Updated: ERP (costs) and CRM, whose child Shop went.
    assert response.json()["deleted"] == 2 and response.json()["updated"] == 2
    names = [
        i["name"][0]
        for i in client.get("/api/massdata/InformationSystem", params={"fields": "name"}).json()["items"]
    ]
    assert sorted(names) == ["CRM", "ERP", "Legacy ERP"]
    flows = client.get("/api/massdata/InformationFlow").json()["items"]
    assert flows[0]["sourceSystem"] == []  # the flow's source system was deleted


def test_dry_run_writes_nothing(
    app: FastAPI, client: TestClient, landscape: None, template_database: str, tmp_path: Path
) -> None:
    document = export_json(client)
    with empty_repository(template_database, tmp_path) as (other_app, other):
        before = element_count(other_app)
        response = import_file(other, orjson.dumps(document), dryRun="true")
        assert response.status_code == 200
        assert response.json()["dryRun"] is True and response.json()["created"] > 0
        assert element_count(other_app) == before
        assert other.get("/api/metamodel/types/InformationSystem").json()  # still there
        assert "Criticality" not in {a["name"] for a in other.get("/api/administration/attributes").json()}


@pytest.mark.parametrize(
    ("content", "media_type", "status"),
    [
        (b"{not json", "application/json", 400),
        (b'{"format": "something else"}', "application/json", 400),
        (b"PK\x03\x04 not really a zip", XLSX, 400),
        (b"name,costs", "text/csv", 415),
    ],
)
def test_unreadable_files_are_rejected(
    client: TestClient, content: bytes, media_type: str, status: int
) -> None:
    assert import_file(client, content, media_type).status_code == status


# --- history ------------------------------------------------------------------------------------------


def test_import_history_replays_to_the_current_state(
    client: TestClient, landscape: None, template_database: str, tmp_path: Path
) -> None:
    document = export_json(client)
    with empty_repository(template_database, tmp_path) as (_, other):
        assert import_file(other, orjson.dumps(document)).status_code == 200
        changed = orjson.loads(orjson.dumps(document))
        for record in changed["elements"]["BusinessProcess"]:
            if record["name"] == "Order":
                record["informationSystems"] = [{"name": "Shop", "attributes": {"Share": [5]}}, "ERP"]
                record["parent"] = "Pay"
        changed["elements"]["InformationSystem"].append({"name": "Brand new", "predecessors": ["CRM"]})
        assert import_file(other, orjson.dumps(changed)).status_code == 200
        feed = all_pages(other, "/api/history", {"limit": 100})
        elements, _ = replay(feed)
        for (type_name, element_id), state in elements.items():
            current = other.get(f"/api/element/{type_name}/{element_id}").json()
            rebuilt = {key: state.get(key, []) for key in current}
            rebuilt.update(id=[element_id], type=[type_name], revision=[state["revision"]])
            assert rebuilt == current, f"{type_name} {element_id}"


# --- permissions ----------------------------------------------------------------------------------------


def test_export_and_import_need_their_permissions(app: FastAPI, client: TestClient, landscape: None) -> None:
    create_role(
        app, "reader", types={"InformationSystem": ["read", "create", "update"]}, functional=["MASSDATA"]
    )
    create_user(app, "reader", "reader-password", ["reader"])
    document = export_json(client, types="InformationSystem")
    with client_as(app, "reader", "reader-password") as reader:
        assert reader.get("/api/massdata/export").status_code == 403
        assert import_file(reader, orjson.dumps(document)).status_code == 403


def test_import_and_the_type_rights_alone_let_a_non_supervisor_import(
    app: FastAPI, client: TestClient
) -> None:
    """IMPORT plus read/create/update on the file's types is enough (no MASSDATA, EXPORT or supervisor);
    `cud` needs delete as well, and a type without the rights is refused whole."""
    create_role(
        app, "importer", types={"InformationSystem": ["read", "create", "update"]}, functional=["IMPORT"]
    )
    create_user(app, "importer", "importer-password", ["importer"])
    kept = client.post("/api/element/InformationSystem", json={"name": ["Kept"]}).json()["id"][0]
    document = {
        "format": "blockrepo-export",
        "elements": {"InformationSystem": [{"name": "Kept", "description": "updated"}, {"name": "New"}]},
    }
    with client_as(app, "importer", "importer-password") as importer:
        me = importer.get("/api/administration/users/current").json()
        assert me["supervisor"] is False and me["functionalPermissions"] == ["IMPORT"]
        assert importer.get("/api/massdata/InformationSystem").status_code == 403  # no MASSDATA
        assert importer.get("/api/massdata/export").status_code == 403  # no EXPORT
        dry = import_file(importer, orjson.dumps(document), dryRun="true")
        assert dry.status_code == 200, dry.text
        report = dry.json()
        rows = report.pop("rows")
        assert report == {"created": 1, "updated": 1, "deleted": 0, "failed": 0, "errors": [], "dryRun": True}
        assert sorted(row["action"] for row in rows) == ["create", "update"]
        assert element_count(app) == 1
        response = import_file(importer, orjson.dumps(document))
        assert response.status_code == 200, response.text
        assert response.json() == {"created": 1, "updated": 1, "deleted": 0, "failed": 0, "errors": []}
        assert importer.get(f"/api/element/InformationSystem/{kept}").json()["description"] == ["updated"]
        assert import_file(importer, orjson.dumps(document), mode="cud").status_code == 403  # no delete
        other = {"format": "blockrepo-export", "elements": {"Project": [{"name": "P"}]}}
        assert import_file(importer, orjson.dumps(other)).status_code == 403  # no rights on Project
    assert element_count(app) == 2
    assert {i["name"][0] for i in client.get("/api/massdata/InformationSystem").json()["items"]} == {
        "Kept",
        "New",
    }


def test_exports_leave_out_what_the_caller_cannot_read(
    app: FastAPI, client: TestClient, landscape: None
) -> None:
    create_role(
        app,
        "exporter",
        types={"InformationSystem": ["read"], "BusinessProcess": ["read"]},
        functional=["EXPORT"],
        groups={"Operations": (True, False)},
    )
    create_role(app, "finance-only", groups={"Finance": (True, True)})
    create_user(app, "exporter", "exporter-password", ["exporter"])
    with client_as(app, "exporter", "exporter-password") as exporter:
        document = export_json(exporter)
        assert set(document["elements"]) == {"BusinessProcess", "InformationSystem"}
        assert all("Annual costs" not in r for r in document["elements"]["InformationSystem"])
        assert "Annual costs" not in {a["name"] for a in document["metamodel"]["attributes"]}
        assert any("Criticality" in r for r in document["elements"]["InformationSystem"])
        workbook = exporter.get("/api/massdata/export", params={"format": "xlsx"}).content
        assert "Annual costs" not in _workbook_rows(workbook)["InformationSystem"][0]
        assert exporter.get("/api/massdata/export", params={"types": "Project"}).status_code == 403
