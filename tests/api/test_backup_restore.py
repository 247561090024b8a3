"""Backup and restore (`blockrepo backup`/`restore`, `GET /api/backup`): a backup of a repository with a few
hundred changes, restored into an empty database of the other kind and back, answers every element, list,
history, feed, `asOf`, metamodel and administration read alike; ids and revision numbers go on where the
source's stopped; a damaged or foreign file, or a database that holds a repository, is refused and
changes nothing.

The first restore goes into PostgreSQL when BLOCKREPO_TEST_DATABASE_URL is set (SQLite otherwise), the
second back into SQLite."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import os
import stat
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from typer.testing import CliRunner

from blockrepo.app import create_app
from blockrepo.auth.passwords import Passwords
from blockrepo.backup.service import write_backup
from blockrepo.bootstrap import initialize
from blockrepo.cli import app as command_line
from blockrepo.cli.backup import restore
from blockrepo.demo.loader import load_demo
from blockrepo.errors import BadRequest, Conflict
from blockrepo.storage.engine import build_engine
from tests.conftest import ADMIN_PASSWORD, PG_URL, _pg_execute, _with_database, make_settings

TYPES = ("BusinessProcess", "InformationSystem", "BusinessUnit", "Project", "InformationFlow")
CAROL_PASSWORD = "Spoke-Saddle-Chainring-42"


@pytest.fixture
def new_database(tmp_path: Path) -> Iterator[Any]:
    """Makes empty databases: PostgreSQL ones when the suite runs on it (dropped afterwards), else SQLite."""
    made: list[str] = []

    def make(kind: str = "default") -> str:
        if kind == "sqlite" or not PG_URL:
            path = tmp_path / f"target-{uuid.uuid4().hex[:8]}.db"
            path.touch()
            return f"sqlite:///{path}"
        name = f"br_restore_{uuid.uuid4().hex[:12]}"
        _pg_execute(PG_URL, f'CREATE DATABASE "{name}"')
        made.append(name)
        return _with_database(PG_URL, name)

    yield make
    for name in made:
        _pg_execute(PG_URL or "", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _source(directory: Path) -> str:
    """A SQLite repository with the demo landscape."""
    url = f"sqlite:///{directory / 'source.db'}"
    settings = make_settings(url)
    engine = build_engine(url)
    initialize(engine, settings, Passwords(settings))
    load_demo(engine, settings)
    engine.dispose()
    return url


def _client(url: str) -> TestClient:
    client = TestClient(create_app(make_settings(url)), base_url="http://127.0.0.1")
    client.auth = ("system", ADMIN_PASSWORD)
    return client


def _ok(response: Any) -> Any:
    assert response.status_code < 300, response.text
    return response.json() if response.content else None


def _newest(client: TestClient) -> int:
    """The newest revision in the feed."""
    revision: int = _ok(client.get("/api/history?limit=1000"))["items"][-1]["revision"]
    return revision


def _change_a_lot(client: TestClient) -> dict[str, Any]:
    """A few hundred changes of every kind; what the checks need to know about them."""
    ids = {t: [e["id"][0] for e in _ok(client.get(f"/api/massdata/{t}?limit=500"))["items"]] for t in TYPES}
    marks: list[int] = []
    for round_ in range(6):
        for type_name in TYPES:
            for element_id in ids[type_name][:6]:
                body = {"description": [f"round {round_} of {type_name} {element_id}"]}
                _ok(client.patch(f"/api/element/{type_name}/{element_id}", json=body))
        marks.append(_newest(client))
    created = [
        _ok(client.post("/api/element/Project", json={"name": [f"Plan {n}"], "description": ["to be"]}))[
            "id"
        ][0]
        for n in range(20)
    ]
    for project in created[:5]:  # a child named before it in key order: restored after every row is in
        _ok(client.patch(f"/api/element/Project/{project}", json={"parent": [created[-1]]}))
    newest = created[-1]
    _ok(client.delete(f"/api/element/Project/{created[-2]}"))
    attribute = {
        "name": "Hosting",
        "valueType": "enum",
        "group": "Operations",
        "types": ["InformationSystem"],
    }
    _ok(client.post("/api/administration/attributes", json={**attribute, "literals": [{"name": "cloud"}]}))
    for element_id in ids["InformationSystem"][:10]:
        _ok(client.patch(f"/api/element/InformationSystem/{element_id}", json={"Hosting": ["cloud"]}))
    user = {"login": "carol", "enabled": True, "roles": ["Reader"], "password": CAROL_PASSWORD}
    carol = _ok(client.post("/api/administration/users", json=user))["id"]
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    token = _ok(client.post("/api/tokens", json={"name": "sync", "expiresAt": expires, "readOnly": True}))
    gone = _ok(client.post("/api/administration/users", json={**user, "login": "dora"}))["id"]
    _ok(client.delete(f"/api/administration/users/{gone}"))
    return {"marks": marks, "token": token["token"], "carol": carol, "gone_user": gone, "newest": newest}


def _reads(client: TestClient, marks: list[int]) -> dict[str, Any]:
    """Every read the comparison covers, by request."""
    answers: dict[str, Any] = {}

    def read(path: str) -> None:
        response = client.get(path)
        answers[path] = (response.status_code, response.json())

    read("/api/metamodel")
    read("/api/administration/users")
    read("/api/administration/roles")
    read("/api/tokens")
    read("/api/history?limit=1000")
    for type_name in TYPES:
        read(f"/api/massdata/{type_name}?limit=500")
        read(f"/api/history/{type_name}")
        for element in answers[f"/api/massdata/{type_name}?limit=500"][1]["items"]:
            read(f"/api/element/{type_name}/{element['id'][0]}")
            read(f"/api/history/{type_name}/{element['id'][0]}")
        for mark in marks[::2]:
            read(f"/api/massdata/{type_name}?limit=500&asOf={mark}")
    return answers


def test_a_restore_answers_every_read_as_the_source(tmp_path: Path, new_database: Any) -> None:
    source = _source(tmp_path)
    with _client(source) as client:
        facts = _change_a_lot(client)
        expected = _reads(client, facts["marks"])
        via_api = client.get("/api/backup")
    assert via_api.status_code == 200 and via_api.headers["content-type"] == "application/gzip"
    assert "attachment" in via_api.headers["content-disposition"]

    first = new_database()  # PostgreSQL when the suite runs on it
    summary = _restore(first, via_api.content)
    assert summary.rows["change"] > 250 and summary.rows["element"] > 170
    with _client(first) as client:
        assert _reads(client, facts["marks"]) == expected
        second_backup = io.BytesIO()
        write_backup(client.app.state.services.engine, second_backup)  # type: ignore[attr-defined]

    second = new_database("sqlite")
    _restore(second, second_backup.getvalue())
    with _client(second) as client:
        assert _reads(client, facts["marks"]) == expected
        # Credentials came along: a user's password, and a token (its pepper derives from the server secret).
        assert (
            client.get("/api/administration/users/current", auth=("carol", CAROL_PASSWORD)).status_code == 200
        )
        bearer = {"Authorization": f"Bearer {facts['token']}"}
        assert (
            client.get("/api/element/Project/" + str(facts["newest"]), headers=bearer, auth=None).status_code
            == 200
        )


def test_ids_and_revisions_go_on_where_the_source_stopped(tmp_path: Path, new_database: Any) -> None:
    """A deleted element's or user's id is never handed out again (history and signed cookies name them),
    and the next revision follows the newest."""
    with _client(_source(tmp_path)) as client:
        doomed = _ok(client.post("/api/element/Project", json={"name": ["Doomed"]}))["id"][0]
        _ok(client.delete(f"/api/element/Project/{doomed}"))
        user = {"login": "erik", "enabled": True, "roles": ["Reader"], "password": CAROL_PASSWORD}
        gone = _ok(client.post("/api/administration/users", json=user))["id"]
        _ok(client.delete(f"/api/administration/users/{gone}"))
        newest = _newest(client)
        backup = client.get("/api/backup").content
    target = new_database()
    assert _restore(target, backup).revision == newest
    with _client(target) as client:
        assert _ok(client.post("/api/element/Project", json={"name": ["Next"]}))["id"][0] > doomed
        assert _ok(client.post("/api/administration/users", json={**user, "login": "fay"}))["id"] > gone
        assert _newest(client) == newest + 2


def _restore(url: str, backup: bytes, *, replace: bool = False) -> Any:
    engine = build_engine(url)
    try:
        return restore(engine, io.BytesIO(backup), replace=replace)
    finally:
        engine.dispose()


def _backup_of(url: str) -> bytes:
    target = io.BytesIO()
    engine = build_engine(url)
    write_backup(engine, target)
    engine.dispose()
    return target.getvalue()


def _damaged(backup: bytes, change: Any) -> bytes:
    lines = gzip.decompress(backup).splitlines(keepends=True)
    return gzip.compress(b"".join(change(lines)))


def _newer_schema(header: bytes) -> bytes:
    """The header line of a backup taken by a later version (a schema migration this one does not know)."""
    return orjson.dumps({**orjson.loads(header), "schema": "9999"}) + b"\n"


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="cut off"),
        pytest.param(lambda b: b"not a backup at all", id="not gzip"),
        pytest.param(lambda b: gzip.compress(b'{"format": "something else"}\n'), id="foreign"),
        pytest.param(lambda b: _damaged(b, lambda ls: ls[:-1]), id="no end"),
        pytest.param(lambda b: _damaged(b, lambda ls: ls[:-40] + ls[-39:]), id="a row missing"),
        pytest.param(lambda b: _damaged(b, lambda ls: [_newer_schema(ls[0]), *ls[1:]]), id="newer"),
        pytest.param(lambda b: _damaged(b, lambda ls: [*ls[:5], b'[1, "x"]\n', *ls[5:]]), id="short row"),
        pytest.param(lambda b: _damaged(b, lambda ls: [*ls[:3], b"{broken\n", *ls[3:]]), id="not JSON"),
    ],
)
def test_a_damaged_file_is_refused_and_changes_nothing(
    tmp_path: Path, new_database: Any, damage: Any
) -> None:
    backup = _backup_of(_source(tmp_path))
    target = new_database()
    engine = build_engine(target)
    with pytest.raises(BadRequest) as refused:
        restore(engine, io.BytesIO(damage(backup)))
    assert refused.value.instance_code == "backup_unreadable"
    restore(engine, io.BytesIO(backup))  # nothing was kept: the same database takes the whole file
    engine.dispose()
    with _client(target) as client:
        assert len(_ok(client.get("/api/massdata/InformationSystem?limit=500"))["items"]) == 31


def test_a_database_holding_a_repository_is_replaced_only_when_asked(
    tmp_path: Path, new_database: Any
) -> None:
    backup = _backup_of(_source(tmp_path))
    target = new_database()
    settings = make_settings(target)
    engine = build_engine(target)
    initialize(engine, settings, Passwords(settings))  # a first start: the default metamodel and `system`
    with pytest.raises(Conflict) as refused:
        restore(engine, io.BytesIO(backup))
    assert refused.value.instance_code == "restore_target_not_empty"
    with _client(target) as client:
        assert _ok(client.get("/api/massdata/InformationSystem"))["items"] == []
    restore(engine, io.BytesIO(backup), replace=True)
    engine.dispose()
    with _client(target) as client:
        assert len(_ok(client.get("/api/massdata/InformationSystem?limit=500"))["items"]) == 31


_HOLD_KEY = 990_002  # a one-number advisory lock: another space than the application's two-number ones
_HOLD_FUNCTION = f"""
CREATE FUNCTION test_hold_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared({_HOLD_KEY});
    RETURN NULL;
