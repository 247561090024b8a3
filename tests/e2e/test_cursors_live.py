"""Cursors over the wire: against `blockrepo serve --workers 2`, each page on a new connection (so either
worker may answer it), issued massdata and history cursors page through everything, and crafted ones are
400 `invalid_cursor`, never a 5xx."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import StartServer

AUTH = ("system", ADMIN_PASSWORD)
ELEMENTS = 9


def _crafted(payload: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()


def _walk(base_url: str, path: str, key: str, **params: Any) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        # A client per page: a new connection, which either worker may accept.
        with httpx.Client(base_url=base_url, auth=AUTH, timeout=30) as client:
            response = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        items += response.json()[key]
        cursor = response.json()["nextCursor"]
        if cursor is None:
            return items


def test_cursors_page_across_workers_and_crafted_ones_are_400(start_server: StartServer) -> None:
    server = start_server("--workers", "2")
    with httpx.Client(base_url=server.base_url, auth=AUTH, timeout=30) as client:
        for n in range(ELEMENTS):
            response = client.post("/api/element/InformationSystem", json={"name": [f"Live-{n}"]})
            assert response.status_code == 201, response.text
        whole = client.get("/api/massdata/InformationSystem", params={"limit": 1000}).json()["items"]
        feed = client.get("/api/history", params={"limit": 1000}).json()["items"]
        crafted_cursors = [
            ("/api/massdata/InformationSystem", "id", _crafted(["InformationSystem", "id", [2**40]])),
            (
                "/api/massdata/InformationSystem",
                "name",
                _crafted(["InformationSystem", "name,id", ["a\u0000", 1]]),
            ),
            ("/api/massdata/InformationSystem", "id", _crafted(["InformationSystem", "id", [1]])),
            ("/api/history", None, _crafted(["f", 1, 1])),
            ("/api/history", None, "garbage"),
        ]
        for path, sort, cursor in crafted_cursors:
            response = client.get(path, params={"cursor": cursor, **({"sort": sort} if sort else {})})
            assert response.status_code == 400, response.text
            assert response.json()["code"] == "invalid_cursor"
    assert len(whole) == ELEMENTS
    listed = _walk(server.base_url, "/api/massdata/InformationSystem", "items", limit=2)
    assert [e["id"] for e in listed] == [e["id"] for e in whole]
    fed = _walk(server.base_url, "/api/history", "items", limit=2)
    assert [c["revision"] for c in fed] == [c["revision"] for c in feed]
