"""The element write hot path (issue 16): what a PUT of one attribute with a session costs in SQL statements,
whatever the element holds, and that the answer it gives without reading the element again is the element
as it now stands."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.auth_support import bare_client, logged_in, session_headers
from tests.api.test_element_hot_path import rich_and_bare
from tests.helpers import count_queries, create_attribute, engine_of


def what(statement: str) -> str:
    """A statement's verb and the first table it names: `SELECT element`, `UPDATE repository_state`."""
    if statement.startswith("BEGIN; "):  # a statement sent with the BEGIN as one simple query
        return "BEGIN; " + what(statement.removeprefix("BEGIN; "))
    words = statement.replace('"', "").split()
    verb = words[0]
    if verb == "SELECT":
        depth = 0  # the statement's own FROM, not a subquery's in its columns
        for index, word in enumerate(words):
            if word == "FROM" and depth == 0:
                return f"SELECT {words[index + 1]}"
            depth += word.count("(") - word.count(")")
        # A function's call without FROM names the function: `SELECT pg_advisory_xact_lock_shared`.
        return f"SELECT {words[1].split('(')[0]}"
    if verb in ("INSERT", "DELETE"):
        return f"{verb} {words[2]}"
    if verb == "UPDATE":
        return f"UPDATE {words[1]}"
    return " ".join(words[:2])  # BEGIN IMMEDIATE


def test_a_put_of_one_attribute_runs_a_fixed_number_of_statements(app: FastAPI, client: TestClient) -> None:
    """A PUT of one attribute with a session cookie runs, whatever the element holds:

    - the session with its user's state;
    - the write lock: on SQLite the write session's BEGIN IMMEDIATE, on PostgreSQL the write gate, shared
      (element writes run side by side there), sent with the BEGIN as one simple query;
    - the acting user with the repository's revisions (the cached metamodel and rights are keyed by them);
    - the element, locked, with its parent's name, then its children, values, relations as source and as
      target and the relations' values (on PostgreSQL these five in one statement, where each round trip
      costs the worker more than the read): read once, to check If-Match, plan the write, record history
      and answer (nothing is read again after the write);
    - the element row's new revision and stamp, the attribute's old values deleted, its new ones inserted
      (on PostgreSQL one statement);
    - the next revision, its row and the element's change row (history): on SQLite the counter of
      `repository_state`, the revision's row and the change row, on PostgreSQL one INSERT that takes a
      number from the sequence, claims it and writes the change row with it.

    Nothing else is written (the session's idle time stamp is written at most every touch interval)."""
    rich, bare = rich_and_bare(app, client)
    create_attribute(app, "Note", "text", types=["BusinessProcess"])
    web = bare_client(app)
    session_id, token = logged_in(web)
    headers = session_headers(session_id, token)
    engine = engine_of(app)
    sqlite = engine.dialect.name == "sqlite"
    expected = [
        "SELECT auth_session",
        "BEGIN IMMEDIATE" if sqlite else "BEGIN; SELECT pg_advisory_xact_lock_shared",
        "SELECT app_user",
        "SELECT element",  # the element (locked) with its parent's name
        "SELECT element",  # its children
        "SELECT element_value",
        "SELECT relation",  # as the source
        "SELECT relation",  # as the target
        "SELECT relation_value",
        "UPDATE element",
        "DELETE element_value",
        "INSERT element_value",
        "UPDATE repository_state",
        "INSERT revision",
        "INSERT change",
    ]
    if not sqlite:
        expected.remove("UPDATE repository_state")  # the number comes from a sequence
        for part in ("SELECT element_value", "SELECT relation", "SELECT relation", "SELECT relation_value"):
            expected.remove(part)  # in the second "SELECT element", the parts at once
        expected[expected.index("UPDATE element") : expected.index("INSERT element_value") + 1] = [
            "WITH updated"
        ]
        expected[expected.index("INSERT revision") :] = ["WITH claimed"]
    for element in (rich, bare):
        url = f"/api/element/BusinessProcess/{element}"
        before = web.get(url, headers=headers).json()
        with count_queries(engine) as counter:
            response = web.put(url, json={"Note": ["second"]}, headers=headers)
        assert response.status_code == 200, response.text
        assert [what(s) for s in counter.statements] == expected, [s[:70] for s in counter.statements]
        # The answer, made from the state read before the write and the write's plan, is what a GET reads.
        assert response.json() == web.get(url, headers=headers).json()
        assert response.json()["Note"] == ["second"]
        assert response.json()["revision"] == [before["revision"][0] + 1]
        assert response.headers["ETag"] == f'W/"{before["revision"][0] + 1}"'
        latest = client.get(f"/api/history/BusinessProcess/{element}").json()["items"][0]
        assert (latest["operation"], latest["changes"]) == (
            "updated",
            [{"property": "Note", "old": before["Note"], "new": ["second"]}],
        )


def test_a_put_that_changes_nothing_writes_nothing(app: FastAPI, client: TestClient) -> None:
    rich, _ = rich_and_bare(app, client)
    create_attribute(app, "Note", "text", types=["BusinessProcess"])
    web = bare_client(app)
    session_id, token = logged_in(web)
    headers = session_headers(session_id, token)
    url = f"/api/element/BusinessProcess/{rich}"
    assert client.put(url, json={"Note": ["first"]}).status_code == 200
    before = web.get(url, headers=headers)
    with count_queries(engine_of(app)) as counter:
        response = web.put(url, json={"Note": ["first"]}, headers=headers)
    assert response.status_code == 200
    assert response.json() == before.json() and response.headers["ETag"] == before.headers["ETag"]
    assert not [s for s in counter.statements if s.split()[0] in ("INSERT", "UPDATE", "DELETE")]
