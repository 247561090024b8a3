"""Writing what the writer may not read answers exactly like writing what does not exist (400
`unknown_property`, the same message shape), so that refusals do not reveal hidden names; and a change of
hidden values only moves the element's revision (the reader learns that it changed, not what), while the
reader's history leaves that changeset out.

Cast: `ella` (role Editors) reads, creates and updates BusinessProcess and reads InformationSystem. The
attribute group `Secret` (attribute `Secret notes`, relation attribute `Share`) is readable by Insiders
only; BusinessDomain is a type ella may not read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.api.access_helpers import acting_as, create_role, create_user

PROCESS = "/api/element/BusinessProcess"


def ok(response: Any, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()


@pytest.fixture
def ids(client: TestClient) -> dict[str, int]:
    create_role(client, "Insiders")
    create_role(
        client,
        "Editors",
        typePermissions={"BusinessProcess": ["read", "create", "update"], "InformationSystem": ["read"]},
        functionalPermissions=["VIEW_HISTORY"],
    )
    create_user(client, "ella", ["Editors"])
    ok(
        client.post(
            "/api/administration/attributegroups",
            json={"name": "Secret", "permissions": [{"role": "Insiders", "read": True, "write": True}]},
        )
    )
    for body in (
        {"name": "Secret notes", "valueType": "text", "group": "Secret", "types": ["BusinessProcess"]},
        {
            "name": "Share",
            "valueType": "number",
            "group": "Secret",
            "relationTypes": ["BusinessProcess_InformationSystem"],
        },
    ):
        ok(client.post("/api/administration/attributes", json=body))
    system = ok(client.post("/api/element/InformationSystem", json={"name": ["ERP"]}))["id"][0]
    process = ok(
        client.post(PROCESS, json={"name": ["P1"], "Secret notes": ["s"], "informationSystems": [system]})
    )["id"][0]
    return {"system": system, "process": process}


@pytest.fixture
def ella(app: FastAPI, ids: dict[str, int]) -> Iterator[TestClient]:
    with acting_as(app, "ella") as client:
        yield client


def _shape(response: Any, written: str) -> tuple[int, str, list[tuple[str, str, str]]]:
    """The refusal with the name written replaced by a placeholder: what a client can compare."""
    problem = response.json()
    errors = [
        (e["pointer"].replace(written, "?"), e["code"], e["message"].replace(written, "?"))
        for e in problem["errors"]
    ]
    return response.status_code, problem["code"], errors


@pytest.mark.parametrize(
    ("hidden", "unknown", "body"),
    [
        ("Secret notes", "Public notes", lambda key, _ids: {key: ["x"]}),
        ("businessDomains", "businessDomainz", lambda key, _ids: {key: []}),
        (
            "Share",
            "Shares",
            lambda key, ids: {"informationSystems": [{"id": ids["system"], "attributes": {key: [1]}}]},
        ),
    ],
    ids=["attribute", "end to an unreadable type", "relation attribute"],
)
def test_writing_a_hidden_property_answers_like_an_unknown_one(
    client: TestClient, ella: TestClient, ids: dict[str, int], hidden: str, unknown: str, body: Any
) -> None:
    url = f"{PROCESS}/{ids['process']}"
    before = client.get(url).json()
    to_hidden = ella.put(url, json=body(hidden, ids))
    to_unknown = ella.put(url, json=body(unknown, ids))
    assert to_hidden.status_code == 400, to_hidden.text
    assert to_hidden.json()["errors"][0]["code"] == "unknown_property"
    assert _shape(to_hidden, hidden) == _shape(to_unknown, unknown)
    create_hidden = ella.post(PROCESS, json={"name": ["New"], **body(hidden, ids)})
    create_unknown = ella.post(PROCESS, json={"name": ["New"], **body(unknown, ids)})
    assert _shape(create_hidden, hidden) == _shape(create_unknown, unknown)
    assert client.get(url).json() == before
    assert "New" not in {
        item["name"][0] for item in client.get("/api/massdata/BusinessProcess").json()["items"]
    }


def test_a_change_of_hidden_values_moves_the_revision_but_stays_out_of_the_readers_history(
    client: TestClient, ella: TestClient, ids: dict[str, int]
) -> None:
    url = f"{PROCESS}/{ids['process']}"
    history_url = f"/api/history/BusinessProcess/{ids['process']}"
    revision = ella.get(url).json()["revision"][0]
    seen_before = ok(ella.get(history_url), 200)["items"]
    ok(client.put(url, json={"Secret notes": ["changed"]}), 200)
    after = ella.get(url).json()
    assert after["revision"][0] == revision + 1  # the element changed: its version moved
    assert "Secret notes" not in after and after["lastModificationUser"] == ["system"]
    # Her history of the element holds nothing new; the supervisor's holds the change.
    assert ok(ella.get(history_url), 200)["items"] == seen_before
    full = ok(client.get(history_url), 200)["items"]
    assert len(full) == len(seen_before) + 1
    assert [change["property"] for change in full[0]["changes"]] == ["Secret notes"]
