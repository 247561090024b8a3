"""The first start of `blockrepo serve` on a database file that does not exist yet, without
BLOCKREPO_ADMIN_PASSWORD: it generates the password of `system`, prints it once, and a restart on the same
file neither prints it again nor changes it."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import StartServer

pytestmark = pytest.mark.e2e

GENERATED = re.compile(r"generated password:\s*(\S+)")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
CURRENT = "/api/administration/users/current"


def test_first_start_prints_the_generated_password_once(start_server: StartServer, tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    assert not path.exists()
    database = f"sqlite:///{path}"

    # Production hashing settings: the password is hashed as an operator's would be.
    first = start_server(database=database, admin_password=None, cheap_hashing=False)
    log = ANSI.sub("", first.log())
    [password] = GENERATED.findall(log)
    assert log.count(password) == 1
    assert "shown only this once" in log
    with httpx.Client(base_url=first.base_url, timeout=30) as http:
        me = http.get(CURRENT, auth=("system", password))
        assert me.status_code == 200, me.text
        assert me.json()["login"] == "system"
        assert http.get(CURRENT, auth=("system", password + "x")).status_code == 401
        created = http.post(
            "/api/element/BusinessProcess", json={"name": ["Order handling"]}, auth=("system", password)
        )
        assert created.status_code == 201, created.text
        element = created.headers["location"]
    first.stop()
    assert first.process.returncode is not None

    second = start_server(database=database, admin_password=None, cheap_hashing=False)
    log = ANSI.sub("", second.log())
    assert GENERATED.findall(log) == []
    assert password not in log
    with httpx.Client(base_url=second.base_url, timeout=30) as http:
        me = http.get(CURRENT, auth=("system", password))
        assert me.status_code == 200, me.text
        assert me.json()["login"] == "system"
        kept = http.get(element, auth=("system", password))
        assert kept.status_code == 200
        assert kept.json()["name"] == ["Order handling"]