END $$"""
_HOLD_TRIGGER = (
    "CREATE TRIGGER test_hold AFTER INSERT ON change FOR EACH ROW"
    " WHEN (NEW.element_id = 6) EXECUTE FUNCTION test_hold_change()"
)


@pytest.mark.skipif(
    not PG_URL, reason="SQLite's one writer commits in revision order: a snapshot holds no gap"
)
def test_a_backup_waits_for_a_write_still_committing_below_a_committed_one(
    tmp_path: Path, new_database: Any
) -> None:
    """PostgreSQL writers overlap their commits: a write of element 6 holds revision r, uncommitted (a
    trigger on its change row waits for a lock this test holds), while a write of element 7 commits r + 1.
    A snapshot taken then would restore r + 1 without r; the backup waits instead, and holds both."""
    source = new_database()
    _restore(source, _backup_of(_source(tmp_path)))
    engine = build_engine(source)
    with engine.begin() as setup:
        setup.execute(text(_HOLD_FUNCTION))
        setup.execute(text(_HOLD_TRIGGER))
    taken = io.BytesIO()
    with _client(source) as slow, _client(source) as quick, engine.connect() as holder:
        for warm in (slow, quick):  # each app builds its validators on its first request: not in threads
            _ok(warm.get("/api/element/BusinessProcess/6"))
        holder.execute(text(f"SELECT pg_advisory_xact_lock({_HOLD_KEY})"))
        body = {"description": ["held while committing"]}
        held = threading.Thread(target=lambda: _ok(slow.patch("/api/element/BusinessProcess/6", json=body)))
        held.start()
        waiting = (
            "SELECT count(*) FROM pg_locks"
            f" WHERE NOT granted AND locktype = 'advisory' AND objid = {_HOLD_KEY}"
        )
        with engine.connect() as watcher:
            for _ in range(300):
                if watcher.execute(text(waiting)).scalar_one():
                    break
                watcher.rollback()
                time.sleep(0.02)
            else:
                pytest.fail("the held write never reached its change row")
        _ok(quick.patch("/api/element/BusinessProcess/7", json={"description": ["committed meanwhile"]}))
        backup = threading.Thread(target=write_backup, args=(engine, taken))
        backup.start()
        backup.join(timeout=1.0)
        assert backup.is_alive(), "the backup took its snapshot while a write below it was still committing"
        holder.rollback()  # the held write commits; then the backup takes its snapshot
        held.join(timeout=60)
        backup.join(timeout=60)
    with engine.begin() as cleanup:
        cleanup.execute(text("DROP TRIGGER test_hold ON change"))
    engine.dispose()
    with _client(source) as client:
        feed = [entry["revision"] for entry in _ok(client.get("/api/history?limit=1000"))["items"]]
    target = new_database()
    _restore(target, taken.getvalue())
    with _client(target) as client:
        restored = [entry["revision"] for entry in _ok(client.get("/api/history?limit=1000"))["items"]]
        assert _ok(client.get("/api/element/BusinessProcess/6"))["description"] == ["held while committing"]
    assert restored == feed


def test_the_command_line_backs_up_and_restores(tmp_path: Path, new_database: Any) -> None:
    source = _source(tmp_path)
    file = tmp_path / "nightly.jsonl.gz"
    runner = CliRunner()
    taken = runner.invoke(command_line, ["backup", str(file), "--database", source])
    assert taken.exit_code == 0, taken.output
    assert stat.S_IMODE(os.stat(file).st_mode) == 0o600  # it holds password hashes and secrets
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".nightly")] == []
    target = new_database()
    restored = runner.invoke(command_line, ["restore", str(file), "--database", target])
    assert restored.exit_code == 0, restored.output
    again = runner.invoke(command_line, ["restore", str(file), "--database", target])
    assert again.exit_code == 1 and "already holds a repository" in again.output
    with _client(target) as client:
        assert len(_ok(client.get("/api/massdata/InformationSystem?limit=500"))["items"]) == 31


def test_only_a_supervisor_downloads_a_backup_and_a_narrowed_token_is_none(client: TestClient) -> None:
    """A supervisor's token without restrictions acts as the supervisor (a nightly job need not hold a
    password); a read-only or otherwise restricted one is no supervisor, whoever owns it."""
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    minted = {"name": "ops", "expiresAt": expires}
    narrowed = _ok(client.post("/api/tokens", json={**minted, "readOnly": True}))["token"]
    refused = client.get("/api/backup", headers={"Authorization": f"Bearer {narrowed}"}, auth=None)
    assert refused.status_code == 403 and refused.headers["content-type"] == "application/problem+json"
    whole = _ok(client.post("/api/tokens", json={**minted, "name": "nightly backup"}))["token"]
    taken = client.get("/api/backup", headers={"Authorization": f"Bearer {whole}"}, auth=None)
    assert taken.status_code == 200
    header = orjson.loads(gzip.decompress(taken.content).splitlines()[0])
    assert header["format"] == "blockrepo-backup" and header["schema"]
