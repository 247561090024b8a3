"""API.md rule 1.6 against a live `blockrepo serve --workers 2`: Basic credentials cached by both worker
processes (on the GET lane and on the general path) stop working on both from the next request on when
their account is deleted, disabled or given a new password, and a deleted account's credentials never act
as the account created after it (the audit's mallory/carol scenario)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer, StartServer
from tests.e2e.test_access_scenario_live import PASSWORD, WORKERS, Connection, everywhere, ok

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads worker processes from Linux /proc"),
]

USERS = "/api/administration/users"
CURRENT = "/api/administration/users/current"


@pytest.fixture
def server(start_server: StartServer) -> LiveServer:
    # The refused credentials below count as failed logins; no throttling (429) here.
    return start_server(
        "--workers",
        str(WORKERS),
        env={
            "BLOCKREPO_LOGIN_MAX_FAILURES": "1000000",
            "BLOCKREPO_LOGIN_MAX_FAILURES_PER_ADDRESS": "1000000",
            # Bursts of credentials no worker has cached must be answered 401, not 503: the bound on
            # concurrent password hashing is not what this test is about.
            "BLOCKREPO_PASSWORD_HASH_CONCURRENCY": "64",
        },
    )


def answers(status: int, logins: tuple[str, ...], paths: tuple[str, ...]) -> Callable[[Connection], None]:
    """A check: each login's Basic credentials (PASSWORD), twice per path on one connection (the second
    time from the worker's cache), get `status`."""

    def check(connection: Connection) -> None:
        for login in logins:
            for path in paths:
                for _ in range(2):
                    connection.get(path, login, status)

    return check


def test_credentials_cached_on_both_workers_stop_at_once_on_both(server: LiveServer) -> None:
    with httpx.Client(base_url=server.base_url, auth=("system", ADMIN_PASSWORD), timeout=30) as admin:
        role = {"name": "Readers", "typePermissions": {"BusinessProcess": ["read"]}}
        ok(admin.post("/api/administration/roles", json=role), 201)
        element = ok(admin.post("/api/element/BusinessProcess", json={"name": ["Order handling"]}), 201)
        paths = (f"/api/element/BusinessProcess/{element['id'][0]}", CURRENT)
        # mallory last: the newest user, whose id SQLite without AUTOINCREMENT handed out again.
        logins = ("dora", "paul", "mallory")
        ids = {
            login: ok(
                admin.post(USERS, json={"login": login, "password": PASSWORD, "roles": ["Readers"]}), 201
            )["id"]
            for login in logins
        }
        everywhere(server, answers(200, logins, paths))

        ok(admin.put(f"{USERS}/{ids['dora']}", json={"enabled": False}))
        ok(admin.put(f"{USERS}/{ids['paul']}", json={"password": "paul-has-a-new-password"}))
        ok(admin.delete(f"{USERS}/{ids['mallory']}"), 204)
        carol = {"login": "carol", "password": "carol-is-the-new-supervisor", "roles": ["Supervisor"]}
        carol_id = ok(admin.post(USERS, json=carol), 201)["id"]
        everywhere(server, answers(401, logins, paths))
        assert carol_id not in ids.values()
