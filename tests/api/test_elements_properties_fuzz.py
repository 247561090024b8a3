"""Property-based tests over element bodies (POST, PUT, PATCH `/api/element/{type}[/{id}]`): whatever the
body (random and known keys, nested JSON, huge and tiny numbers, control characters, wrong types), the
answer is never 5xx, and a refused request changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.helpers import create_attribute

TYPE = "BusinessProcess"
ELEMENTS = f"/api/element/{TYPE}"
EXAMPLES = 40
PROPERTY_NAMES = [
    "id",
    "type",
    "revision",
    "name",
    "description",
    "parent",
    "children",
    "lastModificationTime",
    "lastModificationUser",
    "informationSystems",
    "businessDomains",
    "predecessors",
    "successors",
    "Costs",
    "Risk",
    "Notes",
    "Due",
    "Span",
    "Audited",
    "Owner",
]
BIG_NUMBERS = [
    1e29,
    -1e29,
    1e308,
    5e-324,
    -0.0,
    2**63,
    2**64,
    -(2**63) - 1,
    10**30,
    10**400,
    999999.5,
    1000000,
]

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from(BIG_NUMBERS),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
    st.sampled_from(["2026-11-24", "2026-02-30", "low", "high", "system", "ERP", "Sales", ""]),
)
json_value = st.recursive(
    leaf,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=8,
)
reference = st.one_of(
    st.integers(min_value=-2, max_value=40),
    st.fixed_dictionaries({"id": json_value}),
    st.fixed_dictionaries({"name": json_value}),
    st.fixed_dictionaries({"id": st.integers(min_value=1, max_value=40), "attributes": json_value}),
)
date_interval = st.fixed_dictionaries(
    {"start": st.one_of(st.none(), leaf), "end": st.one_of(st.none(), leaf)}
)
property_value = st.one_of(
    st.lists(st.one_of(leaf, reference, date_interval), max_size=3),
    st.lists(json_value, max_size=3),
    json_value,
)
element_body = st.one_of(
    st.dictionaries(st.one_of(st.sampled_from(PROPERTY_NAMES), text), property_value, max_size=5),
    json_value,
)
# Strings a JSON encoder would not produce: invalid escapes, lone surrogates, NaN, deep nesting.
odd_documents = st.sampled_from(
    [
        b'{"name": ["\\ud800"]}',
        b'{"name": [NaN]}',
        b'{"Costs": [1e999]}',
        b'{"name": ["x"], "Costs": [-1e999]}',
        b"[" * 2000 + b"]" * 2000,
        b'{"name": ["a"]',
        b"",
        b"\xff\xfe",
    ]
)


@pytest.fixture
def landscape(app: FastAPI, client: TestClient) -> list[int]:
    """A user-defined attribute of every value type on the type, and elements to point at; the ids of the
    type's elements."""
    create_attribute(app, "Costs", "number", types=[TYPE], min_value=0, max_value=1_000_000, unit="EUR")
    create_attribute(app, "Risk", "enum", types=[TYPE], literals=["low", "high"])
    create_attribute(app, "Notes", "text", types=[TYPE], multiple=True)
    create_attribute(app, "Due", "date", types=[TYPE])
    create_attribute(app, "Span", "dateInterval", types=[TYPE])
    create_attribute(app, "Audited", "boolean", types=[TYPE])
    create_attribute(app, "Owner", "responsibility", types=[TYPE])
    create_attribute(
        app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"], min_value=0, max_value=1
    )
    assert client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).status_code == 201
    ids = []
    for name in ("Sales", "Order handling"):
        response = client.post(ELEMENTS, json={"name": [name]})
        assert response.status_code == 201, response.text
        ids.append(int(response.json()["id"][0]))
    return ids


def state(client: TestClient) -> list[Any]:
    """Everything an element write can touch: both types' elements and the history feed."""
    return [
        client.get("/api/massdata/BusinessProcess", params={"limit": 1000}).json(),
        client.get("/api/massdata/InformationSystem", params={"limit": 1000}).json(),
        client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json(),
    ]


def check(client: TestClient, method: str, path: str, content: bytes) -> None:
    before = state(client)
    response = client.request(method, path, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code < 500, (method, path, content[:500], response.text)
    if response.status_code >= 400:
        assert response.headers["content-type"] == "application/problem+json"
        assert state(client) == before, (method, path, content[:500], response.text)


def encode(body: Any) -> bytes:
    # The standard encoder: it writes integers beyond 64 bits, which orjson would refuse to.
    return json.dumps(body).encode()


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(body=element_body)
def test_create_never_fails_with_5xx_and_a_refusal_changes_nothing(
    client: TestClient, landscape: list[int], body: Any
) -> None:
    check(client, "POST", ELEMENTS, encode(body))


@FUZZ
@given(method=st.sampled_from(["PUT", "PATCH"]), which=st.sampled_from([0, 1, -1]), body=element_body)
def test_update_never_fails_with_5xx_and_a_refusal_changes_nothing(
    client: TestClient, landscape: list[int], method: str, which: int, body: Any
) -> None:
    element_id = landscape[which] if which >= 0 else 999_999
    check(client, method, f"{ELEMENTS}/{element_id}", encode(body))


@FUZZ
@given(method=st.sampled_from(["POST", "PUT", "PATCH"]), content=odd_documents)
def test_malformed_documents_are_refused_and_change_nothing(
    client: TestClient, landscape: list[int], method: str, content: bytes
) -> None:
    path = ELEMENTS if method == "POST" else f"{ELEMENTS}/{landscape[0]}"
    check(client, method, path, content)
