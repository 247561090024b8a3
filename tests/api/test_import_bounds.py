"""Import's bounds (audit finding 2): IMPORT is checked before the body is read, an xlsx is bounded from its
zip directory and a streaming scan before openpyxl reads it (413 naming the limit), and a JSON import is
parsed off the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient
from starlette.types import Message

from blockrepo.massdata.transfer import document as document_module
from blockrepo.massdata.transfer import xlsx as xlsx_reader
from blockrepo.massdata.transfer.document import Document
from tests.api.access_helpers import PASSWORD, create_role, create_user
from tests.conftest import ADMIN_PASSWORD
from tests.xlsx_bombs import many_parts, row_gap, shared_strings_bomb, workbook, zip_bomb

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
IMPORT = "/api/massdata/import"


@pytest.fixture
def openpyxl_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if openpyxl is asked to open the workbook: the bounds must refuse it first."""

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("openpyxl was asked to read a workbook beyond the bounds")

    monkeypatch.setattr(xlsx_reader, "load_workbook", refuse)


def _refused(client: TestClient, body: bytes, setting: str) -> dict[str, Any]:
    response = client.post(IMPORT, content=body, headers={"Content-Type": XLSX})
    assert response.status_code == 413, response.text
    problem = response.json()
    assert response.headers["content-type"].startswith("application/problem+json")
    assert problem["code"] == "payload_too_large"
    assert problem["limit"]["name"] == setting
    assert setting in problem["detail"] and str(problem["limit"]["value"]) in problem["detail"]
    return problem  # type: ignore[no-any-return]


@pytest.mark.usefixtures("openpyxl_untouched")
def test_the_audits_row_gap_workbook_is_413_naming_the_column_limit(client: TestClient) -> None:
    problem = _refused(client, row_gap(), "import_xlsx_max_columns")
    assert problem["limit"]["value"] == 1_024


@pytest.mark.usefixtures("openpyxl_untouched")
def test_a_row_gap_within_the_columns_is_413_naming_the_cells_limit(client: TestClient) -> None:
    _refused(client, row_gap(row=200_000, column="ALL"), "import_xlsx_max_cells")  # 200,000 x 1,000


@pytest.mark.usefixtures("openpyxl_untouched")
def test_a_row_beyond_the_limit_is_413_naming_the_rows_limit(client: TestClient) -> None:
    _refused(client, row_gap(row=2_000_000, column="A"), "import_xlsx_max_rows")


def _with_dimension(reference: str) -> bytes:
    return workbook(
        {"_index": ""},
        extra_parts={
            "xl/worksheets/sheet9.xml": (
                '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
                f'<dimension ref="{reference}"/><sheetData/></worksheet>'
            ).encode()
        },
    )


@pytest.mark.usefixtures("openpyxl_untouched")
def test_a_declared_dimension_counts_like_cells(client: TestClient) -> None:
    # openpyxl pads each row to the width a sheet declares and reads up to the row it declares.
    _refused(client, _with_dimension("A1:AMK1"), "import_xlsx_max_columns")  # AMK: column 1,025
    _refused(client, _with_dimension("A1:B2000000"), "import_xlsx_max_rows")


@pytest.mark.usefixtures("openpyxl_untouched")
def test_the_audits_shared_strings_bomb_is_413(client: TestClient) -> None:
    # 3 million empty strings deflate more than a hundredfold: the zip directory refuses them unread.
    _refused(client, shared_strings_bomb(), "import_xlsx_max_compression_ratio")


@pytest.mark.usefixtures("openpyxl_untouched")
def test_a_zip_bomb_is_413_naming_the_ratio(client: TestClient) -> None:
    problem = _refused(client, zip_bomb(), "import_xlsx_max_compression_ratio")
    assert problem["errors"][0]["pointer"] == "xl/padding.xml"


@pytest.mark.usefixtures("openpyxl_untouched")
def test_too_many_sheets_is_413(client: TestClient) -> None:
    _refused(client, workbook({"_index": ""}, sheet_entries=1_001), "import_xlsx_max_sheets")


@pytest.mark.usefixtures("openpyxl_untouched")
def test_too_many_zip_parts_is_413_before_the_directory_is_read(client: TestClient) -> None:
    _refused(client, many_parts(2_100), "import_xlsx_max_sheets")


