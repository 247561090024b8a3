"""The export as an xlsx workbook, and an xlsx workbook read back into an import document.

Layout: one sheet per type (a row per element in hierarchy order; columns id, name, description, parent,
then one per attribute and per source relation end), one sheet per relation type whose relations carry
attributes (source, target, one column per attribute), the metamodel in `_types`, `_attributeGroups`,
`_relationTypes` and `_attributes`, and `_index`, which maps sheet titles (at most 31 characters in
Excel) to the names they stand for. Several values in one cell, and relation ends, are `;`-separated
(`\\;` and `\\\\` escape a `;` or `\\` inside a value). Single values keep their cell type (number, date,
boolean); text cells are always text, so a value starting with `=` never becomes a formula. openpyxl's
write-only mode streams rows to temporary files, so a large workbook does not build up in memory. A
"Read me" sheet comes first, the `_` sheets are hidden, and the type sheets have a styled, frozen and
filtered header and checked cells (`xlsx_layout`); the reader needs none of that. The reader holds each
record of a type sheet as `marshal`'s bytes, unpacked when the importer's chunk reaches it, and reads the
names and ids beside them for the importer's survey.
"""

from __future__ import annotations

import datetime as dt
import marshal
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

import orjson
from openpyxl import Workbook, load_workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.utils import get_column_letter
from sqlalchemy.orm import Session

from blockrepo.errors import BadRequest, ErrorItem
from blockrepo.massdata.listing import begin_snapshot
from blockrepo.massdata.transfer import xlsx_layout as layout
from blockrepo.massdata.transfer.document import CellMap, Document, SheetCells, record_of
from blockrepo.massdata.transfer.export import (
    EXPORT_BATCH,
    Landscape,
    Progress,
    StoredLandscape,
    iterate_records,
    responsible_logins,
    users_section,
)
from blockrepo.massdata.transfer.plan import (
    ATTRIBUTE_SCALARS,
    FORMAT,
    FORMAT_VERSION,
    ExportPlan,
    metamodel_section,
)
from blockrepo.massdata.transfer.xlsx_layout import LISTS_SHEET, README_SHEET
from blockrepo.massdata.transfer.xlsx_limits import XlsxLimits, check_workbook
from blockrepo.revisions.repository import revision_mark

INDEX_SHEET = "_index"
# Elements read at a time for a sheet with read-only columns: the other side of a relation can be long
# (every system a component serves), and a batch holds every entry of its elements' lists.
MIRRORED_BATCH = 200
# The `_index` rows of a header shown by display name: sheet, HEADER_KIND, the column's key, the header.
HEADER_KIND = "header"
# The `_index` rows of the columns that show the other side's relations: the reader leaves them out.
READ_ONLY_KIND = "readOnlyColumn"
# The `_index` row with the mark of the revision the export was taken at: whose ids the id columns hold.
MARK_ROW = "(revisionMark)"
# The `_index` row that names the planning scenario an export shows (its key, name and base, as JSON).
SCENARIO_ROW = "(scenario)"
# The `_index` row that names the date (and the scenarios) an export of a projection shows, as JSON.
PROJECTION_ROW = "(projection)"
USERS_SHEET = "_users"
USER_COLUMNS = ("login", "firstName", "lastName")
METAMODEL_SHEETS = {
    "_types": (
        "types",
        ["name", "displayName", "abbreviation", "description", "hierarchical", "hidden", "builtins"],
    ),
    "_attributeGroups": ("attributeGroups", ["name", "description"]),
    "_relationTypes": (
        "relationTypes",
        [
            "name",
            "description",
            "source",
            "sourceEnd",
            "target",
            "targetEnd",
            "sourceMultiple",
            "targetMultiple",
            "attributable",
        ],
    ),
    "_attributes": ("attributes", [*ATTRIBUTE_SCALARS, "literals", "types", "relationTypes"]),
}
JSON_COLUMNS = {"builtins", "literals"}
LIST_COLUMNS = {"types", "relationTypes"}
RECORD_COLUMNS = ["id", "name", "description", "parent"]
# Characters an xlsx cell cannot hold (XML 1.0 forbids them); they are replaced, see docs/architecture.md.
_ILLEGAL = re.compile(r"[\000-\010\013\014\016-\037]")
_SHEET_TITLE_LENGTH = 31


