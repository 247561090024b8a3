"""History is bound to an attribute's identity, not its name (API.md 9): renaming or deleting a confidential
attribute, and letting a public one take its name, never hands its past values to readers of the public one,
in element and type history, the feed or `asOf` reads (element GET, massdata lists, streams and queries)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from alembic import command
from fastapi import FastAPI
from sqlalchemy import text
from starlette.testclient import TestClient

from blockrepo.history.repository import current_revision
from blockrepo.storage.migrate import alembic_config, upgrade
from tests.api.history_support import all_pages
from tests.helpers import client_as, create_group, create_role, create_user, engine_of, session_of

ATTRIBUTES = "/api/administration/attributes"
SECRET = 7654321  # the confidential value: it must appear nowhere a reader without Finance looks
PUBLIC = 11
READER = ("reader", "reader-password")
ACCOUNTANT = ("accountant", "accountant-password")


def _revision(app: FastAPI) -> int:
    with session_of(app) as db:
        return current_revision(db)


def _created(response: Any) -> Any:
    assert response.status_code == 201, response.text
    return response.json()


def _landscape(app: FastAPI, client: TestClient) -> tuple[int, int, int, int]:
    """`Annual costs` in the Finance group (read by role finance only) on a process and on its relation to
    a system, holding SECRET; returns (attribute id, process id, system id, the revision then)."""
    create_group(app, "Finance")
    create_role(app, "finance", groups={"Finance": (True, True)})
    readable = {"BusinessProcess": ["read"], "InformationSystem": ["read"]}
    create_role(app, "readers", types=readable, functional=["VIEW_HISTORY", "MASSDATA"])
    create_user(app, *READER, roles=["readers"])
    create_user(app, *ACCOUNTANT, roles=["readers", "finance"])
    finance = _created(
        client.post(
            ATTRIBUTES,
            json={
                "name": "Annual costs",
                "valueType": "number",
                "group": "Finance",
                "types": ["BusinessProcess"],
                "relationTypes": ["BusinessProcess_InformationSystem"],
            },
        )
    )["id"]
    erp = _created(client.post("/api/element/InformationSystem", json={"name": ["ERP"]}))["id"][0]
    order = _created(
        client.post(
            "/api/element/BusinessProcess",
            json={
                "name": ["Order handling"],
                "Annual costs": [SECRET],
                "informationSystems": [{"id": erp, "attributes": {"Annual costs": [SECRET]}}],
            },
        )
    )["id"][0]
    return finance, order, erp, _revision(app)


def _free_the_name(client: TestClient, finance: int, how: str) -> None:
    """Rename or delete the Finance attribute, then give its old name to a public attribute with a value."""
    if how == "renamed":
        response = client.put(f"{ATTRIBUTES}/{finance}", json={"name": "Finance costs"})
        assert response.status_code == 200, response.text
    else:
        assert client.delete(f"{ATTRIBUTES}/{finance}").status_code == 204
    _created(
        client.post(
            ATTRIBUTES,
            json={
                "name": "Annual costs",
                "valueType": "number",
                "types": ["BusinessProcess"],
                "relationTypes": ["BusinessProcess_InformationSystem"],
            },
        )
    )


def _give_public_value(client: TestClient, order: int) -> None:
    response = client.patch(f"/api/element/BusinessProcess/{order}", json={"Annual costs": [PUBLIC]})
    assert response.status_code == 200, response.text


def _ok(response: Any) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _histories(client: TestClient, order: int, erp: int) -> dict[str, list[dict[str, Any]]]:
    return {
        "element history": all_pages(client, f"/api/history/BusinessProcess/{order}"),
        "related element history": all_pages(client, f"/api/history/InformationSystem/{erp}"),
        "type history": all_pages(client, "/api/history/BusinessProcess"),
        "feed": all_pages(client, "/api/history"),
    }


def _past_reads(client: TestClient, order: int, erp: int, before: int) -> dict[str, Any]:
    as_of = {"asOf": str(before)}
    stream = client.get(
        "/api/massdata/BusinessProcess", params=as_of, headers={"Accept": "application/x-ndjson"}
    )
    assert stream.status_code == 200, stream.text
    return {
        "element GET asOf": _ok(client.get(f"/api/element/BusinessProcess/{order}", params=as_of)),
        "related element GET asOf": _ok(client.get(f"/api/element/InformationSystem/{erp}", params=as_of)),
        "massdata list asOf": _ok(client.get("/api/massdata/BusinessProcess", params=as_of)),
        "massdata filter asOf": _ok(
            client.get(
                "/api/massdata/BusinessProcess", params={**as_of, "filter": f'@"Annual costs" = {SECRET}'}
            )
        )["items"],
        "massdata stream asOf": [orjson.loads(line) for line in stream.text.splitlines()],
        # The answer echoes the query, and this one names the value: only its result counts.
        "massdata query asOf": _ok(
            client.post(
                "/api/massdata/query",
                json={"query": f'BusinessProcess[@"Annual costs" = {SECRET}];', "asOf": str(before)},
            )
        )["result"],
        "massdata navigation asOf": _ok(
            client.post(
                "/api/massdata/query",
                json={"query": "BusinessProcess/informationSystems;", "asOf": str(before)},
            )
        ),
    }


def _showing_secret(reads: dict[str, Any]) -> list[str]:
    return [where for where, body in reads.items() if str(SECRET) in orjson.dumps(body).decode()]


def _assert_reader_sees_nothing_confidential(app: FastAPI, order: int, erp: int, before: int) -> None:
    with client_as(app, *READER) as reader:
        histories = _histories(reader, order, erp)
        past = _past_reads(reader, order, erp, before)
        # Every place at once, so that a failure names them all.
        assert _showing_secret(histories) + _showing_secret(past) == []
        # The public attribute's own values stay readable under the name.
        assert any(
            change == {"property": "Annual costs", "old": [], "new": [PUBLIC]}
            for item in histories["element history"]
            for change in item["changes"]
        )
        process = past["element GET asOf"]
        assert process["Annual costs"] == []
        assert process["informationSystems"] == [
            {"id": erp, "name": "ERP", "attributes": {"Annual costs": []}}
        ]
        assert past["massdata filter asOf"] == []
        assert past["massdata query asOf"] == []


@pytest.mark.parametrize("how", ["renamed", "deleted"])
def test_a_confidential_attributes_past_stays_with_its_group_when_a_public_one_takes_its_name(
    app: FastAPI, client: TestClient, how: str
) -> None:
    """A reader without Finance sees none of its past values anywhere; a Finance reader and a supervisor
    still see them all."""
    finance, order, erp, before = _landscape(app, client)
    _free_the_name(client, finance, how)
    _give_public_value(client, order)
    _assert_reader_sees_nothing_confidential(app, order, erp, before)
    with client_as(app, *ACCOUNTANT) as accountant:
        histories = _histories(accountant, order, erp)
        assert _showing_secret(histories) == list(histories)
        if how == "renamed":
            process = _ok(accountant.get(f"/api/element/BusinessProcess/{order}", params={"asOf": before}))
            # asOf reads have today's shape: the attribute's past values under its name of today.
            assert process["Finance costs"] == [SECRET] and process["Annual costs"] == []
            assert process["informationSystems"][0]["attributes"] == {
                "Finance costs": [SECRET],
                "Annual costs": [],
            }
    supervisor_histories = _histories(client, order, erp)
    assert _showing_secret(supervisor_histories) == list(supervisor_histories)
    # History names the attribute as it was named when the change was recorded.
    created = supervisor_histories["element history"][-1]
    assert {"property": "Annual costs", "old": [], "new": [SECRET]} in created["changes"]


def test_a_deleted_attribute_stays_hidden_when_its_group_is_deleted_too(
    app: FastAPI, client: TestClient
) -> None:
    finance, order, erp, before = _landscape(app, client)
    _free_the_name(client, finance, "deleted")
    _give_public_value(client, order)
    groups = _ok(client.get("/api/administration/attributegroups"))
    finance_group = next(group["id"] for group in groups if group["name"] == "Finance")
    assert client.delete(f"/api/administration/attributegroups/{finance_group}").status_code == 204
    _assert_reader_sees_nothing_confidential(app, order, erp, before)
    with client_as(app, *ACCOUNTANT) as accountant:
        assert _showing_secret(_histories(accountant, order, erp)) == []
    assert _showing_secret(_histories(client, order, erp)) == list(_histories(client, order, erp))


def _migrate_history_recorded_before_0007(app: FastAPI) -> None:
    """Back to the schema before attribute identities (dropping what was recorded of them), then forward
    again: migration 0007 derives them from the metamodel changes in the history alone."""
    engine = engine_of(app)
    with engine.connect() as connection:
        driver = connection.connection.driver_connection
        sqlite = connection.dialect.name == "sqlite"
        if sqlite:
            # As `migrate.upgrade` does: table rebuilds drop tables others refer to (outside a transaction).
            driver.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        command.downgrade(alembic_config(connection), "0006")
        connection.commit()
        if sqlite:
            driver.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
    engine.dispose()
    upgrade(engine)


def test_the_migration_binds_history_recorded_before_it_to_identities(
    app: FastAPI, client: TestClient
) -> None:
    """Both stories at once: `Annual costs` (Finance) renamed to `Finance costs`, a second Finance
    attribute `Budget` deleted; public attributes take both names and then values."""
    finance, order, erp, before = _landscape(app, client)
    budget = _created(
        client.post(
            ATTRIBUTES,
            json={"name": "Budget", "valueType": "number", "group": "Finance", "types": ["BusinessProcess"]},
        )
    )["id"]
    response = client.patch(f"/api/element/BusinessProcess/{order}", json={"Budget": [SECRET + 1]})
    assert response.status_code == 200, response.text
    before = _revision(app)
    _free_the_name(client, finance, "renamed")
    assert client.delete(f"{ATTRIBUTES}/{budget}").status_code == 204
    _created(
        client.post(ATTRIBUTES, json={"name": "Budget", "valueType": "number", "types": ["BusinessProcess"]})
    )
    _give_public_value(client, order)
    renamed_at, deleted_at = before + 1, before + 3  # the public `Annual costs` came between

    _migrate_history_recorded_before_0007(app)

    with session_of(app) as db:
        # In SQL: the test runs (and fails) against code from before the table, too.
        rows = db.execute(
            text(
                "SELECT attribute_id, name, until_revision, group_id FROM attribute_former_name"
                " ORDER BY until_revision"
            )
        ).all()
    # A rename keeps the attribute's id; the old records do not tell a deleted attribute's id or group.
    assert [tuple(row) for row in rows] == [
        (finance, "Annual costs", renamed_at, None),
        (None, "Budget", deleted_at, None),
    ]
    _assert_reader_sees_nothing_confidential(app, order, erp, before)
    with client_as(app, *READER) as reader:
        assert str(SECRET + 1) not in orjson.dumps(_histories(reader, order, erp)).decode()
    with client_as(app, *ACCOUNTANT) as accountant:
        histories = _histories(accountant, order, erp)
        # The renamed attribute is still known, so its group still lets the accountant read it; the
        # deleted one's group is unknown, so only supervisors do.
        assert _showing_secret(histories) == list(histories)
        assert str(SECRET + 1) not in orjson.dumps(histories).decode()
    assert str(SECRET + 1) in orjson.dumps(_histories(client, order, erp)["element history"]).decode()
