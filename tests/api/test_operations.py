"""What an operator reads: Prometheus metrics at `/metrics` (names, labels, who may read them), the access
log line of each request (request id as in `X-Request-ID`) and the request id on every application line."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import orjson
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.logs import JsonFormatter, RequestIdFilter, TextFormatter
from blockrepo.settings import Settings
from tests.conftest import ADMIN_PASSWORD, make_settings

SYSTEMS = "/api/element/InformationSystem"
LOOPBACK = ("127.0.0.1", 50000)
SAMPLE = dict[tuple[tuple[str, str], ...], float]


def samples(text: str) -> dict[str, SAMPLE]:
    """Each sample's value by name, then by its labels."""
    found: dict[str, SAMPLE] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def labelled(found: dict[str, SAMPLE], name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    wanted = set(labels.items())
    return sum(value for key, value in found.get(name, {}).items() if wanted <= set(key))


def grown(before: dict[str, SAMPLE], after: dict[str, SAMPLE], name: str, **labels: str) -> float:
    """How much `name` grew between two scrapes (the figures are the process's: other tests count too)."""
    return labelled(after, name, **labels) - labelled(before, name, **labels)


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, webhook_allowed_networks="127.0.0.0/8")


@pytest.fixture
def local(app: FastAPI) -> Iterator[TestClient]:
    """The supervisor, from a loopback address (as a scraper on the same host)."""
    with TestClient(app, base_url="http://127.0.0.1", client=LOOPBACK) as client:
        client.auth = ("system", ADMIN_PASSWORD)
        yield client


def test_metrics_count_requests_by_route_template_and_status(local: TestClient) -> None:
    before = samples(local.get("/metrics").text)
    created = local.post(SYSTEMS, json={"name": ["Metered"]})
    assert created.status_code == 201, created.text
    element = created.headers["location"]
    for _ in range(3):
        local.cookies.clear()  # Basic alone, as a script sends it: the GET lane answers once it is cached
        assert local.get(element).status_code == 200
    assert local.get(f"{SYSTEMS}/999999").status_code == 404
    assert local.put(element, json={"description": ["counted"]}).status_code == 200
    local.get("/api/no-such-thing")
    local.get(element, auth=("system", "wrong-password"))

    scraped = local.get("/metrics")
    assert scraped.status_code == 200, scraped.text
    assert scraped.headers["content-type"].startswith("text/plain")
    found = samples(scraped.text)
    route = "/api/element/{type}/{id}"
    requests = "blockrepo_http_requests_total"
    # Counted under the template, whichever path (lane or routed) answered: no label per element.
    assert grown(before, found, requests, method="GET", route=route, status="200") == 3
    assert grown(before, found, requests, method="GET", route=route, status="404") == 1
    assert grown(before, found, requests, method="PUT", route=route, status="200") == 1
    assert grown(before, found, requests, method="POST", route="/api/element/{type}", status="201") == 1
    assert grown(before, found, requests, route="(unrouted)", status="401") == 1
    assert not any(dict(key).get("route", "").startswith(f"{SYSTEMS}/") for key in found[requests])
    duration = "blockrepo_http_request_duration_seconds"
    assert grown(before, found, f"{duration}_count", method="GET", route=route) == 4
    assert grown(before, found, f"{duration}_bucket", le="+Inf", route=route) == 5
    assert grown(before, found, "blockrepo_lane_answers_total", lane="read") >= 1
    assert grown(before, found, "blockrepo_logins_total", outcome="failed") == 1
    assert grown(before, found, "blockrepo_write_wait_seconds_count") >= 2
    assert ("pool", "requests") in {item for key in found["blockrepo_db_connections_in_use"] for item in key}
    for gauge in ("webhooks_active", "webhooks_behind", "webhooks_failing", "webhook_backlog_revisions"):
        assert f"blockrepo_{gauge}" in found


def test_the_webhook_backlog_is_read_from_the_database(local: TestClient) -> None:
    hook = local.post(
        "/api/webhooks",
        json={"name": "paused", "url": "http://127.0.0.1:9/hook", "events": ["element.created"]},
    )
    assert hook.status_code == 201, hook.text
    local.post(f"/api/webhooks/{hook.json()['id']}/pause")
    before = samples(local.get("/metrics").text)
    local.post(f"/api/webhooks/{hook.json()['id']}/resume")
    for name in ("First", "Second"):
        assert local.post(SYSTEMS, json={"name": [name]}).status_code == 201
    found = samples(local.get("/metrics").text)
    assert labelled(before, "blockrepo_webhooks_active") == 0  # read from this test's database
    assert labelled(found, "blockrepo_webhooks_active") == 1
    assert labelled(found, "blockrepo_webhooks_behind") == 1  # delivery is off in tests
    assert labelled(found, "blockrepo_webhook_backlog_revisions") >= 2


