"""The element recorder without a database: changesets and what the neighbours see from (before, after)
states, and one new revision per element per request."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from sqlalchemy.orm import Session

from blockrepo.elements.read.repository import LoadedElement
from blockrepo.elements.write.changesets import Changesets
from blockrepo.elements.write.record import ElementRecorder
from blockrepo.revisions.recorder import ChangeLog, ElementUpdate
from tests.unit.core_fixtures import APP_TYPE

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _app(**properties: Any) -> dict[str, Any]:
    return {"id": [17], "type": ["App"], "revision": [3], "name": ["Billing"], **properties}


def _server(server_id: int, **extra: Any) -> dict[str, Any]:
    return {"id": server_id, "name": f"s{server_id}", **extra}


def test_a_created_element_is_added_to_each_neighbour_once_and_to_its_parent_last() -> None:
    changesets = Changesets(skip={6})
    after = _app(
        parent=[{"id": 2, "name": "Top"}],
        Note=["n"],
        servers=[_server(5, attributes={"Share": [1]}), _server(6, attributes={"Share": []})],
        host=[_server(5)],
    )
    assert changesets.created(APP_TYPE, 17, after) == [
        {"property": "name", "old": [], "new": ["Billing"]},
        {"property": "parent", "old": [], "new": [{"id": 2, "name": "Top"}]},
        {"property": "Note", "old": [], "new": ["n"]},
        {"property": "servers", "old": [], "new": after["servers"]},
        {"property": "host", "old": [], "new": [_server(5)]},
    ]
    me = {"id": 17, "name": "Billing"}
    assert list(changesets.neighbours()) == [
        ElementUpdate(
            "Server",
            5,
            "s5",
            [
                {"property": "apps", "added": [{**me, "attributes": {"Share": [1]}}], "removed": []},
                {"property": "hosted", "added": [me], "removed": []},
            ],
        ),
        ElementUpdate("App", 2, "Top", [{"property": "children", "added": [me], "removed": []}]),
    ]


def test_a_diff_mirrors_what_an_end_gained_and_lost_under_the_names_of_each_side() -> None:
    changesets = Changesets()
    before = _app(parent=[{"id": 2, "name": "Top"}], servers=[_server(5), _server(6)])
    after = _app(name=["Billing 2"], parent=[], servers=[_server(6), _server(7)])
    changes = changesets.diff(APP_TYPE, 17, before, after)
    assert [change["property"] for change in changes] == ["name", "parent", "servers"]
    assert list(changesets.neighbours()) == [
        ElementUpdate(
            "Server", 5, "s5", [{"property": "apps", "added": [], "removed": [{"id": 17, "name": "Billing"}]}]
        ),
        ElementUpdate(
            "Server",
            7,
            "s7",
            [{"property": "apps", "added": [{"id": 17, "name": "Billing 2"}], "removed": []}],
        ),
        ElementUpdate(
            "App",
            2,
            "Top",
            [{"property": "children", "added": [], "removed": [{"id": 17, "name": "Billing"}]}],
        ),
    ]


def test_a_pure_reordering_mirrors_nothing() -> None:
    changesets = Changesets()
    changes = changesets.diff(
        APP_TYPE, 17, _app(servers=[_server(5), _server(6)]), _app(servers=[_server(6), _server(5)])
    )
    assert changes == [
        {"property": "servers", "old": [_server(5), _server(6)], "new": [_server(6), _server(5)]}
    ]
    assert list(changesets.neighbours()) == []


def _loaded(element_id: int, revision: int) -> LoadedElement:
    return LoadedElement(element_id, APP_TYPE.id, "x", "", None, None, 0, revision, NOW, "someone")


def test_an_update_gets_one_new_revision_per_request() -> None:
    log = ChangeLog(user_login="editor", request_id="r1")
    recorder = ElementRecorder(cast(Session, None), log, "editor")
    assert recorder.revision(_loaded(17, 3)) == 4
    assert recorder.updated(APP_TYPE, 17, _app(Note=["a"]), _app(Note=["b"]))
    # A later write of the same request (another recorder, the same log) keeps the revision it gave.
    again = ElementRecorder(cast(Session, None), log, "editor")
    assert again.revision(_loaded(17, 4)) == 4
    assert again.revision(_loaded(18, 1)) == 2
