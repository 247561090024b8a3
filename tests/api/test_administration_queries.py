"""Statement counts of the access endpoints do not grow with the data: lists run a fixed number of queries,
and the set-based value removal of metamodel edits costs the same for 2 elements as for 60."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.access_helpers import PASSWORD
from tests.helpers import count_queries, engine_of


def _statements(app: FastAPI, client: TestClient, method: str, path: str, **kwargs: object) -> int:
    with count_queries(engine_of(app)) as counter:
        response = client.request(method, path, **kwargs)  # type: ignore[arg-type]
        assert response.status_code < 300, response.text
    return counter.count


def test_user_and_role_lists_cost_the_same_for_few_and_many(app: FastAPI, client: TestClient) -> None:
    def add(count: int, start: int) -> None:
        for i in range(start, start + count):
            client.post(
                "/api/administration/roles",
                json={
                    "name": f"Role {i}",
                    "typePermissions": {"Project": ["read"], "InformationSystem": ["read", "update"]},
                    "functionalPermissions": ["VIEW_HISTORY"],
                },
            )
            client.post(
                "/api/administration/users",
                json={"login": f"user{i}", "password": PASSWORD, "roles": [f"Role {i}", "Supervisor"]},
            )

    add(2, 0)
    few = {
        p: _statements(app, client, "GET", p)
        for p in ("/api/administration/users", "/api/administration/roles")
    }
    add(12, 2)
    many = {
        p: _statements(app, client, "GET", p)
        for p in ("/api/administration/users", "/api/administration/roles")
    }
    assert few == many
    assert len(client.get("/api/administration/users").json()) == 15


def test_metamodel_reads_cost_no_query_beyond_the_request_context(app: FastAPI, client: TestClient) -> None:
    client.get("/api/metamodel")  # loads the snapshot into the cache
    baseline = _statements(app, client, "GET", "/api/administration/users/current")
    for path in ("/api/metamodel", "/api/metamodel/types", "/api/metamodel/types/InformationSystem"):
        assert _statements(app, client, "GET", path) <= baseline


def test_removing_values_is_set_based(app: FastAPI, client: TestClient) -> None:
    def scenario(prefix: str, count: int) -> tuple[int, int]:
        attribute = client.post(
            "/api/administration/attributes",
            json={
                "name": f"{prefix} tag",
                "valueType": "enum",
                "multiple": True,
                "literals": [{"name": "a"}, {"name": "b"}],
                "types": ["Project"],
                "relationTypes": ["InformationSystem_Project"],
            },
        ).json()
        system = client.post("/api/element/InformationSystem", json={"name": [f"{prefix} system"]}).json()
        for i in range(count):
            client.post(
                "/api/element/Project",
                json={
                    "name": [f"{prefix} {i}"],
                    f"{prefix} tag": ["a", "b"],
                    "informationSystems": [{"id": system["id"][0], "attributes": {f"{prefix} tag": ["a"]}}],
                },
            )
        path = f"/api/administration/attributes/{attribute['id']}"
        literal_removal = _statements(app, client, "PUT", path, json={"literals": [{"name": "b"}]})
        deletion = _statements(app, client, "DELETE", path)
        return literal_removal, deletion

    assert scenario("Few", 2) == scenario("Many", 60)


def test_deleting_a_relation_type_is_set_based(app: FastAPI, client: TestClient) -> None:
    def scenario(name: str, count: int) -> int:
        client.post(
            "/api/metamodel/relationtypes",
            json={
                "name": name,
                "source": "Project",
                "sourceEnd": f"{name}s",
                "target": "ItService",
                "targetEnd": f"{name}By",
            },
        )
        service = client.post("/api/element/ItService", json={"name": [name]}).json()["id"][0]
        for i in range(count):
            client.post("/api/element/Project", json={"name": [f"{name} {i}"], f"{name}s": [service]})
        return _statements(app, client, "DELETE", f"/api/metamodel/relationtypes/{name}")

    assert scenario("few", 2) == scenario("many", 60)
