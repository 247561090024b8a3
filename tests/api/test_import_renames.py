"""A rename in an exported file is a rename: imported into the repository it came from (or a restored copy
of it), a record's id names its element, so a new name keeps the element, its history and the relations
that point at it, and the file's other rows may still name it by its old name. Imported anywhere else,
the ids mean nothing and names decide, as before; an id of a deleted element or of another type counts
for nothing either."""

from __future__ import annotations

import io
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from openpyxl import load_workbook
from openpyxl.utils import column_index_from_string, get_column_letter
from starlette.testclient import TestClient

from blockrepo.demo import load_demo
from blockrepo.settings import Settings
from tests.api.massdata_landscape import empty_repository
from tests.api.test_massdata_transfer import XLSX, element_count, export_json, import_file
from tests.api.workbooks import header_keys, type_sheet
from tests.conftest import make_settings
from tests.helpers import create_attribute, engine_of

ERP = 128  # the demo's ERP (an information system that processes, domains and flows point at)


@pytest.fixture
def demo(app: FastAPI, settings: Settings) -> None:
    assert load_demo(engine_of(app), make_settings(settings.database_url, demo_password="demo-pw-1")).loaded


def _renamed(document: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The document with one information system's record renamed, every other row left naming it `old`."""
    copy = orjson.loads(orjson.dumps(document))
    for record in copy["elements"]["InformationSystem"]:
        if record["name"] == old:
            record["name"] = new
    return copy


def _pointing_at(client: TestClient, element_id: int) -> list[str]:
    """The names of the business processes that list the element."""
    body = client.get(f"/api/element/InformationSystem/{element_id}").json()
    return sorted(entry["name"] for entry in body["businessProcesses"])


@pytest.mark.parametrize("mode", ["additive", "cud"])
def test_a_renamed_record_renames_its_element(
    client: TestClient, demo: None, app: FastAPI, mode: str
) -> None:
    before = element_count(app)
    processes = _pointing_at(client, ERP)
    document = export_json(client)
    assert document["revisionMark"]
    response = import_file(client, orjson.dumps(_renamed(document, "ERP", "ERP (S/4HANA)")), mode=mode)
    assert response.status_code == 200, response.text
    assert response.json()["created"] == 0 and response.json()["deleted"] == 0
    assert response.json()["updated"] >= 1
    assert element_count(app) == before
    element = client.get(f"/api/element/InformationSystem/{ERP}").json()
    assert element["name"] == ["ERP (S/4HANA)"]
    assert _pointing_at(client, ERP) == processes  # the relations that point at it stayed
    history = client.get(f"/api/history/InformationSystem/{ERP}").json()["items"]
    renames = [c for item in history for c in item["changes"] if c["property"] == "name" and c["old"]]
    assert renames == [{"property": "name", "old": ["ERP"], "new": ["ERP (S/4HANA)"]}]


def test_rows_may_name_a_renamed_element_by_its_new_name(
    client: TestClient, demo: None, app: FastAPI
) -> None:
    """A file renamed with search and replace names the element by its new name everywhere: those
    references are to the renamed element, and touch nothing else."""
    before = element_count(app)
    processes = _pointing_at(client, ERP)
    text = orjson.dumps(export_json(client)).replace(b'"ERP"', b'"ERP (S/4HANA)"')
    response = import_file(client, text, dryRun="true")
    assert response.status_code == 200, response.text
    assert [(row["action"], row["name"]) for row in response.json()["rows"]] == [("update", "ERP (S/4HANA)")]
    response = import_file(client, text)
    assert response.status_code == 200, response.text
    assert response.json()["created"] == 0 and response.json()["updated"] == 1
    assert element_count(app) == before
    assert _pointing_at(client, ERP) == processes


def test_a_rename_in_the_workbook_is_a_rename(client: TestClient, demo: None, app: FastAPI) -> None:
    before = element_count(app)
    workbook = load_workbook(
        io.BytesIO(client.get("/api/massdata/export", params={"format": "xlsx"}).content)
    )
    sheet = type_sheet(workbook, "InformationSystem")
    header = header_keys(workbook, sheet)
    for row in sheet.iter_rows(min_row=2):
        if row[header.index("name")].value == "ERP":
            assert row[header.index("id")].value == ERP
            row[header.index("name")].value = "ERP (S/4HANA)"
    edited = io.BytesIO()
    workbook.save(edited)
    response = import_file(client, edited.getvalue(), XLSX)
    assert response.status_code == 200, response.text
    assert response.json()["created"] == 0
    assert element_count(app) == before
    assert client.get(f"/api/element/InformationSystem/{ERP}").json()["name"] == ["ERP (S/4HANA)"]


def test_an_unchanged_export_still_writes_nothing(client: TestClient, demo: None) -> None:
    document = export_json(client)
    response = import_file(client, orjson.dumps(document), mode="cud")
    assert response.json() == {"created": 0, "updated": 0, "deleted": 0, "failed": 0, "errors": []}


def test_ids_of_another_repository_count_for_nothing(
    client: TestClient, demo: None, template_database: str, tmp_path: Any
) -> None:
    """A copy of the same template that went its own way hands out the same ids to other elements: the
    mark of the export's revision differs there, so the renamed record is matched by name (and created)."""
    document = _renamed(export_json(client), "ERP", "ERP (S/4HANA)")
    with empty_repository(template_database, tmp_path) as (_, other):
        first = _renamed(export_json(client), "ERP (S/4HANA)", "ERP")  # the unrenamed file
        assert import_file(other, orjson.dumps(first)).status_code == 200
        response = import_file(other, orjson.dumps(document))
        assert response.status_code == 200, response.text
        assert response.json()["created"] == 1  # a new element: its id here belongs to another
        names = [e["name"][0] for e in other.get("/api/massdata/InformationSystem?limit=500").json()["items"]]
        assert "ERP" in names and "ERP (S/4HANA)" in names


def test_a_forged_or_stale_id_counts_for_nothing(client: TestClient, demo: None, app: FastAPI) -> None:
    """An id of another type's element, or of a deleted one, does not make the record describe it."""
    document = export_json(client)
    process = document["elements"]["BusinessProcess"][0]
    doomed = client.post("/api/element/InformationSystem", json={"name": ["Short-lived"]}).json()["id"][0]
    assert client.delete(f"/api/element/InformationSystem/{doomed}").status_code == 204
    document = export_json(client)  # a mark of the newest revision
    records = document["elements"]["InformationSystem"]
    records.append({"id": process["id"], "name": "Named like nothing else"})
    records.append({"id": doomed, "name": "Back from the dead"})
    response = import_file(client, orjson.dumps(document))
    assert response.status_code == 200, response.text
    assert response.json()["created"] == 2
    assert client.get(f"/api/element/BusinessProcess/{process['id']}").json()["name"] == [process["name"]]


def test_a_workbook_problem_names_its_sheet_row_and_column(
    client: TestClient, demo: None, app: FastAPI
) -> None:
    """Problems of an uploaded workbook say where they are as Excel shows it, beside the JSON pointer;
    nothing is imported."""
    before = element_count(app)
    workbook = load_workbook(
        io.BytesIO(client.get("/api/massdata/export", params={"format": "xlsx"}).content)
    )
    sheet = type_sheet(workbook, "InformationSystem")
    header = header_keys(workbook, sheet)
    criticality = header.index("Criticality")
    sheet.cell(row=5, column=criticality + 1).value = "catastrophic"
    sheet.insert_rows(3)  # a blank row: the rows below keep the numbers Excel shows
    edited = io.BytesIO()
    workbook.save(edited)
    response = import_file(client, edited.getvalue(), XLSX)
    assert response.status_code == 400
    (problem,) = response.json()["errors"]
    assert (
        problem["pointer"].startswith("/elements/InformationSystem/") and "Criticality" in problem["pointer"]
    )
    letter = chr(ord("A") + criticality)
    assert problem["cell"] == {
        "sheet": "Information System",  # as the workbook shows it
        "row": 6,
        "column": letter,
        "header": "Criticality",
        "value": "catastrophic",  # what the cell holds
    }
    assert element_count(app) == before


def test_a_dry_run_lists_each_row_it_would_create_update_or_delete(
    client: TestClient, demo: None, app: FastAPI
) -> None:
    scratch = client.post("/api/element/InformationSystem", json={"name": ["Scratch"]}).json()["id"][0]
    before = element_count(app)
    exported = client.get("/api/massdata/export", params={"format": "xlsx"}).content
    workbook = load_workbook(io.BytesIO(exported))
    sheet = type_sheet(workbook, "InformationSystem")
    header = header_keys(workbook, sheet)
    name_of = {sheet.cell(row=r, column=2).value: r for r in range(2, sheet.max_row + 1)}
    sheet.cell(row=name_of["ERP"], column=header.index("description") + 1).value = "The one ERP"
    sheet.cell(row=sheet.max_row + 1, column=2).value = "Data Lake"
    new_row = sheet.max_row
    sheet.delete_rows(name_of["Scratch"])  # below ERP: ERP keeps its row, the new one moves up
    assert name_of["Scratch"] > name_of["ERP"]
    edited = io.BytesIO()
    workbook.save(edited)
    response = client.post(
        "/api/massdata/import",
        content=edited.getvalue(),
        headers={"Content-Type": XLSX},
        params={"dryRun": "true", "mode": "cud"},
    )
    assert response.status_code == 200, response.text
    report = response.json()
    assert (report["created"], report["updated"], report["deleted"], report["dryRun"]) == (1, 1, 1, True)
    by_action = {row["action"]: row for row in report["rows"]}
    update = by_action["update"]
    assert (update["type"], update["name"], update["id"]) == ("InformationSystem", "ERP", ERP)
    assert update["cell"] == {"sheet": "Information System", "row": name_of["ERP"]}
    assert by_action["create"]["name"] == "Data Lake"
    assert by_action["create"]["cell"] == {"sheet": "Information System", "row": new_row - 1}
    assert by_action["delete"] == {
        "action": "delete",
        "type": "InformationSystem",
        "name": "Scratch",
        "id": scratch,
    }
    assert len(report["rows"]) == 3  # the unchanged rows are not listed
    assert element_count(app) == before  # a dry run


def test_the_workbook_is_made_for_people(client: TestClient, demo: None) -> None:
    """Read back with openpyxl: a read-me sheet first, the metadata sheets hidden, a bold, filled, frozen
    and filtered header with sensible widths, a dropdown of each single-valued enumeration's literals and
    number and date checks with the attribute's limits."""
    workbook = load_workbook(
        io.BytesIO(client.get("/api/massdata/export", params={"format": "xlsx"}).content)
    )
    assert workbook.sheetnames[0] == "Read me" and workbook["Read me"].sheet_state == "visible"
    hidden = {sheet.title for sheet in workbook.worksheets if sheet.sheet_state == "hidden"}
    assert {
        "_types",
        "_attributes",
        "_attributeGroups",
        "_relationTypes",
        "_index",
        "_users",
        "_lists",
    } <= hidden
    sheet = workbook["Information System"]  # sheets and headers show display names
    assert sheet.sheet_state == "visible"
    shown = [cell.value for cell in sheet[1]]
    assert shown[:4] == ["ID", "Name", "Description", "Parent"]
    assert {"Version", "Status", "Runtime period", "Criticality", "Technical components"} <= set(shown)
    assert {"← Business processes", "← Business domains"} <= set(shown)  # the other side, read-only
    header = header_keys(workbook, sheet)  # the keys they stand for, which `_index` keeps
    assert header[:4] == ["id", "name", "description", "parent"]
    assert header[shown.index("Runtime period")] == "runtimePeriod"
    assert all(cell.font.b for cell in sheet[1]) and sheet["A1"].fill.fill_type == "solid"
    assert sheet.freeze_panes == "C2"
    assert sheet.auto_filter.ref == f"A1:{get_column_letter(len(header))}{sheet.max_row}"
    assert sheet.column_dimensions["B"].width > sheet.column_dimensions["A"].width
    checks = {}
    for validation in sheet.data_validations.dataValidation:
        (column,) = {str(r).split(":")[0].rstrip("0123456789") for r in validation.sqref.ranges}
        checks[header[column_index_from_string(column) - 1]] = validation
    criticality = checks["Criticality"]
    assert criticality.type == "list" and criticality.formula1.startswith("'_lists'!$")
    lists = workbook["_lists"]
    column = criticality.formula1.split("!$")[1].split("$")[0]
    literals = [lists[f"{column}{row}"].value for row in range(2, 5)]
    assert lists[f"{column}1"].value == "Criticality" and literals == ["low", "medium", "high"]
    costs = checks["Annual costs"]
    assert (costs.type, costs.operator, float(costs.formula1)) == ("decimal", "between", 0.0)
    assert checks["Go-live"].type == "date"
    assert "Tags" not in checks  # several values are one text cell
    # The other side of relations, shown grey and refusing entries: the processes that use each system.
    mirror = header.index("businessProcesses") + 1
    assert sheet.cell(row=1, column=mirror).fill.fgColor.rgb != sheet["A1"].fill.fgColor.rgb
    assert (checks["businessProcesses"].type, checks["businessProcesses"].formula1) == ("custom", "FALSE")
    erp = next(r for r in range(2, sheet.max_row + 1) if sheet.cell(row=r, column=1).value == ERP)
    assert "Order entry" in sheet.cell(row=erp, column=mirror).value.split(";")


def test_the_read_only_columns_are_not_imported(client: TestClient, demo: None) -> None:
    """Editing the other side of a relation in the workbook changes nothing: its own side decides."""
    workbook = load_workbook(
        io.BytesIO(client.get("/api/massdata/export", params={"format": "xlsx"}).content)
    )
    sheet = type_sheet(workbook, "InformationSystem")
    header = header_keys(workbook, sheet)
    mirror = header.index("businessProcesses") + 1
    for row in range(2, sheet.max_row + 1):
        sheet.cell(row=row, column=mirror).value = "Order entry"  # read, it would relate every system
    edited = io.BytesIO()
    workbook.save(edited)
    response = import_file(client, edited.getvalue(), XLSX)
    assert response.json()["updated"] == 0 and response.json()["created"] == 0
    assert len(_pointing_at(client, ERP)) > 1


def test_a_yes_no_attribute_offers_true_and_false(client: TestClient, demo: None, app: FastAPI) -> None:
    """A boolean column is a dropdown of TRUE and FALSE, and what is picked from it imports as a boolean."""
    create_attribute(app, "Cloud ready", "boolean", types=["InformationSystem"])
    workbook = load_workbook(
        io.BytesIO(client.get("/api/massdata/export", params={"format": "xlsx"}).content)
    )
    sheet = type_sheet(workbook, "InformationSystem")
    header = header_keys(workbook, sheet)
    letter = get_column_letter(header.index("Cloud ready") + 1)
    (validation,) = [
        v for v in sheet.data_validations.dataValidation if str(v.sqref).startswith(f"{letter}2:")
    ]
    assert (validation.type, validation.formula1) == ("list", '"TRUE,FALSE"')
    erp = next(r for r in range(2, sheet.max_row + 1) if sheet.cell(row=r, column=1).value == ERP)
    sheet[f"{letter}{erp}"] = "TRUE"  # as the dropdown enters it
    edited = io.BytesIO()
    workbook.save(edited)
    response = import_file(client, edited.getvalue(), XLSX)
    assert response.status_code == 200, response.text
    assert client.get(f"/api/element/InformationSystem/{ERP}").json()["Cloud ready"] == [True]
