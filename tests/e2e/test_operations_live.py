"""A live `blockrepo serve --workers 2` as an operator sees it: `/metrics` sums the requests of every worker
process (prometheus_client's multiprocess mode), and the log has one access line per request with its
request id, as text or as JSON."""

from __future__ import annotations

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import StartServer, worker_pids

pytestmark = pytest.mark.e2e

REQUESTS = 40
ROUTE = "/api/element/{type}/{id}"


def counted_gets(text: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "blockrepo_http_requests_total"
        and sample.labels == {"method": "GET", "route": ROUTE, "status": "200"}
    )


def test_metrics_sum_the_requests_of_every_worker(start_server: StartServer) -> None:
    server = start_server("--workers", "2")
    worker_pids(server, 2)
    auth = ("system", ADMIN_PASSWORD)
    created = httpx.post(f"{server.base_url}/api/element/InformationSystem", json={"name": ["M"]}, auth=auth)
    assert created.status_code == 201, created.text
    element = server.base_url + created.headers["location"]
    for _ in range(REQUESTS):
        # A new connection each time: the kernel hands them to either worker.
        assert httpx.get(element, auth=auth, headers={"Connection": "close"}).status_code == 200
    scrapes = [httpx.get(f"{server.base_url}/metrics", headers={"Connection": "close"}) for _ in range(4)]
    assert all(scrape.status_code == 200 for scrape in scrapes)
    # Whichever worker answers the scrape, it counts the GETs of both.
    assert [counted_gets(scrape.text) for scrape in scrapes] == [REQUESTS] * 4


def test_the_access_log_names_each_request_as_json(start_server: StartServer) -> None:
    server = start_server(env={"BLOCKREPO_LOG_FORMAT": "json"})
    answer = httpx.post(
        f"{server.base_url}/api/element/InformationSystem",
        json={"name": ["Logged"]},
        auth=("system", ADMIN_PASSWORD),
        headers={"X-Request-ID": "op-check-1"},
    )
    assert answer.status_code == 201 and answer.headers["x-request-id"] == "op-check-1"
    server.stop()
    entries = [orjson.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    access = [entry for entry in entries if entry["request_id"] == "op-check-1"]
    assert len(access) == 1, server.log()[-3000:]
    assert access[0]["logger"] == "blockrepo.access"
    assert (access[0]["route"], access[0]["status"], access[0]["user"]) == (
        "/api/element/{type}",
        201,
        "system",
    )
    # uvicorn's own lines come in the same shape.
    assert any(entry["logger"].startswith("uvicorn") for entry in entries)
