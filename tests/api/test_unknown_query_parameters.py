"""Unknown query parameters are refused (API.md section 9): every operation of the published description
answers 400 `unknown_query_parameter` naming each name it does not know, and changes nothing; every name it
documents is accepted; pages, assets and probes outside the API take any query."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from starlette.testclient import TestClient

from blockrepo.api.known_parameters import LONGEST_NAME, MOST_NAMED
from blockrepo.revisions.models import Revision
from tests.helpers import session_of

OPENAPI_PATH = "/api/7_4/openapi.json"
CODE = "unknown_query_parameter"
PATH_VALUES = {"type": "BusinessProcess", "id": "999999", "name": "Nope", "key": "no-such-scenario"}
# The live change stream never ends by itself (tests/contract/test_openapi_contract.py): it is asked only
# with an unknown name, which is refused before the stream starts.
ENDLESS = ("get", "/api/history/stream")


def operations(document: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(method, path with values, documented query parameter names) of every operation."""
    found = []
    for path, item in document["paths"].items():
        concrete = re.sub(r"\{(\w+)\}", lambda match: PATH_VALUES[match[1]], path)
        for method in ("get", "head", "post", "put", "patch", "delete"):
            if method in item:
                parameters = item[method].get("parameters", [])
                names = [p["name"] for p in parameters if "$ref" not in p and p.get("in") == "query"]
                found.append((method, concrete, names))
    return found


def revisions(app: FastAPI) -> int:
    with session_of(app) as db:
        return int(db.scalar(select(func.count()).select_from(Revision)) or 0)


def assert_unknown(response: httpx.Response, *names: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["code"] == CODE, problem
    assert [(e["pointer"], e["code"]) for e in problem["errors"]] == [(f"query:{n}", CODE) for n in names]
    return problem


@pytest.fixture
def document(anon: TestClient) -> dict[str, Any]:
    return anon.get(OPENAPI_PATH).json()  # type: ignore[no-any-return]


def test_a_misspelt_parameter_is_refused_naming_it(client: TestClient) -> None:
    client.post("/api/element/BusinessProcess", json={"name": ["Order handling"]})
    response = client.get("/api/massdata/BusinessProcess", params={"query": '@name = "x"', "limit": "5"})
    problem = assert_unknown(response, "query")
    assert "'query'" in problem["detail"]
    assert "filter" in problem["detail"]  # the names the operation does take


def test_each_unknown_name_is_named_once_in_the_order_sent(client: TestClient) -> None:
    response = client.get("/api/history?asof=1&limit=2&Limit=3&asof=2&=4")
    assert_unknown(response, "asof", "Limit", "")


def test_a_refused_delete_deletes_nothing(app: FastAPI, client: TestClient) -> None:
    parent = client.post("/api/element/BusinessProcess", json={"name": ["Parent"]}).json()
    child = {"name": ["Child"], "parent": [parent["id"][0]]}
    assert client.post("/api/element/BusinessProcess", json=child).status_code == 201
    path = f"/api/element/BusinessProcess/{parent['id'][0]}"
    before = revisions(app)
    assert_unknown(client.delete(path, params={"recursve": "true"}), "recursve")
    assert client.get(path).status_code == 200
    assert revisions(app) == before
    assert client.delete(path, params={"recursive": "true"}).status_code == 204


def test_a_refused_write_writes_nothing(app: FastAPI, client: TestClient) -> None:
    created = client.post("/api/element/BusinessProcess", json={"name": ["Order handling"]}).json()
    path = f"/api/element/BusinessProcess/{created['id'][0]}"
    before = revisions(app)
    for method in ("PUT", "PATCH"):
        response = client.request(method, path, params={"dryRun": "true"}, json={"description": ["x"]})
        assert_unknown(response, "dryRun")
    assert client.get(path).json()["description"] == []
    assert revisions(app) == before


def test_every_operation_refuses_a_name_it_does_not_know(
    client: TestClient, document: dict[str, Any]
) -> None:
    for method, path, _ in operations(document):
        response = client.request(method.upper(), path, params={"zzUnknown": "1"})
        if method == "head":
            assert response.status_code == 400, path
        else:
            assert_unknown(response, "zzUnknown")


def test_every_documented_name_is_known(client: TestClient, document: dict[str, Any]) -> None:
    """Sent with a value of the wrong kind or to an element that does not exist: refused, if at all, for
    another reason than an unknown name."""
    checked = 0
    for method, path, names in operations(document):
        if method == "head" or (method, path) == ENDLESS or not names:
            continue
        response = client.request(method.upper(), path, params=dict.fromkeys(names, "x"))
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            assert response.json()["code"] != CODE, (method, path, response.text)
        checked += 1
    assert checked >= 10  # the loop reached the operations with query parameters


def test_a_refusal_names_a_bounded_number_of_bounded_names(client: TestClient) -> None:
    names = [f"n{i}" for i in range(MOST_NAMED + 5)]
    problem = client.get("/api/metamodel", params=dict.fromkeys(names, "")).json()
    assert [e["pointer"] for e in problem["errors"]] == [f"query:{n}" for n in names[:MOST_NAMED]]
    assert "(and 5 more)" in problem["detail"]
    long = "x" * (LONGEST_NAME + 50)
    problem = client.get("/api/metamodel", params={long: ""}).json()
    assert problem["errors"][0]["pointer"] == f"query:{'x' * LONGEST_NAME}…"


def test_authentication_comes_first(anon: TestClient) -> None:
    response = anon.get("/api/metamodel", params={"x": "1"})
    assert response.status_code == 401


def test_credentials_in_a_login_url_keep_their_own_refusal(client: TestClient) -> None:
    response = client.get("/api/j_service_security_check", params={"j_username": "system"})
    assert response.json()["code"] == "credentials_in_url"
    assert_unknown(client.get("/api/metamodel", params={"j_password": "x"}), "j_password")


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/", 200),
        ("/web/css/app.css", 200),
        ("/health", 200),
        ("/ready", 200),
        (OPENAPI_PATH, 200),
        ("/api/7_4/", 200),
        ("/api/7_4/assets/swagger-ui.css", 200),
        ("/api/openapi.json", 307),
    ],
)
def test_pages_assets_and_probes_take_any_query(anon: TestClient, path: str, status: int) -> None:
    response = anon.get(path, params={"v": "3", "utm_source": "mail"}, follow_redirects=False)
    assert response.status_code == status, response.text


