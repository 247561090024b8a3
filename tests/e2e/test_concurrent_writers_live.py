"""Writers on two live servers over one PostgreSQL database, where element writes run side by side and take
their revision numbers from a sequence (issue 24), with feed readers polling all along: the feed has no
gap and no repeat and never shows a revision that then rolls back, even when one server is killed while
its writes hold revision numbers; `asOf` at every revision equals replaying the feed; If-Match increments
lose nothing; an attribute removal racing the writers neither deadlocks nor answers 500."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import Connection, create_engine, text

from blockrepo.storage.engine import normalize_url
from blockrepo.storage.transactions import REVISION_CLAIMS
from tests.conftest import ADMIN_PASSWORD, PG_URL
from tests.e2e.conftest import LiveServer, StartServer

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL (BLOCKREPO_TEST_DATABASE_URL)"),
]

TYPE = "InformationSystem"
ELEMENTS = 6
WRITERS_PER_SERVER = 3
COUNTERS_PER_SERVER = 2
ATTRIBUTES = "/api/administration/attributes"

# Revision claims of this database's backends, by the application name each server's URL sets.
_CLAIMS = f"""
SELECT a.application_name, l.objid::bigint FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.classid = {REVISION_CLAIMS} AND l.objsubid = 2 AND l.granted
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
"""


def _client(server: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, auth=("system", ADMIN_PASSWORD), timeout=60)


def _poll(client: httpx.Client, since: int, seen: list[dict[str, Any]]) -> int:
    """One poll as the API documents it: follow nextCursor, then remember the last revision seen."""
    params: dict[str, Any] = {"sinceRevision": since, "limit": 50}
    while True:
        response = client.get("/api/history", params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        seen.extend(body["items"])
        if body["nextCursor"] is None:
            return int(seen[-1]["revision"]) if seen else since
        params["cursor"] = body["nextCursor"]


class Poller(threading.Thread):
    """Follows the feed on one server until stopped, then polls once more."""

    def __init__(self, server: LiveServer) -> None:
        super().__init__(daemon=True)
        self.server, self.stop = server, threading.Event()
        self.seen: list[dict[str, Any]] = []
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            with _client(self.server) as client:
                since = 0
                while not self.stop.is_set():
                    since = _poll(client, since, self.seen)
                    time.sleep(0.005)
                _poll(client, since, self.seen)
        except BaseException as exc:  # reported by the test
            self.failure = exc


def _writer(
    server: LiveServer,
    ids: list[int],
    start: int,
    attribute: str,
    done: threading.Event,
    statuses: Counter[Any],
) -> None:
    """PATCH the attribute on the elements round robin from `ids[start]` on until `done` (or its server
    is gone)."""
    with _client(server) as client:
        step = start
        while not done.is_set():
            element_id = ids[step % len(ids)]
            try:
                response = client.patch(
                    f"/api/element/{TYPE}/{element_id}", json={attribute: [f"{server.base_url} {step}"]}
                )
            except httpx.TransportError:
                statuses["gone"] += 1
                return
            statuses[response.status_code] += 1
            step += 1


def _counter(server: LiveServer, element_id: int, done: threading.Event, counts: Counter[Any]) -> None:
    """Increment the element's Counter with If-Match until `done`: read, add one, write if unchanged."""
    url = f"/api/element/{TYPE}/{element_id}"
    with _client(server) as client:
        while not done.is_set():
            current = client.get(url)
            value = int((current.json().get("Counter") or ["0"])[0])
            response = client.patch(
                url, json={"Counter": [str(value + 1)]}, headers={"If-Match": current.headers["ETag"]}
            )
            counts[response.status_code] += 1


def _threads(target: Callable[..., None], *argument_lists: tuple[Any, ...]) -> list[threading.Thread]:
    threads = [threading.Thread(target=target, args=arguments, daemon=True) for arguments in argument_lists]
    for thread in threads:
        thread.start()
    return threads


