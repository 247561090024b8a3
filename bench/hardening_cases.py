"""Status codes of the hardening cases (login throttling, login CSRF, NUL characters), in-process, so that
a run on one commit and a run on another give the before/after table.

    .venv/bin/python bench/hardening_cases.py [--database postgresql://postgres@127.0.0.1:5432/postgres]

Each group of cases gets a fresh repository (a SQLite file, or a new database on the given PostgreSQL
server, dropped afterwards), default settings and cheap password hashing. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.auth.passwords import Passwords
from blockrepo.bootstrap import initialize
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine

ADMIN = ("system", "bench-admin-password")
ANNA = ("anna", "anna-password-1")
NUL = "\x00"
PROTECTED = "/api/administration/users/current"
Case = tuple[str, int]  # each status is taken when the case is listed, in order


@contextmanager
def repository(server_url: str | None) -> Iterator[Callable[[str], TestClient]]:
    """A fresh repository; yields a factory of clients that come from a given address."""
    with tempfile.TemporaryDirectory() as directory:
        if server_url:
            name = f"hardening_{uuid.uuid4().hex[:12]}"
            admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
            with admin.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
            url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
        else:
            url = f"sqlite:///{Path(directory) / 'repository.db'}"
        settings = Settings(
            database_url=url,
            admin_password=ADMIN[1],
            argon2_time_cost=1,
            argon2_memory_cost=8,
            argon2_parallelism=1,
        )
        engine = build_engine(url)
        initialize(engine, settings, Passwords(settings))
        engine.dispose()
        app = create_app(settings)

        def client(address: str) -> TestClient:
            return TestClient(
                app, base_url="http://127.0.0.1", client=(address, 40000), raise_server_exceptions=False
            )

        try:
            response = client("127.0.0.1").post(
                "/api/administration/users", json={"login": ANNA[0], "password": ANNA[1]}, auth=ADMIN
            )
            assert response.status_code == 201, response.text
            yield client
        finally:
            app.state.services.dispose()
            if server_url:
                with admin.connect() as connection:
                    connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                admin.dispose()


def form(client: TestClient, login: str, password: str, headers: dict[str, str] | None = None) -> int:
    data = {"j_username": login, "j_password": password}
    return int(client.post("/j_service_security_check", data=data, headers=headers or {}).status_code)


def session_cookie(client: TestClient) -> str:
    response = client.post("/j_service_security_check", data={"j_username": ADMIN[0], "j_password": ADMIN[1]})
    return f"JSESSIONID={response.cookies['JSESSIONID']}"


def throttling(connect: Callable[[str], TestClient]) -> list[Case]:
    attacker, other_attacker = "203.0.113.66", "203.0.113.67"
    office, elsewhere = "192.0.2.10", "198.51.100.20"
    basic_office = connect(office)
    cached = basic_office.get(PROTECTED, auth=ADMIN).status_code  # verified: cached from the office
    cookie = session_cookie(connect(elsewhere))
    office_cookie = session_cookie(connect(office))
    for _ in range(10):
        form(connect(attacker), "guess", "wrong")
    cases: list[Case] = [
        ("Basic from the office before any attack", cached),
        ("10 failures for 'guess' from X; system's password from X", form(connect(attacker), *ADMIN)),
    ]
    for n in range(10):
        form(connect(f"10.9.0.{n}"), "system", "wrong")
    cases.append(
        (
            "10 failures for system over 10 addresses; system from a fresh address",
            form(connect("198.51.100.99"), *ADMIN),
        )
    )
    for address in (other_attacker, office):
        for _ in range(10):
            form(connect(address), "system", "wrong")
    cases += [
        ("10 failures for system from Y; system's password from Y", form(connect(other_attacker), *ADMIN)),
        ("... anna's password from Y", form(connect(other_attacker), *ANNA)),
        (
            "... session cookie from elsewhere",
            connect(elsewhere).get(PROTECTED, headers={"Cookie": cookie}).status_code,
        ),
        (
            "10 failures for system from the office; its cached Basic credentials there",
            basic_office.get(PROTECTED, auth=ADMIN).status_code,
        ),
        (
            "... session cookie + Basic of the same user from the office",
            connect(office).get(PROTECTED, headers={"Cookie": office_cookie}, auth=ADMIN).status_code,
        ),
        (
            "... form login there with the password verified from there before",
            form(connect(office), *ADMIN),
        ),
        ("... a wrong password there", form(connect(office), "system", "wrong")),
    ]
    return cases


def address_limit(connect: Callable[[str], TestClient]) -> list[Case]:
    attacker = "203.0.113.77"
    for n in range(100):
        form(connect(attacker), f"guess{n % 50}", "wrong")
    return [
        ("100 failures from X over 50 accounts; system from X", form(connect(attacker), *ADMIN)),
        ("... system from another address", form(connect("198.51.100.30"), *ADMIN)),
    ]


def login_csrf(connect: Callable[[str], TestClient]) -> list[Case]:
    web = connect("192.0.2.44")
    return [
        (
            "form login, Origin: https://evil.example",
            form(web, *ADMIN, {"Origin": "https://evil.example"}),
        ),
        (
            "form login, Referer: https://evil.example/x",
            form(web, *ADMIN, {"Referer": "https://evil.example/x"}),
        ),
        ("form login, Origin: null", form(web, *ADMIN, {"Origin": "null"})),
        ("form login, neither header (curl)", form(web, *ADMIN)),
        (
            "form login, Origin: http://127.0.0.1 (same origin)",
            form(web, *ADMIN, {"Origin": "http://127.0.0.1"}),
        ),
    ]


def nul_characters(connect: Callable[[str], TestClient]) -> list[Case]:
    web = connect("192.0.2.55")
    created = web.post("/api/element/BusinessProcess", json={"name": ["Sales"]}, auth=ADMIN)
    element = f"/api/element/BusinessProcess/{created.json()['id'][0]}"

    def send(method: str, path: str, body: object = None) -> int:
        return int(web.request(method, path, json=body, auth=ADMIN).status_code)

    def basic(login: str, password: str) -> int:
        return int(web.get(PROTECTED, auth=(login, password)).status_code)

    return [
        ("form login j_username=anna%00", form(web, "anna" + NUL, ANNA[1])),
        ("form login j_password with NUL", form(web, "anna", ANNA[1] + NUL)),
        ("Basic user name with NUL", basic("anna" + NUL, ANNA[1])),
        ("Basic password with NUL", basic("anna", ANNA[1] + NUL)),
        (
            "user firstName",
            send(
                "POST",
                "/api/administration/users",
                {"login": "eve", "firstName": f"E{NUL}", "password": "pw-123456"},
            ),
        ),
        (
            "user login",
            send("POST", "/api/administration/users", {"login": f"eve{NUL}", "password": "pw-123456"}),
        ),
        ("role name", send("POST", "/api/administration/roles", {"name": f"Auditors{NUL}"})),
        ("attribute group name", send("POST", "/api/administration/attributegroups", {"name": f"G{NUL}"})),
        (
            "attribute name",
            send("POST", "/api/administration/attributes", {"name": f"Risk{NUL}", "valueType": "text"}),
        ),
        (
            "enum literal",
            send(
                "POST",
                "/api/administration/attributes",
                {"name": "Risk", "valueType": "enum", "literals": [{"name": f"l{NUL}"}]},
            ),
        ),
        ("metamodel type name", send("POST", "/api/metamodel/types", {"name": f"Data{NUL}Center"})),
        (
            "metamodel displayName (PUT)",
            send("PUT", "/api/metamodel/types/Project", {"displayName": f"P{NUL}"}),
        ),
        ("element name (POST)", send("POST", "/api/element/BusinessProcess", {"name": [f"Order{NUL}"]})),
        (
            "element key (POST)",
            send("POST", "/api/element/BusinessProcess", {"name": ["Order"], f"d{NUL}": ["x"]}),
        ),
        ("element description (PATCH)", send("PATCH", element, {"description": [f"a{NUL}b"]})),
        ("element parent by name (PUT)", send("PUT", element, {"parent": [{"name": f"S{NUL}"}]})),
        (
            "bulk element name",
            send("POST", "/api/massdata/BusinessProcess", {"elements": [{"name": [f"b{NUL}"]}]}),
        ),
        ("type in path (%00)", send("GET", "/api/element/Business%00Process/1")),
        ("asOf=%00", send("GET", f"{element}?asOf=%00")),
        ("metamodel type in path (%00)", send("GET", "/api/metamodel/types/Pro%00ject")),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", help="a PostgreSQL server URL (a database is created per group)")
    args = parser.parse_args()
    logging.getLogger("blockrepo").setLevel(logging.ERROR)  # the table only, not each failed login
    table = Table(title=f"hardening cases on {'PostgreSQL' if args.database else 'SQLite'}")
    table.add_column("group")
    table.add_column("case")
    table.add_column("status", justify="right")
    groups = {
        "throttling": throttling,
        "address limit": address_limit,
        "login CSRF": login_csrf,
        "NUL": nul_characters,
    }
    for group, build in groups.items():
        with repository(args.database) as connect:
            for name, status in build(connect):
                table.add_row(group, name, str(status))
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
