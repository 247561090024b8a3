"""The access scenario end to end against a live `blockrepo serve --workers 2`, over real HTTP only: an
administrator models a new part of the landscape, restricts some of it to one role, and the restricted and
unrestricted users see and may write exactly what the rules say. After every administration or metamodel
change, many requests on fresh connections (so that both worker processes answer; see `everywhere`) must
all see the change at once.

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

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import LiveServer, StartServer

pytestmark = pytest.mark.e2e

PASSWORD = "a-long-test-password"
SYSTEM = ("system", ADMIN_PASSWORD)
REQUESTS = 16  # per round, 8 at a time, each on a new connection
MAX_ROUNDS = 25  # until every worker has answered a share of them
# CPU time (in clock ticks, 10 ms) a worker must spend during the requests to count as having answered
# some: an idle worker spends about one tick in a few seconds, answering these requests several.
MIN_TICKS = 3
Check = Callable[[httpx.Client], None]


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, (
        f"{response.request.method} {response.request.url}: {response.text}"
    )
    return response.json() if response.content else None


# --- every worker process ------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        # The fields after the command name (which may hold spaces) start with state, then the parent id.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"resource_tracker" not in cmdline:
            found.append(int(entry.name))
    return sorted(found)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


class Workers:
    """The worker processes of a live server, told apart by the CPU time they spend: an idle uvicorn
    worker spends none, so a worker whose CPU time grew while the requests ran answered some of them."""

    def __init__(self, server: LiveServer, expected: int) -> None:
        self.pids: list[int] = []
        deadline = time.monotonic() + 30
        while len(self.pids) != expected:
            assert time.monotonic() < deadline, f"expected {expected} workers, found {self.pids}"
            time.sleep(0.1)
            self.pids = _children(server.process.pid)

    def ticks(self) -> dict[int, int]:
        return {pid: _cpu_ticks(pid) for pid in self.pids}


@pytest.fixture
def server(start_server: StartServer) -> LiveServer:
    # The disabled user's many refused requests count as failed logins; no throttling (429) here.
    return start_server("--workers", "2", env={"BLOCKREPO_LOGIN_MAX_FAILURES": "1000000"})


@pytest.fixture
def workers(server: LiveServer) -> Workers:
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc to tell the worker processes apart")
    return Workers(server, expected=2)


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


@pytest.fixture
def fresh() -> Iterator[httpx.Client]:
    """A client that opens a new connection for every request."""
    with httpx.Client(limits=httpx.Limits(max_keepalive_connections=0), timeout=30) as client:
        yield client


def everywhere(workers: Workers, fresh: httpx.Client, check: Check) -> None:
    """Run `check` (requests and assertions) many times on new connections, several at a time, until every
    worker process has answered some of them: each run must pass, whichever process answers it."""
    before = workers.ticks()
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(MAX_ROUNDS):
            for future in [pool.submit(check, fresh) for _ in range(REQUESTS)]:
                future.result()  # re-raises a failed assertion
            now = workers.ticks()
            if all(now[pid] - before[pid] >= MIN_TICKS for pid in workers.pids):
                return
    raise AssertionError(f"the requests did not reach every worker: {before} -> {workers.ticks()}")


# --- the scenario --------------------------------------------------------------------------------------


def test_restricted_group_on_a_new_type_over_http_with_two_workers(
    server: LiveServer,
    workers: Workers,
    fresh: httpx.Client,
    connect: Callable[[tuple[str, str]], httpx.Client],
) -> None:
    base = server.base_url
    admin = connect(SYSTEM)

    def as_user(login: str) -> tuple[str, str]:
        return (login, PASSWORD)

    def get(client: httpx.Client, path: str, login: str, status: int = 200) -> Any:
        auth = SYSTEM if login == "system" else as_user(login)
        return ok(client.get(f"{base}{path}", auth=auth), status)

    # --- a new type and a relation type to InformationSystem ---
    ok(admin.post("/api/metamodel/types", json={"name": "DataCenter", "displayName": "Data Center"}), 201)
    everywhere(workers, fresh, lambda c: get(c, "/api/metamodel/types/DataCenter", "system"))
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

    def has_the_end(c: httpx.Client) -> None:
        ends = get(c, "/api/metamodel/types/DataCenter", "system")["relationEnds"]
        assert "informationSystems" in {e["name"] for e in ends}

    everywhere(workers, fresh, has_the_end)

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

    def users_exist(c: httpx.Client) -> None:
        for login in ("olga", "mark", "vera"):
            me = get(c, "/api/administration/users/current", login)
            assert "read" in me["typePermissions"]["DataCenter"]

    everywhere(workers, fresh, users_exist)

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

    def group_rule_applies(c: httpx.Client) -> None:
        expected = {
            "olga": {"read": True, "write": True},
            "mark": {"read": True, "write": False},
            "vera": None,
        }
        for login, access in expected.items():
            groups = get(c, "/api/administration/users/current", login)["attributeGroups"]
            found = next(
                ({"read": g["read"], "write": g["write"]} for g in groups if g["name"] == "Operations"), None
            )
            assert found == access, (login, groups)

    everywhere(workers, fresh, group_rule_applies)
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

    def tier_is_defined(c: httpx.Client) -> None:
        for login, sees in (("system", True), ("olga", True), ("mark", True), ("vera", False)):
            properties = {p["name"] for p in get(c, "/api/metamodel/types/DataCenter", login)["properties"]}
            assert ("Tier" in properties) is sees, login

    everywhere(workers, fresh, tier_is_defined)

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
        assert not {"gold", "silver", "bronze", "Tier", "Operations"} & set(text.replace('"', " ").split())
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

    def vera_reads_tier(c: httpx.Client) -> None:
        assert get(c, north_path, "vera")["Tier"] == ["silver"]

    everywhere(workers, fresh, vera_reads_tier)

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

    def mark_writes_tier(c: httpx.Client) -> None:
        response = c.put(f"{base}{north_path}", json={"Tier": ["gold"]}, auth=as_user("mark"))
        assert response.status_code == 200, response.text

    everywhere(workers, fresh, mark_writes_tier)
    assert ok(admin.get(north_path))["Tier"] == ["gold"]

    # --- a metamodel edit: the new display name everywhere ---
    ok(admin.put("/api/metamodel/types/DataCenter", json={"displayName": "Data Centre"}))

    def renamed(c: httpx.Client) -> None:
        assert get(c, "/api/metamodel/types/DataCenter", "vera")["displayName"] == "Data Centre"

    everywhere(workers, fresh, renamed)

    # --- taking DataCenter away from Viewers: 403 for vera in every worker ---
    roles = ok(admin.get("/api/administration/roles"))
    viewers = next(r for r in roles if r["name"] == "Viewers")
    ok(
        admin.put(
            f"/api/administration/roles/{viewers['id']}",
            json={"typePermissions": {"InformationSystem": ["read"]}},
        )
    )

    def vera_lost_datacenter(c: httpx.Client) -> None:
        get(c, north_path, "vera", status=403)
        assert "dataCenters" not in get(c, erp_path, "vera")

    everywhere(workers, fresh, vera_lost_datacenter)

    # --- disabling olga locks her out in every worker at once ---
    ok(admin.put(f"/api/administration/users/{user_ids['olga']}", json={"enabled": False}))
    everywhere(workers, fresh, lambda c: get(c, north_path, "olga", status=401))
