"""Reads are batched: the number of SQL statements does not depend on how many elements, values or
relations are read; writes do not depend on the number of values."""

from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.elements.read.repository import load_elements
from blockrepo.elements.read.view import ElementView
from blockrepo.metamodel.repository import load_metamodel
from tests.helpers import count_queries, create_attribute, engine_of, read_elements


def build_landscape(app: FastAPI, client: TestClient, count: int) -> list[int]:
    create_attribute(app, "Tags", "enum", types=["BusinessProcess"], literals=["a", "b", "c"], multiple=True)
    create_attribute(app, "Costs", "number", types=["BusinessProcess"])
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    systems = [
        client.post("/api/element/InformationSystem", json={"name": [f"IS{i}"]}).json()["id"][0]
        for i in range(3)
    ]
    root = client.post("/api/element/BusinessProcess", json={"name": ["Root"]}).json()["id"][0]
    ids = [root]
    for i in range(count - 1):
        response = client.post(
            "/api/element/BusinessProcess",
            json={
                "name": [f"P{i}"],
                "parent": [ids[i // 3]],
                "Tags": ["a", "c"],
                "Costs": [i],
                "informationSystems": [{"id": s, "attributes": {"Share": [i]}} for s in systems[: 1 + i % 3]],
                "predecessors": [ids[-1]],
            },
        )
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"][0])
    return ids


def test_read_elements_runs_the_same_queries_for_1_and_100_elements(app: FastAPI, client: TestClient) -> None:
    ids = build_landscape(app, client, 100)
    engine = engine_of(app)
    with Session(engine) as db:
        metamodel = load_metamodel(db, 0)
        type_def = metamodel.type_named("BusinessProcess")
        assert type_def is not None
        with count_queries(engine) as one:
            [single] = read_elements(db, metamodel, None, type_def, ids[5:6])
        with count_queries(engine) as hundred:
            batch = read_elements(db, metamodel, None, type_def, ids)
    assert len(batch) == 100
    assert batch[5] == single
    assert [element["id"][0] for element in batch] == ids
    assert single["Tags"] == ["a", "c"] and len(single["informationSystems"]) >= 1
    assert single["informationSystems"][0]["attributes"]["Share"] != []
    assert one.count == hundred.count <= 6


def test_fields_narrow_what_is_loaded(app: FastAPI, client: TestClient) -> None:
    ids = build_landscape(app, client, 10)
    engine = engine_of(app)
    with Session(engine) as db:
        metamodel = load_metamodel(db, 0)
        type_def = metamodel.type_named("BusinessProcess")
        assert type_def is not None
        with count_queries(engine) as counter:
            batch = read_elements(db, metamodel, None, type_def, ids, fields=["name", "Costs"])
    assert counter.count == 2  # elements, values
    assert list(batch[1]) == ["id", "name", "Costs"]


def test_get_by_id_costs_the_same_for_a_rich_and_a_bare_element(app: FastAPI, client: TestClient) -> None:
    ids = build_landscape(app, client, 8)
    bare = client.post("/api/element/BusinessProcess", json={"name": ["Bare"]}).json()["id"][0]
    engine = engine_of(app)
    client.get(f"/api/element/BusinessProcess/{bare}")  # warm the metamodel and actor caches
    with count_queries(engine) as rich_count:
        assert client.get(f"/api/element/BusinessProcess/{ids[-1]}").status_code == 200
    with count_queries(engine) as bare_count:
        assert client.get(f"/api/element/BusinessProcess/{bare}").status_code == 200
    assert rich_count.count == bare_count.count


def test_write_query_count_does_not_grow_with_values(app: FastAPI, client: TestClient) -> None:
    create_attribute(app, "Tags", "text", types=["BusinessProcess"], multiple=True)
    targets = [
        client.post("/api/element/InformationSystem", json={"name": [f"IS{i}"]}).json()["id"][0]
        for i in range(40)
    ]
    engine = engine_of(app)
    small = {"name": ["Small"], "Tags": ["t0"], "informationSystems": targets[:1]}
    large = {"name": ["Large"], "Tags": [f"t{i}" for i in range(40)], "informationSystems": targets}
    with count_queries(engine) as small_count:
        assert client.post("/api/element/BusinessProcess", json=small).status_code == 201
    with count_queries(engine) as large_count:
        assert client.post("/api/element/BusinessProcess", json=large).status_code == 201
    assert small_count.count == large_count.count


def test_the_locked_single_id_load_equals_the_batched_one(app: FastAPI, client: TestClient) -> None:
    # A single update reads its element locked, by statements for one id: the same state a batch reads.
    ids = build_landscape(app, client, 3)
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        type_def = metamodel.type_named("BusinessProcess")
        assert type_def is not None
        selection = ElementView.build(metamodel, None, type_def).selection
        for element_id in ids:
            batched = load_elements(db, type_def.id, [element_id], selection)
            assert batched and load_elements(db, type_def.id, [element_id], selection, locked=True) == batched
        assert load_elements(db, type_def.id, [987654], selection, locked=True) == {}
