"""A damaged xlsx import (corrupt deflate data, a zip64 record pointing past the file, any flipped byte of
an export) is a 400 `malformed_body` (or another 4xx), never a 5xx."""

from __future__ import annotations

import io
import struct
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.api.test_elements_properties_fuzz import FUZZ
from tests.xlsx_bombs import workbook

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
IMPORT = "/api/massdata/import"


def _post(client: TestClient, body: bytes) -> int:
    response = client.post(IMPORT, content=body, headers={"Content-Type": XLSX}, params={"dryRun": True})
    assert response.status_code < 500, response.text
    return response.status_code


def _corrupt_deflate() -> bytes:
    """A workbook whose sheet's deflate stream is garbage (the sizes and CRC still as declared)."""
    body = bytearray(workbook({"_index": "<row><c t='inlineStr'><is><t>x</t></is></c></row>" * 20}))
    with zipfile.ZipFile(io.BytesIO(bytes(body))) as archive:
        info = archive.getinfo("xl/worksheets/sheet1.xml")
    name_length, extra_length = struct.unpack_from("<HH", body, info.header_offset + 26)
    data = info.header_offset + 30 + name_length + extra_length
    body[data : data + info.compress_size] = b"\xff" * info.compress_size  # an invalid block type
    return bytes(body)


def _zip64_offset_past_the_file() -> bytes:
    """An end record declaring 0xFFFF entries and a zip64 locator whose record offset is 2**64 - 1."""
    body = workbook({"_index": ""})
    end = body.rfind(b"PK\x05\x06")
    record = bytearray(body[end:])
    struct.pack_into("<HH", record, 8, 0xFFFF, 0xFFFF)
    locator = b"PK\x06\x07" + struct.pack("<IQI", 0, 2**64 - 1, 1)
    return body[:end] + locator + bytes(record)


@pytest.mark.parametrize(
    "body", [_corrupt_deflate(), _zip64_offset_past_the_file()], ids=["deflate", "zip64"]
)
def test_a_damaged_zip_is_400_malformed_body(client: TestClient, body: bytes) -> None:
    response = client.post(IMPORT, content=body, headers={"Content-Type": XLSX})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "malformed_body"


@pytest.fixture
def export(client: TestClient) -> bytes:
    """A small export: the fuzz below damages copies of it."""
    response = client.get("/api/massdata/export", params={"format": "xlsx"})
    assert response.status_code == 200
    return response.content


@settings(FUZZ, max_examples=60)
@given(
    edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=8),
    cut=st.one_of(st.none(), st.floats(0, 1, exclude_max=True)),
)
def test_a_mutated_export_is_never_5xx(
    client: TestClient, export: bytes, edits: list[tuple[float, int]], cut: float | None
) -> None:
    body = bytearray(export)
    for where, value in edits:
        body[int(where * len(body))] = value
    if cut is not None:
        del body[int(cut * len(body)) :]
    assert _post(client, bytes(body)) in {200, 201, 204, 400, 413, 415}
