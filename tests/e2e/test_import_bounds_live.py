"""Import's bounds over real HTTP (audit finding 2): a caller without IMPORT is refused before the body is
sent, and a crafted xlsx is refused 413 naming the limit."""

from __future__ import annotations

import base64
import socket
from urllib.parse import urlsplit

import httpx
import pytest

from tests.api.access_helpers import PASSWORD
from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer
from tests.xlsx_bombs import row_gap

pytestmark = pytest.mark.e2e

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
ADMIN = ("system", ADMIN_PASSWORD)


def _reader(server: LiveServer) -> None:
    with httpx.Client(base_url=server.base_url, auth=ADMIN) as admin:
        role = {"name": "Importless", "functionalPermissions": ["MASSDATA", "EXPORT"]}
        assert admin.post("/api/administration/roles", json=role).status_code == 201
        user = {"login": "reader", "password": PASSWORD, "roles": ["Importless"]}
        assert admin.post("/api/administration/users", json=user).status_code == 201


def _first_answer_to_an_announced_body(server: LiveServer, login: str, password: str, size: int) -> bytes:
    """Send only the head of an import that announces `size` bytes and waits for `100 Continue`; returns
    the server's first status line."""
    address = urlsplit(server.base_url)
    credentials = base64.b64encode(f"{login}:{password}".encode()).decode()
    head = (
        "POST /api/massdata/import HTTP/1.1\r\n"
        f"Host: {address.netloc}\r\n"
        f"Authorization: Basic {credentials}\r\n"
        f"Content-Type: {XLSX}\r\n"
        f"Content-Length: {size}\r\n"
        "Expect: 100-continue\r\n\r\n"
    )
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(head.encode())
        answer = b""
        while b"\r\n" not in answer:
            chunk = connection.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0]


def test_a_large_import_without_import_is_refused_before_its_body_is_sent(live_server: LiveServer) -> None:
    _reader(live_server)
    hundred_mib = 100 << 20
    # No `100 Continue`: the server answered from the head alone, the body was never asked for.
    assert _first_answer_to_an_announced_body(live_server, "reader", PASSWORD, hundred_mib) == (
        b"HTTP/1.1 403 Forbidden"
    )
    # Whoever may import is asked for the body.
    assert _first_answer_to_an_announced_body(live_server, *ADMIN, hundred_mib) == b"HTTP/1.1 100 Continue"


def test_the_audits_row_gap_workbook_is_413_over_http(live_server: LiveServer) -> None:
    response = httpx.post(
        f"{live_server.base_url}/api/massdata/import",
        content=row_gap(),
        headers={"Content-Type": XLSX},
        auth=ADMIN,
        timeout=60,
    )
    assert response.status_code == 413
    assert response.json()["limit"] == {"name": "import_xlsx_max_columns", "value": 1_024}
