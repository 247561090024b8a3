"""Bounds on an uploaded xlsx workbook, checked from its zip directory and one streaming scan of its XML
before openpyxl reads it.

openpyxl's cost follows what the file declares rather than what it holds: read-only mode pads every row
to the sheet's declared width and fills each row gap with empty rows, and it keeps every shared string in
memory. A 1.8 KB file with one cell at XFD200000 thus meant 3.3 billion empty cells, and 3 million empty
shared strings fit in 133 KB. The scan mirrors how openpyxl counts rows and columns (a row or cell
without `r` follows the previous one) and stops at the first limit passed, so a refused file costs no
more than the part of it read up to that point. Each limit is a setting; a breach is 413
`payload_too_large` naming the setting and its value.
"""

from __future__ import annotations

import lzma
import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO, Any
from xml.parsers import expat

from blockrepo.errors import BadRequest, ErrorItem, PayloadTooLarge
from blockrepo.settings import Settings

# expat names an element `namespace}local` with this separator.
SHEET_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_ROW = SHEET_MAIN_NS + "row"
_CELL = SHEET_MAIN_NS + "c"
_DIMENSION = SHEET_MAIN_NS + "dimension"
_SHEET = SHEET_MAIN_NS + "sheet"
_SHARED_STRING = SHEET_MAIN_NS + "si"
_REFERENCE = re.compile(r"\$?([A-Za-z]{1,16})\$?([0-9]{1,16})")
_RANGE = re.compile(r"\$?([A-Za-z]{0,16})\$?([0-9]{0,16})(?::\$?([A-Za-z]{0,16})\$?([0-9]{0,16}))?")
# A workbook has a few fixed parts (content types, workbook, styles, theme, properties and their
# relationships) and about two per sheet; the zip entries are bounded through the sheets.
_PARTS_PER_SHEET = 2
_FIXED_PARTS = 64
# Small parts compress irregularly; the ratio is checked against at least this many compressed bytes.
_RATIO_FLOOR = 1024
_CHUNK = 1 << 16
_END_OF_DIRECTORY = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_END = b"PK\x06\x06"
# What zipfile and its decompressors raise for a damaged archive: corrupt deflate or LZMA data, a record
# whose offsets or sizes point outside the file or past 64 bits, a truncated member. Most of them are no
# OSError, and each is the client's broken file, a 400.
UNREADABLE_ZIP = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    OverflowError,
    struct.error,
    EOFError,
    ValueError,
    OSError,
    RuntimeError,
    NotImplementedError,
)


@dataclass(frozen=True)
class XlsxLimits:
    """How large an imported workbook may be. The defaults equal those of `Settings`."""

    max_unzipped_bytes: int = 1 << 30
    max_compression_ratio: int = 100
    max_sheets: int = 1_000
    max_rows: int = 1_048_576
    max_columns: int = 1_024
    max_cells: int = 50_000_000
    max_shared_strings: int = 1_000_000

    @classmethod
    def from_settings(cls, settings: Settings) -> XlsxLimits:
        return cls(
            max_unzipped_bytes=settings.import_xlsx_max_unzipped_bytes,
            max_compression_ratio=settings.import_xlsx_max_compression_ratio,
            max_sheets=settings.import_xlsx_max_sheets,
            max_rows=settings.import_xlsx_max_rows,
            max_columns=settings.import_xlsx_max_columns,
            max_cells=settings.import_xlsx_max_cells,
            max_shared_strings=settings.import_xlsx_max_shared_strings,
        )


def limit_exceeded(setting: str, value: int, message: str, pointer: str = "") -> PayloadTooLarge:
    detail = f"{message}; the limit {setting} is {value}"
    return PayloadTooLarge(
        detail,
        errors=[ErrorItem(pointer, "payload_too_large", detail)],
        extra={"limit": {"name": setting, "value": value}},
    )


@dataclass
class WorkbookScan:
    """What the scan counted (up to where it stopped): the work the file asks of openpyxl."""

    parts: int = 0
    unzipped_bytes: int = 0
    elements: int = 0  # XML elements seen
    sheets: int = 0
    shared_strings: int = 0
    cells: int = 0  # the sheets' extents: last row times widest column


