"""The access scenario end to end against a live `blockrepo serve --workers 2`, over real HTTP only: an
administrator models a new part of the landscape, restricts some of it to one role, and the restricted and
unrestricted users see and may write exactly what the rules say. After every administration or metamodel
change, checks run on many new connections, several at a time, until each worker process has answered
several of them (which worker holds a connection is read from /proc, see `everywhere`); every run must
see the change at once.

Cast:
- `system` (Supervisor) sets everything up and sees everything.
- olga, role Operators: reads/creates/updates DataCenter, reads/updates InformationSystem; the only role
  that may read and write the attribute group Operations.
- mark, role Maintainers: reads/updates DataCenter, reads InformationSystem; may read Operations but not
  write it. He isolates the group rule from the type rule: he may update DataCenter elements, so a 403 on
  `Tier` can only come from the group.
- vera, role Viewers: reads DataCenter and InformationSystem, nothing else; Operations is closed to her.
"""

from __future__ import annotations

import base64
import http.client
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer, StartServer, connection_owner, live_workers, log_tail, worker_pids

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads worker processes from Linux /proc"),
]

PASSWORD = "a-long-test-password"
SYSTEM = ("system", ADMIN_PASSWORD)
WORKERS = 2
AT_ONCE = 4  # connections opened at once, so that the kernel hands them to different workers
PER_WORKER = 3  # runs of a check each worker must answer
MAX_ROUNDS = 250


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (
        f"{response.request.method} {response.request.url}: {response.text}"
    )
    return response.json() if response.content else None


# --- every worker process ------------------------------------------------------------------------------


