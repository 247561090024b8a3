"""Writing hidden data through the massdata API: a caller who may not write an attribute group (because
the group is unreadable to them, or readable but not writable) is refused by an atomic bulk write, per item
by a perItem bulk write and by an import, dry run or not; and nothing changes: no element, value, relation
attribute or revision. An attribute the caller may not read is answered as an unknown one (400
`unknown_property`: a 403 would tell that it exists); one they read but may not write is 403.

Cast: `bulky` (role Bulkers) reads, creates and updates BusinessProcess, reads InformationSystem, and has
MASSDATA and IMPORT. The attribute group `Secret` is restricted to the role Insiders (held by nobody
here); the group `Audit` is readable by Bulkers but writable only by Insiders. The default group's
`Criticality` is writable by everybody who may update the type.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from starlette.testclient import TestClient

from blockrepo.massdata.transfer.plan import FORMAT
from tests.api.access_helpers import PASSWORD, acting_as, create_role, create_user

SECRET_VALUE = "TOP-SECRET-VALUE"
BULK = "/api/massdata/BusinessProcess"
IMPORT = "/api/massdata/import"


@dataclass
class Repo:
    process: int
    system: int


def ok(response: Any, status: int = 201) -> Any:
    assert response.status_code == status, response.text
    return response.json()


@pytest.fixture
def repo(client: TestClient) -> Repo:
    create_role(client, "Insiders")
    create_role(
        client,
        "Bulkers",
        typePermissions={"BusinessProcess": ["read", "create", "update"], "InformationSystem": ["read"]},
        functionalPermissions=["MASSDATA", "IMPORT"],
    )
    create_user(client, "bulky", ["Bulkers"])
    groups = "/api/administration/attributegroups"
    ok(
        client.post(
            groups,
            json={"name": "Secret", "permissions": [{"role": "Insiders", "read": True, "write": True}]},
        )
    )
    ok(
        client.post(
            groups,
            json={
                "name": "Audit",
                "permissions": [
                    {"role": "Insiders", "read": True, "write": True},
                    {"role": "Bulkers", "read": True, "write": False},
                ],
            },
        )
    )
    attributes = "/api/administration/attributes"
    ok(
        client.post(
            attributes,
            json={
                "name": "Secret notes",
                "valueType": "text",
                "group": "Secret",
                "types": ["BusinessProcess"],
            },
        )
    )
    ok(
        client.post(
            attributes,
            json={"name": "Audit note", "valueType": "text", "group": "Audit", "types": ["BusinessProcess"]},
        )
    )
    ok(
        client.post(
            attributes,
            json={
                "name": "Share",
                "valueType": "number",
                "group": "Secret",
                "relationTypes": ["BusinessProcess_InformationSystem"],
            },
        )
    )
    ok(
        client.post(
            attributes,
            json={
                "name": "Criticality",
                "valueType": "enum",
                "literals": [{"name": "low"}, {"name": "high"}],
                "types": ["BusinessProcess"],
            },
        )
    )
    system = ok(client.post("/api/element/InformationSystem", json={"name": ["ERP"]}))["id"][0]
    process = ok(
        client.post(
            "/api/element/BusinessProcess",
            json={
                "name": ["P1"],
                "Secret notes": [SECRET_VALUE],
                "Audit note": ["checked"],
                "Criticality": ["low"],
                "informationSystems": [{"id": system, "attributes": {"Share": [42]}}],
            },
        )
    )["id"][0]
    return Repo(process, system)


@pytest.fixture
def bulky(app: FastAPI, repo: Repo) -> Iterator[TestClient]:
    with acting_as(app, "bulky", PASSWORD) as client:
        yield client


# The hidden writes: what is written (a bulk item's or an import record's members besides the name), and
# where the problem points inside the item or record. A relation names its target by name in both APIs.
HIDDEN: dict[str, tuple[dict[str, Any], str]] = {
    "unreadable attribute": ({"Secret notes": ["overwritten"]}, "/Secret notes"),
    "readable, unwritable attribute": ({"Audit note": ["changed"]}, "/Audit note"),
    "unreadable relation attribute": (
        {"informationSystems": [{"name": "ERP", "attributes": {"Share": [1]}}]},
        "/informationSystems/0/attributes/Share",
    ),
}
# The status and problem code of each case.
REFUSAL = {
    "unreadable attribute": (400, "validation_failed"),
    "readable, unwritable attribute": (403, "forbidden"),
    "unreadable relation attribute": (400, "validation_failed"),
}


def snapshot(client: TestClient) -> tuple[Any, Any, int]:
    """Every BusinessProcess and InformationSystem as the supervisor sees it (values, relations and their
    attributes, revisions), and the newest revision of the repository."""
    processes = ok(client.get(BULK, params={"limit": 1000}), 200)["items"]
    systems = ok(client.get("/api/massdata/InformationSystem", params={"limit": 1000}), 200)["items"]
    feed = ok(client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}), 200)["items"]
    return processes, systems, feed[-1]["revision"]


def assert_no_leak(response: Any) -> None:
    assert SECRET_VALUE not in response.text and "[42]" not in response.text


@pytest.mark.parametrize("case", list(HIDDEN))
@pytest.mark.parametrize("dry_run", [False, True])
def test_atomic_bulk_write_of_hidden_data_is_refused_and_writes_nothing(
    client: TestClient, bulky: TestClient, repo: Repo, case: str, dry_run: bool
) -> None:
    hidden, pointer = HIDDEN[case]
    status, code = REFUSAL[case]
    before = snapshot(client)
    for elements, failing in (
        ([{"name": ["Fresh"]}, {"id": repo.process, **hidden}], 1),  # an update of an existing element
        ([{"name": ["Fresh"], **hidden}], 0),  # a create
    ):
        response = bulky.post(BULK, json={"elements": elements, "dryRun": dry_run})
        assert response.status_code == status, response.text
        problem = response.json()
        assert problem["code"] == code
        assert f"/elements/{failing}{pointer}" in {e["pointer"] for e in problem["errors"]}
        assert [r["status"] for r in problem["results"]][failing] == status
        assert_no_leak(response)
    assert snapshot(client) == before


@pytest.mark.parametrize("case", list(HIDDEN))
def test_per_item_bulk_write_of_hidden_data_fails_that_item_only(
    client: TestClient, bulky: TestClient, repo: Repo, case: str
) -> None:
    hidden, pointer = HIDDEN[case]
    status, _ = REFUSAL[case]
    before = ok(client.get(f"/api/element/BusinessProcess/{repo.process}"), 200)
    response = bulky.post(
        BULK,
        json={
            "mode": "perItem",
            "elements": [{"name": ["Fresh"]}, {"id": repo.process, **hidden}, {"name": ["Fresh2"], **hidden}],
        },
    )
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [r["status"] for r in results] == [201, status, status]
    assert [e["pointer"] for e in results[1]["errors"]] == [pointer]
    assert response.json()["created"] == 1 and response.json()["failed"] == 2
    assert_no_leak(response)
    assert ok(client.get(f"/api/element/BusinessProcess/{repo.process}"), 200) == before
    names = [item["name"][0] for item in ok(client.get(BULK), 200)["items"]]
    assert "Fresh" in names and "Fresh2" not in names


def test_permitted_bulk_writes_keep_the_hidden_values(
    client: TestClient, bulky: TestClient, repo: Repo
) -> None:
    """The counterpart: the same caller may write the rest, and the hidden values stay as they were."""
    response = bulky.post(
        BULK, json={"elements": [{"id": repo.process, "Criticality": ["high"], "description": ["d"]}]}
    )
    assert response.status_code == 200, response.text
    seen = ok(bulky.get(f"/api/element/BusinessProcess/{repo.process}"), 200)
    assert "Secret notes" not in seen and seen["Audit note"] == ["checked"]
    stored = ok(client.get(f"/api/element/BusinessProcess/{repo.process}"), 200)
    assert stored["Criticality"] == ["high"] and stored["Secret notes"] == [SECRET_VALUE]
    assert stored["Audit note"] == ["checked"]
    assert stored["informationSystems"][0]["attributes"]["Share"] == [42]


def document(*records: dict[str, Any]) -> bytes:
    return orjson.dumps({"format": FORMAT, "elements": {"BusinessProcess": list(records)}})


@pytest.mark.parametrize("case", list(HIDDEN))
@pytest.mark.parametrize("dry_run", [False, True])
def test_importing_hidden_data_is_refused_and_imports_nothing(
    client: TestClient, bulky: TestClient, repo: Repo, case: str, dry_run: bool
) -> None:
    record, pointer = HIDDEN[case]
    status, code = REFUSAL[case]
    before = snapshot(client)
    params = {"dryRun": "true"} if dry_run else {}
    for records, failing in (
        ([{"name": "Fresh"}, {"name": "P1", **record}], 1),  # P1 exists: an update
        ([{"name": "Fresh", **record}], 0),  # a create
    ):
        response = bulky.post(
            IMPORT, content=document(*records), headers={"Content-Type": "application/json"}, params=params
        )
        assert response.status_code == status, response.text
        problem = response.json()
        assert problem["code"] == code
        assert [e["pointer"] for e in problem["errors"]] == [f"/elements/BusinessProcess/{failing}{pointer}"]
        assert_no_leak(response)
    assert snapshot(client) == before


def test_permitted_imports_keep_the_hidden_values(client: TestClient, bulky: TestClient, repo: Repo) -> None:
    """An import record is the element's whole state as far as the caller may write it: what the caller
    may not write is neither demanded nor emptied."""
    response = bulky.post(
        IMPORT,
        content=document(
            {"name": "P1", "description": "from the file", "Criticality": ["high"]}, {"name": "Fresh"}
        ),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["created"] == 1 and response.json()["updated"] == 1
    stored = ok(client.get(f"/api/element/BusinessProcess/{repo.process}"), 200)
    assert stored["description"] == ["from the file"] and stored["Criticality"] == ["high"]
    assert stored["Secret notes"] == [SECRET_VALUE] and stored["Audit note"] == ["checked"]