def check_workbook(source: IO[bytes], limits: XlsxLimits, scan: WorkbookScan | None = None) -> WorkbookScan:
    """Refuse (413) a workbook beyond `limits`, or (400) one that declares a DTD or is no zip, before
    anything builds it; `source` is left at its start. `scan` (filled as the scan goes) shows how far a
    refused file was read."""
    scan = scan if scan is not None else WorkbookScan()
    try:
        _check(source, limits, scan)
    except UNREADABLE_ZIP as exc:
        raise _malformed(f"the file is not a readable xlsx workbook: {exc}") from None
    source.seek(0)
    return scan


def _check(source: IO[bytes], limits: XlsxLimits, scan: WorkbookScan) -> None:
    entries = _declared_entries(source)
    most_parts = limits.max_sheets * _PARTS_PER_SHEET + _FIXED_PARTS
    if entries is not None and entries > most_parts:
        raise limit_exceeded(
            "import_xlsx_max_sheets",
            limits.max_sheets,
            f"the zip holds {entries} parts, more than a workbook of that many sheets has ({most_parts})",
        )
    source.seek(0)
    archive = zipfile.ZipFile(source)
    with archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
        scan.parts = len(infos)
        if scan.parts > most_parts:  # a directory that disagrees with its end record
            raise limit_exceeded(
                "import_xlsx_max_sheets", limits.max_sheets, f"the zip holds {scan.parts} parts"
            )
        scan.unzipped_bytes = sum(info.file_size for info in infos)
        if scan.unzipped_bytes > limits.max_unzipped_bytes:
            raise limit_exceeded(
                "import_xlsx_max_unzipped_bytes",
                limits.max_unzipped_bytes,
                f"the workbook unzips to {scan.unzipped_bytes} bytes",
            )
        for info in infos:
            if info.file_size > limits.max_compression_ratio * max(info.compress_size, _RATIO_FLOOR):
                raise limit_exceeded(
                    "import_xlsx_max_compression_ratio",
                    limits.max_compression_ratio,
                    f"{info.filename} unzips from {info.compress_size} to {info.file_size} bytes",
                    pointer=info.filename,
                )
        # zipfile stops every part at the size its directory entry declares, for this scan and for
        # openpyxl alike, so the sizes checked above bound what either decompresses.
        for info in infos:
            _scan_part(archive, info, limits, scan)


def _declared_entries(source: IO[bytes]) -> int | None:
    """The number of entries the zip's end record declares (None: no end record; zipfile then refuses
    the file), read before zipfile builds an object for each of them."""
    size = source.seek(0, 2)
    tail_start = max(0, size - (22 + 0xFFFF))
    source.seek(tail_start)
    tail = source.read()
    position = tail.rfind(_END_OF_DIRECTORY)
    if position < 0 or len(tail) < position + 22:
        return None
    (entries,) = struct.unpack_from("<H", tail, position + 10)
    if entries != 0xFFFF or position < 20 or tail[position - 20 : position - 16] != _ZIP64_LOCATOR:
        return int(entries)
    (record_offset,) = struct.unpack_from("<Q", tail, position - 20 + 8)
    if record_offset > size - 56:  # points past the file (up to 2**64 - 1, which seek refuses)
        raise _malformed(f"the zip64 end record's offset {record_offset} lies outside the file")
    source.seek(record_offset)
    record = source.read(56)
    if len(record) < 56 or record[:4] != _ZIP64_END:
        return None
    (zip64_entries,) = struct.unpack_from("<Q", record, 32)
    return int(zip64_entries)


