"""`asOf` of the newest revision reads exactly what the live read does, and every ISO-8601 time is an asOf.

Before, reading the demo landscape as of its newest revision reported other element revisions (and ETags)
than the live read for 140 of its 178 elements: creating an element bumped the revision of neighbours the
same request had created already, while their history folds into one changeset. And an offset that puts a
valid time past year 9999 in UTC (`9999-12-31T23:59:59-14:00`) was refused as not ISO-8601."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.api.demo_repository import (
    database_url,
    demo_repository,
    element_named,
    newest_revision,
    settings,
)

__all__ = ["database_url", "demo_repository", "settings"]  # fixtures of the demo landscape


def _listing(client: TestClient, type_name: str, **params: Any) -> list[dict[str, Any]]:
    response = client.get(f"/api/massdata/{type_name}", params={"limit": 1000, **params})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["nextCursor"] is None
    return body["items"]  # type: ignore[no-any-return]


def _without_stamps(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in item.items() if k != "lastModificationTime"} for item in items]


def _assert_as_of_newest_is_live(client: TestClient) -> None:
    newest = str(newest_revision(client))
    for block_type in client.get("/api/metamodel").json()["types"]:
        live = _listing(client, block_type["name"])
        past = _listing(client, block_type["name"], asOf=newest)
        assert [e["revision"] for e in past] == [e["revision"] for e in live], block_type["name"]
        assert _without_stamps(past) == _without_stamps(live), block_type["name"]


def test_the_demo_as_of_its_newest_revision_is_the_live_demo(client: TestClient) -> None:
    _assert_as_of_newest_is_live(client)


def test_element_revision_and_etag_as_of_now_match_the_live_read(client: TestClient) -> None:
    erp = element_named(client, "InformationSystem", "ERP")
    path = f"/api/element/InformationSystem/{erp['id'][0]}"
    # A write that also changes neighbours (both relation ends change together).
    response = client.put(path, json={"technicalComponents": [], "description": ["core"]})
    assert response.status_code == 200, response.text
    live = client.get(path)
    past = client.get(path, params={"asOf": str(newest_revision(client))})
    assert past.status_code == 200, past.text
    assert past.json()["revision"] == live.json()["revision"]
    assert past.headers["ETag"] == live.headers["ETag"]
    _assert_as_of_newest_is_live(client)


@pytest.mark.parametrize(
    "moment",
    [
        "9999-12-31T23:59:59-14:00",
        "9999-12-31T23:59:59.999999-14:00",
        "9999-12-31T24:00:00Z",
        "2999-01-01T00:00:00Z",
        "2999-01-01T00:00:00.5+14:00",
        "2999-01-01T00:00:00,123456789-12:00",
        "29990101T000000Z",
        "2999-W01-1",
        "2999-001",
        "2998-12-31T23:59:60Z",
        "2999-01-01",
    ],
)
def test_any_iso_8601_time_after_now_reads_the_current_state(client: TestClient, moment: str) -> None:
    erp = element_named(client, "InformationSystem", "ERP")
    path = f"/api/element/InformationSystem/{erp['id'][0]}"
    response = client.get(path, params={"asOf": moment})
    assert response.status_code == 200, response.text
    assert response.json() == client.get(path).json()
    history = client.get("/api/history", params={"to": moment, "limit": 1})
    assert history.status_code == 200, history.text


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+14:00", "0001-01-01", "1970-01-01T00:00:00.000001-01:00"]
)
def test_an_iso_8601_time_before_every_revision_finds_nothing(client: TestClient, moment: str) -> None:
    erp = element_named(client, "InformationSystem", "ERP")
    response = client.get(f"/api/element/InformationSystem/{erp['id'][0]}", params={"asOf": moment})
    assert response.status_code == 404, response.text


@pytest.mark.parametrize(
    ("moment", "problem"),
    [
        ("2026-13-01T00:00:00Z", "month must be in 1..12"),
        ("2026-02-30", "day is out of range for month"),
        ("2026-11-24T25:00:00Z", "hour must be in 0..23"),
        ("2026-11-24T10:00:00+24:00", "offset must be"),
        ("2025-366", "day of year must be in 1..365"),
        ("10000-01-01T00:00:00Z", "Invalid isoformat string"),
        ("yesterday", "Invalid isoformat string"),
    ],
)
def test_an_invalid_time_gets_400_naming_the_problem(client: TestClient, moment: str, problem: str) -> None:
    erp = element_named(client, "InformationSystem", "ERP")
    for path in (f"/api/element/InformationSystem/{erp['id'][0]}", "/api/massdata/InformationSystem"):
        response = client.get(path, params={"asOf": moment})
        assert response.status_code == 400, response.text
        assert response.headers["content-type"] == "application/problem+json"
        (error,) = response.json()["errors"]
        assert error["pointer"] == "query:asOf"
        assert problem in error["message"]
