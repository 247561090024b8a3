"""How the exported workbook looks to the person who edits it: a read-me sheet on top, a bold, filled,
frozen and filtered header, widths by kind of column, dropdowns of each single-valued enumeration's
literals and number and date checks within the attribute's limits, the metadata sheets hidden.

None of it changes what the workbook holds: sheets and headers show display names, and the reader
(`xlsx.read_workbook`) finds sheets and the keys of the headers through `_index`. openpyxl's write-only
sheets write their view (frozen panes) and column widths before the rows, their filter and validations
after them: hence `prepare` before the first row and `finish` after the last."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter, quote_sheetname
from openpyxl.worksheet.datavalidation import DataValidation

from blockrepo.massdata.transfer.plan import TypePlan
from blockrepo.metamodel.snapshot import AttributeDef, RelationEnd

README_SHEET = "Read me"
LISTS_SHEET = "_lists"  # hidden: the literals each dropdown offers, a column per enumeration
LAST_ROW = 1_048_576  # Excel's: validations cover every row a user may add
_HEADER_FONT = Font(bold=True, color="FFFFFF")
_HEADER_FILL = PatternFill("solid", fgColor="305496")
_TITLE_FONT = Font(bold=True, size=14)
_READ_ONLY_FILL = PatternFill("solid", fgColor="E7E6E6")
_READ_ONLY_FONT = Font(color="595959", italic=True)
_READ_ONLY_HEADER_FONT = Font(bold=True, italic=True, color="595959")
_WIDTHS = {"id": 9, "name": 34, "description": 50, "parent": 26}
_WIDTH_BY_VALUE_TYPE = {"number": 14, "date": 13, "dateInterval": 24, "boolean": 10, "enum": 20}
_DEFAULT_WIDTH = 24
_END_WIDTH = 40

READ_ME = (
    "How to edit this workbook",
    "",
    "Each building block type has a sheet: a row per element, parents before their children.",
    "ID: keep it. It tells the import which element a row describes, so a new name in a row renames that "
    "element (its history and the relations that point at it stay). Leave it empty in a row you add.",
    "Name is required and unique within its type; Parent names an element of the same type.",
    "Several values in one cell are separated by ; (write \\; for a ; inside a value). Relation columns list "
    "the names of the related elements the same way.",
    "Columns of enumerations offer their values in a dropdown; number and date columns check their limits.",
    "Grey columns (their header starts with ←) show the other side of a relation: change it on the other "
    "type's sheet; the import does not read them.",
    "Sheets whose name starts with _ describe the metamodel and are hidden: leave them as they are. "
    "Keep the headers as they are too: _index says which property each one is.",
    "",
    "Import the file with POST /api/massdata/import (or `blockrepo import FILE`). Try it first with "
    "?dryRun=true: nothing is written, and the answer lists each row that would be created, updated or "
    "deleted, and every problem with its sheet, row and column.",
    "Mode additive (the default) creates and updates; mode cud also deletes the elements of the file's "
    "types that the file no longer lists.",
)


def write_read_me(sheet: Any) -> None:
    """The sheet a person opening the workbook sees first."""
    sheet.column_dimensions["A"].width = 120
    title = WriteOnlyCell(sheet, value="A blockrepo export")
    title.font = _TITLE_FONT
    sheet.append([title])
    for line in READ_ME:
        cell = WriteOnlyCell(sheet, value=line)
        cell.data_type = "s"
        cell.alignment = Alignment(wrap_text=True, vertical="top")
        sheet.append([cell])


_RECORD_HEADERS = {"id": "ID", "name": "Name", "description": "Description", "parent": "Parent"}
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _words(key: str) -> str:
    """A camelCase key as words: `runtimePeriod` -> `Runtime period`, `itServices` -> `It services`."""
    words = _WORD.findall(key) or [key]
    return " ".join([words[0][:1].upper() + words[0][1:], *(w.lower() for w in words[1:])])


def column_headers(type_plan: TypePlan, columns: Sequence[str]) -> list[str]:
    """What each column's header shows: words for the built-ins and relation ends (`Business processes`,
    the other side's marked with a leading arrow), an attribute's own name; the key itself wherever a
    header would repeat another."""
    mirrors = {e.name for e in type_plan.mirrors}
    builtins = {a.name for a in type_plan.attributes if a.builtin}
    shown: list[str] = []
    taken: set[str] = set()
    for column in columns:
        if column in _RECORD_HEADERS:
            header = _RECORD_HEADERS[column]
        elif column in mirrors:
            header = f"← {_words(column)}"
        elif column in builtins or column in type_plan.type_def.ends:
            header = _words(column)
        else:
            header = column
        if header.lower() in taken:
            header = column
        taken.add(header.lower())
        shown.append(header)
    return shown


def header_row(
    sheet: Any, columns: Sequence[str], read_only: Collection[str] = (), shown: Sequence[str] | None = None
) -> list[WriteOnlyCell]:
    """The header cells of a sheet (`shown`, else the keys): bold on a filled background, grey over the
    `read_only` columns."""
    cells = []
    for position, column in enumerate(columns):
        cell = WriteOnlyCell(sheet, value=shown[position] if shown is not None else column)
        cell.data_type = "s"
        cell.font, cell.fill = (
            (_READ_ONLY_HEADER_FONT, _READ_ONLY_FILL) if column in read_only else (_HEADER_FONT, _HEADER_FILL)
        )
        cells.append(cell)
    return cells


def read_only_cell(sheet: Any, text: str) -> WriteOnlyCell:
    """A cell of a column the import does not read (the other side's relations): grey."""
    cell = WriteOnlyCell(sheet, value=text)
    cell.data_type = "s"
    cell.fill, cell.font = _READ_ONLY_FILL, _READ_ONLY_FONT
    return cell


def prepare(sheet: Any, type_plan: TypePlan, columns: Sequence[str]) -> None:
    """Before a type sheet's first row: the header and the id and name columns frozen, widths by kind."""
    sheet.freeze_panes = "C2"
    kinds = {a.name: a.value_type for a in type_plan.attributes}
    ends = {e.name for e in type_plan.ends}
    mirrors = {e.name for e in type_plan.mirrors}
    for position, column in enumerate(columns, start=1):
        if column in _WIDTHS:
            width = _WIDTHS[column]
        elif column in ends or column in mirrors:
            width = _END_WIDTH
        else:
            width = _WIDTH_BY_VALUE_TYPE.get(kinds.get(column, ""), _DEFAULT_WIDTH)
        sheet.column_dimensions[get_column_letter(position)].width = width


class Validations:
    """The checks of every type sheet's cells, and the hidden sheet of literals their dropdowns list."""

    def __init__(self) -> None:
        # attribute id -> (its column on the lists sheet, its name, its literals)
        self.lists: dict[int, tuple[int, str, list[str]]] = {}

    def finish(self, sheet: Any, type_plan: TypePlan, columns: Sequence[str], rows: int) -> None:
        """After a type sheet's last row: the filter over its rows, and each attribute column's check."""
        last = get_column_letter(len(columns))
        sheet.auto_filter.ref = f"A1:{last}{rows + 1}"
        by_name = {a.name: a for a in type_plan.attributes}
        mirrors = {end.name: end for end in type_plan.mirrors}
        for position, column in enumerate(columns, start=1):
            if column in mirrors:
                letter = get_column_letter(position)
                sheet.data_validations.append(_read_only(mirrors[column], f"{letter}2:{letter}{LAST_ROW}"))
                continue
            attribute = by_name.get(column)
            if attribute is None or attribute.multiple:
                continue  # several values are one text cell
            validation = self._validation(attribute)
            if validation is not None:
                letter = get_column_letter(position)
                validation.add(f"{letter}2:{letter}{LAST_ROW}")
                sheet.data_validations.append(validation)

    def _validation(self, attribute: AttributeDef) -> DataValidation | None:
        kind = attribute.value_type
        if kind == "enum" and attribute.literals:
            column, _, literals = self.lists.setdefault(
                attribute.id,
                (len(self.lists) + 1, attribute.name, [literal.name for literal in attribute.literals]),
            )
            letter = get_column_letter(column)
            source = f"{quote_sheetname(LISTS_SHEET)}!${letter}$2:${letter}${len(literals) + 1}"
            return _checked(
                DataValidation(type="list", formula1=source, allow_blank=True),
                f"one of the values of {attribute.name}",
            )
        if kind == "number":
            low = attribute.min_value if attribute.min_value is not None else -1e307
            high = attribute.max_value if attribute.max_value is not None else 1e307
            return _checked(
                DataValidation(
                    type="decimal",
                    operator="between",
                    formula1=repr(low),
                    formula2=repr(high),
                    allow_blank=True,
                ),
                f"a number from {low:g} to {high:g}"
                if attribute.min_value is not None or attribute.max_value is not None
                else "a number",
            )
        if kind == "boolean":
            # Excel takes TRUE and FALSE picked from the list as its own booleans; the reader reads either.
            return _checked(
                DataValidation(type="list", formula1='"TRUE,FALSE"', allow_blank=True), "TRUE or FALSE"
            )
        if kind == "date":
            # Excel counts days from 1900; any day after that is a date.
            return _checked(
                DataValidation(type="date", operator="greaterThan", formula1="1", allow_blank=True), "a date"
            )
        return None

    def write_lists(self, sheet: Any) -> None:
        """The hidden sheet of literals: a column per enumeration, headed by its name."""
        sheet.sheet_state = "hidden"
        columns = sorted(self.lists.values())
        sheet.append([name for _, name, _ in columns])
        depth = max((len(literals) for _, _, literals in columns), default=0)
        for row in range(depth):
            sheet.append([literals[row] if row < len(literals) else None for _, _, literals in columns])


def _read_only(end: RelationEnd, cells: str) -> DataValidation:
    """A check no entry passes: the column shows relations the other type's sheet holds."""
    validation = DataValidation(type="custom", formula1="FALSE", allow_blank=True)
    validation.add(cells)
    validation.error = (
        f"This column shows the other side of the relations: change them in the "
        f"{end.opposite_name} column of the {end.other_type} sheet."
    )
    validation.errorTitle = "Read only"
    validation.showErrorMessage = True
    return validation


def _checked(validation: DataValidation, expected: str) -> DataValidation:
    validation.error = f"Enter {expected}."
    validation.errorTitle = "Not a value this column takes"
    validation.showErrorMessage = True
    return validation
