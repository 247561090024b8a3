"""Hostile iteraQL and filters from an ordinary editor with MASSDATA: every one is a 400 problem naming the
limit or the literal's position (never a 5xx, never reaching the database), and queries at the limits run."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.api.query_landscape import COSTS, EDITOR, PASSWORD, populate
from tests.conftest import make_settings
from tests.helpers import client_as

LIMIT_CODES = {
    "query_too_long": "query_max_length",
    "query_too_many_steps": "query_max_steps",
    "query_too_deep": "query_max_nesting",
    "query_too_many_operators": "query_max_operators",
}


@pytest.fixture
def ids(app: FastAPI, client: TestClient) -> dict[str, int]:
    return populate(app, client)


@pytest.fixture
def editor(app: FastAPI, ids: dict[str, int]) -> Iterator[TestClient]:
    with client_as(app, EDITOR, PASSWORD) as client:
        yield client


def run_query(client: TestClient | httpx.Client, text: str, **body: Any) -> httpx.Response:
    return client.post("/api/massdata/query", json={"query": text, **body})


def run_filter(client: TestClient, text: str, type_name: str = "InformationSystem") -> httpx.Response:
    return client.get(f"/api/massdata/{type_name}", params={"filter": text})


def names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    body = response.json()
    return sorted(item["name"][0] for item in body.get("result", body.get("items", [])))


def assert_refused(response: httpx.Response, code: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["code"] == code, problem
    assert problem["errors"] and problem["errors"][0]["code"] == code
    if code in LIMIT_CODES:
        assert f"the limit {LIMIT_CODES[code]} is " in problem["detail"]
        assert problem["limit"]["name"] == LIMIT_CODES[code]
    else:
        assert "position" in problem and f"column {problem['position']['column']}" in problem["detail"]
    return problem


def still_answers(client: TestClient) -> None:
    assert names(run_query(client, "InformationSystem[@Costs > 100];")) == ["CRM"]


# Each seen answered 500 (or crashing the worker) before the limits; the comment names the status seen.
QUERIES = [
    ("BusinessProcess" + "/children" * 100 + ";", "query_too_many_steps"),  # 500 RecursionError
    ("BusinessProcess" + "/children" * 5000 + ";", "query_too_long"),  # worker killed (SIGSEGV)
    ("InformationSystem[" + "!" * 1000 + '@name = "x"];', "query_too_deep"),  # 500
    ("InformationSystem[" + "@Costs=1&" * 1000 + "@Costs=1];", "query_too_many_operators"),  # 500 on SQLite
    ("InformationSystem[" + "@Costs = 1 & " * 2000 + "@Costs = 1];", "query_too_long"),  # 500 / 65,535 params
    ("InformationSystem[" + "(" * 1000 + "@Costs = 1" + ")" * 1000 + "];", "query_too_deep"),  # 200
    (
        "InformationSystem[" + "(@Costs = 1 & " * 500 + "@Costs = 1" + ")" * 500 + "];",
        "query_too_deep",
    ),  # 500
    (
        "BusinessProcess[" + "count(children[" * 200 + "@id = 1" + "]) > 0" * 200 + "];",
        "query_too_deep",
    ),  # 500
    ("InformationSystem[@Costs = 99999999999999999999];", "query_number_out_of_range"),  # 500 overflow
    ("InformationSystem[@id = -9223372036854775809];", "query_number_out_of_range"),  # 500 overflow
    ("InformationSystem[@Costs = " + "9" * 5000 + "];", "query_literal_too_long"),  # 500
    ("InformationSystem[@Costs < 1e999];", "query_number_out_of_range"),  # 200 (compared with infinity)
    (
        "InformationSystem[count(businessProcesses) > 99999999999999999999];",
        "query_number_out_of_range",
    ),  # 500
    (
        "InformationSystem[@lastModificationTime < 9999-12-31T23:59:59-14:00];",
        "query_date_out_of_range",
    ),  # 500
    (
        "InformationSystem[@lastModificationTime > 0001-01-01T00:00:00+14:00];",
        "query_date_out_of_range",
    ),  # 500
    ('InformationSystem[@lastModificationTime < "9999-12-31T23:59:59-14:00"];', "query_date_out_of_range"),
    ("InformationSystem[@name = '" + "x" * 3000 + "'];", "query_literal_too_long"),
]


@pytest.mark.parametrize(
    ("text", "code"), QUERIES, ids=[f"{i}-{code}" for i, (_, code) in enumerate(QUERIES)]
)
def test_hostile_queries_and_filters_are_refused_naming_the_limit(
    editor: TestClient, text: str, code: str
) -> None:
    assert_refused(run_query(editor, text), code)
    if "/" not in text:  # the same predicate as a `filter` (a filter has no navigation steps)
        type_name, _, predicate = text.partition("[")
        assert_refused(run_filter(editor, predicate.removesuffix("];"), type_name), code)
    still_answers(editor)


def test_a_filter_of_plain_text_reports_the_position_in_it(editor: TestClient) -> None:
    problem = assert_refused(run_filter(editor, '@name = "ab" & @Costs > 1e999'), "query_number_out_of_range")
    assert problem["position"] == {"offset": 24, "line": 1, "column": 25}
    assert problem["errors"][0]["pointer"] == "query:filter"
    problem = assert_refused(run_filter(editor, "@Costs > 1 |\n @Costs = 1e400"), "query_number_out_of_range")
    assert problem["position"]["line"] == 2 and problem["position"]["column"] == 11


def test_nul_in_a_query_is_refused_wherever_it_comes_from(editor: TestClient) -> None:
    """NUL gave 500 on PostgreSQL. The request layer refuses it in any JSON body or URL parameter, naming the
    field; a plain-text query reaches the query's own check, which names the position."""
    text = 'InformationSystem[@name = "a\x00b"];'
    for response, pointer in (
        (run_query(editor, text), "/query"),
        (run_filter(editor, '@name = "a\x00b"'), "query:filter"),
    ):
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "validation_failed"
        assert response.json()["errors"][0] == {
            "pointer": pointer,
            "code": "invalid_character",
            "message": "text must not contain NUL (U+0000)",
        }
    plain = editor.post("/api/massdata/query", content=text, headers={"Content-Type": "text/plain"})
    problem = assert_refused(plain, "query_nul_character")
    assert problem["position"]["column"] == 29
    still_answers(editor)