def join_values(values: Iterable[str]) -> str:
    return ";".join(v.replace("\\", "\\\\").replace(";", "\\;") for v in values)


def split_values(text: str) -> list[str]:
    """The values of a `;`-separated cell (escapes `\\;` and `\\\\` undone); blank items are dropped."""
    values: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ";":
            values.append("".join(current))
            current = []
        else:
            current.append(char)
    values.append("".join(current))
    return [v.strip() for v in values if v.strip()]


def _text(value: str) -> str:
    return _ILLEGAL.sub("\ufffd", value)


def _scalar_text(value: Any) -> str:
    """One value as text inside a `;`-separated cell."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):  # a date interval
        return f"{value.get('start') or ''}/{value.get('end') or ''}"
    return str(value)


class _Titles:
    """Unique sheet titles of at most 31 characters, and the `_index` rows that resolve them."""

    def __init__(self) -> None:
        self.used: set[str] = {
            INDEX_SHEET.lower(),
            USERS_SHEET.lower(),
            README_SHEET.lower(),
            LISTS_SHEET.lower(),
            *(t.lower() for t in METAMODEL_SHEETS),
        }
        self.index: list[tuple[str, str, str]] = []

    def take(self, kind: str, name: str, shown: str | None = None) -> str:
        """A sheet title for `name` (read as `shown`, a display name, where given)."""
        base = re.sub(r"[\[\]:*?/\\]", "_", shown or name)[:_SHEET_TITLE_LENGTH].strip("'") or name
        title, counter = base, 1
        while title.lower() in self.used:
            counter += 1
            suffix = f"~{counter}"
            title = base[: _SHEET_TITLE_LENGTH - len(suffix)] + suffix
        self.used.add(title.lower())
        self.index.append((title, kind, name))
        return title


def write_workbook(
    db: Session,
    plan: ExportPlan,
    target: IO[bytes],
    progress: Progress | None = None,
    landscape: Landscape | None = None,
) -> None:
    """Write the export of `plan` as xlsx to `target` (read from `db`, which should hold a snapshot): of
    main now, or of `landscape` (a scenario's, which `_index` then names)."""
    workbook = Workbook(write_only=True)
    titles = _Titles()
    landscape = landscape or StoredLandscape(db)
    revision = landscape.revision

    def text_cell(sheet: Any, value: str) -> WriteOnlyCell:
        cell = WriteOnlyCell(sheet, value=_text(value))
        cell.data_type = "s"
        return cell

    layout.write_read_me(workbook.create_sheet(README_SHEET))
    validations = layout.Validations()
    read_only: list[tuple[str, str]] = []  # (sheet title, column): the other side's relations, not read
    relation_sheets: dict[int, tuple[Any, list[str]]] = {}
    type_sheets = []
    headers: list[tuple[str, str, str]] = []  # (sheet title, column, header shown): display names
    for type_plan in plan.types:
        type_def = type_plan.type_def
        sheet = workbook.create_sheet(titles.take("type", type_def.name, type_def.display_name))
        columns = [
            *RECORD_COLUMNS,
            *(a.name for a in type_plan.attributes),
            *(e.name for e in type_plan.ends),
            *(e.name for e in type_plan.mirrors),
        ]
        shown = layout.column_headers(type_plan, columns)
        headers.extend((sheet.title, c, h) for c, h in zip(columns, shown, strict=True) if c != h)
        layout.prepare(sheet, type_plan, columns)
        sheet.append(
            layout.header_row(sheet, columns, read_only={e.name for e in type_plan.mirrors}, shown=shown)
        )
        read_only.extend((sheet.title, e.name) for e in type_plan.mirrors)
        type_sheets.append((type_plan, sheet, columns))
        for end in type_plan.ends:
            attributes = type_plan.relation_attributes(end)
            if attributes:
                relation_sheet = workbook.create_sheet(titles.take("relationType", end.relation_type.name))
                names = [a.name for a in attributes]
                relation_sheet.freeze_panes = "A2"
                relation_sheet.append(layout.header_row(relation_sheet, ("source", "target", *names)))
                relation_sheets[end.relation_type.id] = (relation_sheet, names)
    logins: set[str] = set()
    for type_plan, sheet, columns in type_sheets:
        multiple = {a.name: a.multiple or a.value_type == "dateInterval" for a in type_plan.attributes}
        done = 0
        for records in iterate_records(
            landscape, type_plan, batch=MIRRORED_BATCH if type_plan.mirrors else EXPORT_BATCH
        ):
            logins |= responsible_logins(type_plan, records)
            for record in records:
                row: list[Any] = [record["id"], text_cell(sheet, record["name"])]
                row.append(text_cell(sheet, record["description"]) if "description" in record else None)
                row.append(text_cell(sheet, record["parent"]) if "parent" in record else None)
                for attribute in type_plan.attributes:
                    values = record.get(attribute.name)
                    if not values:
                        row.append(None)
                    elif multiple[attribute.name] or len(values) > 1:
                        row.append(text_cell(sheet, join_values(_scalar_text(v) for v in values)))
                    elif attribute.value_type == "date":
                        row.append(dt.date.fromisoformat(values[0]))
                    elif isinstance(values[0], str):
                        row.append(text_cell(sheet, values[0]))
                    else:
                        row.append(values[0])
                for end in type_plan.ends:
                    entries = record.get(end.name, [])
                    names = [e if isinstance(e, str) else e["name"] for e in entries]
                    row.append(text_cell(sheet, join_values(names)) if names else None)
                    if end.relation_type.id in relation_sheets:
                        relation_sheet, attribute_names = relation_sheets[end.relation_type.id]
                        for entry in entries:
                            target_name, entry_values = (
                                (entry, {})
                                if isinstance(entry, str)
                                else (entry["name"], entry["attributes"])
                            )
                            relation_sheet.append(
                                [
                                    text_cell(relation_sheet, record["name"]),
                                    text_cell(relation_sheet, target_name),
                                    *(
                                        text_cell(
                                            relation_sheet,
                                            join_values(_scalar_text(v) for v in entry_values[n]),
                                        )
                                        if entry_values.get(n)
                                        else None
                                        for n in attribute_names
                                    ),
                                ]
                            )
                for end in type_plan.mirrors:
                    others = record.get(end.name)
                    row.append(layout.read_only_cell(sheet, join_values(others)) if others else None)
                sheet.append(row)
            done += len(records)
            if progress is not None:
                progress(type_plan.type_def.name, done)
        validations.finish(sheet, type_plan, columns, done)
    section = metamodel_section(plan)
    for title, (key, columns) in METAMODEL_SHEETS.items():
        sheet = workbook.create_sheet(title)
        sheet.sheet_state = "hidden"
        sheet.append([text_cell(sheet, c) for c in columns])
        for item in section[key]:
            row = []
            for column in columns:
                value = item.get(column)
                if column in JSON_COLUMNS:
                    row.append(text_cell(sheet, orjson.dumps(value).decode()))
                elif column in LIST_COLUMNS:
                    row.append(text_cell(sheet, join_values(value)) if value else None)
                elif isinstance(value, str):
                    row.append(text_cell(sheet, value) if value else None)
                else:
                    row.append(value)
            sheet.append(row)
    users = workbook.create_sheet(USERS_SHEET)
    users.sheet_state = "hidden"
    users.append([text_cell(users, c) for c in USER_COLUMNS])
    for user in users_section(db, logins):
        users.append([text_cell(users, user[c]) if user[c] else None for c in USER_COLUMNS])
    index = workbook.create_sheet(INDEX_SHEET)
    index.sheet_state = "hidden"
    index.append([text_cell(index, c) for c in ("sheet", "kind", "name")])
    index.append([text_cell(index, "(export)"), text_cell(index, FORMAT), f"{FORMAT_VERSION}/{revision}"])
    mark = revision_mark(db, revision)
    if mark:
        index.append([text_cell(index, MARK_ROW), text_cell(index, "revisionMark"), text_cell(index, mark)])
    if landscape.scenario is not None:
        scenario = orjson.dumps(landscape.scenario).decode()
        index.append(
            [text_cell(index, SCENARIO_ROW), text_cell(index, "scenario"), text_cell(index, scenario)]
        )
    if landscape.projection is not None:
        projection = orjson.dumps(landscape.projection).decode()
        index.append(
            [text_cell(index, PROJECTION_ROW), text_cell(index, "projection"), text_cell(index, projection)]
        )
    for title, kind, name in titles.index:
        index.append([text_cell(index, title), text_cell(index, kind), text_cell(index, name)])
    for title, column in read_only:
        index.append([text_cell(index, title), text_cell(index, READ_ONLY_KIND), text_cell(index, column)])
    for title, column, header in headers:
        index.append(
            [
                text_cell(index, title),
                text_cell(index, HEADER_KIND),
                text_cell(index, column),
                text_cell(index, header),
            ]
        )
    if validations.lists:
        validations.write_lists(workbook.create_sheet(LISTS_SHEET))
    workbook.save(target)


# --- reading ---------------------------------------------------------------------------------------------


def _rows(sheet: Any) -> Iterator[list[Any]]:
    for _, row in _numbered_rows(sheet):
        yield row


def _numbered_rows(sheet: Any) -> Iterator[tuple[int, list[Any]]]:
    """The sheet's rows that hold anything, each with its number as Excel shows it."""
    for number, row in enumerate(sheet.iter_rows(values_only=True), start=1):
        if row is not None and any(cell is not None and cell != "" for cell in row):
            yield number, list(row)


def _cell_text(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == dt.time() else value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _typed(value_type: str, raw: Any) -> Any:
    """A cell value (or one `;`-separated item) in the API JSON form of the value type; what does not fit
    is passed on as it is, for the import's validation to report."""
    if value_type == "number":
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return raw
        try:
            number = float(str(raw))
        except ValueError:
            return raw
        return (
            int(number)
            if number.is_integer() and "." not in str(raw) and "e" not in str(raw).lower()
            else number
        )
    if value_type == "boolean":
        if isinstance(raw, bool):
            return raw
        lowered = str(raw).strip().lower()
        return True if lowered == "true" else False if lowered == "false" else raw
    if value_type == "date":
        return _cell_text(raw)
    if value_type == "dateInterval":
        text = _cell_text(raw)
        if "/" not in text:
            return text
        start, end = text.split("/", 1)
        return {"start": start.strip() or None, "end": end.strip() or None}
    return _cell_text(raw)


def read_workbook(source: IO[bytes], limits: XlsxLimits) -> Document:
    """An import document from an xlsx export (or a workbook laid out like one); 413 for a workbook beyond
    `limits`, found before openpyxl reads it."""
    check_workbook(source, limits)
    try:
        workbook = load_workbook(source, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds for a file that is no workbook
        raise BadRequest(f"the file is not a readable xlsx workbook: {exc}", code="malformed_body") from None
    try:
        return _read(workbook)
    finally:
        workbook.close()


def _bad(pointer: str, message: str) -> BadRequest:
    return BadRequest(message, code="malformed_body", errors=[ErrorItem(pointer, "malformed_body", message)])


def _read(workbook: Any) -> Document:
    if INDEX_SHEET not in workbook.sheetnames:
        raise _bad(INDEX_SHEET, f"the workbook has no {INDEX_SHEET} sheet (make it with an xlsx export)")
    index_rows = list(_rows(workbook[INDEX_SHEET]))[1:]
    metamodel: dict[str, Any] = {}
    for title, (key, columns) in METAMODEL_SHEETS.items():
        if title not in workbook.sheetnames:
            continue
        items = []
        for row in list(_rows(workbook[title]))[1:]:
            item: dict[str, Any] = {}
            for column, value in zip(columns, row + [None] * (len(columns) - len(row)), strict=False):
                if column in JSON_COLUMNS:
                    try:
                        item[column] = orjson.loads(value) if value else []
                    except orjson.JSONDecodeError:
                        raise _bad(f"{title}/{column}", f"{column} of {row[0]!r} is not JSON") from None
                elif column in LIST_COLUMNS:
                    item[column] = split_values(str(value)) if value else []
                elif column in ("description", "abbreviation", "displayName"):
                    item[column] = "" if value is None else str(value)
                else:
                    item[column] = value
            items.append(item)
        metamodel[key] = items
    value_types: dict[str, str] = {
        a["name"]: str(a.get("valueType")) for a in metamodel.get("attributes", [])
    }
    builtin_types: dict[str, dict[str, str]] = {
        t["name"]: {
            b["name"]: b.get("valueType", "text") for b in t.get("builtins", []) if isinstance(b, dict)
        }
        for t in metamodel.get("types", [])
    }
    multiple = {a["name"]: bool(a.get("multiple")) for a in metamodel.get("attributes", [])}
    elements: dict[str, list[Any]] = {}
    names: dict[str, list[Any]] = {}
    ids: dict[str, list[Any]] = {}
    cells = CellMap()
    relation_sheets: list[tuple[str, str]] = []
    revision: int | None = None
    mark: str | None = None
    read_only: dict[str, set[str]] = {}
    keys: dict[str, dict[str, str]] = {}  # sheet title -> header shown -> the column's key
    for row in index_rows:
        title, kind, name, header = [*row, None, None, None, None][:4]
        if kind == READ_ONLY_KIND and isinstance(title, str) and isinstance(name, str):
            read_only.setdefault(title, set()).add(name)
        elif kind == HEADER_KIND and isinstance(title, str) and isinstance(name, str) and header is not None:
            keys.setdefault(title, {})[str(header)] = name
    for row in index_rows:
        title, kind, name = [*row, None, None, None][:3]
        if title == "(export)" and isinstance(name, str) and name.partition("/")[2].isdigit():
            revision = int(name.partition("/")[2])
        elif title == MARK_ROW and kind == "revisionMark" and isinstance(name, str):
            mark = name
        elif kind == "type" and title in workbook.sheetnames:
            type_name = str(name)
            elements[type_name], names[type_name], ids[type_name], cells.types[type_name] = _read_type_sheet(
                workbook[title],
                str(title),
                builtin_types.get(type_name, {}),
                value_types,
                multiple,
                read_only.get(str(title), set()),
                keys.get(str(title), {}),
            )
        elif kind == "relationType" and title in workbook.sheetnames:
            relation_sheets.append((str(title), str(name)))
    relation_types = {r["name"]: r for r in metamodel.get("relationTypes", [])}
    for title, name in relation_sheets:
        relation_type = relation_types.get(name)
        if relation_type is None:
            raise _bad(title, f"relation type {name!r} is not in the _relationTypes sheet")
        _merge_relation_sheet(workbook[title], title, relation_type, elements, names, value_types)
    users = []
    if USERS_SHEET in workbook.sheetnames:
        for row in list(_rows(workbook[USERS_SHEET]))[1:]:
            values = [*row, None, None, None][:3]
            users.append(
                {c: "" if v is None else _cell_text(v) for c, v in zip(USER_COLUMNS, values, strict=True)}
            )
    return Document(
        metamodel=metamodel or None,
        elements=elements,
        names=names,
        ids=ids,
        users=users,
        revision=revision,
        revision_mark=mark,
        cells=cells,
    )


def _read_type_sheet(
    sheet: Any,
    title: str,
    builtins: dict[str, str],
    value_types: dict[str, str],
    multiple: dict[str, bool],
    read_only: set[str],
    keys: dict[str, str],
) -> tuple[list[Any], list[Any], list[Any], SheetCells]:
    """The records of a type's sheet (each `_packed`), their names and ids (for the importer's survey,
    which then unpacks no record), and where they are in the sheet; the `read_only` columns are left out.
    A header shown by display name stands for the key `keys` gives it; any other header is a key (a
    workbook of an earlier version, or a column added by hand)."""
    rows = _numbered_rows(sheet)
    cells = SheetCells(title)
    first = next(rows, None)
    if first is None:
        return [], [], [], cells
    shown = [None if c is None else str(c) for c in first[1]]
    columns = [None if c is None else keys.get(c, c) for c in shown]
    cells.columns = {
        column: (get_column_letter(position), header or column)
        for position, (column, header) in enumerate(zip(columns, shown, strict=True), start=1)
        if column is not None
    }
    records: list[Any] = []
    names: list[Any] = []
    ids: list[Any] = []
    for number, row in rows:
        cells.rows.append(number)
        record: dict[str, Any] = {}
        for column, value in zip(columns, row, strict=False):
            if column is None or value is None or value == "" or column in read_only:
                continue
            if column == "id":
                record["id"] = value
            elif column in ("name", "description", "parent"):
                record[column] = _cell_text(value)
            elif column in builtins or column in value_types:
                value_type = builtins.get(column) or value_types[column]
                many = multiple.get(column, False) or value_type == "dateInterval"
                items = (
                    split_values(_cell_text(value))
                    if many or (isinstance(value, str) and ";" in value)
                    else [value]
                )
                record[column] = [_typed(value_type, item) for item in items]
            else:  # a relation end: names
                record[column] = split_values(_cell_text(value))
        records.append(_packed(record))
        names.append(record.get("name"))
        ids.append(record.get("id"))
    return records, names, ids, cells


def _packed(record: dict[str, Any]) -> Any:
    """A record as `marshal`'s bytes, which take a small part of the dict's memory until the importer's
    chunk reaches it (`document.record_of`): a workbook's records held as dicts took most of an import's
    peak. A record with a value marshal does not take (a date cell where a number belongs) stays a dict."""
    try:
        return marshal.dumps(record)
    except ValueError:
        return record


def _merge_relation_sheet(
    sheet: Any,
    title: str,
    relation_type: dict[str, Any],
    elements: dict[str, list[Any]],
    names: dict[str, list[Any]],
    value_types: dict[str, str],
) -> None:
    """Put the attribute values of a relation sheet on the source end entries of the type sheets (the
    last record of a name where several have it)."""
    source_end = str(relation_type["sourceEnd"])
    records = elements.get(str(relation_type["source"]), [])
    sources = {name: index for index, name in enumerate(names.get(str(relation_type["source"]), []))}
    unpacked: dict[int, dict[str, Any]] = {}  # record index -> the record, packed again at the end
    rows = _rows(sheet)
    header = next(rows, None)
    if header is None:
        return
    attribute_names = [str(c) for c in header[2:] if c is not None]
    for row in rows:
        source_name, target_name = (
            (_cell_text(row[0]) if row[0] is not None else None),
            (_cell_text(row[1]) if len(row) > 1 and row[1] is not None else None),
        )
        index = sources.get(source_name)
        if index is None or target_name is None:
            raise _bad(
                title, f"row {source_name!r} -> {target_name!r}: no such source element in the type sheet"
            )
        record = unpacked.get(index)
        if record is None:
            record = unpacked[index] = record_of(records[index])
        attributes = {}
        for name, value in zip(attribute_names, row[2:], strict=False):
            if value is None or value == "":
                continue
            items = split_values(_cell_text(value)) if isinstance(value, str) else [value]
            attributes[name] = [_typed(value_types.get(name, "text"), item) for item in items]
        entries = record.setdefault(source_end, [])
        for position, entry in enumerate(entries):
            if (entry if isinstance(entry, str) else entry.get("name")) == target_name:
                entries[position] = (
                    {"name": target_name, "attributes": attributes} if attributes else target_name
                )
                break
        else:
            entries.append({"name": target_name, "attributes": attributes} if attributes else target_name)
    for index, record in unpacked.items():
        records[index] = _packed(record)


def stream_xlsx(
    open_session: Callable[[], Session],
    plan: ExportPlan,
    chunk_size: int = 1 << 16,
    landscape: Callable[[Session], Landscape] | None = None,
) -> Iterator[bytes]:
    """The workbook, written (from one snapshot, in a session of its own; with `landscape`, of what it
    reads in that session) to a temporary file that spills to disk beyond 16 MiB, then sent in chunks: an
    xlsx is a zip, complete only at its end."""
    with tempfile.SpooledTemporaryFile(max_size=16 << 20) as buffer:
        with open_session() as db:
            begin_snapshot(db)
            write_workbook(db, plan, buffer, landscape=None if landscape is None else landscape(db))
        buffer.seek(0)
        while chunk := buffer.read(chunk_size):
            yield chunk
