"""Crafted xlsx files for the import's bounds: small files that ask openpyxl for a great deal of work."""

from __future__ import annotations

import io
import zipfile

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    "{overrides}</Types>"
)
_SHEET_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"
_STRINGS_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"


def workbook(
    sheets: dict[str, str],
    *,
    shared_strings: str | None = None,
    extra_parts: dict[str, bytes] | None = None,
    sheet_entries: int | None = None,
) -> bytes:
    """An xlsx whose sheets (title -> the XML inside `<sheetData>`) openpyxl reads; `sheet_entries`
    declares that many `<sheet>` elements in the workbook part (the first ones real)."""
    overrides = "".join(
        f'<Override PartName="/xl/worksheets/sheet{n}.xml" ContentType="{_SHEET_TYPE}"/>'
        for n in range(1, len(sheets) + 1)
    )
    if shared_strings is not None:
        overrides += f'<Override PartName="/xl/sharedStrings.xml" ContentType="{_STRINGS_TYPE}"/>'
    titles = list(sheets)
    declared = [
        f'<sheet name="{titles[n - 1] if n <= len(titles) else f"s{n}"}" sheetId="{n}" r:id="rId{n}"/>'
        for n in range(1, max(sheet_entries or 0, len(titles)) + 1)
    ]
    relations = [
        f'<Relationship Id="rId{n}" Type="{_REL_NS}/worksheet" Target="worksheets/sheet{n}.xml"/>'
        for n in range(1, len(titles) + 1)
    ]
    if shared_strings is not None:
        relations.append(
            f'<Relationship Id="rIdS" Type="{_REL_NS}/sharedStrings" Target="sharedStrings.xml"/>'
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES.format(overrides=overrides))
        archive.writestr(
            "_rels/.rels",
            f'<Relationships xmlns="{_PACKAGE_RELS}"><Relationship Id="rId1" '
            f'Type="{_REL_NS}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        archive.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{MAIN_NS}" xmlns:r="{_REL_NS}">'
            f"<sheets>{''.join(declared)}</sheets></workbook>",
        )
        archive.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<Relationships xmlns="{_PACKAGE_RELS}">{"".join(relations)}</Relationships>',
        )
        for n, rows in enumerate(sheets.values(), start=1):
            archive.writestr(
                f"xl/worksheets/sheet{n}.xml",
                f'<worksheet xmlns="{MAIN_NS}"><sheetData>{rows}</sheetData></worksheet>',
            )
        if shared_strings is not None:
            archive.writestr("xl/sharedStrings.xml", f'<sst xmlns="{MAIN_NS}">{shared_strings}</sst>')
        for name, content in (extra_parts or {}).items():
            archive.writestr(name, content)
    return buffer.getvalue()


def row_gap(row: int = 200_000, column: str = "XFD") -> bytes:
    """The audit's file: an `_index` sheet with one cell far down and far right (openpyxl pads every row
    of the gap to that width: 3.3 billion empty cells at XFD200000)."""
    return workbook(
        {"_index": f'<row r="{row}"><c r="{column}{row}" t="inlineStr"><is><t>x</t></is></c></row>'}
    )


def shared_strings_bomb(count: int = 3_000_000) -> bytes:
    """The audit's other file: millions of empty shared strings, which zip to almost nothing."""
    return workbook(
        {"_index": '<row r="1"><c r="A1" t="s"><v>0</v></c></row>'}, shared_strings="<si><t/></si>" * count
    )


def zip_bomb(megabytes: int = 64) -> bytes:
    """A part of blanks that deflates about a thousandfold."""
    return workbook({"_index": ""}, extra_parts={"xl/padding.xml": b" " * (megabytes << 20)})


def many_parts(count: int) -> bytes:
    """A zip with `count` tiny parts beside a workbook (zipfile builds an object for each entry)."""
    return workbook({"_index": ""}, extra_parts={f"junk/{n}": b"" for n in range(count)})
