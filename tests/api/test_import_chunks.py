"""An import is validated and written a chunk of records at a time (API.md section 9: its memory is one
chunk's, not the file's): however the records are cut into chunks, the answer, the elements, their
revisions and the history are those of the whole file at once, and a problem anywhere still imports
nothing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.elements import repository
from blockrepo.massdata.transfer import importer
from tests.api.history_support import all_pages
from tests.api.massdata_landscape import build_landscape, empty_repository
from tests.api.test_history_replay import replay
from tests.api.test_massdata_transfer import element_count, export_json, import_file, without_ids

WHOLE_FILE = 10**6
# 1: every record its own chunk (every reference to a later record waits for the deferred update).
CHUNKS = (1, 2, 3)


@pytest.fixture
def landscape(app: FastAPI, client: TestClient) -> None:
    build_landscape(app, client)


def changed_export(document: dict[str, Any]) -> dict[str, Any]:
    """The export with references that run forward: a child before its parent, a relation to a record
    further down and to one of a type written later, a relation between records of one type."""
    changed = orjson.loads(orjson.dumps(document))
    processes = changed["elements"]["BusinessProcess"]
    processes.insert(0, {"name": "Early child", "parent": "Late parent", "informationSystems": ["Late"]})
    processes.append({"name": "Late parent"})
    for record in processes:
        if record["name"] == "Order":
            record["informationSystems"] = [{"name": "Shop", "attributes": {"Share": [5]}}, "Late", "ERP"]
            record["parent"] = "Pay"
    systems = changed["elements"]["InformationSystem"]
    systems.insert(0, {"name": "First", "predecessors": ["Late", "CRM"]})
    systems.append({"name": "Late", "predecessors": ["CRM"]})
    return changed


def imported(
    template_database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, files: list[bytes]
) -> Iterator[tuple[list[dict[str, Any]], dict[str, Any], dict[tuple[str, str], Any], int]]:
    """Import `files` one after the other, `chunk` records a chunk, into an empty repository: the reports,
    the export after, each element's history replayed (by type and name, without ids) and the number of
    element changesets of the feed."""
    monkeypatch.setattr(importer, "IMPORT_CHUNK", chunk)
    with empty_repository(template_database, tmp_path) as (_, other):
        reports = []
        for content in files:
            response = import_file(other, content)
            assert response.status_code == 200, response.text
            reports.append(response.json())
        feed = all_pages(other, "/api/history", {"limit": 100})
        elements, _ = replay(feed)
        by_name: dict[tuple[str, str], Any] = {}
        for (type_name, element_id), state in elements.items():
            current = other.get(f"/api/element/{type_name}/{element_id}").json()
            rebuilt = {key: state.get(key, []) for key in current}
            rebuilt.update(id=[element_id], type=[type_name], revision=[state["revision"]])
            assert rebuilt == current, f"{type_name} {element_id} at chunk {chunk}"
            by_name[(type_name, current["name"][0])] = _without_ids(rebuilt)
        changesets = sum(1 for item in feed if item["entity"] == "element")
        yield reports, without_ids(export_json(other)), by_name, changesets


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("id", "lastModificationTime")}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


@pytest.mark.parametrize("chunk", CHUNKS)
def test_any_chunking_imports_what_the_whole_file_does(
    client: TestClient,
    landscape: None,
    template_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    chunk: int,
) -> None:
    document = export_json(client)
    files = [orjson.dumps(document), orjson.dumps(changed_export(document))]
    whole = next(imported(template_database, tmp_path, monkeypatch, WHOLE_FILE, files))
    chunked = next(imported(template_database, tmp_path, monkeypatch, chunk, files))
    assert chunked[0] == whole[0]  # the reports
    assert chunked[1] == whole[1]  # the elements, as an export shows them
    assert chunked[2] == whole[2]  # each element's history, replayed: its state and revision
    assert chunked[3] == whole[3]  # one changeset per element and revision


@pytest.mark.parametrize("chunk", CHUNKS)
def test_cud_in_chunks_deletes_what_the_whole_file_does(
    client: TestClient,
    landscape: None,
    template_database: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    chunk: int,
) -> None:
    document = export_json(client)
    smaller = orjson.loads(orjson.dumps(document))
    smaller["elements"]["InformationSystem"] = [
        r for r in smaller["elements"]["InformationSystem"] if r["name"] != "CRM"
    ]
    for records in smaller["elements"].values():
        for record in records:
            if record.get("parent") == "CRM":
                del record["parent"]
            for key, value in list(record.items()):
                if isinstance(value, list):
                    record[key] = [
                        v for v in value if "CRM" not in (v, v.get("name") if isinstance(v, dict) else v)
                    ]

    def run(size: int) -> tuple[Any, ...]:
        monkeypatch.setattr(importer, "IMPORT_CHUNK", size)
        with empty_repository(template_database, tmp_path) as (_, other):
            assert import_file(other, orjson.dumps(document)).status_code == 200
            response = other.post(
                "/api/massdata/import",
                params={"mode": "cud"},
                content=orjson.dumps(smaller),
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 200, response.text
            feed = all_pages(other, "/api/history", {"limit": 100})
            elements, deleted = replay(feed)
            return response.json(), without_ids(export_json(other)), len(elements), len(deleted)

    assert run(chunk) == run(WHOLE_FILE)


@pytest.mark.parametrize("chunk", CHUNKS)
def test_a_problem_in_a_late_chunk_imports_nothing_and_every_problem_is_reported(
    app: FastAPI, client: TestClient, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    before = element_count(app)
    feed = client.get("/api/history", params={"limit": 1}).json()
    records: list[dict[str, Any]] = [
        {"name": f"System {n}", "predecessors": [f"System {n + 1}"]} for n in range(5)
    ]
    records[4]["Annual costs"] = ["not a number"]
    records[1]["predecessors"] = ["Nobody"]
    content = orjson.dumps({"format": "blockrepo-export", "elements": {"InformationSystem": records}})

    def problems(size: int) -> list[tuple[str, str]]:
        monkeypatch.setattr(importer, "IMPORT_CHUNK", size)
        response = import_file(client, content)
        assert response.status_code == 400, response.text
        return sorted((e["pointer"], e["code"]) for e in response.json()["errors"])

    found = problems(chunk)
    assert found == problems(WHOLE_FILE)
    assert [pointer for pointer, _ in found] == [
        "/elements/InformationSystem/1/predecessors/0",
        "/elements/InformationSystem/4/Annual costs",
        "/elements/InformationSystem/4/predecessors/0",
    ]
    assert element_count(app) == before
    assert client.get("/api/history", params={"limit": 1}).json() == feed


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize(
    "broken",
    [
        b'{"name": "Lone \\ud800 surrogate"}',  # a lone surrogate: the reader's scanner takes it, orjson not
        b'{"name": "Fine 3", "description": "\\udfff"}',  # a name the reader read, text orjson refuses
    ],
)
def test_a_record_only_the_reader_could_read_is_malformed_and_imports_nothing(
    app: FastAPI, client: TestClient, monkeypatch: pytest.MonkeyPatch, chunk: int, broken: bytes
) -> None:
    """The reader finds a record's end and name with the standard library's scanner, which takes text
    orjson refuses: the record is still reported where the importer parses it, and nothing is written."""
    monkeypatch.setattr(importer, "IMPORT_CHUNK", chunk)
    before = element_count(app)
    content = (
        b'{"format":"blockrepo-export","elements":{"InformationSystem":[{"name":"Fine 1"},'
        + broken
        + b',{"name":"Fine 2"}]}}'
    )
    response = import_file(client, content)
    assert response.status_code == 400, response.text
    assert [(e["pointer"], e["code"]) for e in response.json()["errors"]] == [
        ("/elements/InformationSystem/1", "malformed_json")
    ]
    assert element_count(app) == before


def test_later_chunks_name_what_earlier_chunks_wrote_without_looking_it_up(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk's references to elements that earlier chunks of the import wrote are resolved from what
    those chunks wrote, not by a query for the names (a file of 100,000 records named the same thousand
    components in every chunk)."""
    monkeypatch.setattr(importer, "IMPORT_CHUNK", 2)
    asked: list[set[str]] = []
    find_by_names = repository.find_by_names

    def spy(db: Session, names: Mapping[int, Iterable[str]]) -> dict[tuple[int, str], int]:
        asked.extend(set(type_names) for type_names in names.values())
        return find_by_names(db, names)

    monkeypatch.setattr(repository, "find_by_names", spy)
    parts = [{"name": f"Part {n}"} for n in range(4)]
    systems = [
        {"name": f"Sys {n}", "technicalComponents": [f"Part {n % 4}", f"Part {(n + 1) % 4}"]}
        for n in range(6)
    ]
    document = {
        "format": "blockrepo-export",
        "elements": {"InformationSystem": systems, "TechnicalComponent": parts},
    }
    response = import_file(client, orjson.dumps(document))
    assert response.status_code == 200, response.text
    assert response.json()["created"] == 10
    assert not any(names & {part["name"] for part in parts} for names in asked)
    exported = {r["name"]: r for r in export_json(client)["elements"]["InformationSystem"]}
    assert sorted(exported["Sys 5"]["technicalComponents"]) == ["Part 1", "Part 2"]