@pytest.mark.parametrize(
    ("overrides", "client", "authorization", "status"),
    [
        ({}, ("203.0.113.9", 1), None, 403),
        ({}, LOOPBACK, None, 200),
        ({"metrics_token": "scrape-secret-1"}, ("203.0.113.9", 1), "Bearer scrape-secret-1", 200),
        ({"metrics_token": "scrape-secret-1"}, ("203.0.113.9", 1), "Bearer scrape-secret-2", 403),
        ({"metrics_token": "scrape-secret-1"}, LOOPBACK, "Bearer scrape-secret-2", 403),
        ({"metrics": "public"}, ("203.0.113.9", 1), None, 200),
        ({"metrics": "off"}, LOOPBACK, None, 404),
    ],
)
def test_who_may_read_the_metrics(
    database_url: str,
    overrides: dict[str, object],
    client: tuple[str, int],
    authorization: str | None,
    status: int,
) -> None:
    app = create_app(make_settings(database_url, **overrides))
    try:
        with TestClient(app, base_url="http://127.0.0.1", client=client) as anonymous:
            headers = {} if authorization is None else {"Authorization": authorization}
            answer = anonymous.get("/metrics", headers=headers)
            assert answer.status_code == status, answer.text
            assert "set-cookie" not in answer.headers
            if status != 200:
                assert answer.headers["content-type"].startswith("application/problem+json")
                assert "blockrepo_http_requests_total" not in answer.text
    finally:
        app.state.services.dispose()


@pytest.fixture
def log_lines() -> Iterator[dict[str, io.StringIO]]:
    """What the `blockrepo` loggers write, through the serving process's filter, as text and as JSON."""
    streams = {"text": io.StringIO(), "json": io.StringIO()}
    handlers = []
    for name, formatter in (("text", TextFormatter()), ("json", JsonFormatter())):
        handler = logging.StreamHandler(streams[name])
        handler.setFormatter(formatter)
        handler.addFilter(RequestIdFilter())
        handlers.append(handler)
    logger = logging.getLogger("blockrepo")
    level = logger.level
    logger.setLevel(logging.INFO)
    for handler in handlers:
        logger.addHandler(handler)
    try:
        yield streams
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
        logger.setLevel(level)


def test_each_request_has_one_access_line_with_its_request_id(
    client: TestClient, log_lines: dict[str, io.StringIO]
) -> None:
    created = client.post(SYSTEMS, json={"name": ["Logged"]}, headers={"X-Request-ID": "req-create-1"})
    assert created.headers["x-request-id"] == "req-create-1"
    answer = client.get(created.headers["location"])  # no id sent: one is made and answered
    made = answer.headers["x-request-id"]

    entries = [orjson.loads(line) for line in log_lines["json"].getvalue().splitlines()]
    access = [entry for entry in entries if entry["logger"] == "blockrepo.access"]
    assert [entry["request_id"] for entry in access] == ["req-create-1", made]
    first = access[0]
    assert first["level"] == "INFO" and first["time"].endswith("Z")
    assert (first["method"], first["route"], first["path"], first["status"], first["user"]) == (
        "POST",
        "/api/element/{type}",
        SYSTEMS,
        201,
        "system",
    )
    assert first["duration_ms"] >= 0
    text = [line for line in log_lines["text"].getvalue().splitlines() if " blockrepo.access " in line]
    assert f"INFO blockrepo.access [req-create-1] POST {SYSTEMS} 201 " in text[0]
    assert "user=system route=/api/element/{type}" in text[0]


def test_application_lines_name_the_request_they_were_logged_for(
    anon: TestClient, log_lines: dict[str, io.StringIO]
) -> None:
    anon.get(SYSTEMS, auth=("system", "not-the-password"), headers={"X-Request-ID": "req-login-9"})
    failed = [line for line in log_lines["text"].getvalue().splitlines() if "login failed" in line]
    assert len(failed) == 1
    assert "WARNING blockrepo.auth" in failed[0] and "[req-login-9]" in failed[0]


def test_a_path_cannot_forge_an_access_line(client: TestClient, log_lines: dict[str, io.StringIO]) -> None:
    client.get("/api/element/InformationSystem/1%0A2026-01-01T00:00:00.000Z INFO forged")
    lines = [line for line in log_lines["text"].getvalue().splitlines() if "forged" in line]
    assert len(lines) == 1 and "%0A" in lines[0]


def test_invented_methods_add_no_labels(local: TestClient) -> None:
    for method in ("BREW", "WHEN", "FROB"):
        local.request(method, "/api/massdata/InformationSystem")
    found = samples(local.get("/metrics").text)
    methods = {dict(key)["method"] for key in found["blockrepo_http_requests_total"]}
    assert not methods & {"BREW", "WHEN", "FROB"} and "OTHER" in methods