class Connection:
    """One keep-alive HTTP connection to the server, so that all requests of a check go to one worker and
    the worker can be told afterwards; each request sends the Basic credentials of `login`."""

    def __init__(self, server: LiveServer) -> None:
        port = urlsplit(server.base_url).port
        assert port is not None
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(self, method: str, path: str, login: str, body: Any = None) -> tuple[int, Any]:
        password = ADMIN_PASSWORD if login == "system" else PASSWORD
        headers = {"Authorization": "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()}
        payload = None
        if body is not None:
            payload = orjson.dumps(body)
            headers["Content-Type"] = "application/json"
        self.http.request(method, path, body=payload, headers=headers)
        response = self.http.getresponse()
        data = response.read()
        return response.status, (orjson.loads(data) if data else None)

    def get(self, path: str, login: str, status: int = 200) -> Any:
        code, body = self.send("GET", path, login)
        assert code == status, (path, login, code, body)
        return body

    def client_port(self) -> int:
        assert self.http.sock is not None, "the server closed the connection"
        return int(self.http.sock.getsockname()[1])


Check = Callable[[Connection], None]


def everywhere(server: LiveServer, check: Check) -> None:
    """Run `check` (requests and assertions on one connection) on new connections, AT_ONCE at a time,
    until every worker process has answered it PER_WORKER times (at most MAX_ROUNDS rounds); every run
    must pass, whichever worker answers it. The workers are those alive at the end of each round: a
    worker the master replaced (it died or missed a health check on a loaded machine) must answer too."""
    worker_pids(server, WORKERS)  # all started

    def run(_: int) -> int | None:
        connection = Connection(server)
        try:
            check(connection)
            return connection_owner(server, connection.client_port())
        finally:
            connection.http.close()

    answered: Counter[int] = Counter()
    workers: list[int] = []
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        for _ in range(MAX_ROUNDS):
            for owner in pool.map(run, range(AT_ONCE)):  # re-raises a failed assertion
                if owner is not None:
                    answered[owner] += 1
            workers = live_workers(server)
            if len(workers) == WORKERS and all(answered[pid] >= PER_WORKER for pid in workers):
                return
    raise AssertionError(
        f"the checks did not reach every worker {workers}: {dict(answered)}\n{log_tail(server)}"
    )


@pytest.fixture
def server(start_server: StartServer) -> LiveServer:
    # The disabled user's many refused requests count as failed logins; no throttling (429) here.
    return start_server(
        "--workers",
        str(WORKERS),
        env={
            "BLOCKREPO_LOGIN_MAX_FAILURES": "1000000",
            "BLOCKREPO_LOGIN_MAX_FAILURES_PER_ADDRESS": "1000000",
        },
    )


@pytest.fixture
def connect(server: LiveServer) -> Iterator[Callable[[tuple[str, str]], httpx.Client]]:
    """Returns a client for the server that sends the given credentials; every one is closed after."""
    clients: list[httpx.Client] = []

    def client(auth: tuple[str, str]) -> httpx.Client:
        clients.append(httpx.Client(base_url=server.base_url, auth=auth, timeout=30))
        return clients[-1]

    yield client
    for opened in clients:
        opened.close()


# --- the scenario --------------------------------------------------------------------------------------


def test_restricted_group_on_a_new_type_over_http_with_two_workers(
    server: LiveServer, connect: Callable[[tuple[str, str]], httpx.Client]
) -> None:
    admin = connect(SYSTEM)

    def as_user(login: str) -> tuple[str, str]:
        return (login, PASSWORD)

    # --- a new type and a relation type to InformationSystem ---
    ok(admin.post("/api/metamodel/types", json={"name": "DataCenter", "displayName": "Data Center"}), 201)
    everywhere(server, lambda c: c.get("/api/metamodel/types/DataCenter", "system"))
    ok(
        admin.post(
            "/api/metamodel/relationtypes",
            json={
                "source": "DataCenter",
                "sourceEnd": "informationSystems",
                "target": "InformationSystem",
                "targetEnd": "dataCenters",
            },
        ),
        201,
    )

    def has_the_end(c: Connection) -> None:
        ends = c.get("/api/metamodel/types/DataCenter", "system")["relationEnds"]
        assert "informationSystems" in {e["name"] for e in ends}

    everywhere(server, has_the_end)

    # --- roles and users ---
    for name, permissions in (
        ("Operators", {"DataCenter": ["read", "create", "update"], "InformationSystem": ["read", "update"]}),
        ("Maintainers", {"DataCenter": ["read", "update"], "InformationSystem": ["read"]}),
        ("Viewers", {"DataCenter": ["read"], "InformationSystem": ["read"]}),
    ):
        ok(admin.post("/api/administration/roles", json={"name": name, "typePermissions": permissions}), 201)
    user_ids = {}
    for login, role in (("olga", "Operators"), ("mark", "Maintainers"), ("vera", "Viewers")):
        body = {"login": login, "password": PASSWORD, "roles": [role]}
        user_ids[login] = ok(admin.post("/api/administration/users", json=body), 201)["id"]

    def users_exist(c: Connection) -> None:
        for login in ("olga", "mark", "vera"):
            me = c.get("/api/administration/users/current", login)
            assert "read" in me["typePermissions"]["DataCenter"]

    everywhere(server, users_exist)

    # --- an attribute group restricted to Operators (Maintainers may read it), an enum attribute in it ---
    group = ok(
        admin.post(
            "/api/administration/attributegroups",
            json={
                "name": "Operations",
                "permissions": [
                    {"role": "Operators", "read": True, "write": True},
                    {"role": "Maintainers", "read": True, "write": False},
                ],
            },
        ),
        201,
    )

    def group_rule_applies(c: Connection) -> None:
        expected = {
            "olga": {"read": True, "write": True},
            "mark": {"read": True, "write": False},
            "vera": None,
        }
        for login, access in expected.items():
            groups = c.get("/api/administration/users/current", login)["attributeGroups"]
            found = next(
                ({"read": g["read"], "write": g["write"]} for g in groups if g["name"] == "Operations"), None
            )
            assert found == access, (login, groups)

    everywhere(server, group_rule_applies)
    ok(
        admin.post(
            "/api/administration/attributes",
            json={
                "name": "Tier",
                "valueType": "enum",
                "group": "Operations",
                "literals": [{"name": "gold"}, {"name": "silver"}, {"name": "bronze"}],
                "types": ["DataCenter", "InformationSystem"],
                "relationTypes": ["DataCenter_InformationSystem"],
            },
        ),
        201,
    )

    def tier_is_defined(c: Connection) -> None:
        for login, sees in (("system", True), ("olga", True), ("mark", True), ("vera", False)):
            properties = {p["name"] for p in c.get("/api/metamodel/types/DataCenter", login)["properties"]}
            assert ("Tier" in properties) is sees, login

    everywhere(server, tier_is_defined)

    # --- elements are created and related ---
    erp = ok(admin.post("/api/element/InformationSystem", json={"name": ["ERP"], "Tier": ["gold"]}), 201)[
        "id"
    ][0]
    olga = connect(as_user("olga"))
    north = ok(
        olga.post(
            "/api/element/DataCenter",
            json={
                "name": ["DC North"],
                "Tier": ["silver"],
                "informationSystems": [{"id": erp, "attributes": {"Tier": ["bronze"]}}],
            },
        ),
        201,
    )
    north_id = north["id"][0]
    north_path = f"/api/element/DataCenter/{north_id}"
    erp_path = f"/api/element/InformationSystem/{erp}"

    # olga: the group's attribute on both types and on the relation, from both ends; writes it.
    assert north["Tier"] == ["silver"]
    assert north["informationSystems"] == [{"id": erp, "name": "ERP", "attributes": {"Tier": ["bronze"]}}]
    system_seen = ok(olga.get(erp_path))
    assert system_seen["Tier"] == ["gold"]
    assert system_seen["dataCenters"] == [
        {"id": north_id, "name": "DC North", "attributes": {"Tier": ["bronze"]}}
    ]
    assert ok(olga.put(erp_path, json={"Tier": ["silver"]}))["Tier"] == ["silver"]
    assert olga.post("/api/element/InformationSystem", json={"name": ["CRM"]}).status_code == 403
    assert olga.delete(north_path).status_code == 403

    # mark: may update DataCenter and read the group, not write it.
    mark = connect(as_user("mark"))
    assert ok(mark.get(north_path))["Tier"] == ["silver"]
    response = mark.put(north_path, json={"Tier": ["gold"]})
    assert response.status_code == 403 and response.json()["code"] == "forbidden", response.text
    relation = {"informationSystems": [{"id": erp, "attributes": {"Tier": ["gold"]}}]}
    assert mark.put(north_path, json=relation).status_code == 403
    answer = ok(mark.put(north_path, json={"description": ["maintained by mark"]}))
    assert answer["description"] == ["maintained by mark"] and answer["Tier"] == ["silver"]
    assert {p["name"]: p["readOnly"] for p in ok(mark.get("/api/metamodel/types/DataCenter"))["properties"]}[
        "Tier"
    ] is True

    # vera: reads both types, not the group; writes nothing.
    vera = connect(as_user("vera"))
    seen = vera.get(north_path)
    assert "Tier" not in ok(seen)
    assert ok(seen)["informationSystems"] == [{"id": erp, "name": "ERP", "attributes": {}}]
    seen_erp = vera.get(erp_path)
    assert "Tier" not in ok(seen_erp)
    for text in (seen.text, seen_erp.text, vera.get("/api/metamodel").text):
        for hidden in ("gold", "silver", "bronze", "Tier", "Operations"):
            assert f'"{hidden}"' not in text, hidden
    assert vera.put(north_path, json={"description": ["mine"]}).status_code == 403
    assert vera.put(north_path, json={"Tier": ["gold"]}).status_code == 403

    # the supervisor sees everything, and what each write left.
    body = ok(admin.get(north_path))
    assert body["Tier"] == ["silver"] and body["description"] == ["maintained by mark"]
    assert body["informationSystems"][0]["attributes"] == {"Tier": ["bronze"]}
    assert body["lastModificationUser"] == ["mark"]

    # --- opening the group to Viewers (read) reaches every worker at once ---
    ok(
        admin.put(
            f"/api/administration/attributegroups/{group['id']}",
            json={
                "permissions": [
                    {"role": "Operators", "read": True, "write": True},
                    {"role": "Maintainers", "read": True, "write": False},
                    {"role": "Viewers", "read": True, "write": False},
                ]
            },
        )
    )

    def vera_reads_tier(c: Connection) -> None:
        assert c.get(north_path, "vera")["Tier"] == ["silver"]

    everywhere(server, vera_reads_tier)

    # --- giving Maintainers write on the group: mark's writes of Tier succeed in every worker ---
    ok(
        admin.put(
            f"/api/administration/attributegroups/{group['id']}",
            json={
                "permissions": [
                    {"role": "Operators", "read": True, "write": True},
                    {"role": "Maintainers", "read": True, "write": True},
                    {"role": "Viewers", "read": True, "write": False},
                ]
            },
        )
    )

    def mark_writes_tier(c: Connection) -> None:
        status, answer = c.send("PUT", north_path, "mark", {"Tier": ["gold"]})
        assert status == 200 and answer["Tier"] == ["gold"], (status, answer)

    everywhere(server, mark_writes_tier)
    assert ok(admin.get(north_path))["Tier"] == ["gold"]

    # --- a metamodel edit: the new display name everywhere ---
    ok(admin.put("/api/metamodel/types/DataCenter", json={"displayName": "Data Centre"}))

    def renamed(c: Connection) -> None:
        assert c.get("/api/metamodel/types/DataCenter", "vera")["displayName"] == "Data Centre"

    everywhere(server, renamed)

    # --- taking DataCenter away from Viewers: 403 for vera in every worker ---
    roles = ok(admin.get("/api/administration/roles"))
    viewers = next(r for r in roles if r["name"] == "Viewers")
    ok(
        admin.put(
            f"/api/administration/roles/{viewers['id']}",
            json={"typePermissions": {"InformationSystem": ["read"]}},
        )
    )

    def vera_lost_datacenter(c: Connection) -> None:
        c.get(north_path, "vera", status=403)
        assert "dataCenters" not in c.get(erp_path, "vera")

    everywhere(server, vera_lost_datacenter)

    # --- disabling olga locks her out in every worker at once ---
    ok(admin.put(f"/api/administration/users/{user_ids['olga']}", json={"enabled": False}))
    everywhere(server, lambda c: c.get(north_path, "olga", status=401))
