"""The team deployment of `deploy/compose.yaml`, started from processes: three `blockrepo serve` instances on
one PostgreSQL and one Redis behind Debian's nginx, which runs the shipped proxy rules (`deploy/proxy.conf`).

Through the proxy, whichever instance answers: a session and its CSRF token work on all three, a metamodel
change made on one is seen by the next request on another, the feed stays gap-free under writers on all
three, and an instance killed -9 under load loses no write that was acknowledged."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis

from tests.conftest import ADMIN_PASSWORD, PG_URL, REDIS_URL
from tests.e2e.conftest import LiveServer, StartServer, child_pids, free_port

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.postgres,
    pytest.mark.skipif(PG_URL is None, reason="needs PostgreSQL (BLOCKREPO_TEST_DATABASE_URL)"),
]

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
ADMIN = ("system", ADMIN_PASSWORD)
SYSTEMS = "/api/element/InformationSystem"
INSTANCES = 3


@dataclass
class Proxy:
    base_url: str
    process: subprocess.Popen[bytes]
    directory: Path


def nginx_config(directory: Path, port: int, upstreams: list[str]) -> str:
    """deploy/nginx-processes.conf for these instances (nginx drops to `nobody` when started as root: it
    stays root here, to write its files in a directory of this user's)."""
    return (
        (DEPLOY / "nginx-processes.conf")
        .read_text()
        .format(
            user="user root;" if os.geteuid() == 0 else "",
            directory=directory,
            port=port,
            proxy_rules=DEPLOY / "proxy.conf",
            servers="\n".join(
                f"        server {address} max_fails=1 fail_timeout=5s;" for address in upstreams
            ),
        )
    )


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.RedisError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: Redis at {REDIS_URL} is required: {exc}")
        pytest.skip(f"Redis at {REDIS_URL} is not reachable: {exc}")
    prefix = f"blockrepo-team:{uuid.uuid4().hex}:"
    yield prefix
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()


@pytest.fixture
def team(
    start_server: StartServer, redis_prefix: str, tmp_path: Path
) -> Iterator[tuple[Proxy, list[LiveServer]]]:
    if not Path(NGINX).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI: nginx is required (.ci/run installs it)")
        pytest.skip("nginx is not installed")
    environment = {
        "BLOCKREPO_REDIS_URL": REDIS_URL,
        "BLOCKREPO_REDIS_KEY_PREFIX": redis_prefix,
        "BLOCKREPO_TRUSTED_PROXIES": "127.0.0.1",
    }
    instances = [start_server(env=environment) for _ in range(INSTANCES)]
    directory = tmp_path / "nginx"
    directory.mkdir()
    port = free_port()
    upstreams = [instance.base_url.removeprefix("http://") for instance in instances]
    config = directory / "nginx.conf"
    config.write_text(nginx_config(directory, port, upstreams))
    with (directory / "nginx.out").open("wb") as output:
        process = subprocess.Popen(
            [NGINX, "-p", str(directory), "-c", str(config), "-g", "daemon off;"],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    proxy = Proxy(f"http://127.0.0.1:{port}", process, directory)
    deadline = time.monotonic() + 20
    while True:
        assert process.poll() is None, (directory / "nginx.out").read_text()
        try:
            if httpx.get(f"{proxy.base_url}/health", timeout=2).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "nginx did not come up"
        time.sleep(0.1)
    try:
        yield proxy, instances
    finally:
        process.terminate()
        process.wait(timeout=10)


def answered_by(response: httpx.Response) -> str:
    return response.headers["x-upstream"].split(",")[-1].strip()


def test_a_session_and_its_csrf_token_work_on_every_instance(team: tuple[Proxy, list[LiveServer]]) -> None:
    proxy, _instances = team
    with httpx.Client(base_url=proxy.base_url, timeout=30) as browser:
        login = browser.post(
            "/j_service_security_check", data={"j_username": "system", "j_password": ADMIN_PASSWORD}
        )
        assert login.status_code in (200, 204, 302), login.text
        token = browser.cookies["XSRF-TOKEN"]
        upstreams: set[str] = set()
        for n in range(3 * INSTANCES):
            created = browser.post(SYSTEMS, json={"name": [f"Session {n}"]}, headers={"X-XSRF-TOKEN": token})
            assert created.status_code == 201, created.text
            upstreams.add(answered_by(created))
            read = browser.get(created.headers["location"])
            assert read.status_code == 200
            upstreams.add(answered_by(read))
        # Round robin: all three answered, and the session held on each.
        assert len(upstreams) == INSTANCES
        forged = browser.post(SYSTEMS, json={"name": ["Forged"]}, headers={"X-XSRF-TOKEN": "not-the-token"})
        assert forged.status_code == 403
        # A logout on one instance ends the session on all of them.
        assert browser.post("/j_service_logout", headers={"X-XSRF-TOKEN": token}).status_code == 204
        for _ in range(INSTANCES):
            assert browser.get("/api/massdata/InformationSystem?limit=1").status_code == 401
    # The proxy's address is trusted: the client's own address and scheme reach the instances.
    hops = httpx.get(f"{proxy.base_url}/ready")
    assert hops.status_code == 200


def test_a_metamodel_change_is_seen_at_once_by_the_other_instances(
    team: tuple[Proxy, list[LiveServer]],
) -> None:
    _proxy, instances = team
    first, *others = instances
    added = httpx.post(
        f"{first.base_url}/api/administration/attributes",
        json={"name": "Hosting", "valueType": "text", "types": ["InformationSystem"]},
        auth=ADMIN,
        timeout=30,
    )
    assert added.status_code == 201, added.text
    for instance in others:
        created = httpx.post(
            f"{instance.base_url}{SYSTEMS}",
            json={"name": [f"On {instance.base_url}"], "Hosting": ["cloud"]},
            auth=ADMIN,
        )
        assert created.status_code == 201, created.text
        assert created.json()["Hosting"] == ["cloud"]


def writer(
    base_url: str, prefix: str, stop: threading.Event, acknowledged: list[int], errors: list[Any]
) -> None:
    with httpx.Client(base_url=base_url, auth=ADMIN, timeout=30) as client:
        n = 0
        while not stop.is_set():
            try:
                response = client.post(SYSTEMS, json={"name": [f"{prefix}-{n}"]})
            except httpx.TransportError as exc:
                errors.append(type(exc).__name__)
                time.sleep(0.05)
                continue
            n += 1
            if response.status_code == 201:
                acknowledged.append(int(response.json()["id"][0]))
            elif response.status_code == 409:
                errors.append(response.json()["code"])
            else:
                errors.append(response.status_code)


def feed(base_url: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    params: dict[str, Any] = {"sinceRevision": 0, "limit": 500}
    with httpx.Client(base_url=base_url, auth=ADMIN, timeout=60) as client:
        while True:
            body = client.get("/api/history", params=params).json()
            seen.extend(body["items"])
            if body["nextCursor"] is None:
                return seen
            params["cursor"] = body["nextCursor"]


def follow(base_url: str, stop: threading.Event, seen: list[int]) -> None:
    """Poll the feed as a client would, from the newest revision it has seen, until told to stop and
    caught up: a revision that commits below one it has already seen would be missed."""
    last = 0
    with httpx.Client(base_url=base_url, auth=ADMIN, timeout=60) as client:
        while True:
            stopping = stop.is_set()
            params: dict[str, Any] = {"sinceRevision": last, "limit": 500}
            while True:
                try:
                    body = client.get("/api/history", params=params).json()
                except (httpx.TransportError, ValueError):
                    time.sleep(0.05)  # an instance the proxy handed the poll to died under it
                    continue
                for item in body["items"]:
                    if item["revision"] != (seen[-1] if seen else None):
                        seen.append(item["revision"])
                    last = item["revision"]
                if body["nextCursor"] is None:
                    break
                params["cursor"] = body["nextCursor"]
            if stopping:
                return
            time.sleep(0.02)


def test_writers_on_all_three_keep_the_feed_gap_free_and_a_killed_instance_loses_no_acknowledged_write(
    team: tuple[Proxy, list[LiveServer]],
) -> None:
    proxy, instances = team
    stop = threading.Event()
    acknowledged: list[int] = []
    errors: list[Any] = []
    # Writers on each instance directly, and writers through the proxy.
    targets = [instance.base_url for instance in instances] + [proxy.base_url] * 3
    threads = [
        threading.Thread(target=writer, args=(url, f"w{i}", stop, acknowledged, errors), daemon=True)
        for i, url in enumerate(targets)
    ]
    followed: list[int] = []
    written = threading.Event()  # every writer has had its last answer: the follower may catch up and end
    follower = threading.Thread(target=follow, args=(proxy.base_url, written, followed), daemon=True)
    for thread in [*threads, follower]:
        thread.start()
    time.sleep(2.0)
    victim = instances[1]
    for pid in [*child_pids(victim.process.pid), victim.process.pid]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    victim.process.wait(timeout=10)
    time.sleep(2.0)  # the proxy's writers go on on the other two
    before_stop = len(acknowledged)
    time.sleep(1.0)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    written.set()
    follower.join(timeout=60)
    assert len(acknowledged) > before_stop, "the proxy's writers stopped when one instance died"
    # What was not acknowledged: the dead instance's own writer could not connect, a write the proxy had
    # handed to it when it died answered 502 (nginx sends no POST twice), and a write that met a
    # concurrent one answered 409 `concurrent_write` (nothing written; send it again). Nothing else.
    assert set(errors) <= {"RemoteProtocolError", "ConnectError", "ReadError", 502, "concurrent_write"}, (
        errors
    )

    survivor = instances[0].base_url
    changesets = feed(proxy.base_url)
    revisions = [item["revision"] for item in changesets]  # a revision may have several changesets
    assert revisions == sorted(revisions), "the feed is out of order"
    # On PostgreSQL a number claimed by a write that rolled back (a 409, the killed instance's write in
    # flight) is never used, so numbers may skip; what the feed promises is that a client polling it from
    # the newest revision it saw, while writes commit out of order, never misses one nor sees one twice.
    assert followed == sorted(set(revisions)), "a client following the feed missed or repeated a revision"
    stored: set[int] = set()
    params: dict[str, Any] = {"limit": 1000, "fields": "id"}
    with httpx.Client(base_url=survivor, auth=ADMIN, timeout=60) as client:
        while True:
            page = client.get("/api/massdata/InformationSystem", params=params)
            assert page.status_code == 200, page.text
            stored.update(item["id"][0] for item in page.json()["items"])
            if page.json()["nextCursor"] is None:
                break
            params["cursor"] = page.json()["nextCursor"]
    lost = set(acknowledged) - stored
    assert not lost, f"acknowledged writes lost: {sorted(lost)[:20]}"
