"""Regressions of defects found by the property-based tests (test_elements_properties.py), one test each."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.elements import repository
from blockrepo.elements.values import TypedValue
from blockrepo.metamodel.models import RelationType
from tests.helpers import create_attribute, engine_of

IS = "InformationSystem"


@pytest.fixture
def many_valued(app: FastAPI) -> None:
    create_attribute(app, "Scores", "number", types=[IS], multiple=True)
    create_attribute(app, "Aliases", "text", types=[IS], multiple=True)
    create_attribute(app, "Responsible", "responsibility", types=[IS], multiple=True)


@pytest.mark.usefixtures("many_valued")
def test_huge_integral_numbers_are_written_and_read_back(client: TestClient) -> None:
    # Found: {"Scores": [1e300]} was accepted, committed, and then every response rendering the element
    # failed with 500 (int(1e300) does not fit a JSON encoder's 64-bit integers).
    numbers = [1e300, -1e20, 2.0**60, 12.5, 7]
    response = client.post(f"/api/element/{IS}", json={"name": ["Big"], "Scores": numbers})
    assert response.status_code == 201, response.text
    assert response.json()["Scores"] == numbers
    assert isinstance(response.json()["Scores"][0], float)
    assert isinstance(response.json()["Scores"][4], int)
    element_id = response.json()["id"][0]
    assert client.get(f"/api/element/{IS}/{element_id}").json()["Scores"] == numbers


@pytest.mark.usefixtures("many_valued")
def test_duplicate_detection_does_not_compare_every_pair(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found: duplicates were found with `value in list`, n²/2 comparisons: 8,000 values took 17 s and a
    # 600 KB body of 40,000 logins held a worker for 6 minutes. Counted, not timed.
    comparisons = 0
    plain_eq = TypedValue.__eq__

    def counting_eq(self: TypedValue, other: object) -> bool:
        nonlocal comparisons
        comparisons += 1
        return plain_eq(self, other)

    monkeypatch.setattr(TypedValue, "__eq__", counting_eq)
    count = 3000
    aliases = [f"alias {i}" for i in range(count)]
    response = client.post(f"/api/element/{IS}", json={"name": ["Many"], "Aliases": [*aliases, "alias 7"]})
    assert response.status_code == 400
    assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [
        (f"/Aliases/{count}", "duplicate")
    ]
    assert comparisons < count  # quadratic would be about 4.5 million


@contextmanager
def largest_parameter_list(engine: Engine) -> Iterator[list[int]]:
    """The largest number of parameters any one statement bound while active (per row for executemany)."""
    largest = [0]

    def record(_conn: Any, _cursor: Any, _statement: str, parameters: Any, _context: Any, many: bool) -> None:
        rows = parameters if many else [parameters]
        largest[0] = max([largest[0], *(len(row or ()) for row in rows)])

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield largest
    finally:
        event.remove(engine, "before_cursor_execute", record)


@pytest.mark.usefixtures("many_valued")
def test_many_logins_are_looked_up_in_bounded_statements(app: FastAPI, client: TestClient) -> None:
    # Found: the logins of a body were checked with one IN list of all of them; drivers cap the parameters
    # of a statement (PostgreSQL 65,535, SQLite 32,766 by default) and a 10 MiB body holds far more.
    logins = [f"user-{i}" for i in range(3000)]
    with largest_parameter_list(engine_of(app)) as largest:
        response = client.post(f"/api/element/{IS}", json={"name": ["Crowd"], "Responsible": logins})
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert len(errors) == len(logins) and {e["code"] for e in errors} == {"unknown_user"}
    assert largest[0] <= 4 * repository.CHUNK_SIZE + 10


def test_taken_partners_reports_only_partners_other_than_the_holder(client: TestClient, app: FastAPI) -> None:
    # Rewritten from a loop over every check per row (quadratic for bulk writes) to an index; the rules stay.
    def create(type_name: str, body: dict[str, Any]) -> int:
        response = client.post(f"/api/element/{type_name}", json=body)
        assert response.status_code == 201, response.text
        return int(response.json()["id"][0])

    a, b = create(IS, {"name": ["A"]}), create(IS, {"name": ["B"]})
    flows = [create("InformationFlow", {"name": [f"F{i}"]}) for i in range(4)]
    assert client.put(f"/api/element/{IS}/{a}", json={"outgoingFlows": flows[:2]}).status_code == 200
    assert client.put(f"/api/element/{IS}/{b}", json={"outgoingFlows": flows[2:3]}).status_code == 200
    with Session(engine_of(app)) as db:
        relation_type_id = db.scalar(
            select(RelationType.id).where(RelationType.name == "InformationFlow_sourceSystem")
        )
        assert relation_type_id is not None
        # Seen from the systems (the flows' 0..1 `sourceSystem` is the other side).
        checks = [
            repository.PartnerCheck(relation_type_id, False, a, tuple(flows)),  # a keeps its own, not b's
            repository.PartnerCheck(relation_type_id, False, None, (flows[0], flows[3])),  # a new holder
        ]
        taken = repository.taken_partners(db, checks)
    assert taken == {
        (relation_type_id, False, flows[2]): b,
        (relation_type_id, False, flows[0]): a,
    }
