"""The workbook reader (`massdata.transfer.xlsx.read_workbook`): each record of a type sheet is held packed
until the importer's chunk reaches it, and unpacks to the record the sheet holds, with its name and id
read beside it; a relation sheet's attributes land on the last record of the source's name."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

from openpyxl import Workbook

from blockrepo.massdata.transfer.document import record_of
from blockrepo.massdata.transfer.xlsx import read_workbook
from blockrepo.massdata.transfer.xlsx_limits import XlsxLimits

ATTRIBUTES = ["name", "description", "valueType", "multiple", "mandatory", "group", "unit", "min", "max"]


def workbook(rows: list[list[Any]], relations: list[list[Any]]) -> io.BytesIO:
    book = Workbook()
    systems = book.active
    assert systems is not None
    systems.title = "Systems"
    systems.append(["id", "name", "description", "Costs", "components"])
    for row in rows:
        systems.append(row)
    attributes = book.create_sheet("_attributes")
    attributes.append([*ATTRIBUTES, "literals", "types", "relationTypes"])
    number = ["number", False, False, "Finance", None, None, None, "[]"]
    attributes.append(["Costs", "", *number, "System", None])
    attributes.append(["Share", "", *number, None, "uses"])
    relation_types = book.create_sheet("_relationTypes")
    relation_types.append(["name"])
    relation_types.append(["uses", "", "System", "components", "Component", "systems", True, True, True])
    uses = book.create_sheet("uses")
    uses.append(["source", "target", "Share"])
    for row in relations:
        uses.append(row)
    index = book.create_sheet("_index")
    index.append(["sheet", "kind", "name"])
    index.append(["Systems", "type", "System"])
    index.append(["uses", "relationType", "uses"])
    content = io.BytesIO()
    book.save(content)
    content.seek(0)
    return content


def test_records_are_packed_until_unpacked_and_read_as_before() -> None:
    document = read_workbook(
        workbook(
            [
                [7, "ERP", "Books", 12.5, "DB;Queue"],
                [8, "CRM", None, dt.datetime(2026, 1, 2), None],  # a date where a number belongs
                [9, "ERP", None, 3, "DB"],  # the same name again: the relation sheet's row is its
            ],
            [["ERP", "DB", 0.5], ["ERP", "Cache", None]],
        ),
        XlsxLimits(),
    )
    records = document.elements["System"]
    assert [type(r) for r in records] == [bytes, dict, bytes]  # marshal takes no datetime
    assert [record_of(r) for r in records] == [
        {"id": 7, "name": "ERP", "description": "Books", "Costs": [12.5], "components": ["DB", "Queue"]},
        {"id": 8, "name": "CRM", "Costs": [dt.datetime(2026, 1, 2)]},
        {
            "id": 9,
            "name": "ERP",
            "Costs": [3],
            "components": [{"name": "DB", "attributes": {"Share": [0.5]}}, "Cache"],
        },
    ]
    assert document.names == {"System": ["ERP", "CRM", "ERP"]}
    assert document.ids == {"System": [7, 8, 9]}
    assert document.cells is not None
    assert list(document.cells.types["System"].rows) == [2, 3, 4]