class _SheetCounter:
    """The parser's target: counts what openpyxl would make of one part, raising at the first limit."""

    def __init__(self, part: str, limits: XlsxLimits, scan: WorkbookScan) -> None:
        self.part = part
        self.limits = limits
        self.scan = scan
        self.row = 0
        self.column = 0
        self.widest = 0
        self.extent = 0  # this part's share of scan.cells

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.scan.elements += 1
        if tag == _CELL:
            reference = attrib.get("r")
            match = _REFERENCE.fullmatch(reference) if reference else None
            self.column = _column_number(match.group(1)) if match else self.column + 1
            if match:
                self._check_row(int(match.group(2)))
            self._widen(self.column)
        elif tag == _ROW:
            self.row = _row_number(attrib.get("r"), self.row)
            self.column = 0
            self._check_row(self.row)
            self._measure()
        elif tag == _SHARED_STRING:
            self.scan.shared_strings += 1
            if self.scan.shared_strings > self.limits.max_shared_strings:
                raise limit_exceeded(
                    "import_xlsx_max_shared_strings",
                    self.limits.max_shared_strings,
                    f"{self.part} holds more than {self.limits.max_shared_strings} shared strings",
                    pointer=self.part,
                )
        elif tag == _SHEET:
            self.scan.sheets += 1
            if self.scan.sheets > self.limits.max_sheets:
                raise limit_exceeded(
                    "import_xlsx_max_sheets",
                    self.limits.max_sheets,
                    f"the workbook has more than {self.limits.max_sheets} sheets",
                    pointer=self.part,
                )
        elif tag == _DIMENSION:
            # openpyxl pads every row to the declared width and stops at the declared last row.
            match = _RANGE.fullmatch(attrib.get("ref", ""))
            if match:
                for letters in (match.group(1), match.group(3)):
                    if letters:
                        self._widen(_column_number(letters))
                for digits in (match.group(2), match.group(4)):
                    if digits:
                        self._check_row(int(digits))

    def end(self, tag: str) -> None:
        if tag == _ROW:
            self._measure()

    def close(self) -> None:
        self._measure()

    def _check_row(self, row: int) -> None:
        if row > self.limits.max_rows:
            raise limit_exceeded(
                "import_xlsx_max_rows",
                self.limits.max_rows,
                f"{self.part} reaches row {row}",
                pointer=self.part,
            )

    def _widen(self, column: int) -> None:
        if column > self.limits.max_columns:
            raise limit_exceeded(
                "import_xlsx_max_columns",
                self.limits.max_columns,
                f"{self.part} reaches column {column}",
                pointer=self.part,
            )
        if column > self.widest:
            self.widest = column
            self._measure()

    def _measure(self) -> None:
        """Account the part's extent so far (every row up to the last padded to the widest column)."""
        extent = self.row * self.widest
        if extent > self.extent:
            self.scan.cells += extent - self.extent
            self.extent = extent
            if self.scan.cells > self.limits.max_cells:
                raise limit_exceeded(
                    "import_xlsx_max_cells",
                    self.limits.max_cells,
                    f"the sheets span more than {self.limits.max_cells} cells (rows times columns, "
                    f"reached in {self.part})",
                    pointer=self.part,
                )


def _row_number(reference: str | None, previous: int) -> int:
    # As openpyxl reads it: an integer, or a float with an integral value; else the next row.
    if reference is None:
        return previous + 1
    try:
        return int(reference)
    except ValueError:
        try:
            number = float(reference)
        except ValueError:
            return previous + 1
        return int(number) if number.is_integer() and abs(number) < 1e18 else previous + 1


def _column_number(letters: str) -> int:
    number = 0
    for letter in letters.upper():
        number = number * 26 + ord(letter) - 64
    return number


class _Refused(Exception):
    """A part declares a DTD or an entity: no xlsx needs one, and they are how XML bombs are made."""


def _refuse(*_args: Any) -> None:
    raise _Refused


def _refuse_external(*_args: Any) -> int:
    raise _Refused


def _scan_part(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: XlsxLimits, scan: WorkbookScan
) -> None:
    """Stream one part through expat, refusing any DTD or entity (as defusedxml does, in a handful of
    handlers; defusedxml's own parsers are pure Python and would triple the scan's cost, and installed it
    would slow openpyxl's reading by half); a part that is not XML (an image) ends its scan where it
    stops being XML, as it would end openpyxl's reading."""
    counter = _SheetCounter(info.filename, limits, scan)
    parser = expat.ParserCreate(namespace_separator="}")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse
    parser.EntityDeclHandler = _refuse
    parser.UnparsedEntityDeclHandler = _refuse
    parser.ExternalEntityRefHandler = _refuse_external
    parser.StartElementHandler = counter.start
    parser.EndElementHandler = counter.end
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                parser.Parse(chunk, False)
        parser.Parse(b"", True)
    except _Refused:
        message = f"{info.filename} declares a DTD or entities, which no xlsx needs"
        raise _malformed(message, info.filename) from None
    except UNREADABLE_ZIP as exc:
        raise _malformed(f"{info.filename} cannot be unzipped: {exc}", info.filename) from None
    except expat.ExpatError:
        pass  # not XML (any more): nothing openpyxl would read from it either
    counter.close()


def _malformed(message: str, pointer: str = "") -> BadRequest:
    return BadRequest(message, code="malformed_body", errors=[ErrorItem(pointer, "malformed_body", message)])
