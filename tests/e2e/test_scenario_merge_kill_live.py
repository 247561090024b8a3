"""A scenario merge killed -9 at any point leaves main and the scenario exactly as before (issue 25), live."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import secrets
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Connection, Engine, func, insert, select, text, update
from sqlalchemy.engine import make_url

from blockrepo.elements.models import Element
from blockrepo.revisions.models import Change, Revision
from blockrepo.scenarios.models import Scenario, ScenarioChange
from blockrepo.storage.engine import build_engine
from blockrepo.storage.transactions import REVISION_CLAIMS
from tests.conftest import ADMIN_PASSWORD, PG_URL, cloned_database
from tests.e2e.conftest import LiveServer, StartServer, child_pids

pytestmark = pytest.mark.e2e

TYPE = "InformationSystem"
ADMIN = ("system", ADMIN_PASSWORD)
MAIN_ELEMENTS = 5_500
PLANNED = 5_000  # elements the scenario changes through change rows inserted directly (bench/scenarios.py)
PATCHED = 5  # and through PATCHes in it, besides one element it creates and one it deletes
# Where the merge is killed: once the server has spent these fractions of the CPU time the same merge took
# on a copy of the repository (a measure of its progress that a busy machine does not stretch), then
# (None) as it commits: once it has claimed its revision on PostgreSQL (everything written, nothing
# committed), once its commit has begun to write the WAL on SQLite.
KILL_POINTS: tuple[float | None, ...] = (0.25, 0.5, 0.75, None)
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class MainState:
    feed: str  # hash of every changeset of the feed
    changesets: int
    last_revision: int
    listing: str  # hash of the full listing of TYPE
    content: dict[str, tuple[int, list[str]]]  # name -> (id, description), each element of TYPE
    stored: tuple[int, ...]  # in the database: the newest revision, how many revisions, changes, elements


@dataclass(frozen=True)
class ScenarioState:
    scenario: dict[str, Any]  # GET /api/scenarios/{key}, but for `behindMain`
    diff: str  # hash of every page of its diff with main (each names the scenario: without `behindMain`)
    summary: dict[str, Any]
    rows: str  # hash of its change rows in the database
    # Revision numbers since the base: on PostgreSQL a number a killed merge claimed counts (see below).
    behind: int = field(compare=False)


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, f"{response.request.url}: {response.status_code} {response.text}"
    return response.json() if response.content else None


def _client(server: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=server.base_url, auth=ADMIN, timeout=120)


def _pages(client: httpx.Client, path: str, **params: Any) -> Iterator[dict[str, Any]]:
    while True:
        page: dict[str, Any] = _ok(client.get(path, params=params))
        yield page
        if page.get("nextCursor") is None:
            return
        params["cursor"] = page["nextCursor"]


def _feed(client: httpx.Client) -> list[dict[str, Any]]:
    pages = _pages(client, "/api/history", sinceRevision=0, limit=1000)
    return [item for page in pages for item in page["items"]]


def _main(client: httpx.Client, engine: Engine) -> MainState:
    with engine.connect() as connection:
        stored = connection.execute(
            select(
                select(func.max(Revision.id)).scalar_subquery(),
                select(func.count()).select_from(Revision).scalar_subquery(),
                select(func.count()).select_from(Change).scalar_subquery(),
                select(func.count()).select_from(Element).scalar_subquery(),
            )
        ).one()
    feed = _feed(client)
    pages = _pages(client, f"/api/massdata/{TYPE}", limit=1000)
    listing = sorted((item for page in pages for item in page["items"]), key=lambda item: int(item["id"][0]))
    return MainState(
        feed=_digest(feed),
        changesets=len(feed),
        last_revision=max(item["revision"] for item in feed),
        listing=_digest(listing),
        content={item["name"][0]: (int(item["id"][0]), item.get("description") or []) for item in listing},
        stored=tuple(stored),
    )


def _scenario(client: httpx.Client, engine: Engine, key: str) -> ScenarioState:
    diff = list(_pages(client, f"/api/scenarios/{key}/diff", limit=1000))
    behind = [page["scenario"].pop("behindMain") for page in diff]
    scenario = _ok(client.get(f"/api/scenarios/{key}"))
    assert set(behind) == {scenario["behindMain"]}
    columns = (ScenarioChange.id, ScenarioChange.element_id, ScenarioChange.operation, ScenarioChange.changes)
    with engine.connect() as connection:
        rows = connection.execute(
            select(*columns)
            .join(Scenario, Scenario.id == ScenarioChange.scenario_id)
            .where(Scenario.key == key)
            .order_by(ScenarioChange.id)
        ).all()
    return ScenarioState(
        scenario=scenario,
        diff=_digest(diff),
        summary=diff[0]["summary"],
        rows=_digest([list(row) for row in rows]),
        behind=scenario.pop("behindMain"),
    )


def _handed_out(engine: Engine) -> int:
    """The newest revision number handed out: SQLite's counter (moved in the transaction that commits the
    revision); PostgreSQL's sequence (moved for good by a transaction that claims a number, even one that
    then rolls back)."""
    with engine.connect() as connection:
        if PG_URL:
            return int(connection.execute(text("SELECT last_value FROM revision_id_seq")).scalar_one())
        return int(
            connection.execute(text("SELECT revision FROM repository_state WHERE id = 1")).scalar_one()
        )


def _plant(engine: Engine, key: str, ids: list[int]) -> None:
    """The change rows a PATCH of `description` in scenario `key` records, for each of `ids`, and a new
    version of the scenario (what its reads keep folded follows the version)."""
    with engine.begin() as connection:
        scenario_id, base = connection.execute(
            select(Scenario.id, Scenario.base_revision).where(Scenario.key == key)
        ).one()
        names = dict(connection.execute(select(Element.id, Element.name).where(Element.id.in_(ids))).all())
        created = dt.datetime.now(dt.UTC)
        rows = [
            {
                "scenario_id": scenario_id,
                "element_id": i,
                "type_name": TYPE,
                "element_name": names[i],
                "operation": "updated",
                "changes": [{"property": "description", "old": [], "new": [f"planned {i}"]}],
                "main_revision": base,
                "created_at": created,
                "user_login": "system",
                "request_id": secrets.token_hex(16),
            }
            for i in ids
        ]
        connection.execute(insert(ScenarioChange), rows)
        bump = update(Scenario).where(Scenario.id == scenario_id).values(version=Scenario.version + 1)
        connection.execute(bump)


class Merge(threading.Thread):
    """POST …/merge in the background: its status, or the error of the connection the kill cut."""

    def __init__(self, server: LiveServer, key: str) -> None:
        super().__init__(daemon=True)
        self.server, self.key = server, key
        self.outcome: int | str | None = None

    def run(self) -> None:
        try:
            with _client(self.server) as client:
                self.outcome = client.post(f"/api/scenarios/{self.key}/merge", json={}).status_code
        except httpx.TransportError as error:
            self.outcome = type(error).__name__


def _kill(server: LiveServer) -> None:
    """SIGKILL to the server's workers and the server."""
    for pid in [*child_pids(server.process.pid), server.process.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    server.process.wait(timeout=30)


def _processes(server: LiveServer) -> list[int]:
    return [server.process.pid, *child_pids(server.process.pid)]


def _cpu(pids: list[int]) -> float:
    """CPU seconds these processes have spent (every thread of each)."""
    spent = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()  # from the state on: utime, stime are 12th, 13th
            spent += int(fields[11]) + int(fields[12])
    return spent / TICKS


def _pg_rows(connection: Connection, query: str, name: str) -> list[Any]:
    """Rows of a query on PostgreSQL's statistics about the backends of the server named `name`, as they
    are now (the statistics are a snapshot per transaction)."""
    rows = list(connection.execute(text(query), {"name": name}).all())
    connection.rollback()
    return rows


_BACKENDS = "SELECT pid FROM pg_stat_activity WHERE application_name = :name AND datname = current_database()"
# The statement of the server's transaction that holds a transaction id (the merge: it locks the scenario
# first), and the tables it has written so far (a write takes a RowExclusiveLock on its table).
_TRANSACTIONS = (
    "SELECT left(a.query, 50), (SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_locks l"
    " JOIN pg_class c ON c.oid = l.relation WHERE l.pid = a.pid AND l.mode = 'RowExclusiveLock'"
    " AND c.relkind = 'r') FROM pg_stat_activity a WHERE a.application_name = :name"
    " AND a.datname = current_database() AND a.backend_xid IS NOT NULL"
)
_CLAIMS = (
    "SELECT l.objid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    f" WHERE a.application_name = :name AND l.locktype = 'advisory' AND l.classid = {REVISION_CLAIMS}"
    " AND l.objsubid = 2 AND l.granted AND a.datname = current_database()"
)


def _phase(pids: list[int], engine: Engine, name: str, queue: Path) -> str:
    """Where the server's merge is, as the database sees it (for the messages): on PostgreSQL its statement
    and the tables it has written; on SQLite whether the server has its write turn (holds the lock of the
    write queue's file)."""
    if PG_URL:
        with engine.connect() as connection:
            rows = _pg_rows(connection, _TRANSACTIONS, name)
        return f"{rows[0][0]!r}, wrote {rows[0][1] or 'nothing'}" if rows else "not in its transaction"
    inode = queue.stat().st_ino
    held = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
    if any(
        len(fields) == 8  # n: FLOCK ADVISORY WRITE pid major:minor:inode start end (a waiter has a "->")
        and fields[1] == "FLOCK"
        and int(fields[4]) in pids
        and fields[5].endswith(f":{inode}")
        for fields in held
    ):
        return "in its write transaction"
    return "outside a write transaction"


def _wal_mark(wal: Path) -> tuple[int, int]:
    try:
        stat = wal.stat()
    except FileNotFoundError:
        return (0, 0)
    return (stat.st_size, stat.st_mtime_ns)


def _await_cpu(merge: Merge, pids: list[int], target: float) -> bool:
    """Wait until the server's processes have spent `target` CPU seconds; False if the merge answered
    before."""
    deadline = time.monotonic() + 120
    while merge.is_alive() and time.monotonic() < deadline:
        if _cpu(pids) >= target:
            return True
        time.sleep(0.001)
    return False


def _await_commit(merge: Merge, engine: Engine, name: str, wal: Path, mark: tuple[int, int]) -> str:
    """Wait until the merge commits: on PostgreSQL until its transaction holds its revision claim (taken
    when the revision is allocated, after every element is written and before the change rows and the
    commit); on SQLite until the WAL is written (by the commit: the page cache is large enough that no page
    spills before it, and a spill would only move this point earlier)."""
    with engine.connect() as connection:

        def committing() -> bool:
            return bool(_pg_rows(connection, _CLAIMS, name)) if PG_URL else _wal_mark(wal) != mark

        deadline = time.monotonic() + 120
        while merge.is_alive() and time.monotonic() < deadline:
            if committing():
                return "claimed its revision" if PG_URL else "writing the WAL"
            time.sleep(0.0005)
    return "answered before it was seen to commit"


def test_a_merge_killed_at_any_point_leaves_main_and_the_scenario_as_they_were(
    start_server: StartServer, database_url: str, tmp_path: Path
) -> None:
    names = (f"killmerge-{n}" for n in range(100))

    def serve(url: str = database_url) -> tuple[LiveServer, str]:
        """A server over `url`, its connections named (on PostgreSQL) by the name returned."""
        name = next(names)
        return start_server(database=f"{url}?application_name={name}" if PG_URL else url), name

    def observe(server: LiveServer) -> tuple[MainState, ScenarioState]:
        with _client(server) as client:
            return _main(client, engine), _scenario(client, engine, key)

    engine = build_engine(database_url)
    sqlite_file = make_url(database_url).database  # SQLite's: the files beside it
    wal, queue = Path(f"{sqlite_file}-wal"), Path(f"{sqlite_file}-write-queue")
    server, name = serve()
    with _client(server) as client:
        batch = [{"name": [f"System {n:05d}"]} for n in range(MAIN_ELEMENTS)]
        loaded = _ok(client.post(f"/api/massdata/{TYPE}", json={"elements": batch}))
        ids = sorted(int(item["id"]) for item in loaded["results"])
        assert len(ids) == MAIN_ELEMENTS
        key = _ok(client.post("/api/scenarios", json={"name": "Kill the merge"}), 201)["key"]
        planned, patched, deleted = ids[:PLANNED], ids[PLANNED : PLANNED + PATCHED], ids[-1]
        _plant(engine, key, planned)
        for element_id in patched:
            body = {"description": [f"patched {element_id}"]}
            _ok(client.patch(f"/api/element/{TYPE}/{element_id}", json=body, params={"scenario": key}))
        created = {"name": ["Planned system"], "description": ["created in the scenario"]}
        _ok(client.post(f"/api/element/{TYPE}", json=created, params={"scenario": key}), 201)
        gone = client.delete(f"/api/element/{TYPE}/{deleted}", params={"scenario": key})
        assert gone.status_code == 204, gone.text
    main_before, scenario_before = observe(server)
    assert scenario_before.scenario["state"] == "open"
    assert scenario_before.scenario["changedElements"] == PLANNED + PATCHED + 2
    assert scenario_before.summary == {TYPE: {"updated": PLANNED + PATCHED, "created": 1, "deleted": 1}}
    counts = {"create": 1, "update": PLANNED + PATCHED, "delete": 1}
    merged_content = {
        element: (
            element_id,
            [f"planned {element_id}"] if element_id in planned
            else [f"patched {element_id}"] if element_id in patched
            else description,
        )
        for element, (element_id, description) in main_before.content.items()
        if element_id != deleted
    }  # fmt: skip

    # What the merge costs: the CPU time of the same merge on a copy of the repository, by a server that has
    # just read what each server below reads before its merge is killed.
    server.stop()
    if not PG_URL:  # the copy is of the database file alone
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    with cloned_database(database_url, tmp_path) as copy:
        reference, _ = serve(copy)
        observe(reference)  # its reads through the server count (those of the database are of the original)
        with _client(reference) as client:
            spent = _cpu(_processes(reference))
            assert _ok(client.post(f"/api/scenarios/{key}/merge", json={}))["counts"] == counts
            cpu = _cpu(_processes(reference)) - spent
        reference.stop()

    # Each kill, then a new server over the same database: main and the scenario are as they were, unless
    # the kill came after the commit; then the scenario is merged and main has all of it (below).
    server, name = serve()
    main_after, scenario_after = observe(server)  # as the reference server has read before its merge
    assert (main_after, scenario_after) == (main_before, scenario_before)
    handed_out = _handed_out(engine)
    # The point, where the merge was then, its answer, and the scenario's state after.
    killed: list[tuple[float | None, str, int | str | None, str]] = []
    for point in KILL_POINTS:
        pids = _processes(server)
        mark, spent = _wal_mark(wal), _cpu(pids)
        merge = Merge(server, key)
        merge.start()
        if point is None:
            phase = _await_commit(merge, engine, name, wal, mark)
        elif _await_cpu(merge, pids, spent + point * cpu):
            phase = _phase(pids, engine, name, queue)
        else:
            phase = "answered before"
        _kill(server)
        merge.join(timeout=60)
        fate = f"{point}, {phase}, answered {merge.outcome}"
        if PG_URL:  # the transactions of its connections end (roll back) as PostgreSQL finds them gone
            deadline = time.monotonic() + 60
            with engine.connect() as connection:
                while _pg_rows(connection, _BACKENDS, name):
                    assert time.monotonic() < deadline, f"the killed server's connections stay: {fate}"
                    time.sleep(0.05)
        server, name = serve()
        main_after, scenario_after = observe(server)
        killed.append((point, phase, merge.outcome, scenario_after.scenario["state"]))
        if scenario_after.scenario["state"] == "merged":
            break
        assert merge.outcome != 200, f"a merge answered 200 is lost: {killed}"
        assert main_after == main_before, f"main changed: {killed}"
        assert scenario_after == scenario_before, f"the scenario changed: {killed}"
        # A revision number the killed merge claimed is gone on PostgreSQL (its sequence does not roll
        # back): no revision has it, and `behindMain` counts revisions, not numbers.
        skipped = _handed_out(engine) - handed_out
        assert skipped == 0 or (PG_URL and skipped > 0), f"{skipped} numbers handed out: {killed}"
        assert scenario_after.behind == scenario_before.behind, killed

    # Merged: by a kill that came after its commit, or now. All of it, in one revision of its own.
    with _client(server) as client:
        if scenario_after.scenario["state"] == "open":
            assert _ok(client.post(f"/api/scenarios/{key}/merge", json={}))["counts"] == counts
        scenario = _ok(client.get(f"/api/scenarios/{key}"))
        feed = _feed(client)
        main_after = _main(client, engine)
    engine.dispose()
    assert scenario["state"] == "merged", (scenario, killed)
    landed = [item for item in feed if item["revision"] > main_before.last_revision]
    revisions = {item["revision"] for item in landed}
    assert revisions == {scenario["mergedRevision"]}, f"merged as {scenario}, main has {revisions}: {killed}"
    assert {item["viaScenario"] for item in landed} == {key}
    assert len(landed) == PLANNED + PATCHED + 2, killed
    new_id, description = main_after.content.pop("Planned system")
    assert description == ["created in the scenario"] and new_id not in ids
    assert main_after.content == merged_content, killed
    print(f"merge of {cpu:.3f} CPU s killed {killed}")
