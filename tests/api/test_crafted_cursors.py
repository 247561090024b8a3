"""Cursors the service did not issue (API.md 9): every massdata and history cursor a client crafts, truncates,
borrows from another listing or makes up is 400 `invalid_cursor`, never a 5xx; issued ones still page."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.errors import BadRequest
from blockrepo.massdata import listing
from blockrepo.settings import Settings
from tests.helpers import create_attribute

LIST = "/api/massdata/InformationSystem"
QUERY = "/api/massdata/query"
FEED = "/api/history"
SYSTEMS = 7

EXAMPLES = settings(
    max_examples=150,
    derandomize=True,  # the same examples on every run: CI stays reproducible
    deadline=None,  # never a timing assertion
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def crafted(payload: Any) -> str:
    """A cursor written the way the service wrote its positions on 671b1a0: URL-safe base64 of JSON."""
    # The standard library's encoder: it writes integers of any size, as a hostile client would.
    raw = payload if isinstance(payload, bytes) else json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.fixture
def landscape(client: TestClient) -> None:
    """Information systems with a date and a number, made one by one (a revision each for the feed)."""
    app: FastAPI = client.app  # type: ignore[assignment]
    create_attribute(app, "Launch", "date", types=["InformationSystem"])
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    for index in range(SYSTEMS):
        body = {"name": [f"IS-{index}"], "Launch": [f"2026-0{index % 9 + 1}-01"], "Costs": [index * 10]}
        response = client.post("/api/element/InformationSystem", json=body)
        assert response.status_code == 201, response.text
    response = client.post("/api/element/BusinessProcess", json={"name": ["Sell"]})
    assert response.status_code == 201, response.text
    response = client.post("/api/element/BusinessProcess", json={"name": ["Buy"]})
    assert response.status_code == 201, response.text


def cursors_of(client: TestClient, path: str, **params: Any) -> list[str]:
    """Every `nextCursor` of a listing, walked page by page."""
    cursors: list[str] = []
    cursor: str | None = None
    while True:
        response = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        cursor = response.json()["nextCursor"]
        if cursor is None:
            return cursors
        cursors.append(cursor)


def assert_invalid_cursor(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "invalid_cursor"
    assert [item["code"] for item in problem["errors"]] == ["invalid_cursor"]
    # The query parameter, or the member of a query's body.
    in_body = response.request.method == "POST"
    assert [item["pointer"] for item in problem["errors"]] == ["/cursor" if in_body else "query:cursor"]


# The sort a crafted listing cursor goes with, and the payload: values no row could have given (out of
# range, NUL, beyond 32 or 64 bits), values of the wrong type, shapes that are not a cursor, and one that is
# well-formed but made up (the service never issued it).
CRAFTED_LISTING = [
    ("id", ["InformationSystem", "id", [2**40]]),
    ("id", ["InformationSystem", "id", [2**63 - 1]]),
    ("-id", ["InformationSystem", "-id", [-(2**63)]]),
    ("id", b'["InformationSystem","id",[99999999999999999999999]]'),
    ("revision", ["InformationSystem", "revision,id", [2**32, 1]]),
    ("name", ["InformationSystem", "name,id", ["IS-1\u0000", 1]]),
    ("name", ["InformationSystem", "name,id", ["\u0000", 2**31]]),
    (
        "lastModificationTime",
        ["InformationSystem", "lastModificationTime,id", ["0001-01-01T00:00:00+01:00", 1]],
    ),
    (
        "-lastModificationTime",
        ["InformationSystem", "-lastModificationTime,id", ["9999-12-31T23:59:59-01:00", 1]],
    ),
    ("Launch", ["InformationSystem", "Launch,id", ["0001-01-01", 1]]),
    ("Launch", ["InformationSystem", "Launch,id", ["10000-01-01", 1]]),
    ("Costs", ["InformationSystem", "Costs,id", [1e308, 1]]),
    ("id", ["InformationSystem", "id", ["six"]]),
    ("id", ["InformationSystem", "id", [True]]),
    ("id", ["InformationSystem", "id", [1.5]]),
    ("id", ["InformationSystem", "id", 1]),
    ("id", ["InformationSystem", "id", [1], "more"]),
    ("id", {"type": "InformationSystem", "sort": "id", "values": [1]}),
    ("id", "InformationSystem"),
    ("id", None),
    ("id", ["InformationSystem", "id", [1]]),  # well-formed, made up
    ("name", ["InformationSystem", "name,id", ["IS-1", 2]]),  # well-formed, made up
]


@pytest.mark.parametrize(("sort", "payload"), CRAFTED_LISTING)
def test_a_crafted_listing_cursor_is_400(
    client: TestClient, landscape: None, sort: str, payload: Any
) -> None:
    cursor = crafted(payload)
    assert_invalid_cursor(client.get(LIST, params={"sort": sort, "cursor": cursor, "limit": 2}))
    body = {"query": "InformationSystem", "sort": sort, "cursor": cursor, "limit": 2}
    assert_invalid_cursor(client.post(QUERY, json=body))


# A history position of the feed ("f"): revision and change id beyond the 32-bit columns, negative, of the
# wrong type, NUL in the scope, a short list, and a well-formed one the service never issued.
CRAFTED_HISTORY = [
    ["f", 2**40, 1],
    ["f", 1, 2**63 - 1],
    ["f", -1, 1],
    ["f\u0000", 1, 1],
    ["f", "1", 1],
    ["f", 1.5, 1],
    ["f", True, 1],
    ["f", 1],
    {"f": 1},
    ["f", 3, 1],  # well-formed, made up
]


@pytest.mark.parametrize("payload", CRAFTED_HISTORY)
def test_a_crafted_history_cursor_is_400(client: TestClient, landscape: None, payload: Any) -> None:
    cursor = crafted(payload)
    assert_invalid_cursor(client.get(FEED, params={"cursor": cursor, "limit": 2}))
    assert_invalid_cursor(client.get("/api/history/InformationSystem", params={"cursor": cursor}))


def garbage(issued: str) -> list[str]:
    """Cursors near one the service issued (truncated, extended, one character changed) and base64 junk."""
    flipped = issued[:-1] + ("A" if issued[-1] != "A" else "B")
    return [
        issued[:-1],
        issued[: len(issued) // 2],
        issued[:1],
        issued + "A",
        flipped,
        "A" + issued[1:] if issued[0] != "A" else "B" + issued[1:],
        issued.rpartition(".")[0] or issued[:-22],  # the position without its seal
        issued.rpartition(".")[0] + "." + "A" * 22,
        "not-a-cursor",
        "ÿÿ",
        "!!!!",
        "====",
        ".",
        " ",
        "A" * 4096,
        base64.urlsafe_b64encode(bytes(range(256))).decode(),
    ]


def test_truncated_altered_and_garbage_cursors_are_400(client: TestClient, landscape: None) -> None:
    listed = cursors_of(client, LIST, limit=2)[0]
    for cursor in garbage(listed):
        assert_invalid_cursor(client.get(LIST, params={"cursor": cursor, "limit": 2}))
        assert_invalid_cursor(client.post(QUERY, json={"query": "InformationSystem", "cursor": cursor}))
    fed = cursors_of(client, FEED, limit=2)[0]
    for cursor in garbage(fed):
        assert_invalid_cursor(client.get(FEED, params={"cursor": cursor, "limit": 2}))


def test_another_listings_cursor_is_400(client: TestClient, landscape: None) -> None:
    by_name = cursors_of(client, LIST, sort="name", limit=2)[0]
    processes = cursors_of(client, "/api/massdata/BusinessProcess", limit=1)[0]
    fed = cursors_of(client, FEED, limit=2)[0]
    typed = cursors_of(client, "/api/history/InformationSystem", limit=2)[0]
    for cursor in (by_name, processes, fed, typed):
        assert_invalid_cursor(client.get(LIST, params={"cursor": cursor, "limit": 2}))
    assert_invalid_cursor(client.get(LIST, params={"sort": "-name", "cursor": by_name}))
    listed = cursors_of(client, LIST, limit=2)[0]
    for cursor in (listed, by_name, typed):
        assert_invalid_cursor(client.get(FEED, params={"cursor": cursor, "limit": 2}))
    assert_invalid_cursor(client.get("/api/history/InformationSystem", params={"cursor": fed}))
    assert_invalid_cursor(client.get("/api/history/BusinessProcess", params={"cursor": typed}))


def test_a_nul_in_the_cursor_parameter_is_400(client: TestClient, landscape: None) -> None:
    """A NUL in the text of any query parameter is refused before routing (API.md 7); never a 5xx."""
    for path in (LIST, FEED):
        response = client.get(path, params={"cursor": "WyJm\u0000IiwxLDFd"})
        assert response.status_code == 400, response.text
    response = client.post(QUERY, json={"query": "InformationSystem", "cursor": "Wy\u0000Jm"})
    assert response.status_code == 400, response.text


# --- issued cursors still page ---------------------------------------------------------------------------


def walk(client: TestClient, path: str, key: str = "items", **params: Any) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    while True:
        response = client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        page = response.json()
        items += page[key]
        cursor = page["nextCursor"]
        if cursor is None:
            return items


@pytest.mark.parametrize("sort", ["id", "-id", "name", "-name", "Launch", "-Costs", "-lastModificationTime"])
def test_issued_listing_cursors_page_through_every_element(
    client: TestClient, landscape: None, sort: str
) -> None:
    whole = client.get(LIST, params={"sort": sort, "limit": 1000}).json()["items"]
    assert len(whole) == SYSTEMS
    assert [e["id"] for e in walk(client, LIST, sort=sort, limit=2)] == [e["id"] for e in whole]
    pages: list[dict[str, Any]] = []
    cursor = None
    while True:
        body = {"query": "InformationSystem", "sort": sort, "limit": 3, "cursor": cursor}
        response = client.post(QUERY, json=body)
        assert response.status_code == 200, response.text
        pages += response.json()["result"]
        cursor = response.json()["nextCursor"]
        if cursor is None:
            break
    assert [e["id"] for e in pages] == [e["id"] for e in whole]


def test_issued_history_cursors_page_through_the_feed(client: TestClient, landscape: None) -> None:
    whole = [c["revision"] for c in client.get(FEED, params={"limit": 1000}).json()["items"]]
    assert len(whole) >= SYSTEMS
    assert [c["revision"] for c in walk(client, FEED, limit=2)] == whole
    typed = [c["revision"] for c in walk(client, "/api/history/InformationSystem", limit=2)]
    assert len(typed) == SYSTEMS


def test_a_cursor_one_worker_issued_pages_on_another(
    client: TestClient, landscape: None, settings: Settings
) -> None:
    """The seal's key comes from the database's server secret: every worker and host opens it."""
    first = client.get(LIST, params={"limit": 2}).json()
    fed = client.get(FEED, params={"limit": 2}).json()
    other = create_app(settings)
    try:
        with TestClient(other, base_url="http://127.0.0.1") as second:
            second.auth = client.auth
            response = second.get(LIST, params={"limit": 2, "cursor": first["nextCursor"]})
            assert response.status_code == 200, response.text
            assert (
                response.json()["items"]
                == client.get(LIST, params={"limit": 2, "cursor": first["nextCursor"]}).json()["items"]
            )
            assert second.get(FEED, params={"limit": 2, "cursor": fed["nextCursor"]}).status_code == 200
    finally:
        other.state.services.dispose()


# --- the service alone ----------------------------------------------------------------------------------


_KINDS = {"id": "integer", "revision": "integer", "name": "text", "lastModificationTime": "datetime"}
_KINDS |= {"Launch": "date", "Costs": "number"}


def _keys(sort: str) -> list[listing.SortKey]:
    """The sort keys of `sort` as `decode_cursor` reads them (their spec and kind), `id` last."""
    names = [sort, "id"] if sort.lstrip("-") != "id" else [sort]
    return [
        listing.SortKey(name.lstrip("-"), name.startswith("-"), None, _KINDS[name.lstrip("-")], False)
        for name in names
    ]


# Positions a row could give (only the seal tells them from issued ones).
PLAUSIBLE = (
    ["InformationSystem", "id", [1]],
    ["InformationSystem", "name,id", ["IS-1", 2]],
    ["InformationSystem", "Launch,id", ["0001-01-01", 1]],
    ["InformationSystem", "Costs,id", [1e308, 1]],
)


@pytest.mark.parametrize(("sort", "payload"), [case for case in CRAFTED_LISTING if case[1] not in PLAUSIBLE])
def test_the_listing_service_refuses_positions_no_row_could_give(sort: str, payload: Any) -> None:
    """Behind the seal, the listing still checks every value it binds (for any caller but the API too)."""
    with pytest.raises(BadRequest) as raised:
        listing.decode_cursor(crafted(payload), "InformationSystem", _keys(sort), "query:cursor")
    assert raised.value.instance_code == "invalid_cursor"


# --- any cursor string -----------------------------------------------------------------------------------


@pytest.fixture
def issued(client: TestClient, landscape: None) -> dict[str, list[str]]:
    """Cursors the service issued, by listing: these (and only these) answer 200 there."""
    return {
        "list": cursors_of(client, LIST, limit=2),
        "feed": cursors_of(client, FEED, limit=2),
        "elsewhere": [
            *cursors_of(client, LIST, sort="name", limit=2),
            *cursors_of(client, "/api/history/InformationSystem", limit=2),
        ],
    }


_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=120)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.dates().map(lambda d: d.isoformat()),
    st.datetimes().map(lambda d: d.isoformat() + "+05:00"),
)
# Positions shaped exactly like the ones the listing and the feed issue, with made-up values.
_WELL_SHAPED = st.one_of(
    st.tuples(st.just("InformationSystem"), st.just("id"), st.lists(_SCALARS, min_size=1, max_size=1)),
    st.tuples(st.just("InformationSystem"), st.just("id"), st.tuples(st.integers(-(2**40), 2**40))),
    st.tuples(st.just("f"), st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40)),
).map(lambda t: crafted(list(t)))
_POSITIONS = st.one_of(
    _WELL_SHAPED,
    st.tuples(
        st.sampled_from(["InformationSystem", "BusinessProcess", "f", "tInformationSystem", ""]),
        st.sampled_from(["id", "name,id", "-lastModificationTime,id", "Launch,id", "x"]),
        st.lists(_SCALARS, max_size=3),
    ).map(lambda t: crafted(list(t))),
    st.tuples(st.sampled_from(["f", "tInformationSystem", "e1"]), _SCALARS, _SCALARS).map(
        lambda t: crafted(list(t))
    ),
    st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4), max_leaves=8).map(crafted),
    st.binary(max_size=80).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")),
)


def _cursors(pool: list[str]) -> st.SearchStrategy[str]:
    """Any text, crafted positions (sealed with a made-up tag or not), issued cursors and changes to them."""
    near = st.tuples(st.sampled_from(pool), st.integers(0, 200), _TEXT).map(
        lambda t: t[0][: t[1] % (len(t[0]) + 1)] + t[2]
    )
    sealed_lookalike = st.tuples(
        _POSITIONS, st.text("ABCDEFGHabcdefgh0123456789-_", min_size=22, max_size=22)
    )
    return st.one_of(
        _TEXT,
        _POSITIONS,
        sealed_lookalike.map(lambda t: f"{t[0]}.{t[1]}"),
        st.sampled_from(pool),
        near,
    )


@given(data=st.data())
@EXAMPLES
def test_any_listing_cursor_is_200_if_issued_else_400(
    client: TestClient, issued: dict[str, list[str]], data: st.DataObject
) -> None:
    pool = [*issued["list"], *issued["feed"], *issued["elsewhere"]]
    cursor = data.draw(_cursors(pool))
    response = client.get(LIST, params={"cursor": cursor, "limit": 2})
    if cursor in issued["list"] or cursor == "":
        assert response.status_code == 200, response.text
    else:
        assert_invalid_cursor(response)


@given(data=st.data())
@EXAMPLES
def test_any_history_cursor_is_200_if_issued_else_400(
    client: TestClient, issued: dict[str, list[str]], data: st.DataObject
) -> None:
    pool = [*issued["list"], *issued["feed"], *issued["elsewhere"]]
    cursor = data.draw(_cursors(pool))
    response = client.get(FEED, params={"cursor": cursor, "limit": 2})
    if cursor in issued["feed"] or cursor == "":
        assert response.status_code == 200, response.text
    else:
        assert_invalid_cursor(response)
