"""The process's Prometheus metrics (prometheus_client) and their exposition, summed over worker processes.

With several workers `blockrepo serve` points `PROMETHEUS_MULTIPROC_DIR` at a fresh directory before they
start: each worker then keeps its figures in files there, and whichever worker answers `/metrics` reads
them all (the library's multiprocess mode). Figures read from the database at scrape time (the webhook
backlog) come from the collector the caller passes to `exposition`.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

MULTIPROCESS_DIRECTORY = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

# Seconds: a GET by id takes under a millisecond, an import or a slow query seconds.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUESTS = Counter(
    "blockrepo_http_requests",
    "HTTP requests answered, by method, route template and status",
    ["method", "route", "status"],
)
REQUEST_SECONDS = Histogram(
    "blockrepo_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer, by method and route template",
    ["method", "route"],
    buckets=_LATENCY_BUCKETS,
)
LANE_ANSWERS = Counter(
    "blockrepo_lane_answers",
    "Requests answered by a fast lane without FastAPI's routing, by lane (read: GET by id; write: PUT/PATCH)",
    ["lane"],
)
READ_LANE_ANSWERS = LANE_ANSWERS.labels("read")
WRITE_LANE_ANSWERS = LANE_ANSWERS.labels("write")
WRITES_WAITING = Gauge(
    "blockrepo_writes_waiting",
    "Writes waiting for their turn (SQLite's write queue) and the write gate",
    multiprocess_mode="livesum",
)
WRITE_WAIT_SECONDS = Histogram(
    "blockrepo_write_wait_seconds",
    "Time a write waited for its turn and the write gate before its first statement",
    buckets=_LATENCY_BUCKETS,
)
CONNECTIONS_IN_USE = Gauge(
    "blockrepo_db_connections_in_use",
    "Database connections taken from this service's pools, by pool",
    ["pool"],
    multiprocess_mode="livesum",
)
LOGINS = Counter(
    "blockrepo_logins",
    "Attempts to authenticate with a password, by outcome (succeeded, failed, throttled)",
    ["outcome"],
)
SESSIONS_STARTED = Counter(
    "blockrepo_sessions_started", "Sessions started (a login, or a Basic request given a session cookie)"
)


# Methods counted under their own name; any other a client invents is counted as OTHER, so that no
# client can add labels at will.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# The labelled children by (method, route, status): looked up once, not on every request (a few
# microseconds each on the hot path). Routes are templates and statuses few: the dictionary stays small.
_children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}


def observe_request(method: str, route: str, status: int, seconds: float) -> None:
    if method not in _METHODS:
        method = "OTHER"
    key = (method, route, status)
    children = _children.get(key)
    if children is None:
        children = (
            REQUESTS.labels(method, route, str(status)),
            REQUEST_SECONDS.labels(method, route),
        )
        _children[key] = children
    children[0].inc()
    children[1].observe(seconds)


def multiprocess_mode() -> bool:
    return bool(os.environ.get(MULTIPROCESS_DIRECTORY))


def exposition(scraped: Collector | None = None) -> bytes:
    """The text format of every metric of this process, or of all worker processes in multiprocess
    mode, followed by what `scraped` reads now."""
    if multiprocess_mode():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    if scraped is not None:
        # Not described up front: registering it must not run its queries.
        now = CollectorRegistry(auto_describe=False)
        now.register(scraped)
        text += generate_latest(now)
    return text


def worker_stopped(pid: int) -> None:
    """Forget a stopped worker's live gauges (multiprocess mode; its counters stay in the sums)."""
    if multiprocess_mode():
        multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
