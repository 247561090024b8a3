"""NUL (U+0000) in any text a client sends is a clear 400 (401 in credentials) that changes nothing, on
SQLite and PostgreSQL alike (PostgreSQL cannot store or even compare it; SQLite used to store it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.auth_support import PROTECTED, bare_client, form_login
from tests.conftest import ADMIN_PASSWORD

NUL = "\x00"
STATE_PATHS = (
    "/api/administration/users",
    "/api/administration/roles",
    "/api/administration/attributegroups",
    "/api/administration/attributes",
    "/api/metamodel",
    "/api/history?sinceRevision=0&limit=1000",
)


@dataclass(frozen=True)
class Case:
    """A request with NUL somewhere and the pointers the 400 must name."""

    method: str
    path: str
    pointers: list[str]
    body: Any = None
    params: dict[str, str] = field(default_factory=dict)


BODY_CASES = {
    "user first name": Case(
        "POST",
        "/api/administration/users",
        ["/firstName"],
        {"login": "eve", "firstName": f"Ev{NUL}e", "lastName": "Smith", "password": "a-long-password"},
    ),
    "user login": Case(
        "POST", "/api/administration/users", ["/login"], {"login": f"eve{NUL}", "password": "a-long-password"}
    ),
    "role name": Case("POST", "/api/administration/roles", ["/name"], {"name": f"Auditors{NUL}"}),
    "role sub-role": Case(
        "POST", "/api/administration/roles", ["/subRoles/0"], {"name": "Auditors", "subRoles": [NUL]}
    ),
    "group name": Case("POST", "/api/administration/attributegroups", ["/name"], {"name": f"Fin{NUL}ance"}),
    "attribute name": Case(
        "POST", "/api/administration/attributes", ["/name"], {"name": f"Risk{NUL}", "valueType": "text"}
    ),
    "enum literal": Case(
        "POST",
        "/api/administration/attributes",
        ["/literals/1/name"],
        {"name": "Risk", "valueType": "enum", "literals": [{"name": "low"}, {"name": f"hi{NUL}gh"}]},
    ),
    "metamodel type name": Case("POST", "/api/metamodel/types", ["/name"], {"name": f"Data{NUL}Center"}),
    "metamodel display name": Case(
        "PUT", "/api/metamodel/types/Project", ["/displayName"], {"displayName": f"Pro{NUL}jects"}
    ),
    "relation type end": Case(
        "POST",
        "/api/metamodel/relationtypes",
        ["/sourceEnd"],
        {
            "name": "Hosting",
            "source": "Project",
            "sourceEnd": f"h{NUL}",
            "target": "Project",
            "targetEnd": "t",
        },
    ),
    "element name": Case("POST", "/api/element/BusinessProcess", ["/name/0"], {"name": [f"Order{NUL}"]}),
    "element key": Case(
        "POST",
        "/api/element/BusinessProcess",
        [f"/descr{NUL}iption"],
        {"name": ["Order"], f"descr{NUL}iption": ["x"]},
    ),
    "element relation by name": Case(
        "PATCH",
        "/api/element/BusinessProcess/{id}",
        ["/parent/0/name"],
        {"parent": [{"name": f"Sales{NUL}"}]},
    ),
    "element value, several": Case(
        "PUT",
        "/api/element/BusinessProcess/{id}",
        ["/name/0", "/description/0"],
        {"name": [f"{NUL}"], "description": [f"a{NUL}b"]},
    ),
    "bulk": Case(
        "POST",
        "/api/massdata/BusinessProcess",
        ["/elements/1/name/0"],
        {"elements": [{"name": ["fine"]}, {"name": [f"bad{NUL}"]}]},
    ),
    "import": Case(
        "POST",
        "/api/massdata/import",
        ["/elements/BusinessProcess/0/name/0"],
        {"format": "blockrepo-export", "elements": {"BusinessProcess": [{"name": [f"x{NUL}"]}]}},
    ),
}
URL_CASES = {
    "path type": Case("GET", "/api/element/Business%00Process/1", ["path"]),
    "path metamodel": Case("DELETE", "/api/metamodel/types/Pro%00ject", ["path"]),
    "path history": Case("GET", "/api/history/Business%00Process", ["path"]),
    "query asOf": Case("GET", "/api/element/BusinessProcess/{id}", ["query:asOf"], params={"asOf": NUL}),
    "query fields": Case(
        "GET", "/api/massdata/BusinessProcess", ["query:fields"], params={"fields": f"name{NUL}"}
    ),
    "query name": Case("GET", "/api/administration/users", [f"query:x{NUL}"], params={f"x{NUL}": "1"}),
}


@pytest.fixture
def element_id(client: TestClient) -> int:
    response = client.post("/api/element/BusinessProcess", json={"name": ["Order handling"]})
    assert response.status_code == 201, response.text
    return int(response.json()["id"][0])


def state(client: TestClient) -> list[Any]:
    return [client.get(path).json() for path in STATE_PATHS]


def send(client: TestClient, case: Case, element_id: int) -> Any:
    return client.request(
        case.method,
        case.path.replace("{id}", str(element_id)),
        json=case.body,
        params=case.params,
    )


@pytest.mark.parametrize("case", [*BODY_CASES.values(), *URL_CASES.values()], ids=[*BODY_CASES, *URL_CASES])
def test_nul_is_refused_with_the_pointer_and_changes_nothing(
    client: TestClient, element_id: int, case: Case
) -> None:
    before = state(client)
    response = send(client, case, element_id)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "validation_failed"
    assert [item["pointer"] for item in problem["errors"]] == case.pointers
    assert {item["code"] for item in problem["errors"]} == {"invalid_character"}
    assert state(client) == before


def test_nul_in_url_is_refused_before_authentication(anon: TestClient) -> None:
    response = anon.get("/api/element/BusinessProcess%00/1")
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "path"


def test_an_escaped_backslash_before_u0000_is_no_nul(client: TestClient) -> None:
    response = client.post(
        "/api/element/BusinessProcess",
        content=b'{"name": ["C:\\\\u0000 drive"]}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text
    assert response.json()["name"] == ["C:\\u0000 drive"]


def test_other_control_characters_are_still_text(client: TestClient) -> None:
    # Text, not names: a name refuses control characters (API.md 1.9, tests/api/test_name_normalization.py).
    body = {"name": ["Tabs"], "description": ["tab\there\x01\x1f"]}
    response = client.post("/api/element/BusinessProcess", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["description"] == ["tab\there\x01\x1f"]


def test_nul_deep_in_a_nested_body_is_found_without_recursion(client: TestClient) -> None:
    depth = 1000
    body = b'{"name": ["x"], "description": ' + b"[" * depth + b'"\\u0000"' + b"]" * depth + b"}"
    response = client.post(
        "/api/element/BusinessProcess", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/description" + "/0" * depth


CREDENTIALS = [
    ("anna" + NUL, "anna-password"),
    ("system" + NUL, ADMIN_PASSWORD),
    ("system", ADMIN_PASSWORD + NUL),
    (NUL, NUL),
]


@pytest.mark.parametrize("login, password", CREDENTIALS, ids=["login", "supervisor", "password", "both"])
def test_nul_in_credentials_is_wrong_credentials(app: FastAPI, login: str, password: str) -> None:
    web = bare_client(app)
    for path in ("/j_service_security_check", "/api/j_service_security_check"):
        response = form_login(web, login, password, path=path)
        assert response.status_code == 401, response.text
        assert response.json()["code"] == "unauthenticated"
    assert web.get(PROTECTED, auth=(login, password)).status_code == 401
    assert web.get("/api/auth-scheme", auth=(login, password)).status_code == 401
    assert web.get("/api/j_service_security_check", auth=(login, password)).status_code == 401
