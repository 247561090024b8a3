"""The change feed GET /api/history: order, gap-free paging, bounds, metamodel and administration entries."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.history_support import all_pages, record, record_change


def _created(type_name: str, element_id: int, name: str) -> dict[str, object]:
    return {
        "operation": "created",
        "type": type_name,
        "id": element_id,
        "name": name,
        "changes": [{"property": "name", "old": [], "new": [name]}],
    }


def test_bootstrap_revision_is_in_the_feed(client: TestClient) -> None:
    response = client.get("/api/history", params={"sinceRevision": 0})
    assert response.status_code == 200
    body = response.json()
    assert body["nextCursor"] is None
    first = body["items"][0]
    assert first["revision"] == 1
    assert first["entity"] == "metamodel"
    assert first["subject"] == "default metamodel"
    assert first["type"] is None and first["id"] is None and first["name"] is None
    assert first["user"] == "system" and first["requestId"] == "bootstrap"
    assert first["timestamp"].endswith("Z")
    admin = [i for i in body["items"] if i["entity"] == "administration"]
    assert [a["subject"] for a in admin] == ["user system"]
    assert admin[0]["changes"] == [{"property": "roles", "old": [], "new": ["Supervisor"]}]


def test_feed_lists_changesets_after_since_revision_in_commit_order(app: FastAPI, client: TestClient) -> None:
    r2 = record(app, [_created("BusinessProcess", 101, "A")], request_id="req-a")
    r3 = record(app, [_created("InformationSystem", 102, "B")])
    r4 = record_change(
        app,
        "updated",
        "BusinessProcess",
        101,
        "A2",
        changes=[{"property": "name", "old": ["A"], "new": ["A2"]}],
    )
    assert (r2, r3, r4) == (2, 3, 4)
    items = client.get("/api/history", params={"sinceRevision": 2}).json()["items"]
    assert [(i["revision"], i["type"], i["id"], i["operation"]) for i in items] == [
        (3, "InformationSystem", 102, "created"),
        (4, "BusinessProcess", 101, "updated"),
    ]
    assert items[1]["name"] == "A2"
    assert items[1]["entity"] == "element" and items[1]["subject"] is None
    assert items[1]["changes"] == [{"property": "name", "old": ["A"], "new": ["A2"]}]
    first = client.get("/api/history", params={"sinceRevision": 1}).json()["items"][0]
    assert first["requestId"] == "req-a"
    assert client.get("/api/history", params={"sinceRevision": 4}).json() == {"items": [], "nextCursor": None}
    assert client.get("/api/history", params={"sinceRevision": 99}).json()["items"] == []


def test_default_since_revision_is_the_beginning(app: FastAPI, client: TestClient) -> None:
    record(app, [_created("BusinessProcess", 101, "A")])
    revisions = [i["revision"] for i in client.get("/api/history").json()["items"]]
    assert revisions[0] == 1 and revisions[-1] == 2


def test_pages_follow_each_other_inside_a_large_revision(app: FastAPI, client: TestClient) -> None:
    """A page may end inside a revision; nextCursor resumes there, nothing is lost or repeated."""
    record(app, [_created("BusinessProcess", 200 + n, f"P{n}") for n in range(7)])
    record(app, [_created("BusinessProcess", 300, "Q")])
    first = client.get("/api/history", params={"sinceRevision": 1, "limit": 3}).json()
    assert [i["id"] for i in first["items"]] == [200, 201, 202]
    assert first["nextCursor"]
    items = all_pages(client, "/api/history", {"sinceRevision": 1, "limit": 3})
    assert [(i["revision"], i["id"]) for i in items] == [(2, 200 + n) for n in range(7)] + [(3, 300)]


def test_polling_with_the_last_seen_revision_sees_each_change_once(app: FastAPI, client: TestClient) -> None:
    seen: list[tuple[int, int | None]] = []
    since = 0
    for batch in range(4):
        record(app, [_created("Project", 1000 + batch * 10 + n, f"J{batch}-{n}") for n in range(batch + 1)])
        items = all_pages(client, "/api/history", {"sinceRevision": since, "limit": 2})
        seen.extend((i["revision"], i["id"]) for i in items)
        since = items[-1]["revision"] if items else since
    element_items = [s for s in seen if s[1] is not None]
    assert len(element_items) == len(set(element_items)) == 1 + 2 + 3 + 4
    assert seen == sorted(seen, key=lambda s: s[0])
    assert sorted({s[0] for s in seen}) == list(range(1, 6))


def test_from_and_to_bound_the_feed_by_revision_and_time(app: FastAPI, client: TestClient) -> None:
    for n in range(4):
        record(app, [_created("BusinessUnit", 500 + n, f"U{n}")])
        time.sleep(0.01)
    revisions = [
        i["revision"] for i in client.get("/api/history", params={"from": 3, "to": 4}).json()["items"]
    ]
    assert revisions == [3, 4]
    stamps = {
        i["revision"]: i["timestamp"]
        for i in client.get("/api/history", params={"sinceRevision": 1}).json()["items"]
    }
    response = client.get("/api/history", params={"from": stamps[3], "to": stamps[4]})
    assert [i["revision"] for i in response.json()["items"]] == [3, 4]
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    assert client.get("/api/history", params={"from": later.isoformat()}).json()["items"] == []
    offset = dt.datetime.fromisoformat(stamps[4]).astimezone(dt.timezone(dt.timedelta(hours=2)))
    response = client.get("/api/history", params={"to": offset.isoformat(), "from": 4})
    assert [i["revision"] for i in response.json()["items"]] == [4]


@pytest.mark.parametrize(
    ("params", "pointer"),
    [
        ({"limit": 0}, "query:limit"),
        ({"limit": 1001}, "query:limit"),
        ({"limit": "ten"}, "query:limit"),
        ({"limit": -5}, "query:limit"),
        ({"cursor": "not-a-cursor"}, "query:cursor"),
        ({"cursor": "WzEsMl0"}, "query:cursor"),  # base64 of [1,2]: valid JSON, not a cursor
        ({"from": "yesterday"}, "query:from"),
        ({"to": "2026-13-45"}, "query:to"),
        ({"sinceRevision": -1}, "query:sinceRevision"),
        ({"sinceRevision": "x"}, "query:sinceRevision"),
        ({"sinceRevision": "²"}, "query:sinceRevision"),
        ({"sinceRevision": "99999999999999999999999"}, "query:sinceRevision"),
        ({"from": "99999999999999999999999"}, "query:from"),
        ({"to": "2026-11-24T10:00:00+24:00"}, "query:to"),  # offsets are less than a day
        ({"from": "10000-01-01T00:00:00Z"}, "query:from"),  # four-digit years only
        ({"limit": "\uff11\uff10"}, "query:limit"),  # full-width digits
        ({"cursor": "WyJmIiw5OTk5OTk5OTk5OTk5OTksMV0"}, "query:cursor"),  # ["f",999999999999999,1]
        ({"cursor": "ÿÿ"}, "query:cursor"),
    ],
)
def test_bad_parameters_get_400(client: TestClient, params: dict[str, object], pointer: str) -> None:
    response = client.get("/api/history", params=params)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    # API.md 9: a cursor the service did not issue has a code of its own.
    assert body["code"] == ("invalid_cursor" if pointer == "query:cursor" else "validation_failed")
    assert [e["pointer"] for e in body["errors"]] == [pointer]


def test_a_cursor_of_another_listing_is_rejected(app: FastAPI, client: TestClient) -> None:
    record(app, [_created("BusinessProcess", 200 + n, f"P{n}") for n in range(3)])
    cursor = client.get("/api/history/BusinessProcess", params={"limit": 1}).json()["nextCursor"]
    assert cursor
    response = client.get("/api/history", params={"cursor": cursor})
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "query:cursor"


def test_limit_bounds_follow_the_settings(app: FastAPI, client: TestClient) -> None:
    record(app, [_created("BusinessProcess", 200 + n, f"P{n}") for n in range(120)])
    assert len(client.get("/api/history").json()["items"]) == 100
    assert len(client.get("/api/history", params={"limit": 1000}).json()["items"]) == 122
    assert client.get("/api/history", params={"limit": 1000}).json()["nextCursor"] is None


def test_feed_needs_authentication(anon: TestClient) -> None:
    assert anon.get("/api/history").status_code == 401