def test_a_doctype_in_a_part_is_400(client: TestClient) -> None:
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        '<row><c t="inlineStr"><is><t>&lol2;</t></is></c></row></sheetData></worksheet>'
    )
    body = workbook({"_index": ""}, extra_parts={"xl/worksheets/sheet7.xml": laughs.encode()})
    response = client.post(IMPORT, content=body, headers={"Content-Type": XLSX})
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "malformed_body"


def test_an_export_passes_the_bounds(client: TestClient) -> None:
    exported = client.get("/api/massdata/export", params={"format": "xlsx"}).content
    response = client.post(IMPORT, content=exported, headers={"Content-Type": XLSX}, params={"dryRun": True})
    assert response.status_code == 200, response.text


# --- IMPORT before the body -------------------------------------------------------------------------------


@pytest.fixture
def reader(client: TestClient) -> tuple[str, str]:
    create_role(client, "Importless", functionalPermissions=["MASSDATA", "EXPORT"])
    create_user(client, "reader", ["Importless"])
    return ("reader", PASSWORD)


def _basic(login: str, password: str) -> bytes:
    import base64

    return b"Basic " + base64.b64encode(f"{login}:{password}".encode())


async def _post_recording_receive(
    app: FastAPI, credentials: bytes, body: bytes, content_type: str = XLSX
) -> tuple[int, bool]:
    """POST an import straight to the ASGI app; returns the status and whether the app asked for the body."""
    body_read = False
    status = 0

    async def receive() -> Message:
        nonlocal body_read
        body_read = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": IMPORT,
        "raw_path": IMPORT.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", credentials),
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
        "state": {},
    }
    await app(scope, receive, send)
    return status, body_read


def test_a_caller_without_import_gets_403_before_the_body_is_read(
    app: FastAPI, client: TestClient, reader: tuple[str, str]
) -> None:
    body = row_gap()
    status, body_read = asyncio.run(_post_recording_receive(app, _basic(*reader), body))
    assert (status, body_read) == (403, False)
    # The same request from someone with IMPORT reads the body (and is refused for its size).
    status, body_read = asyncio.run(_post_recording_receive(app, _basic("system", ADMIN_PASSWORD), body))
    assert (status, body_read) == (413, True)


@pytest.mark.parametrize("content_type", ["text/plain", "application/octet-stream", "multipart/form-data"])
def test_an_undeclared_body_type_is_415_before_the_body_is_read(app: FastAPI, content_type: str) -> None:
    credentials = _basic("system", ADMIN_PASSWORD)
    status, body_read = asyncio.run(_post_recording_receive(app, credentials, row_gap(), content_type))
    assert (status, body_read) == (415, False)


def test_a_caller_without_import_gets_403_for_json_too(client: TestClient, reader: tuple[str, str]) -> None:
    response = client.post(IMPORT, json={"format": "blockrepo-export"}, auth=reader)
    assert response.status_code == 403
    assert "IMPORT" in response.json()["detail"]


# --- JSON off the event loop ------------------------------------------------------------------------------


@pytest.fixture
def parse_waits_for_a_read(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The import's parse waits until another request has been answered; had it run on the event loop,
    that request could not be served meanwhile."""
    answered = threading.Event()
    original = document_module.parse_json_document

    def waiting(raw: bytes | bytearray) -> Document:
        if not answered.wait(timeout=10):
            raise AssertionError("no other request was served while the import parsed")
        return original(raw)

    monkeypatch.setattr("blockrepo.api.v7_4.massdata.parse_json_document", waiting)
    yield answered


def test_a_json_import_is_parsed_off_the_event_loop(
    app: FastAPI, parse_waits_for_a_read: threading.Event
) -> None:
    document = {"format": "blockrepo-export", "elements": {"BusinessProcess": [{"name": "Parsed aside"}]}}

    async def scenario() -> tuple[int, int]:
        transport = httpx.ASGITransport(app=app)
        auth = ("system", ADMIN_PASSWORD)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", auth=auth) as http:
            importing = asyncio.create_task(http.post(IMPORT, json=document))
            read = await http.get("/api/massdata/BusinessProcess")
            parse_waits_for_a_read.set()
            return read.status_code, (await importing).status_code

    with TestClient(app):  # the app's lifespan: its services started
        assert asyncio.run(scenario()) == (200, 200)
