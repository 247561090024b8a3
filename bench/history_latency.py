"""Latency of history reads: one element with 1,000 revisions in a repository with 100,000 changes.

    python bench/history_latency.py                                   # SQLite (a temporary file)
    python bench/history_latency.py --database postgresql://postgres@127.0.0.1:5432/postgres

The element gets its revisions through the element API (one PUT each); between two of them, 99 changes of
other elements are written straight into the history tables (set-based), so the element's rows are spread
over the whole history as in a busy repository. Requests go through the ASGI app in-process (no network).
With PostgreSQL a scratch database is created next to the given one and dropped afterwards.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

from harness import cheap_settings, latency, scratch_database
from rich.console import Console
from rich.table import Table
from sqlalchemy import insert, text, update

from blockrepo.app import create_app
from blockrepo.auth.passwords import Passwords
from blockrepo.bootstrap import initialize
from blockrepo.revisions.models import Change, RepositoryState, Revision
from blockrepo.storage.engine import build_engine

PASSWORD = "bench-password"
TYPES = ("BusinessProcess", "InformationSystem", "Project", "BusinessUnit")


def write_filler(app_engine: object, first_revision: int, count: int, rng_seed: int) -> None:
    """`count` revisions, one change of another element each, in two executemany statements."""
    now = dt.datetime.now(dt.UTC)
    revisions = [
        {
            "id": first_revision + n,
            "created_at": now,
            "user_login": "bench",
            "request_id": f"fill-{first_revision + n}",
        }
        for n in range(count)
    ]
    changes = [
        {
            "revision": first_revision + n,
            "entity": "element",
            "operation": "updated",
            "type_name": TYPES[(rng_seed + n) % len(TYPES)],
            "element_id": 1_000_000 + (rng_seed * 7919 + n * 104_729) % 20_000,
            "element_name": f"other {n}",
            "changes": [{"property": "description", "old": [f"before {n}"], "new": [f"after {n}"]}],
        }
        for n in range(count)
    ]
    with app_engine.begin() as connection:  # type: ignore[attr-defined]
        connection.execute(insert(Revision), revisions)
        connection.execute(insert(Change), changes)
        connection.execute(
            update(RepositoryState).where(RepositoryState.id == 1).values(revision=first_revision + count - 1)
        )


def reader_with_former_names(client: Any) -> tuple[str, str]:
    """A user who reads BusinessProcess and its history but not the group `Restricted`, after ten attributes
    were renamed and ten deleted (so that history has former names to resolve); returns its credentials."""
    for path, body in (
        ("attributegroups", {"name": "Restricted"}),
        (
            "roles",
            {
                "name": "Historians",
                "typePermissions": {"BusinessProcess": ["read"]},
                "functionalPermissions": ["VIEW_HISTORY"],
            },
        ),
    ):
        response = client.post(f"/api/administration/{path}", json=body)
        assert response.status_code == 201, response.text
    response = client.put(
        "/api/administration/attributegroups/"
        + str(
            next(
                g["id"]
                for g in client.get("/api/administration/attributegroups").json()
                if g["name"] == "Restricted"
            )
        ),
        json={"permissions": [{"role": "Supervisor", "read": True, "write": True}]},
    )
    assert response.status_code == 200, response.text
    for n in range(20):
        attribute_body: dict[str, Any] = {
            "name": f"Bench {n}",
            "valueType": "text",
            "group": "Restricted",
            "types": ["BusinessProcess"],
        }
        response = client.post("/api/administration/attributes", json=attribute_body)
        assert response.status_code == 201, response.text
        attribute = f"/api/administration/attributes/{response.json()['id']}"
        edited = (
            client.put(attribute, json={"name": f"Bench {n} renamed"}) if n % 2 else client.delete(attribute)
        )
        assert edited.status_code in (200, 204), edited.text
    login = ("historian", "a long bench passphrase 42")
    user = {
        "login": login[0],
        "password": login[1],
        "firstName": "H",
        "lastName": "B",
        "email": "",
        "roles": ["Historians"],
    }
    response = client.post("/api/administration/users", json=user)
    assert response.status_code == 201, response.text
    return login


def run(database_url: str, element_revisions: int, total_changes: int, repeat: int, console: Console) -> None:
    settings = cheap_settings(database_url, PASSWORD)
    engine = build_engine(database_url)
    initialize(engine, settings, Passwords(settings))
    engine.dispose()
    with warnings.catch_warnings():  # starlette's notice about its httpx-based test client
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    app = create_app(settings)
    app_engine = app.state.services.engine
    filler_per_step = max(0, (total_changes - element_revisions) // max(1, element_revisions - 1))
    built = time.perf_counter()
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.auth = ("system", PASSWORD)
        created = client.post("/api/element/BusinessProcess", json={"name": ["Target"], "description": ["0"]})
        element_id = created.json()["id"][0]
        path = f"/api/element/BusinessProcess/{element_id}"
        middle_revision = 0
        for step in range(1, element_revisions):
            with app_engine.connect() as connection:
                current = connection.execute(text("SELECT revision FROM repository_state")).scalar_one()
            write_filler(app_engine, current + 1, filler_per_step, step)
            response = client.put(path, json={"description": [f"version {step}"]})
            assert response.status_code == 200, response.text
            if step == element_revisions // 2:
                middle_revision = current + filler_per_step + 1
        with app_engine.connect() as connection:
            current = connection.execute(text("SELECT revision FROM repository_state")).scalar_one()
            changes = connection.execute(text("SELECT count(*) FROM change")).scalar_one()
        if changes < total_changes:
            write_filler(app_engine, current + 1, total_changes - changes, 0)
        with app_engine.connect() as connection:
            changes = connection.execute(text("SELECT count(*) FROM change")).scalar_one()
            newest = connection.execute(text("SELECT revision FROM repository_state")).scalar_one()
        # Fresh statistics, as autovacuum / `ANALYZE` keep them in a running database.
        with app_engine.begin() as connection:
            connection.execute(text("ANALYZE"))
        element_changes = len(
            client.get(f"/api/history/BusinessProcess/{element_id}", params={"limit": 1000}).json()["items"]
        )
        console.print(
            f"[bold]{app_engine.dialect.name}[/]: {changes:,} changes in {newest:,} revisions, "
            f"the element has {element_changes:,} changesets (built in {time.perf_counter() - built:.0f} s)"
        )

        reader = reader_with_former_names(client)

        def get(url: str, as_reader: bool = False, **params: object) -> Callable[[], object]:
            def call() -> object:
                response = client.get(url, params=params, auth=reader if as_reader else client.auth)
                assert response.status_code == 200, response.text
                return response

            return call

        history = f"/api/history/BusinessProcess/{element_id}"
        cases = [
            (f"element history, all {element_changes:,} changesets (limit=1000)", get(history, limit=1000)),
            ("element history, newest page (limit=100)", get(history)),
            ("element history, page ending mid-history (to=<revision>)", get(history, to=middle_revision)),
            ("type history, newest page (limit=100)", get("/api/history/BusinessProcess")),
            ("feed, last 100 changesets (sinceRevision)", get("/api/history", sinceRevision=newest - 100)),
            ("element GET, current", get(path)),
            (
                f"element GET asOf mid-history ({element_revisions // 2:,} folded)",
                get(path, asOf=middle_revision),
            ),
            (f"element GET asOf newest revision ({element_revisions:,} folded)", get(path, asOf=newest)),
            # A reader's pages are filtered by attribute groups, through the attributes' former names.
            ("reader: element history, newest page", get(history, as_reader=True)),
            ("reader: type history, newest page", get("/api/history/BusinessProcess", as_reader=True)),
            ("reader: feed, last 100", get("/api/history", as_reader=True, sinceRevision=newest - 100)),
            ("reader: element GET asOf mid-history", get(path, as_reader=True, asOf=middle_revision)),
        ]
        table = Table(title=f"History read latency, {app_engine.dialect.name}, {repeat} runs each (ms)")
        table.add_column("request")
        table.add_column("median", justify="right")
        table.add_column("p95", justify="right")
        for label, call in cases:
            median, p95 = latency(call, repeat)
            table.add_row(label, f"{median:.1f}", f"{p95:.1f}")
        console.print(table)
        plan_statement = (
            "SELECT change.id FROM change JOIN revision ON revision.id = change.revision "
            f"WHERE change.element_id = {element_id} ORDER BY change.revision DESC, change.id DESC LIMIT 1001"
        )
        explain = "EXPLAIN QUERY PLAN " if app_engine.dialect.name == "sqlite" else "EXPLAIN ANALYZE "
        with app_engine.connect() as connection:
            rows = connection.execute(text(explain + plan_statement)).all()
        console.print("[bold]plan of the element history query[/]")
        for row in rows:
            console.print("  " + str(row[-1]))
    app.state.services.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database", help="postgresql://… server to create a scratch database on (default SQLite)"
    )
    parser.add_argument("--element-revisions", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=100_000, help="changes in the whole history")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database (its URL is printed)")
    args = parser.parse_args()
    console = Console(width=120)
    with scratch_database(args.database, "history", keep=args.keep) as url:
        run(url, args.element_revisions, args.changes, args.repeat, console)
        if args.keep:
            console.print(f"kept: {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
