"""A live `blockrepo serve`: the iteraQL that used to kill a worker (5,000 navigation steps, SIGSEGV in the
interpreter) is a 400 for an ordinary editor with MASSDATA, and the same worker goes on answering."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from blockrepo.app import create_app
from tests.conftest import make_settings
from tests.e2e.conftest import StartServer
from tests.helpers import create_role, create_user

pytestmark = pytest.mark.e2e

EDITOR, PASSWORD = "erika", "erika-password-1"
DEEP = "BusinessProcess" + "/children" * 5000 + ";"


def add_editor(database_url: str) -> None:
    """An editor with MASSDATA and no supervisor rights, written before the server starts."""
    app: FastAPI = create_app(make_settings(database_url))
    try:
        readable = {t: ["read", "create", "update"] for t in ("BusinessProcess", "InformationSystem")}
        create_role(app, "editor", types=readable, functional=["MASSDATA"])
        create_user(app, EDITOR, PASSWORD, roles=["editor"])
    finally:
        app.state.services.dispose()


@pytest.mark.parametrize(
    ("query", "code", "env"),
    [
        (DEEP, "query_too_long", {}),
        # With the length limit raised far beyond the query, the step limit answers on its own.
        (DEEP, "query_too_many_steps", {"BLOCKREPO_QUERY_MAX_LENGTH": "1000000"}),
        ("InformationSystem[" + "!" * 1000 + '@name = "x"];', "query_too_deep", {}),
    ],
)
def test_a_deep_query_is_refused_and_the_worker_keeps_answering(
    start_server: StartServer, database_url: str, query: str, code: str, env: dict[str, str]
) -> None:
    add_editor(database_url)
    server = start_server(env=env)
    with httpx.Client(base_url=server.base_url, auth=(EDITOR, PASSWORD), timeout=60) as editor:
        created = editor.post("/api/element/BusinessProcess", json={"name": ["Sales"]})
        assert created.status_code == 201, created.text
        for _ in range(3):
            response = editor.post("/api/massdata/query", json={"query": query})
            assert response.status_code == 400, response.text
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.json()["code"] == code
        assert server.process.poll() is None, server.log()
        answer = editor.post("/api/massdata/query", json={"query": "BusinessProcess[@name = 'Sales'];"})
        assert answer.status_code == 200, answer.text
        assert [item["name"] for item in answer.json()["result"]] == [["Sales"]]
    assert "Traceback" not in server.log()
