"""History leaves out what the reader may not read: properties, and changesets of nothing else (API.md 5).

Before, a reader without the Finance group saw `{"operation": "updated", "user": "system", "changes": []}`
for a change only to `Annual costs`: who changed which element when. Element history, type history and the
change feed now leave such a changeset out whole, and page past any number of them."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.history import service as history_service
from tests.api.demo_repository import (
    ANNA,
    BERND,
    database_url,
    demo_repository,
    element_named,
    newest_revision,
    settings,
)
from tests.api.history_support import (
    add_attribute,
    add_user,
    all_pages,
    record,
    record_change,
    restrict_group,
)
from tests.conftest import ADMIN_PASSWORD

__all__ = ["database_url", "demo_repository", "settings"]  # fixtures of the demo landscape

ERP = "Legacy ERP"


def _put(client: TestClient, element: dict[str, Any], body: dict[str, Any]) -> int:
    response = client.put(f"/api/element/InformationSystem/{element['id'][0]}", json=body)
    assert response.status_code == 200, response.text
    return newest_revision(client)


def _revisions(items: list[dict[str, Any]]) -> list[int]:
    return [item["revision"] for item in items]


def _as(client: TestClient, user: tuple[str, str]) -> TestClient:
    acting = TestClient(client.app, base_url="http://127.0.0.1")
    acting.auth = user
    return acting


def _every_view(client: TestClient, element: dict[str, Any], user: tuple[str, str]) -> dict[str, list[Any]]:
    """The element's changesets as element history, type history and the feed show them to `user`."""
    element_id = element["id"][0]
    with_auth = _as(client, user)
    return {
        "element": all_pages(with_auth, f"/api/history/InformationSystem/{element_id}"),
        "type": [i for i in all_pages(with_auth, "/api/history/InformationSystem") if i["id"] == element_id],
        "feed": [
            i
            for i in all_pages(with_auth, "/api/history", {"sinceRevision": 0})
            if i["entity"] == "element" and i["id"] == element_id
        ],
    }


def test_a_change_only_to_a_hidden_attribute_is_left_out_whole(client: TestClient) -> None:
    erp = element_named(client, "InformationSystem", ERP)
    hidden = _put(client, erp, {"Annual costs": [45000]})
    for view, items in _every_view(client, erp, ANNA).items():
        assert hidden not in _revisions(items), view
        assert items, f"{view}: the creation, which anna may read, is still there"
        assert all(c["property"] != "Annual costs" for i in items for c in i["changes"]), view
    for view, items in _every_view(client, erp, BERND).items():
        (change,) = [i for i in items if i["revision"] == hidden]
        assert change["changes"] == [{"property": "Annual costs", "old": [40000], "new": [45000]}], view
    for view, items in _every_view(client, erp, ("system", ADMIN_PASSWORD)).items():
        assert hidden in _revisions(items), view


def test_a_change_with_a_readable_property_shows_only_that(client: TestClient) -> None:
    erp = element_named(client, "InformationSystem", ERP)
    mixed = _put(client, erp, {"Annual costs": [1], "version": ["SAP R/3 4.7 EHP"]})
    for view, items in _every_view(client, erp, ANNA).items():
        (change,) = [i for i in items if i["revision"] == mixed]
        assert [c["property"] for c in change["changes"]] == ["version"], view


def test_a_change_only_to_an_end_to_an_unreadable_type_is_left_out_whole(
    app: FastAPI, client: TestClient
) -> None:
    reader = add_user(app, "isreader", read_types=["InformationSystem"], functional=["VIEW_HISTORY"])
    erp = element_named(client, "InformationSystem", ERP)
    hidden = _put(client, erp, {"technicalComponents": []})
    shown = _put(client, erp, {"technicalComponents": [], "version": ["4.7"]})
    for view, items in _every_view(client, erp, reader).items():
        assert hidden not in _revisions(items), view
        (change,) = [i for i in items if i["revision"] == shown]
        assert [c["property"] for c in change["changes"]] == ["version"], view
        assert all(c["property"] != "technicalComponents" for i in items for c in i["changes"]), view


