"""History of one element and of a type: newest first, deleted elements included, bounds and paging."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from sqlalchemy import event
from starlette.testclient import TestClient

from tests.api.history_support import all_pages, record, record_change

NAME = "name"


def _rename(app: FastAPI, element_id: int, old: str, new: str, type_name: str = "BusinessProcess") -> int:
    return record_change(
        app, "updated", type_name, element_id, new, changes=[{"property": NAME, "old": [old], "new": [new]}]
    )


def _lifecycle(app: FastAPI) -> list[int]:
    """Element 101: created, renamed twice, related, deleted; 102 (another BP) and 17 (an IS) around it."""
    return [
        record_change(
            app, "created", "BusinessProcess", 101, "A", changes=[{"property": NAME, "old": [], "new": ["A"]}]
        ),
        record_change(app, "created", "BusinessProcess", 102, "Other"),
        _rename(app, 101, "A", "B"),
        record(
            app,
            [
                {
                    "operation": "updated",
                    "type": "BusinessProcess",
                    "id": 101,
                    "name": "B",
                    "changes": [
                        {
                            "property": "informationSystems",
                            "added": [{"id": 17, "name": "ERP"}],
                            "removed": [],
                        }
                    ],
                },
                {
                    "operation": "updated",
                    "type": "InformationSystem",
                    "id": 17,
                    "name": "ERP",
                    "changes": [
                        {"property": "businessProcesses", "added": [{"id": 101, "name": "B"}], "removed": []}
                    ],
                },
            ],
        ),
        _rename(app, 101, "B", "C"),
        record_change(
            app, "deleted", "BusinessProcess", 101, "C", changes=[{"property": NAME, "old": ["C"], "new": []}]
        ),
    ]


def test_element_history_is_newest_first_and_includes_the_deletion(app: FastAPI, client: TestClient) -> None:
    revisions = _lifecycle(app)
    response = client.get("/api/history/BusinessProcess/101")
    assert response.status_code == 200
    items = response.json()["items"]
    assert [(i["revision"], i["operation"], i["name"]) for i in items] == [
        (revisions[5], "deleted", "C"),
        (revisions[4], "updated", "C"),
        (revisions[3], "updated", "B"),
        (revisions[2], "updated", "B"),
        (revisions[0], "created", "A"),
    ]
    assert all(i["type"] == "BusinessProcess" and i["id"] == 101 and i["entity"] == "element" for i in items)
    assert items[2]["changes"] == [
        {"property": "informationSystems", "added": [{"id": 17, "name": "ERP"}], "removed": []}
    ]


def test_relation_change_is_on_both_ends(app: FastAPI, client: TestClient) -> None:
    revisions = _lifecycle(app)
    other_end = client.get("/api/history/InformationSystem/17").json()["items"]
    assert [(i["revision"], i["changes"]) for i in other_end] == [
        (
            revisions[3],
            [{"property": "businessProcesses", "added": [{"id": 101, "name": "B"}], "removed": []}],
        )
    ]


def test_type_history_includes_deleted_elements_and_no_other_type(app: FastAPI, client: TestClient) -> None:
    revisions = _lifecycle(app)
    items = client.get("/api/history/BusinessProcess").json()["items"]
    assert [(i["revision"], i["id"]) for i in items] == [
        (revisions[5], 101),
        (revisions[4], 101),
        (revisions[3], 101),
        (revisions[2], 101),
        (revisions[1], 102),
        (revisions[0], 101),
    ]
    assert client.get("/api/history/Project").json() == {"items": [], "nextCursor": None}


def test_from_to_and_paging(app: FastAPI, client: TestClient) -> None:
    revisions = _lifecycle(app)
    response = client.get(
        "/api/history/BusinessProcess/101", params={"from": revisions[2], "to": revisions[4]}
    )
    assert [i["revision"] for i in response.json()["items"]] == [revisions[4], revisions[3], revisions[2]]
    stamps = [i["timestamp"] for i in client.get("/api/history/BusinessProcess/101").json()["items"]]
    response = client.get("/api/history/BusinessProcess/101", params={"to": stamps[-1]})
    assert [i["revision"] for i in response.json()["items"]] == [revisions[0]]
    pages = [client.get("/api/history/BusinessProcess/101", params={"limit": 2}).json()]
    while pages[-1]["nextCursor"]:
        pages.append(
            client.get(
                "/api/history/BusinessProcess/101", params={"limit": 2, "cursor": pages[-1]["nextCursor"]}
            ).json()
        )
    assert [len(p["items"]) for p in pages] == [2, 2, 1]
    flat = [i["revision"] for p in pages for i in p["items"]]
    assert flat == sorted(flat, reverse=True) and len(set(flat)) == 5
    assert [i["id"] for i in all_pages(client, "/api/history/BusinessProcess", {"limit": 4})] == [
        101,
        101,
        101,
        101,
        102,
        101,
    ]


def test_unknown_element_or_type_is_404(app: FastAPI, client: TestClient) -> None:
    _lifecycle(app)
    response = client.get("/api/history/BusinessProcess/999")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    # Element 17 exists, but as an InformationSystem.
    assert client.get("/api/history/BusinessProcess/17").status_code == 404
    response = client.get("/api/history/NoSuchType/1")
    assert response.status_code == 404 and response.json()["code"] == "unknown_type"
    assert client.get("/api/history/NoSuchType").json()["code"] == "unknown_type"
    assert client.get("/api/history/BusinessProcess/0").status_code == 400
    assert client.get("/api/history/BusinessProcess/abc").status_code == 400
    assert client.get(f"/api/history/BusinessProcess/{2**31}").status_code == 400


def test_element_history_walks_the_element_revision_index(app: FastAPI, client: TestClient) -> None:
    """Reading one element's history costs in proportion to its own changes: the query the endpoint runs
    seeks the (element_id, revision) index instead of scanning the change table."""
    for n in range(40):
        record(
            app,
            [
                {"operation": "created", "type": "Project", "id": 5000 + n * 50 + k, "name": f"X{n}-{k}"}
                for k in range(50)
            ],
        )
    _lifecycle(app)
    engine = app.state.services.engine
    executed: list[tuple[str, Any]] = []

    def capture(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool
    ) -> None:
        if "FROM change" in statement and "element_id =" in statement:
            executed.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", capture)
    try:
        assert client.get("/api/history/BusinessProcess/101").status_code == 200
    finally:
        event.remove(engine, "before_cursor_execute", capture)
    assert executed
    statement, parameters = executed[0]
    with engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("ANALYZE change")
            plan = "\n".join(
                str(r[0]) for r in connection.exec_driver_sql("EXPLAIN " + statement, parameters)
            )
        else:
            rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
            plan = "\n".join(str(r[-1]) for r in rows)
    assert "ix_change_element_revision" in plan, plan


def test_relation_changes_written_through_the_api_read_as_added_and_removed_on_both_ends(
    client: TestClient,
) -> None:
    """The history endpoints over real writes (not hand-made records): a relation added from one end and
    removed from the other shows on both elements' histories, newest first."""
    system = client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).json()
    process = client.post(
        "/api/element/BusinessProcess", json={"name": ["Sell"], "informationSystems": [system["id"][0]]}
    ).json()
    response = client.put(f"/api/element/InformationSystem/{system['id'][0]}", json={"businessProcesses": []})
    assert response.status_code == 200, response.text
    # The business mapping is attributable: its entries carry their (here empty) attributes.
    erp = {"id": system["id"][0], "name": "ERP", "attributes": {}}
    sell = {"id": process["id"][0], "name": "Sell", "attributes": {}}

    def history(type_name: str, element_id: int) -> list[dict[str, Any]]:
        response = client.get(f"/api/history/{type_name}/{element_id}")
        assert response.status_code == 200, response.text
        return response.json()["items"]  # type: ignore[no-any-return]

    of_system = history("InformationSystem", system["id"][0])
    assert [item["operation"] for item in of_system] == ["updated", "updated", "created"]
    assert of_system[0]["changes"] == [{"property": "businessProcesses", "added": [], "removed": [sell]}]
    assert of_system[1]["changes"] == [{"property": "businessProcesses", "added": [sell], "removed": []}]
    of_process = history("BusinessProcess", process["id"][0])
    assert [item["operation"] for item in of_process] == ["updated", "created"]
    assert of_process[0]["changes"] == [{"property": "informationSystems", "added": [], "removed": [erp]}]
    assert {"property": "informationSystems", "old": [], "new": [erp]} in of_process[1]["changes"]
    assert of_process[0]["revision"] == of_system[0]["revision"]  # one request, one revision