_HOLD_KEY = 990_001  # a one-number advisory lock: another space than the application's two-number ones
_HOLD_FUNCTION = f"""
CREATE OR REPLACE FUNCTION test_hold_after_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared({_HOLD_KEY});
    RETURN NULL;
END $$"""
_HOLD_TRIGGER = (
    "CREATE TRIGGER test_hold AFTER INSERT ON change"
    " FOR EACH STATEMENT EXECUTE FUNCTION test_hold_after_change()"
)


def _claims(connection: Connection) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for application, number in connection.execute(text(_CLAIMS)):
        found.setdefault(application, []).append(int(number))
    return found


def _wait_for(condition: Callable[[], bool], what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _replayed(items: list[dict[str, Any]], revision: int) -> dict[int, dict[str, list[Any]]]:
    """The elements of TYPE (id -> name and Note) after the feed's changesets up to `revision`."""
    state: dict[int, dict[str, list[Any]]] = {}
    for item in items:
        if item["revision"] > revision or item["entity"] != "element" or item["type"] != TYPE:
            continue
        if item["operation"] == "deleted":
            state.pop(item["id"], None)
            continue
        properties = state.setdefault(item["id"], {"name": [], "Note": []})
        for change in item["changes"]:
            if change["property"] in properties:
                properties[change["property"]] = change["new"]
    return state


def _as_of(client: httpx.Client, revision: int) -> dict[int, dict[str, list[Any]]]:
    response = client.get(f"/api/massdata/{TYPE}", params={"asOf": revision, "limit": 1000})
    assert response.status_code == 200, response.text
    assert response.json()["nextCursor"] is None
    return {
        item["id"][0]: {"name": item.get("name") or [], "Note": item.get("Note") or []}
        for item in response.json()["items"]
    }


def test_writers_on_two_servers_keep_the_feed_gap_free_through_a_killed_server(
    start_server: StartServer, database_url: str
) -> None:
    first = start_server(database=f"{database_url}?application_name=blockrepo-a")
    second = start_server(database=f"{database_url}?application_name=blockrepo-b")
    engine = create_engine(normalize_url(database_url))
    with _client(first) as admin:
        created = {}
        for name in ("Note", "Probe", "Counter"):
            response = admin.post(ATTRIBUTES, json={"name": name, "valueType": "text", "types": [TYPE]})
            assert response.status_code == 201, response.text
            created[name] = response.json()["id"]
        probe = created["Probe"]
        ids = []
        for n in range(ELEMENTS + 1):
            response = admin.post(f"/api/element/{TYPE}", json={"name": [f"System {n}"]})
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"][0])
        counter_id = ids.pop()

    pollers = [Poller(first), Poller(second)]
    for poller in pollers:
        poller.start()

    # 1. Writers, If-Match increments and writers of an attribute that is removed meanwhile, on both.
    done = threading.Event()
    statuses: Counter[Any] = Counter()
    probe_statuses: Counter[Any] = Counter()
    counts: Counter[Any] = Counter()
    servers = (first, second)
    workers = _threads(
        _writer,
        *((s, ids, 2 * i + w, "Note", done, statuses) for i, s in enumerate(servers) for w in range(2)),
    )
    workers += _threads(
        _writer, *((s, ids, 4 + i, "Probe", done, probe_statuses) for i, s in enumerate(servers))
    )
    workers += _threads(
        _counter, *((s, counter_id, done, counts) for s in servers for _ in range(COUNTERS_PER_SERVER))
    )
    time.sleep(0.8)
    with _client(second) as admin:
        removal = admin.delete(f"{ATTRIBUTES}/{probe}")
    time.sleep(0.8)
    done.set()
    for thread in workers:
        thread.join(timeout=120)
    with _client(first) as client:
        stored_counter = int(client.get(f"/api/element/{TYPE}/{counter_id}").json()["Counter"][0])

    # 2. Writes held after they claimed their revision numbers (a trigger on the change rows, which the
    # claim's statement writes, waits for a lock the test holds), on both servers; then the first server
    # is killed, so that its claims are never committed.
    with engine.begin() as setup:
        setup.execute(text(_HOLD_FUNCTION))
        setup.execute(text(_HOLD_TRIGGER))
    done = threading.Event()
    kill_statuses: Counter[Any] = Counter()
    workers = _threads(
        _writer,
        *(
            (s, ids, WRITERS_PER_SERVER * i + w, "Note", done, kill_statuses)
            for i, s in enumerate(servers)
            for w in range(WRITERS_PER_SERVER)
        ),
    )
    with engine.connect() as watcher, engine.connect() as holder:
        holder.execute(text(f"SELECT pg_advisory_xact_lock({_HOLD_KEY})"))
        claims: dict[str, list[int]] = {}

        def both_hold_claims() -> bool:
            claims.update(_claims(watcher))
            watcher.rollback()
            return all(len(claims.get(f"blockrepo-{s}", [])) > 0 for s in "ab")

        _wait_for(both_hold_claims, "writes of both servers holding revision claims")
        lowest_claim = min(n for numbers in claims.values() for n in numbers)
        horizon = watcher.execute(text("SELECT blockrepo_revision_horizon()")).scalar_one()
        watcher.rollback()
        time.sleep(0.2)  # a few more polls while the claims are held
        shown_meanwhile = max((item["revision"] for poller in pollers for item in poller.seen), default=0)
        first.process.kill()
        first.process.wait()
        holder.rollback()  # the second server's held writes go on and commit

        def first_claims_gone() -> bool:
            gone = "blockrepo-a" not in _claims(watcher)
            watcher.rollback()
            return gone

        _wait_for(first_claims_gone, "the killed server's transactions to roll back")
        killed_claims = set(claims.get("blockrepo-a", []))
    with engine.begin() as cleanup:
        cleanup.execute(text("DROP TRIGGER test_hold ON change"))
    time.sleep(1)
    done.set()
    for thread in workers:
        thread.join(timeout=120)
    for poller in pollers:
        poller.stop.set()
        poller.join(timeout=120)

    with engine.connect() as connection:
        committed = list(connection.execute(text("SELECT id FROM revision ORDER BY id")).scalars())
    engine.dispose()
    log = second.log()[-3000:]

    assert not [
        s for s in (*statuses, *probe_statuses, *counts, *kill_statuses) if isinstance(s, int) and s >= 500
    ], (statuses, probe_statuses, counts, kill_statuses, log)
    assert removal.status_code == 204, removal.text
    assert set(statuses) == {200}, statuses
    assert set(probe_statuses) <= {200, 400} and probe_statuses[200] > 0, probe_statuses
    # If-Match: every increment that was answered 200 is in the value, none twice.
    assert set(counts) <= {200, 412} and counts[200] > 0, counts
    assert stored_counter == counts[200]
    # While writes held their numbers, no reader was shown them or anything after them.
    assert horizon < lowest_claim and shown_meanwhile < lowest_claim
    # The killed server's numbers never committed: gaps the feed stepped over.
    assert killed_claims and not killed_claims & set(committed)
    assert committed[-1] > max(killed_claims)
    second_poller = pollers[1]
    assert second_poller.failure is None, second_poller.failure
    for poller in pollers:
        seen = poller.seen
        keys = [(i["revision"], i["entity"], i["type"], i["id"], i["subject"]) for i in seen]
        assert len(keys) == len(set(keys)), "a changeset was delivered twice"
        revisions = [i["revision"] for i in seen]
        assert revisions == sorted(revisions), "changesets arrived out of order"
        assert set(revisions) <= set(committed), "a revision was shown that rolled back"
    # No gap: the poller that ran to the end saw every committed revision, as one full read sees them.
    assert sorted({i["revision"] for i in second_poller.seen}) == committed
    with _client(second) as client:
        everything: list[dict[str, Any]] = []
        _poll(client, 0, everything)
        assert [(i["revision"], i["id"], i["subject"]) for i in everything] == [
            (i["revision"], i["id"], i["subject"]) for i in second_poller.seen
        ]
        # asOf at every revision is the feed replayed up to it.
        for revision in committed:
            assert _as_of(client, revision) == _replayed(everything, revision), f"as of {revision}"