@pytest.mark.parametrize("limit", [10**30, 2**63, -(2**63), 2**64, 0, 1001])
def test_huge_limits_in_the_query_body_are_refused(editor: TestClient, limit: int) -> None:
    response = run_query(editor, "InformationSystem;", limit=limit)
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["pointer"] == "/limit"
    response = editor.get("/api/massdata/InformationSystem", params={"limit": str(limit)})
    assert response.status_code == 400, response.text


def test_a_limit_written_as_a_whole_float_is_an_integer(editor: TestClient) -> None:
    # JSON Schema's `integer`, which the description publishes, takes 2.0; schemathesis sends such values.
    assert len(names(run_query(editor, "InformationSystem;", limit=2.0))) == 2
    response = run_query(editor, "InformationSystem;", limit=2.5)
    assert response.status_code == 400, response.text
    assert response.json()["errors"][0]["pointer"] == "/limit"


# --- at the limits ----------------------------------------------------------------------------------------


def test_queries_at_every_limit_run(editor: TestClient, ids: dict[str, int]) -> None:
    deepest = "BusinessProcess" + "/children" * 11 + ";"
    assert names(run_query(editor, deepest)) == ["Level 11"]
    every_step_filtered = "BusinessProcess[@name = 'Level 0']" + "/children[@id > 0 | @name = 'x']" * 11
    assert names(run_query(editor, every_step_filtered)) == ["Level 11"]
    many = "InformationSystem[" + "@Costs = 1 | " * 128 + "@Costs = 5];"
    assert names(run_query(editor, many)) == ["ERP"]
    negated = "InformationSystem[" + "!" * 15 + "@Costs = 5];"
    assert names(run_query(editor, negated)) == ["CRM", "Shop"]
    nested = "InformationSystem[" + "(" * 15 + "@Costs = 700" + ")" * 15 + "];"
    assert names(run_query(editor, nested)) == ["CRM"]
    counted = "BusinessProcess[" + "count(children[" * 7 + "@id > 0" + "]) > 0" * 7 + "];"
    assert names(run_query(editor, counted)) == [f"Level {level}" for level in range(5)]
    number = f"InformationSystem[@Costs < {2**63 - 1} & @id != {-(2**63)} & @Costs > -1.5e308];"
    assert names(run_query(editor, number)) == ["CRM", "ERP"]
    assert names(run_query(editor, "InformationSystem[@name = '" + "x" * 2000 + "'];")) == []


def test_the_limits_are_settings(database_url: str, ids: dict[str, int]) -> None:
    """Raised limits let longer queries through; each limit still holds on its own."""
    settings: Settings = make_settings(database_url, query_max_length=1_000_000, query_max_steps=3)
    roomy = create_app(settings)
    try:
        with client_as(roomy, EDITOR, PASSWORD) as editor:
            assert_refused(
                run_query(editor, "BusinessProcess" + "/children" * 5000 + ";"), "query_too_many_steps"
            )
            many = "InformationSystem[" + "@Costs = 1 & " * 2000 + "@Costs = 1];"
            assert_refused(run_query(editor, many), "query_too_many_operators")
            assert names(run_query(editor, "BusinessProcess[@name = 'Level 0']/children/children;")) == [
                "Level 2"
            ]
    finally:
        roomy.state.services.dispose()


# --- dates at the edge of the calendar ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "everything"), [("=", False), ("!=", True), ("<", True), ("<=", True), (">", False), (">=", False)]
)
def test_the_last_day_of_the_calendar_compares_like_any_other(
    client: TestClient, editor: TestClient, ids: dict[str, int], op: str, everything: bool
) -> None:
    expected = sorted(COSTS) if everything else []
    assert names(run_filter(editor, f"@lastModificationTime {op} 9999-12-31")) == expected
    # The newest revision, evaluated on history (massdata/asof.py) rather than in SQL.
    as_of = client.get(
        "/api/massdata/InformationSystem",
        params={"filter": f"@lastModificationTime {op} 9999-12-31", "asOf": "9000-01-01T00:00:00Z"},
    )
    assert as_of.status_code == 200, as_of.text
    assert sorted(item["name"][0] for item in as_of.json()["items"]) == expected


def test_integers_beyond_32_bits_compare_with_ids_counts_and_references(
    editor: TestClient, ids: dict[str, int]
) -> None:
    """PostgreSQL keeps ids and counts in 32 bits; a 64-bit literal still compares instead of failing."""
    big, small = 2**63 - 1, -(2**63)
    assert names(run_filter(editor, f"@id < {big} & @id > {small} & @revision < {big}")) == sorted(COSTS)
    assert names(run_filter(editor, f"@id = {big} | count(businessProcesses) >= {big}")) == []
    assert names(run_filter(editor, f"@id < {ids['ERP']}.5 & @id > {ids['ERP'] - 1}.5")) == ["ERP"]
    processes = run_filter(editor, f"@parent = {big} | count(children) > {2**40}", "BusinessProcess")
    assert names(processes) == []
