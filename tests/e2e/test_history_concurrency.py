"""Gap-free change feed under concurrency: several writer processes, each with its own app (own pool, own
transactions) over one PostgreSQL database, while a poller follows the feed. The poller must see every
revision exactly once and in order."""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.conftest import ADMIN_PASSWORD, PG_URL, make_settings

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL (BLOCKREPO_TEST_DATABASE_URL)"),
]

WRITERS = 4
WRITES_PER_WRITER = 30


def write_elements(database_url: str, writer: int, writes: int) -> int:
    """One writer process: creates elements and relates each to the ones it made before (so that one
    revision can hold several changesets). Returns how many requests changed something."""
    app = create_app(make_settings(database_url))
    made: list[int] = []
    revisions = 0
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.auth = ("system", ADMIN_PASSWORD)
        for n in range(writes):
            if made and n % 3 == 2:
                body = {"successors": made[-4:-1], "description": [f"writer {writer} step {n}"]}
                response = client.put(f"/api/element/BusinessProcess/{made[-1]}", json=body)
                assert response.status_code == 200, response.text
            else:
                response = client.post("/api/element/BusinessProcess", json={"name": [f"w{writer}-{n}"]})
                assert response.status_code == 201, response.text
                made.append(response.json()["id"][0])
            revisions += 1
    app.state.services.dispose()
    return revisions


def _poll(client: TestClient, since: int, seen: list[dict[str, Any]]) -> int:
    """One poll as the API documents it: follow nextCursor, then remember the last revision seen."""
    params: dict[str, Any] = {"sinceRevision": since, "limit": 5}
    while True:
        body = client.get("/api/history", params=params).json()
        seen.extend(body["items"])
        if body["nextCursor"] is None:
            return seen[-1]["revision"] if seen else since
        params["cursor"] = body["nextCursor"]


def test_a_polling_client_sees_every_revision_once_and_in_order(
    client: TestClient, database_url: str
) -> None:
    seen: list[dict[str, Any]] = []
    since = 0
    polls = 0
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=WRITERS, mp_context=context) as pool:
        futures = [pool.submit(write_elements, database_url, w, WRITES_PER_WRITER) for w in range(WRITERS)]
        while not all(f.done() for f in futures):
            since = _poll(client, since, seen)
            polls += 1
            time.sleep(0.005)
        written = sum(f.result() for f in futures)
    since = _poll(client, since, seen)

    keys = [(i["revision"], i["entity"], i["type"], i["id"], i["subject"]) for i in seen]
    assert len(keys) == len(set(keys)), "a changeset was delivered twice"
    revisions = [i["revision"] for i in seen]
    assert revisions == sorted(revisions), "changesets arrived out of order"
    # Revision 1 is the bootstrap; then exactly one revision per successful write, none missing.
    assert sorted(set(revisions)) == list(range(1, written + 2))
    everything = client.get("/api/history", params={"limit": 1000}).json()
    assert everything["nextCursor"] is None
    assert [(i["revision"], i["id"]) for i in everything["items"]] == [(i["revision"], i["id"]) for i in seen]
    # The poller ran while the writers wrote; how often depends on the load of the machine (CI saw 3 polls).
    assert polls >= 1
