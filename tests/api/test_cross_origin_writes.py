"""CSRF beyond the session cookie (API.md rule 1.3, section 9): every modifying operation accepts only the
body types it declares, and a browser's request for a page of another origin needs the CSRF token
whatever authenticated it, since a browser replays the Basic credentials it remembers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.auth_support import bare_client, cookie_value, session_headers
from tests.conftest import ADMIN_PASSWORD

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
DOMAINS = "/api/massdata/BusinessDomain"
ELEMENTS = "/api/element/BusinessProcess"
BASIC = ("system", ADMIN_PASSWORD)
# The body types a page of another site can send without a CORS preflight, plus the catch-all of binaries.
SIMPLE_BODIES: dict[str, bytes] = {
    "text/plain": b"PK\x03\x04",
    "application/x-www-form-urlencoded": b"a=b",
    "multipart/form-data; boundary=x": (
        b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\nb\r\n--x--\r\n'
    ),
}
FOREIGN_BROWSER_HEADERS = [
    {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:9999"},  # another loopback port
    {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
    {"Sec-Fetch-Site": "same-site"},  # a no-cors request may carry no Origin the test can rely on
    {"Origin": "https://evil.example"},  # a browser without fetch metadata
    {"Origin": "null"},  # a sandboxed frame
]
FOREIGN_IDS = ["same-site-port", "cross-site", "fetch-site-only", "origin-only", "null-origin"]


def domain_names(client: TestClient) -> list[str]:
    response = client.get(DOMAINS, params={"limit": 1000})
    assert response.status_code == 200, response.text
    return sorted(item["name"][0] for item in response.json()["items"])


@pytest.fixture
def workbook_of_one_domain(client: TestClient) -> bytes:
    """An xlsx export holding one business domain, and then seven in the repository: imported with
    `mode=cud`, the workbook would delete six of them."""
    assert client.post("/api/element/BusinessDomain", json={"name": ["Sales"]}).status_code == 201
    exported = client.get("/api/massdata/export", params={"format": "xlsx", "types": "BusinessDomain"})
    assert exported.status_code == 200, exported.text
    for name in ("Finance", "Logistics", "Production", "Research", "Service", "Purchasing"):
        assert client.post("/api/element/BusinessDomain", json={"name": [name]}).status_code == 201
    return exported.content


@pytest.mark.parametrize(
    "media_type", ["text/plain", "application/x-www-form-urlencoded", "application/octet-stream", ""]
)
def test_an_import_in_an_undeclared_type_is_415_and_deletes_nothing(
    client: TestClient, workbook_of_one_domain: bytes, media_type: str
) -> None:
    before = domain_names(client)
    headers = {"Content-Type": media_type} if media_type else {}
    response = client.post(
        "/api/massdata/import", params={"mode": "cud"}, content=workbook_of_one_domain, headers=headers
    )
    assert response.status_code == 415, response.text
    assert response.json()["code"] == "unsupported_media_type"
    assert domain_names(client) == before


def test_the_same_workbook_declared_as_xlsx_is_imported(
    client: TestClient, workbook_of_one_domain: bytes
) -> None:
    """The refusal above is the content type's, not the workbook's."""
    response = client.post(
        "/api/massdata/import",
        params={"mode": "cud"},
        content=workbook_of_one_domain,
        headers={"Content-Type": XLSX},
    )
    assert response.status_code == 200, response.text
    assert domain_names(client) == ["Sales"]


@pytest.mark.parametrize("headers", FOREIGN_BROWSER_HEADERS, ids=FOREIGN_IDS)
def test_a_foreign_pages_import_with_remembered_basic_credentials_is_refused(
    app: FastAPI, client: TestClient, workbook_of_one_domain: bytes, headers: dict[str, str]
) -> None:
    """The audit's attack: a page on another port posts the workbook as text/plain, the browser adds the
    Basic credentials it remembers. Declared as xlsx it is refused too (the token is missing)."""
    before = domain_names(client)
    for media_type in ("text/plain", XLSX):
        response = bare_client(app).post(
            "/api/massdata/import",
            params={"mode": "cud"},
            content=workbook_of_one_domain,
            headers={**headers, "Content-Type": media_type},
            auth=BASIC,
        )
        assert response.status_code == 403, response.text
        assert response.json()["code"] == "csrf_token_missing"
    assert domain_names(client) == before


@pytest.mark.parametrize("headers", FOREIGN_BROWSER_HEADERS, ids=FOREIGN_IDS)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_foreign_pages_write_with_basic_credentials_needs_the_token(
    app: FastAPI, client: TestClient, headers: dict[str, str], method: str
) -> None:
    element = client.post(ELEMENTS, json={"name": ["Order handling"]}).json()["id"][0]
    web = bare_client(app)
    path = ELEMENTS if method == "POST" else f"{ELEMENTS}/{element}"
    body = {"name": ["Invoicing"]} if method == "POST" else {"description": ["changed"]}
    for extra in ({}, {"X-XSRF-TOKEN": "guessed-token-of-no-session"}):
        response = web.request(
            method, path, json=None if method == "DELETE" else body, headers={**headers, **extra}, auth=BASIC
        )
        assert response.status_code == 403, response.text
        assert response.json()["code"] == ("csrf_token_invalid" if extra else "csrf_token_missing")
    current = client.get(f"{ELEMENTS}/{element}").json()
    assert current["description"] == [] and current["revision"] == [1]
    listed = client.get("/api/massdata/BusinessProcess").json()["items"]
    assert [item["name"] for item in listed] == [["Order handling"]]


def test_a_foreign_pages_write_with_basic_and_the_sessions_token_passes(app: FastAPI) -> None:
    """What the rule asks for is the token: a page that has it (it shares the session) may write."""
    web = bare_client(app)
    login = web.get("/api/auth-scheme", auth=BASIC)
    session_id, token = cookie_value(login, "JSESSIONID"), cookie_value(login, "XSRF-TOKEN")
    response = web.post(
        ELEMENTS,
        json={"name": ["Invoicing"]},
        headers={**session_headers(session_id, token), "Sec-Fetch-Site": "same-site"},
        auth=BASIC,
    )
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    "headers",
    [
        {},  # curl, scripts
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1"},
        {"Sec-Fetch-Site": "none"},  # typed in by the user
        {"Origin": "http://127.0.0.1:80"},
    ],
    ids=["script", "same-origin", "user-initiated", "default-port"],
)
def test_basic_credentials_of_a_script_or_the_own_origin_need_no_token(
    app: FastAPI, headers: dict[str, str]
) -> None:
    response = bare_client(app).post(ELEMENTS, json={"name": ["Invoicing"]}, headers=headers, auth=BASIC)
    assert response.status_code == 201, response.text


# --- every modifying operation -----------------------------------------------------------------------


def _modifying_operations(document: dict[str, Any]) -> list[tuple[str, str, set[str]]]:
    """(method, path, declared body media types) of every operation that takes a body."""
    found = []
    for path, item in document["paths"].items():
        for method in ("post", "put", "patch", "delete"):
            body = item.get(method, {}).get("requestBody")
            if body is not None:
                found.append((method.upper(), path, set(body["content"])))
    return found


def _concrete(path: str) -> str:
    # Existing ids and names where a route looks its target up: the body's type is checked first anyway.
    return re.sub(r"\{[^}]+\}", lambda m: "BusinessProcess" if m.group(0) == "{type}" else "1", path)


def test_every_modifying_operation_refuses_body_types_it_does_not_declare(client: TestClient) -> None:
    operations = _modifying_operations(client.get("/api/7_4/openapi.json").json())
    assert len(operations) > 15, "the walk found too few operations; did the description move?"
    accepted = []
    for method, path, declared in operations:
        for media_type, body in SIMPLE_BODIES.items():
            if media_type.split(";")[0] in declared:
                continue
            response = client.request(
                method, _concrete(path), content=body, headers={"Content-Type": media_type}
            )
            if response.status_code != 415:
                accepted.append((method, path, media_type, response.status_code))
    assert accepted == []
