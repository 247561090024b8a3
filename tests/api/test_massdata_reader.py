"""The streaming reader renders exactly the JSON of `read_elements` (every value type, relation attributes,
self relations, hierarchy, fields and hidden properties), with a fixed number of queries per batch."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.access.actor import Actor, GroupRule
from blockrepo.elements.models import Element
from blockrepo.elements.read import reader as reader_module
from blockrepo.elements.read.reader import ElementReader
from blockrepo.elements.read.view import ElementView
from blockrepo.metamodel.repository import load_metamodel
from blockrepo.metamodel.snapshot import Metamodel
from tests.helpers import (
    count_queries,
    create_attribute,
    create_group,
    create_user,
    engine_of,
    read_elements,
)

TYPES = ("InformationSystem", "BusinessProcess", "InformationFlow")


@pytest.fixture
def landscape(app: FastAPI, client: TestClient) -> None:
    create_user(app, "anna", "anna-password")
    create_group(app, "Secret")
    every = ["InformationSystem", "BusinessProcess"]
    create_attribute(app, "Note", "text", types=every)
    create_attribute(app, "Story", "richtext", types=every, group="Secret")
    create_attribute(app, "Costs", "number", types=every)
    create_attribute(app, "Golive", "date", types=every)
    create_attribute(app, "Window", "dateInterval", types=every)
    create_attribute(app, "Cloud", "boolean", types=every)
    create_attribute(app, "Tags", "enum", types=every, literals=["a", "b", "c"], multiple=True)
    create_attribute(app, "Owner", "responsibility", types=every)
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    create_attribute(
        app, "Mode", "enum", literals=["sync", "async"], relation_types=["BusinessProcess_InformationSystem"]
    )
    create_attribute(app, "Weight", "number", relation_types=["InformationSystem_successors"], multiple=True)
    systems: list[Any] = []
    for i in range(7):
        body = {
            "name": [f"IS{i}"],
            "description": [f"system {i}"] if i % 2 else [],
            "Note": [f"n{i}"],
            "Story": ["<p>long</p>"],
            "Costs": [i * 1.5],
            "Golive": ["2024-02-29"],
            "Window": [{"start": "2024-01-01", "end": None if i % 3 else "2030-12-31"}],
            "Cloud": [i % 2 == 0],
            "Tags": ["c", "a"] if i % 2 else [],
            "Owner": ["anna"],
            "status": ["CURRENT"],
            "version": ["1.0"],
            "parent": [systems[0]] if i in (3, 4) else [],
            "predecessors": [{"id": s, "attributes": {"Weight": [2, 1]}} for s in systems[-2:]],
        }
        response = client.post("/api/element/InformationSystem", json=body)
        assert response.status_code == 201, response.text
        systems.append(response.json()["id"][0])
    for i in range(4):
        response = client.post(
            "/api/element/BusinessProcess",
            json={
                "name": [f"BP{i}"],
                "informationSystems": [
                    {"id": s, "attributes": {"Share": [i * 10 + j], "Mode": ["async"]}}
                    for j, s in enumerate(systems[i:])
                ],
                "Tags": ["b"],
            },
        )
        assert response.status_code == 201, response.text
    client.post("/api/element/InformationFlow", json={"name": ["F"], "sourceSystem": [systems[1]]})


def _ids(db: Session, metamodel: Metamodel, type_name: str) -> list[int]:
    type_def = metamodel.type_named(type_name)
    assert type_def is not None
    return list(reversed(db.scalars(select(Element.id).where(Element.type_id == type_def.id)).all()))


@pytest.mark.parametrize("fields", [None, ["name", "Costs", "predecessors", "children"], ["Tags"]])
def test_reader_equals_read_elements(app: FastAPI, landscape: None, fields: list[str] | None) -> None:
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        for type_name in TYPES:
            type_def = metamodel.type_named(type_name)
            assert type_def is not None
            ids = _ids(db, metamodel, type_name)
            wanted = (
                None
                if fields is None
                else [
                    f
                    for f in fields
                    if type_def.property_named(f) or f in type_def.ends or f in ("name", "children")
                ]
            )
            view = ElementView.build(metamodel, None, type_def, wanted)
            assert ElementReader(view).read(db, ids) == read_elements(
                db, metamodel, None, type_def, ids, wanted
            )


def test_reader_hides_what_the_actor_cannot_read(app: FastAPI, landscape: None) -> None:
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        secret = next(g for g in metamodel.groups if g.name == "Secret")
        type_ids = {t.name: t.id for t in metamodel.types}
        actor = Actor(
            user_id=99,
            login="x",
            supervisor=False,
            role_ids=frozenset({1}),
            type_permissions={type_ids["InformationSystem"]: frozenset({"read"})},
            group_rules={secret.id: GroupRule(readers=frozenset({2}))},
        )
        type_def = metamodel.type_named("InformationSystem")
        assert type_def is not None
        ids = _ids(db, metamodel, "InformationSystem")
        read = ElementReader(ElementView.build(metamodel, actor, type_def)).read(db, ids)
        assert read == read_elements(db, metamodel, actor, type_def, ids)
        assert all("Story" not in e and "businessProcesses" not in e for e in read)


def test_reader_cost_is_fixed_per_batch(
    app: FastAPI, landscape: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader_module, "READ_BATCH", 3)
    engine = engine_of(app)
    with Session(engine) as db:
        metamodel = load_metamodel(db, 0)
        type_def = metamodel.type_named("InformationSystem")
        assert type_def is not None
        ids = _ids(db, metamodel, "InformationSystem")
        reader = ElementReader(ElementView.build(metamodel, None, type_def))
        reader.read(db, ids[:3])
        with count_queries(engine) as one_batch:
            reader.read(db, ids[:3])
        with count_queries(engine) as three_batches:
            assert len(reader.read(db, ids)) == 7
    assert three_batches.count == 3 * one_batch.count


def _batches_of_three(ids: list[int]) -> list[list[int]]:
    return [ids[start : start + 3] for start in range(0, len(ids), 3)]


@pytest.mark.parametrize("prefetch", [False, True])
def test_read_batches_gives_each_batch_in_order(app: FastAPI, landscape: None, prefetch: bool) -> None:
    """Fetching the next batch in a thread of its own (PostgreSQL's default) or not, every batch is the
    JSON of `read_elements`; an id of another type is skipped."""
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        type_def = metamodel.type_named("InformationSystem")
        assert type_def is not None
        ids = _ids(db, metamodel, "InformationSystem")
        stranger = _ids(db, metamodel, "BusinessProcess")[0]
        batches = _batches_of_three([*ids[:4], stranger, *ids[4:]])
        reader = ElementReader(ElementView.build(metamodel, None, type_def))
        read = list(reader.read_batches(db, iter(batches), prefetch=prefetch))
        assert read == [
            read_elements(db, metamodel, None, type_def, [i for i in batch if i != stranger])
            for batch in batches
        ]


def test_read_batches_prefetching_passes_on_an_error_of_the_batches(app: FastAPI, landscape: None) -> None:
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        type_def = metamodel.type_named("InformationSystem")
        assert type_def is not None
        ids = _ids(db, metamodel, "InformationSystem")

        def batches() -> Any:
            yield ids[:3]
            raise LookupError("the keyset query failed")

        reader = ElementReader(ElementView.build(metamodel, None, type_def))
        read = reader.read_batches(db, batches(), prefetch=True)
        assert [element["id"] for element in next(read)] == [[i] for i in ids[:3]]
        with pytest.raises(LookupError, match="keyset"):
            next(read)


def test_read_batches_closed_early_lets_the_fetch_in_flight_end_first(
    app: FastAPI, landscape: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stream whose client went away is closed at its current batch; the session is closed right after,
    so the prefetching thread must be done with the connection by then."""
    fetching: list[str] = []
    fetch = ElementReader.fetch

    def slow_fetch(self: ElementReader, db: Session, ids: Any) -> Any:
        fetching.append("start")
        time.sleep(0.2)
        fetched = fetch(self, db, ids)
        fetching.append("end")
        return fetched

    monkeypatch.setattr(ElementReader, "fetch", slow_fetch)
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        type_def = metamodel.type_named("InformationSystem")
        assert type_def is not None
        ids = _ids(db, metamodel, "InformationSystem")
        read = ElementReader(ElementView.build(metamodel, None, type_def)).read_batches(
            db, iter(_batches_of_three(ids)), prefetch=True
        )
        next(read)  # the second batch is on its way meanwhile
        read.close()
        assert fetching == ["start", "end", "start", "end"]
