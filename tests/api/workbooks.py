"""Reading an exported workbook as the import does: its type sheets by type name (sheets show display
names; `_index` says which type each is) and each header by the key it stands for."""

from __future__ import annotations

from typing import Any


def _index_rows(workbook: Any) -> list[list[Any]]:
    return [[*row, None, None, None, None][:4] for row in workbook["_index"].iter_rows(values_only=True)][1:]


def type_titles(workbook: Any) -> dict[str, str]:
    """Type name -> the title of its sheet."""
    return {str(name): str(title) for title, kind, name, _ in _index_rows(workbook) if kind == "type"}


def type_sheet(workbook: Any, type_name: str) -> Any:
    return workbook[type_titles(workbook)[type_name]]


def header_keys(workbook: Any, sheet: Any) -> list[str | None]:
    """The keys the headers of a sheet's first row stand for."""
    keys = {
        str(header): str(name)
        for title, kind, name, header in _index_rows(workbook)
        if kind == "header" and title == sheet.title
    }
    first = next(sheet.iter_rows(min_row=1, max_row=1, values_only=True), ())
    return [None if value is None else keys.get(str(value), str(value)) for value in first]
