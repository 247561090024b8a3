"""The batched asOf read that list endpoints use: which ids existed at a revision, and their JSON at a fixed
number of queries however many elements or changes."""

from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.history.asof import element_ids_as_of, read_elements_as_of
from blockrepo.history.repository import current_revision
from blockrepo.metamodel.repository import load_metamodel
from tests.helpers import count_queries, engine_of


def _revision(app: FastAPI) -> int:
    with Session(engine_of(app)) as db:
        return current_revision(db)


def test_ids_as_of_follow_creation_and_deletion(app: FastAPI, client: TestClient) -> None:
    start = _revision(app)
    ids = [client.post("/api/element/Project", json={"name": [f"P{n}"]}).json()["id"][0] for n in range(3)]
    assert client.delete(f"/api/element/Project/{ids[1]}").status_code == 204
    client.post("/api/element/ItService", json={"name": ["S"]})
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        project = metamodel.type_named("Project")
        assert project is not None
        assert element_ids_as_of(db, project, start) == []
        assert element_ids_as_of(db, project, start + 2) == ids[:2]
        assert element_ids_as_of(db, project, start + 3) == ids
        assert element_ids_as_of(db, project, start + 4) == [ids[0], ids[2]]
        assert element_ids_as_of(db, project, start + 5) == [ids[0], ids[2]]


def test_batched_read_costs_a_fixed_number_of_queries(app: FastAPI, client: TestClient) -> None:
    systems = [
        client.post("/api/element/InformationSystem", json={"name": [f"IS{n}"]}).json()["id"][0]
        for n in range(5)
    ]
    processes = []
    for n in range(40):
        created = client.post(
            "/api/element/BusinessProcess",
            json={"name": [f"BP{n}"], "informationSystems": systems[: n % 5 + 1]},
        ).json()
        processes.append(created["id"][0])
        client.put(f"/api/element/BusinessProcess/{created['id'][0]}", json={"description": [f"d{n}"]})
    revision = _revision(app)
    for system in systems:
        client.put(f"/api/element/InformationSystem/{system}", json={"name": [f"renamed {system}"]})
    with Session(engine_of(app)) as db:
        metamodel = load_metamodel(db, 0)
        bp = metamodel.type_named("BusinessProcess")
        assert bp is not None
        with count_queries(engine_of(app)) as one:
            single = read_elements_as_of(db, metamodel, None, bp, processes[:1], revision)
        with count_queries(engine_of(app)) as many:
            every = read_elements_as_of(db, metamodel, None, bp, list(reversed(processes)), revision)
    assert one.count == many.count == 3  # changes, attribute renames, names of related elements
    assert [e["id"][0] for e in every] == list(reversed(processes))
    assert single[0] == every[-1]
    # Related elements carry the names they had then, not today's.
    assert every[-1]["informationSystems"] == [{"id": systems[0], "name": "IS0", "attributes": {}}]
    for element in every:
        current = client.get(f"/api/element/BusinessProcess/{element['id'][0]}").json()
        for entry in current["informationSystems"]:
            entry["name"] = entry["name"].replace(f"renamed {entry['id']}", f"IS{systems.index(entry['id'])}")
        assert element == current