def test_options_answers_before_the_check(client: TestClient) -> None:
    response = client.options("/api/metamodel", params={"x": "1"})
    assert response.status_code == 204
    assert "GET" in response.headers["allow"]


EXAMPLES = settings(
    max_examples=60,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    deadline=None,  # never a timing assertion
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# A sample of reads, each with known parameters that stay in the request (and are not named).
READS: tuple[tuple[str, dict[str, str]], ...] = (
    ("/api/metamodel", {}),
    ("/api/massdata/BusinessProcess", {"limit": "2", "sort": "name"}),
    ("/api/element/BusinessProcess/{id}", {}),
    ("/api/history", {"limit": "3"}),
    ("/api/history/BusinessProcess", {"limit": "3"}),
    ("/api/administration/users", {}),
    ("/api/tokens", {"everyone": "false"}),
)
# Any name a URL can carry: no NUL (refused before routing as a NUL, API.md section 7), no lone surrogate
# (no UTF-8 for it).
parameter_names = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), min_size=1, max_size=40
)


@pytest.fixture
def reads(app: FastAPI, client: TestClient, document: dict[str, Any]) -> Iterator[list[Any]]:
    created = client.post("/api/element/BusinessProcess", json={"name": ["Order handling"]}).json()
    sample = []
    for template, known in READS:
        path = template.replace("{id}", str(created["id"][0]))
        item = document["paths"][template.replace("BusinessProcess", "{type}")]["get"]
        documented = {p["name"] for p in item.get("parameters", []) if p.get("in") == "query"}
        answer = client.get(path, params=known)
        assert answer.status_code == 200, answer.text
        sample.append((path, known, documented, answer.json()))
    yield sample


@EXAMPLES
@given(read=st.integers(0, len(READS) - 1), name=parameter_names, value=st.text(max_size=10))
def test_any_unknown_name_on_a_read_is_refused_naming_it_and_changes_nothing(
    app: FastAPI, client: TestClient, reads: list[Any], read: int, name: str, value: str
) -> None:
    path, known, documented, answer = reads[read]
    assume(name not in documented)
    value = value.replace("\x00", "")
    before = revisions(app)
    assert_unknown(client.get(path, params={**known, name: value}), name)
    again = client.get(path, params=known)
    assert again.status_code == 200
    assert again.json() == answer
    assert revisions(app) == before
