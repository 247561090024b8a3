"""Attribute removal against concurrent element writers on a live server over PostgreSQL: no request fails
with a 5xx (a deadlock used to reach clients as 500) and what is stored agrees with what history says."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, create_engine, text

from blockrepo.storage.engine import normalize_url
from tests.conftest import ADMIN_PASSWORD, PG_URL
from tests.e2e.conftest import StartServer

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(PG_URL is None, reason="SQLite serializes writers: the deadlock cannot happen there"),
]

ELEMENTS = 12
WRITERS = 4
ROUNDS = 6
ATTRIBUTES = "/api/administration/attributes"
TYPE = "InformationSystem"


def _attribute(client: httpx.Client, name: str) -> int:
    response = client.post(ATTRIBUTES, json={"name": name, "valueType": "text", "types": [TYPE, "Project"]})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def _write_until(
    base_url: str,
    ids: list[int],
    attribute: str,
    writer: int,
    running: threading.Semaphore,
    done: threading.Event,
    statuses: Counter[int],
) -> None:
    """PATCH the attribute on the elements, round robin, until `done`; counts every answer's status and
    releases `running` once its first write succeeded."""
    with httpx.Client(base_url=base_url, auth=("system", ADMIN_PASSWORD), timeout=60) as client:
        step = 0
        while not done.is_set() or step < len(ids):
            element_id = ids[(writer + step) % len(ids)]
            response = client.patch(
                f"/api/element/{TYPE}/{element_id}", json={attribute: [f"writer {writer} step {step}"]}
            )
            statuses[response.status_code] += 1
            if response.status_code >= 500:
                running.release()
                return
            if step == 0:
                running.release()
            step += 1


def _last_recorded(engine: Engine, element_id: int, attribute: str) -> list[Any]:
    """The attribute's value after the element's history: the `new` of its last change of that property."""
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT changes FROM change WHERE element_id = :id ORDER BY revision"), {"id": element_id}
        ).scalars()
        value: list[Any] = []
        for changes in rows:
            for change in changes:
                if change["property"] == attribute:
                    value = change["new"]
        return value


def test_attribute_removal_and_concurrent_writers_neither_fail_nor_disagree(
    start_server: StartServer, database_url: str
) -> None:
    server = start_server()
    engine = create_engine(normalize_url(database_url))
    with httpx.Client(base_url=server.base_url, auth=("system", ADMIN_PASSWORD), timeout=60) as admin:
        ids = []
        for n in range(ELEMENTS):
            response = admin.post(f"/api/element/{TYPE}", json={"name": [f"System {n}"]})
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"][0])
        statuses: Counter[int] = Counter()
        admin_statuses: Counter[int] = Counter()
        disagreements: list[str] = []
        for round_ in range(ROUNDS):
            name = f"Probe{round_}"
            attribute_id = _attribute(admin, name)
            running, done = threading.Semaphore(0), threading.Event()
            writers = [
                threading.Thread(
                    target=_write_until,
                    args=(server.base_url, ids, name, w, running, done, statuses),
                    daemon=True,
                )
                for w in range(WRITERS)
            ]
            for thread in writers:
                thread.start()
            for _ in writers:
                running.acquire()  # the removal comes while every writer is under way
            # Even rounds take the attribute away from the writers' type, odd rounds delete it.
            if round_ % 2 == 0:
                response = admin.put(f"{ATTRIBUTES}/{attribute_id}", json={"types": ["Project"]})
            else:
                response = admin.delete(f"{ATTRIBUTES}/{attribute_id}")
            admin_statuses[response.status_code] += 1
            done.set()
            for thread in writers:
                thread.join(timeout=120)
            for element_id in ids:
                stored = admin.get(f"/api/element/{TYPE}/{element_id}").json()
                recorded = _last_recorded(engine, element_id, name)
                if name in stored or recorded != []:
                    disagreements.append(
                        f"{name} on {element_id}: stored {stored.get(name)}, history {recorded}"
                    )
    with engine.connect() as connection:
        revisions = list(connection.execute(text("SELECT id FROM revision ORDER BY id")).scalars())
    engine.dispose()

    print(f"writers {dict(statuses)}, administrator {dict(admin_statuses)}, {len(disagreements)} disagree")
    assert not [status for status in statuses if status >= 500], (statuses, server.log()[-3000:])
    assert set(admin_statuses) <= {200, 204}, (admin_statuses, server.log()[-3000:])
    assert not disagreements, disagreements
    # Writers that came after the removal are refused as bad input; the others succeeded.
    assert set(statuses) <= {200, 400, 409}, statuses
    assert statuses[200] > 0
    assert revisions == list(range(1, len(revisions) + 1)), "the revision numbers have a gap"
