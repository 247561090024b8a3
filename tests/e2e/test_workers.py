"""`blockrepo serve --workers 2`: sessions live in the shared store (database or Redis), so one cookie
works whichever worker process answers, and a logout ends it in every worker."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import StartServer

pytestmark = pytest.mark.e2e

REQUESTS = 300
WRITES = 50


def test_one_cookie_works_on_every_worker(start_server: StartServer, auth_store: dict[str, str]) -> None:
    env = {f"BLOCKREPO_{name.upper()}": value for name, value in auth_store.items()}
    server = start_server("--workers", "2", env=env)
    base = server.base_url
    created = httpx.post(
        f"{base}/api/element/BusinessProcess",
        json={"name": ["Order handling"]},
        auth=("system", ADMIN_PASSWORD),
    )
    assert created.status_code == 201, created.text
    url = f"{base}/api/element/BusinessProcess/{created.json()['id'][0]}"
    login = httpx.post(
        f"{base}/j_service_security_check", data={"j_username": "system", "j_password": ADMIN_PASSWORD}
    )
    assert login.status_code == 200
    session = {"Cookie": f"JSESSIONID={login.cookies['JSESSIONID']}"}
    token = login.cookies["XSRF-TOKEN"]

    # A new connection for every request, several at a time, so that both workers take their share.
    fresh_connections = httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=30)

    def read(_: int) -> int:
        return fresh_connections.get(url, headers=session).status_code

    def write(n: int) -> int:
        body = {"description": [f"write {n}"]}
        return fresh_connections.put(url, json=body, headers={**session, "X-XSRF-TOKEN": token}).status_code

    with fresh_connections, ThreadPoolExecutor(max_workers=8) as pool:
        reads = list(pool.map(read, range(REQUESTS)))
        writes = list(pool.map(write, range(WRITES)))
        assert reads == [200] * REQUESTS
        assert writes == [200] * WRITES
        assert fresh_connections.get(url, headers=session).json()["revision"] == [1 + WRITES]

        logout = fresh_connections.post(
            f"{base}/j_service_logout", headers={**session, "X-XSRF-TOKEN": token}
        )
        assert logout.status_code == 204
        after_logout = list(pool.map(read, range(REQUESTS // 3)))
        assert after_logout == [401] * (REQUESTS // 3)
