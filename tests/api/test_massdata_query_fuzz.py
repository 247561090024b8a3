"""Property-based: whatever iteraQL text or `filter` an editor sends (random characters or shaped by the
grammar, with hostile literals), the answer is never a 5xx, and every refusal is a problem document."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.api.query_landscape import EDITOR, PASSWORD, populate
from tests.helpers import client_as

EXAMPLES = settings(
    max_examples=60,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    deadline=None,  # never a timing assertion
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TYPES = ("InformationSystem", "BusinessProcess", "Nope")
ENDS = ("children", "parent", "businessProcesses", "informationSystems", "predecessors", "successors", "x")
PROPERTIES = ("name", "id", "description", "Costs", "lastModificationTime", "status", "runtimePeriod", "nope")
OPERATORS = ("=", "!=", "<", ">", "<=", ">=")
# The characters iteraQL gives meaning to, so that random text often gets past the first character.
SYNTAX = "@!&|()[]/;.=<>-+:'\"\\ \n\t0123456789eETZcountchildrenameCosts"


@pytest.fixture
def editor(app: FastAPI, client: TestClient) -> Iterator[TestClient]:
    populate(app, client)
    with client_as(app, EDITOR, PASSWORD) as editor:
        yield editor


def assert_answered(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["status"] == response.status_code


def quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


offsets = st.builds(
    lambda minutes: dt.timezone(dt.timedelta(minutes=minutes)), st.integers(-14 * 60, 14 * 60)
) | st.just(dt.UTC)
# Literals as a hostile client writes them: any integer however large, any float spelling, any date and
# time zone, strings of any characters (NUL included), and the words.
literals = st.one_of(
    st.integers().map(str),
    st.integers(min_value=-(10**45), max_value=10**45).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e309", "-1e999", "1e-400", ".5", "0.", "9" * 45]),
    st.dates().map(lambda d: d.isoformat().rjust(10, "0")),
    st.datetimes(timezones=offsets).map(lambda d: d.isoformat()),
    st.text(max_size=12).map(quoted),
    st.sampled_from(["null", "true", "false", '"9999-12-31T23:59:59-14:00"', "9999-12-31"]),
)
# Comparisons whose literal suits the property: these get past the compiler to the database.
typed_comparisons = st.one_of(
    st.builds(
        lambda p, o, v: f"@{p} {o} {v}",
        st.sampled_from(["name", "description"]),
        st.sampled_from(OPERATORS),
        st.text(max_size=8).map(quoted),
    ),
    st.builds(
        lambda p, o, v: f"@{p} {o} {v}",
        st.sampled_from(["id", "Costs"]),
        st.sampled_from(OPERATORS),
        st.integers(-(2**63), 2**63 - 1).map(str)
        | st.floats(allow_nan=False, allow_infinity=False).map(repr),
    ),
    st.builds(
        lambda o, v: f"@lastModificationTime {o} {v}",
        st.sampled_from(OPERATORS),
        st.dates().map(lambda d: d.isoformat().rjust(10, "0"))
        | st.datetimes(timezones=offsets).map(lambda d: d.isoformat()),
    ),
    st.builds(
        lambda end, o, v: f"count({end}) {o} {v}",
        st.sampled_from(ENDS[:4]),
        st.sampled_from(OPERATORS),
        st.integers(0, 2**63 - 1).map(str),
    ),
)
properties = st.sampled_from(PROPERTIES).map(lambda name: f"@{name}") | st.sampled_from(
    ["@runtimePeriod.start", "@runtimePeriod.end", '@"Costs"', "@name.x.y"]
)


def atoms(predicates: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    comparison = st.builds(lambda p, o, v: f"{p} {o} {v}", properties, st.sampled_from(OPERATORS), literals)
    text_match = st.builds(
        lambda p, m, v: f"{p}.{m}({v})",
        properties,
        st.sampled_from(["contains", "startsWith", "endsWith", "matches"]),
        literals,
    )
    count = st.builds(
        lambda end, where, o, v: f"count({end}{f'[{where}]' if where else ''}) {o} {v}",
        st.sampled_from(ENDS),
        st.none() | predicates,
        st.sampled_from(OPERATORS),
        literals,
    )
    count_values = st.builds(lambda o, v: f"count(@Costs) {o} {v}", st.sampled_from(OPERATORS), literals)
    return st.one_of(typed_comparisons, typed_comparisons, comparison, text_match, count, count_values)


predicates = st.recursive(
    atoms(st.just("@id > 0")),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"{a} & {b}", inner, inner),
        st.builds(lambda a, b: f"{a} | {b}", inner, inner),
        st.builds(lambda n, a: "!" * n + a, st.integers(1, 20), inner),
        inner.map(lambda a: f"({a})"),
        atoms(inner),
    ),
    max_leaves=12,
)
steps = st.builds(
    lambda end, where: end + (f"[{where}]" if where else ""), st.sampled_from(ENDS), st.none() | predicates
)
queries = st.builds(
    lambda start, where, navigation, end: (
        start + (f"[{where}]" if where else "") + "".join(f"/{step}" for step in navigation) + end
    ),
    st.sampled_from(TYPES[:2]) | st.just(TYPES[2]),
    st.none() | predicates,
    st.lists(steps, max_size=14),
    st.sampled_from([";", ""]) | st.just(";;"),
)


@settings(EXAMPLES, max_examples=40)  # three requests an example
@given(text=st.text(max_size=300) | st.text(alphabet=SYNTAX, max_size=300))
def test_random_text_never_fails_the_service(editor: TestClient, text: str) -> None:
    assert_answered(editor.post("/api/massdata/query", json={"query": text}))
    assert_answered(
        editor.post("/api/massdata/query", content=text.encode(), headers={"content-type": "text/plain"})
    )
    assert_answered(editor.get("/api/massdata/InformationSystem", params={"filter": text}))


@EXAMPLES
@given(query=queries, as_of=st.booleans())
def test_grammar_shaped_queries_never_fail_the_service(editor: TestClient, query: str, as_of: bool) -> None:
    body = {"query": query, **({"asOf": "9000-01-01T00:00:00Z"} if as_of else {})}
    assert_answered(editor.post("/api/massdata/query", json=body))


@EXAMPLES
@given(where=predicates, type_name=st.sampled_from(TYPES[:2]), as_of=st.booleans())
def test_grammar_shaped_filters_never_fail_the_service(
    editor: TestClient, where: str, type_name: str, as_of: bool
) -> None:
    params = {"filter": where, **({"asOf": "9000-01-01T00:00:00Z"} if as_of else {})}
    assert_answered(editor.get(f"/api/massdata/{type_name}", params=params))
