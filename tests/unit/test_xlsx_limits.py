"""The xlsx bounds' scan (massdata/transfer/xlsx_limits.py): it stops at the first limit a file passes, so a
refused file costs only what was read up to there."""

from __future__ import annotations

import io

import pytest

from blockrepo.errors import PayloadTooLarge
from blockrepo.massdata.transfer.xlsx_limits import WorkbookScan, XlsxLimits, check_workbook
from blockrepo.settings import Settings
from tests.xlsx_bombs import row_gap, shared_strings_bomb, workbook


def test_the_limits_default_to_the_settings() -> None:
    assert XlsxLimits.from_settings(Settings()) == XlsxLimits()


def test_the_scan_stops_at_the_first_cell_beyond_the_columns() -> None:
    with pytest.raises(PayloadTooLarge) as refused:
        check_workbook(io.BytesIO(row_gap()), XlsxLimits())
    assert refused.value.extra["limit"]["name"] == "import_xlsx_max_columns"


def test_the_scan_counts_shared_strings_only_up_to_the_limit() -> None:
    limits = XlsxLimits(max_shared_strings=1_000, max_compression_ratio=1_000_000)
    scan = WorkbookScan()
    with pytest.raises(PayloadTooLarge) as refused:
        check_workbook(io.BytesIO(shared_strings_bomb(50_000)), limits, scan)
    assert refused.value.extra["limit"] == {"name": "import_xlsx_max_shared_strings", "value": 1_000}
    # The parts before the strings and the first 1,001 of them: not the 50,000 the file holds.
    assert scan.shared_strings == 1_001
    assert scan.elements < 2_100  # each string is <si><t/></si>


def test_the_scan_of_the_row_gap_reads_a_handful_of_elements() -> None:
    scan = WorkbookScan()
    with pytest.raises(PayloadTooLarge):
        check_workbook(io.BytesIO(row_gap()), XlsxLimits(), scan)
    assert scan.elements < 20 and scan.cells == 0


def test_the_unzipped_size_is_checked_from_the_directory() -> None:
    body = workbook({"_index": ""}, extra_parts={"xl/notes.xml": b"<notes/>" + b"x" * 200_000})
    with pytest.raises(PayloadTooLarge) as refused:
        check_workbook(io.BytesIO(body), XlsxLimits(max_unzipped_bytes=100_000))
    assert refused.value.extra["limit"]["name"] == "import_xlsx_max_unzipped_bytes"


def test_a_workbook_within_the_bounds_is_counted_whole() -> None:
    rows = "".join(
        f'<row r="{n}"><c r="A{n}"><v>{n}</v></c><c r="C{n}"><v>1</v></c></row>' for n in range(1, 11)
    )
    scan = check_workbook(
        io.BytesIO(workbook({"_index": rows}, shared_strings="<si><t>a</t></si>")), XlsxLimits()
    )
    assert (scan.sheets, scan.shared_strings, scan.cells) == (1, 1, 30)
