"""`blockrepo serve --demo` (what `make run` starts): the printed request returns a demo business process,
a PUT renames it, and a GET shows the new name and revision."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.conftest import ADMIN_PASSWORD
from tests.e2e.conftest import StartServer

pytestmark = pytest.mark.e2e

DEMO_PASSWORD = "demo-password-e2e"


def test_demo_process_is_served_and_renamed(start_server: StartServer) -> None:
    server = start_server("--demo", env={"BLOCKREPO_DEMO_PASSWORD": DEMO_PASSWORD})
    log = server.log()
    assert re.search(r"Loaded the demo landscape: \d+ elements of 14 types", log), log
    printed = re.search(r"Try: curl -u system:\$PW (http://\S+)", log)
    assert printed, log
    url = printed.group(1)
    assert url.startswith(f"{server.base_url}/api/element/BusinessProcess/")

    with httpx.Client(auth=("system", ADMIN_PASSWORD), timeout=30) as client:
        before = client.get(url)
        assert before.status_code == 200, before.text
        process = before.json()
        assert process["type"] == ["BusinessProcess"]
        assert process["name"] == ["Order handling"]
        assert [p["name"] for p in process["parent"]] == ["Order to cash"]
        revision = process["revision"][0]
        assert before.headers["etag"] == f'W/"{revision}"'

        renamed = client.put(url, json={"name": ["Order management"]})
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["name"] == ["Order management"]
        assert renamed.json()["revision"] == [revision + 1]

        after = client.get(url)
        assert after.json()["name"] == ["Order management"]
        assert after.json()["revision"] == [revision + 1]
        assert after.headers["etag"] == f'W/"{revision + 1}"'

    with httpx.Client(auth=("anna", DEMO_PASSWORD), timeout=30) as anna:
        assert anna.get(url).status_code == 200
        assert anna.put(url, json={"name": ["Mine now"]}).status_code == 403

    # A second start finds elements and leaves the repository alone.
    again = start_server("--demo")
    assert "demo landscape not loaded: the repository already has elements" in again.log()
    with httpx.Client(auth=("system", ADMIN_PASSWORD), timeout=30) as client:
        assert client.get(url.replace(server.base_url, again.base_url)).json()["name"] == ["Order management"]
