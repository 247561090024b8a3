"""An element id names one element forever: history, the feed and asOf rely on it (SQLite included)."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text
from starlette.testclient import TestClient

from blockrepo.storage import migrate
from blockrepo.storage.engine import build_engine
from tests.conftest import PG_URL


def test_a_deleted_elements_id_is_not_given_to_a_new_element(client: TestClient) -> None:
    first = client.post("/api/element/BusinessProcess", json={"name": ["First"]}).json()["id"][0]
    newest = client.post("/api/element/BusinessProcess", json={"name": ["Newest"]}).json()["id"][0]
    assert client.delete(f"/api/element/BusinessProcess/{newest}").status_code == 204
    created = client.post("/api/element/InformationSystem", json={"name": ["Next"]}).json()["id"][0]
    assert created not in (first, newest)
    history = client.get(f"/api/history/BusinessProcess/{newest}").json()["items"]
    assert [(i["operation"], i["name"]) for i in history] == [("deleted", "Newest"), ("created", "Newest")]


@pytest.mark.skipif(PG_URL is not None, reason="the rebuild concerns SQLite only")
def test_upgrading_an_sqlite_repository_keeps_every_row(tmp_path: Path) -> None:
    """The AUTOINCREMENT rebuild of `element` runs with foreign keys off: values, relations and children
    referencing elements survive it."""
    engine = build_engine(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        with engine.connect() as connection:
            command.upgrade(migrate.alembic_config(connection), "0001")
            connection.commit()
            stamp = {"created_at": "2026-01-01", "last_modified_at": "2026-01-01", "last_modified_by": "s"}
            element = {"type_id": 1, "description": "", "position": 0, "revision": 1, **stamp}
            rows: list[tuple[str, dict[str, object]]] = [
                ("block_type", {"id": 1, "name": "T", "display_name": "T", "abbreviation": "T"}),
                ("attribute_group", {"id": 1, "name": "g", "description": "", "position": 0}),
                ("attribute", {"id": 1, "name": "a", "value_type": "text", "group_id": 1}),
                ("relation_type", {"id": 1, "name": "T_x", "source_type_id": 1, "source_end": "xs"}),
                ("element", {"id": 1, "name": "p", "parent_id": None, **element}),
                ("element", {"id": 2, "name": "c", "parent_id": 1, **element}),
                (
                    "element_value",
                    {"id": 1, "element_id": 2, "attribute_id": 1, "position": 0, "text_value": "v"},
                ),
                ("relation", {"id": 1, "relation_type_id": 1, "source_id": 1, "target_id": 2, "position": 0}),
            ]
            defaults: dict[str, dict[str, object]] = {
                "block_type": {"description": "", "hierarchical": True, "hidden": False, "position": 0},
                "attribute": {"description": "", "multiple": False, "mandatory": False, "position": 0},
                "relation_type": {
                    "description": "",
                    "target_type_id": 1,
                    "target_end": "ys",
                    "source_multiple": True,
                    "target_multiple": True,
                    "attributable": False,
                },
            }
            for table, values in rows:
                values = {**defaults.get(table, {}), **values}
                columns = ", ".join(values)
                parameters = ", ".join(f":{c}" for c in values)
                connection.execute(text(f"INSERT INTO {table} ({columns}) VALUES ({parameters})"), values)
            connection.commit()
        migrate.upgrade(engine)
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT count(*) FROM element_value").scalar() == 1
            assert connection.exec_driver_sql("SELECT count(*) FROM relation").scalar() == 1
            assert connection.exec_driver_sql("SELECT parent_id FROM element WHERE id = 2").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            table_sql = connection.execute(
                text("SELECT sql FROM sqlite_master WHERE name = 'element'")
            ).scalar()
            assert "AUTOINCREMENT" in str(table_sql)
            connection.exec_driver_sql("DELETE FROM relation")
            connection.exec_driver_sql("DELETE FROM element_value")
            connection.exec_driver_sql("DELETE FROM element WHERE id = 2")
            connection.execute(
                text(
                    "INSERT INTO element (type_id, name, description, position, revision, created_at, "
                    "last_modified_at, last_modified_by) VALUES (1, 'n', '', 1, 1, :at, :at, 's')"
                ),
                {"at": "2026-01-01"},
            )
            assert connection.exec_driver_sql("SELECT max(id) FROM element").scalar() == 3
    finally:
        engine.dispose()
