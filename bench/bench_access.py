"""Measure the access and metamodel endpoints on a repository of N elements and print a table.

    .venv/bin/python bench/bench_access.py [--elements 10000] [--database postgresql://…]

Reads: metamodel and current-user requests (warm caches) and a cold metamodel snapshot load. Writes: the
metamodel edits that remove stored values (literal removal, attribute deletion, relation type deletion),
each touching every element, with the number of SQL statements they ran. Never asserts a time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from sqlalchemy import Engine, event, insert, select
from sqlalchemy.orm import Session

from blockrepo.app import create_app
from blockrepo.auth.passwords import Passwords
from blockrepo.bootstrap import initialize
from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.metamodel.models import AttributeLiteral, BlockType, RelationType
from blockrepo.metamodel.repository import load_metamodel, read_repository_state
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password"


@contextmanager
def counting(engine: Engine) -> Iterator[list[str]]:
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)


def median_ms(action: Callable[[], Any], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings)


def ok(response: Any) -> Any:
    if response.status_code >= 300:
        raise SystemExit(
            f"{response.request.method} {response.request.url}: {response.status_code} {response.text}"
        )
    return response.json() if response.content else None


def read(client: TestClient, path: str) -> Any:
    return ok(client.get(path))


def populate(engine: Engine, count: int) -> None:
    """N projects with two enum values each, all related to one system with a relation value (bulk SQL)."""
    now = dt.datetime.now(dt.UTC)
    with Session(engine) as db:
        project_type = db.scalar(select(BlockType.id).where(BlockType.name == "Project"))
        system_type = db.scalar(select(BlockType.id).where(BlockType.name == "InformationSystem"))
        relation_type = db.scalar(
            select(RelationType.id).where(RelationType.name == "InformationSystem_Project")
        )
        literals = dict(db.execute(select(AttributeLiteral.name, AttributeLiteral.id)).all())
        attribute_id = db.scalar(select(AttributeLiteral.attribute_id).limit(1))
        common = {
            "description": "",
            "parent_id": None,
            "revision": 1,
            "created_at": now,
            "last_modified_at": now,
        }
        system_id = db.execute(
            insert(Element)
            .values(type_id=system_type, name="ERP", position=0, last_modified_by="system", **common)
            .returning(Element.id)
        ).scalar_one()
        db.execute(
            insert(Element),
            [
                {
                    "type_id": project_type,
                    "name": f"Project {i}",
                    "position": i,
                    "last_modified_by": "system",
                    **common,
                }
                for i in range(count)
            ],
        )
        project_ids = list(db.scalars(select(Element.id).where(Element.type_id == project_type)))
        db.execute(
            insert(ElementValue),
            [
                {
                    "element_id": pid,
                    "attribute_id": attribute_id,
                    "position": position,
                    "literal_id": literals[name],
                }
                for pid in project_ids
                for position, name in enumerate(("a", "b"))
            ],
        )
        db.execute(
            insert(Relation),
            [
                {"relation_type_id": relation_type, "source_id": system_id, "target_id": pid, "position": i}
                for i, pid in enumerate(project_ids)
            ],
        )
        relation_ids = list(db.scalars(select(Relation.id).where(Relation.relation_type_id == relation_type)))
        db.execute(
            insert(RelationValue),
            [
                {"relation_id": rid, "attribute_id": attribute_id, "position": 0, "literal_id": literals["a"]}
                for rid in relation_ids
            ],
        )
        db.commit()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--elements", type=int, default=10000)
    parser.add_argument(
        "--database", default=None, help="an empty database (default: a temporary SQLite file)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        url = args.database or f"sqlite:///{Path(directory) / 'bench.db'}"
        settings = Settings(database_url=url, admin_password=PASSWORD)
        engine = build_engine(url)
        initialize(engine, settings, Passwords(settings))
        app = create_app(settings)
        rows: list[tuple[str, str, str]] = []
        with TestClient(app, base_url="http://127.0.0.1") as client:
            client.auth = ("system", PASSWORD)
            attribute = ok(
                client.post(
                    "/api/administration/attributes",
                    json={
                        "name": "Tier",
                        "valueType": "enum",
                        "multiple": True,
                        "literals": [{"name": "a"}, {"name": "b"}],
                        "types": ["Project"],
                        "relationTypes": ["InformationSystem_Project"],
                    },
                )
            )
            populate(engine, args.elements)
            n = f"{args.elements:,}"
            for label, path in (
                ("GET /api/metamodel (warm)", "/api/metamodel"),
                ("GET /api/metamodel/types/InformationSystem", "/api/metamodel/types/InformationSystem"),
                ("GET /api/administration/users/current", "/api/administration/users/current"),
            ):
                ok(client.get(path))
                rows.append(
                    (label, f"{median_ms(partial(read, client, path), 50):.2f} ms (median of 50)", "-")
                )
            with Session(engine) as db:
                revision = read_repository_state(db).metamodel_revision
                cold = median_ms(lambda: load_metamodel(db, revision), 10)
            rows.append(("metamodel snapshot load (cold)", f"{cold:.2f} ms (median of 10)", "-"))
            app_engine: Engine = app.state.services.engine
            for label, method, path, body in (
                (
                    f"remove literal 'b' ({n} elements)",
                    "PUT",
                    f"/api/administration/attributes/{attribute['id']}",
                    {"literals": [{"name": "a"}]},
                ),
                (
                    f"delete attribute ({n} element + {n} relation values)",
                    "DELETE",
                    f"/api/administration/attributes/{attribute['id']}",
                    None,
                ),
                (
                    f"delete relation type ({n} relations)",
                    "DELETE",
                    "/api/metamodel/relationtypes/InformationSystem_Project",
                    None,
                ),
            ):
                with counting(app_engine) as statements:
                    start = time.perf_counter()
                    ok(
                        client.request(method, path, json=body)
                        if body is not None
                        else client.request(method, path)
                    )
                    elapsed = (time.perf_counter() - start) * 1000
                rows.append((label, f"{elapsed:.0f} ms", str(len(statements))))
        app.state.services.dispose()
        engine.dispose()
    table = Table(
        title=f"blockrepo access/metamodel ({'PostgreSQL' if url.startswith('postgres') else 'SQLite'})"
    )
    table.add_column("operation")
    table.add_column("time", justify="right")
    table.add_column("SQL statements", justify="right")
    for row in rows:
        table.add_row(*row)
    Console().print(table)


if __name__ == "__main__":
    main()
