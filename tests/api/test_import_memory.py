"""A JSON import's memory is bounded by a multiple of its body (issue 22, finding 2; API.md section 9): the
body is not parsed into one tree of Python objects, and the import's peak stays under a stated multiple.

tracemalloc counts the bytes Python allocates (orjson's too), not the resident set, so the bounds hold on a
loaded machine; bench/import_memory.py measures both on larger bodies."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from starlette.testclient import TestClient

from blockrepo.massdata.transfer.document import parse_json_document
from tests.api.massdata_landscape import empty_repository

SYSTEMS = 12_000
# Measured on this body (1.6 MB): the parse's peak 2.4 times the body (16.1 when orjson parsed the whole
# body: its own buffers, then the tree); the import's 8.0 times on SQLite and 12.4 on PostgreSQL (19.8 when
# the drafts and history of every record waited for the write and the commit): one chunk's work
# (importer.IMPORT_CHUNK records) is most of it at this size; 3.2 times on 27.7 MB (bench/import_memory.py,
# bench/README.md, issue 22).
PARSE_BOUND = 5
IMPORT_BOUND = 15
MARGINAL_BOUND = 6


def export_body(systems: int, description: str = "the system number") -> bytes:
    """An export document: systems with a description and two components each, listed by name."""
    components = [f"Component {n:05d}" for n in range(systems // 50)]
    records = [
        {
            "id": 100_000 + n,
            "name": f"System {n:06d}",
            "description": f"{description} {n}",
            "technicalComponents": [
                components[n % len(components)],
                components[(n * 7 + 1) % len(components)],
            ],
        }
        for n in range(systems)
    ]
    return orjson.dumps(
        {
            "format": "blockrepo-export",
            "elements": {
                "TechnicalComponent": [{"id": n + 1, "name": name} for n, name in enumerate(components)],
                "InformationSystem": records,
            },
        }
    )


@pytest.fixture
def traced() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def peak_of(call: object) -> int:
    """tracemalloc's peak while `call` runs, above what was allocated before."""
    assert callable(call)
    before, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    call()
    _, peak = tracemalloc.get_traced_memory()
    return peak - before


def test_json_import_body_is_not_parsed_into_one_tree(traced: None) -> None:
    raw = bytearray(export_body(SYSTEMS))
    documents = []
    peak = peak_of(lambda: documents.append(parse_json_document(raw)))
    assert peak <= PARSE_BOUND * len(raw), f"the parse peaked at {peak / len(raw):.1f} times the body"
    (document,) = documents
    from blockrepo.massdata.transfer.document import record_of  # here: the parse's bound fails first before

    systems = document.elements["InformationSystem"]
    assert len(systems) == SYSTEMS
    assert record_of(systems[7])["name"] == "System 000007"  # each record is read when its turn comes


def test_json_import_peak_is_bounded_by_its_body(client: TestClient, traced: None) -> None:
    body = export_body(SYSTEMS)
    responses = []
    peak = peak_of(
        lambda: responses.append(
            client.post("/api/massdata/import", content=body, headers={"Content-Type": "application/json"})
        )
    )
    (response,) = responses
    assert response.status_code == 200, response.text
    assert response.json()["created"] == SYSTEMS + SYSTEMS // 50
    assert peak <= IMPORT_BOUND * len(body), f"the import peaked at {peak / len(body):.1f} times the body"


def test_json_import_peak_follows_its_chunk_not_its_file(
    template_database: str, tmp_path: Path, traced: None
) -> None:
    """Each further record adds its text, its name and id and its share of the components' history, not
    its drafts and its own history: those are one chunk's (4.4 bytes a further byte of body, measured;
    about 20 when every record's drafts and history waited for the commit)."""
    sizes, peaks = [], []
    for systems in (SYSTEMS, 3 * SYSTEMS):
        body = export_body(systems)
        responses: list[Any] = []

        def run(client: TestClient, body: bytes = body, responses: list[Any] = responses) -> None:
            responses.append(
                client.post(
                    "/api/massdata/import", content=body, headers={"Content-Type": "application/json"}
                )
            )

        with empty_repository(template_database, tmp_path) as (_, client):
            peaks.append(peak_of(partial(run, client)))
        assert responses[0].json()["created"] == systems + systems // 50
        sizes.append(len(body))
    marginal = (peaks[1] - peaks[0]) / (sizes[1] - sizes[0])
    assert marginal <= MARGINAL_BOUND, f"{marginal:.1f} bytes of peak a further byte of body"


def test_a_character_above_u_ffff_does_not_widen_the_parse(traced: None) -> None:
    """One emoji made the whole body's decoded text four bytes per character (and each record's text a
    further copy of that): the body is now cut on its bytes, each value decoded on its own."""
    raw = bytearray(export_body(SYSTEMS, description="the system \N{ROCKET} number"))
    documents = []
    peak = peak_of(lambda: documents.append(parse_json_document(raw)))
    assert peak <= 3 * len(raw), f"the parse peaked at {peak / len(raw):.1f} times the body"
    (document,) = documents
    from blockrepo.massdata.transfer.document import record_of

    systems = document.elements["InformationSystem"]
    assert record_of(systems[7])["description"] == "the system \N{ROCKET} number 7"
