"""`GET /api/history/stream?scenario=` against a live `blockrepo serve`: a planning scenario's own changesets
live, as history in the scenario shows them, resumable with `Last-Event-ID` (a `scenarioChange`), nothing of
main's, and ended for a reader who no longer sees the scenario."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.conftest import LiveServer, StartServer
from tests.e2e.test_change_stream_live import ADMIN, WAIT, Stream, opened

pytestmark = pytest.mark.e2e


@pytest.fixture
def streaming_server(start_server: StartServer) -> LiveServer:
    """A server whose streams send a heartbeat every half second (a closed test client is noticed then)."""
    return start_server(env={"BLOCKREPO_STREAM_HEARTBEAT": "0.5"})


def _scenario(server: LiveServer, name: str) -> str:
    response = httpx.post(f"{server.base_url}/api/scenarios", json={"name": name}, auth=ADMIN, timeout=WAIT)
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


def _write(
    server: LiveServer, method: str, path: str, scenario: str | None = None, **body: Any
) -> dict[str, Any]:
    params = {} if scenario is None else {"scenario": scenario}
    response = httpx.request(
        method, f"{server.base_url}{path}", params=params, json=body, auth=ADMIN, timeout=WAIT
    )
    assert response.status_code in (200, 201), response.text
    return dict(response.json())


def _newest_change(server: LiveServer, key: str) -> int:
    response = httpx.get(
        f"{server.base_url}/api/scenarios/{key}/changes", params={"limit": 1000}, auth=ADMIN, timeout=WAIT
    )
    assert response.status_code == 200, response.text
    return int(response.json()["items"][-1]["change"])


def _changes_through(stream: Stream, change: int) -> list[dict[str, Any]]:
    """The changesets received until the one of scenario change `change` (fails after WAIT seconds)."""
    received = []
    while True:
        kind, value = stream.events.get(timeout=WAIT)
        if kind == "change":
            received.append(value)
            if value["scenarioChange"] >= change:
                return received


def test_a_scenario_s_changes_arrive_live_without_main_s_and_resume_after_the_last_event_id(
    streaming_server: LiveServer,
) -> None:
    key = _scenario(streaming_server, "Streamed plan")
    with opened(streaming_server, ADMIN, f"?scenario={key}") as stream:
        _write(streaming_server, "POST", "/api/element/BusinessProcess", name=["Only in main"])
        created = _write(streaming_server, "POST", "/api/element/BusinessProcess", key, name=["Planned"])
        first = _newest_change(streaming_server, key)
        received = _changes_through(stream, first)
        assert [(c["operation"], c["name"], c["viaScenario"]) for c in received] == [
            ("created", "Planned", key)
        ]
        element = created["id"][0]
        path = f"/api/element/BusinessProcess/{element}"
        _write(streaming_server, "PATCH", path, key, description=["one"])
        second = _newest_change(streaming_server, key)
        _write(streaming_server, "PATCH", path, key, description=["two"])
        third = _newest_change(streaming_server, key)
        later = _changes_through(stream, third)
        assert [c["scenarioChange"] for c in later] == [second, third]
        assert all(c["id"] == element and c["operation"] == "updated" for c in later)
    # A client that reconnects after the first gets exactly what came after it, once each.
    with opened(streaming_server, ADMIN, f"?scenario={key}", **{"Last-Event-ID": str(first)}) as resumed:
        assert [c["scenarioChange"] for c in _changes_through(resumed, third)] == [second, third]
    # The header names the scenario as the parameter does; the filters apply.
    with opened(
        streaming_server,
        ADMIN,
        "?operation=created",
        **{"Blockrepo-Scenario": key, "Last-Event-ID": "0"},
    ) as only_creations:
        _write(streaming_server, "POST", "/api/element/BusinessProcess", key, name=["Planned too"])
        fourth = _newest_change(streaming_server, key)
        received = _changes_through(only_creations, fourth)
        assert [c["name"] for c in received] == ["Planned", "Planned too"]


def test_refusals_before_the_stream_and_the_end_for_a_reader_who_loses_the_scenario(
    streaming_server: LiveServer,
) -> None:
    base = streaming_server.base_url
    key = _scenario(streaming_server, "Shared plan")
    for query, status, code in (
        (f"?scenario={key}&sinceRevision=0", 400, "validation_failed"),
        ("?scenario=no-such-plan", 404, "unknown_scenario"),
    ):
        response = httpx.get(f"{base}/api/history/stream{query}", auth=ADMIN, timeout=WAIT)
        assert response.status_code == status and response.json()["code"] == code, response.text
    bad_id = httpx.get(
        f"{base}/api/history/stream?scenario={key}", headers={"Last-Event-ID": "x"}, auth=ADMIN, timeout=WAIT
    )
    assert bad_id.status_code == 400
    role = {
        "name": "planners",
        "typePermissions": {"BusinessProcess": ["read"]},
        "functionalPermissions": ["VIEW_HISTORY"],
    }
    assert httpx.post(f"{base}/api/administration/roles", json=role, auth=ADMIN).status_code == 201
    user = {"login": "paula", "password": "paula-password-1", "roles": ["planners"]}
    assert httpx.post(f"{base}/api/administration/users", json=user, auth=ADMIN).status_code == 201
    paula = ("paula", "paula-password-1")
    # Not shared with her: the scenario does not exist for her.
    hidden = httpx.get(f"{base}/api/history/stream?scenario={key}", auth=paula, timeout=WAIT)
    assert hidden.status_code == 404
    shares = {"shares": [{"role": "planners", "access": "read"}]}
    shared = httpx.put(f"{base}/api/scenarios/{key}/shares", json=shares, auth=ADMIN, timeout=WAIT)
    assert shared.status_code == 200, shared.text
    with opened(streaming_server, paula, f"?scenario={key}") as stream:
        _write(streaming_server, "POST", "/api/element/InformationSystem", key, name=["Not hers to read"])
        _write(streaming_server, "POST", "/api/element/BusinessProcess", key, name=["Hers to read"])
        assert [c["name"] for c in _changes_through(stream, _newest_change(streaming_server, key))] == [
            "Hers to read"
        ]
        unshared = httpx.put(
            f"{base}/api/scenarios/{key}/shares", json={"shares": []}, auth=ADMIN, timeout=WAIT
        )
        assert unshared.status_code == 200, unshared.text
        while True:
            kind, value = stream.events.get(timeout=WAIT)
            if kind == "end":
                assert value["code"] == "unknown_scenario"
                break
            assert kind != "change", value