def _hidden_and_visible(app: FastAPI, erp_id: int, pattern: str) -> list[int]:
    """One revision per letter of `pattern`: `h` changes only Annual costs, `v` the version; returns the
    revisions of the visible ones."""
    visible = []
    for index, kind in enumerate(pattern):
        prop = "Annual costs" if kind == "h" else "version"
        revision = record(
            app,
            [
                {
                    "operation": "updated",
                    "type": "InformationSystem",
                    "id": erp_id,
                    "name": ERP,
                    "changes": [{"property": prop, "old": [index], "new": [index + 1]}],
                }
            ],
        )
        if kind == "v":
            visible.append(revision)
    return visible


def _pages(client: TestClient, url: str, params: dict[str, Any]) -> list[list[dict[str, Any]]]:
    pages, query, cursors = [], dict(params), set()
    while True:
        response = client.get(url, params=query, auth=ANNA)
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(body["items"])
        if body["nextCursor"] is None:
            return pages
        assert body["nextCursor"] not in cursors, "the cursor moves forward"
        cursors.add(body["nextCursor"])
        query["cursor"] = body["nextCursor"]


@pytest.mark.parametrize("url", ["/api/history/InformationSystem/{id}", "/api/history/InformationSystem"])
def test_pages_stay_full_when_many_changesets_are_left_out(
    app: FastAPI, client: TestClient, url: str
) -> None:
    erp_id = element_named(client, "InformationSystem", ERP)["id"][0]
    visible = _hidden_and_visible(app, erp_id, "v" + "h" * 700 + "vv" + "h" * 30 + "v" + "h" * 40)
    pages = _pages(client, url.format(id=erp_id), {"limit": 2})
    seen = [i["revision"] for page in pages for i in page if i["id"] == erp_id]
    assert seen[:4] == sorted(visible, reverse=True), "newest first, each once, none missing"
    assert all(len(page) == 2 for page in pages[:-1]), [len(p) for p in pages]
    assert pages[-1], "no empty last page"


def test_the_feed_pages_past_left_out_changesets_without_gaps(app: FastAPI, client: TestClient) -> None:
    erp_id = element_named(client, "InformationSystem", ERP)["id"][0]
    since = newest_revision(client)
    visible = _hidden_and_visible(app, erp_id, "h" * 600 + "vh" + "v" * 5 + "h" * 20)
    pages = _pages(client, "/api/history", {"sinceRevision": since, "limit": 3})
    assert [i["revision"] for page in pages for i in page] == visible
    assert [len(page) for page in pages] == [3, 3]
    everything = all_pages(client, "/api/history", {"sinceRevision": since, "limit": 7})
    assert [i["revision"] for i in everything] == list(range(since + 1, since + 628)), "gap-free"


def test_a_page_that_skips_too_much_ends_early_with_a_cursor_that_moves_on(
    app: FastAPI, client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_service, "SCAN_BUDGET", 20)
    monkeypatch.setattr(history_service, "FILTER_BATCH", 5)
    erp_id = element_named(client, "InformationSystem", ERP)["id"][0]
    since = newest_revision(client)
    visible = _hidden_and_visible(app, erp_id, "h" * 100 + "v" + "h" * 50 + "vv")
    pages = _pages(client, "/api/history", {"sinceRevision": since, "limit": 2})
    assert [i["revision"] for page in pages for i in page] == visible
    assert len(pages) <= 160 // 20 + 2, "each page moves at least the budget forward"


def test_a_change_only_to_hidden_relation_attributes_is_left_out_whole(
    app: FastAPI, client: TestClient
) -> None:
    secret = add_attribute(app, "Secret", ["BusinessProcess"], group="Confidential")
    restrict_group(app, secret, "Business editor")
    process = element_named(client, "BusinessProcess", "Order handling")
    entry = {"id": 17, "name": "ERP"}
    hidden = record_change(
        app,
        "updated",
        "BusinessProcess",
        process["id"][0],
        "Order handling",
        changes=[
            {
                "property": "informationSystems",
                "removed": [{**entry, "attributes": {"Secret": ["a"]}}],
                "added": [{**entry, "attributes": {"Secret": ["b"]}}],
            }
        ],
    )
    url = f"/api/history/BusinessProcess/{process['id'][0]}"
    items = all_pages(_as(client, ANNA), url, {"limit": 1})
    assert items and hidden not in _revisions(items)
    (shown,) = [i for i in all_pages(_as(client, BERND), url) if i["revision"] == hidden]
    assert shown["changes"][0]["added"] == [{**entry, "attributes": {"Secret": ["b"]}}]
