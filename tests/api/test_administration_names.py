"""Role and attribute group name clashes are 409, also for names SQLite's lower() does not fold."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from blockrepo.administration import repository
from blockrepo.name_normalization import name_key


@pytest.mark.parametrize("name", ["Æ", "Ärger", "reviewer"])
def test_duplicate_role_name_is_409(client: TestClient, name: str) -> None:
    assert client.post("/api/administration/roles", json={"name": name}).status_code == 201
    again = client.post("/api/administration/roles", json={"name": name})
    assert again.status_code == 409
    assert again.json()["code"] == "name_conflict"


@pytest.mark.parametrize("name", ["Ökonomie", "Finance"])
def test_duplicate_attribute_group_name_is_409(client: TestClient, name: str) -> None:
    assert client.post("/api/administration/attributegroups", json={"name": name}).status_code == 201
    again = client.post("/api/administration/attributegroups", json={"name": name})
    assert again.status_code == 409


@pytest.mark.parametrize(
    ("collection", "longest", "history_subject"),
    [("roles", 250, "role"), ("attributegroups", 240, "attributeGroup")],
)
def test_the_longest_name_is_recorded_in_history_and_a_longer_one_is_400(
    client: TestClient, collection: str, longest: int, history_subject: str
) -> None:
    # The history records the change as `<kind> <name>`; a longer name was a 500 on PostgreSQL.
    url = f"/api/administration/{collection}"
    created = client.post(url, json={"name": "n" * longest})
    assert created.status_code == 201, created.text
    feed = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    assert f"{history_subject} {'n' * longest}" in {item["subject"] for item in feed}
    too_long = client.post(url, json={"name": "m" * (longest + 1)})
    assert too_long.status_code == 400
    assert too_long.json()["errors"][0]["pointer"] == "/name"
    renamed = client.put(f"{url}/{created.json()['id']}", json={"name": "m" * (longest + 1)})
    assert renamed.status_code == 400


@pytest.mark.parametrize(
    ("collection", "taken", "clash"),
    [("roles", "Straße", "STRASSE"), ("attributegroups", "\u212a-Team", "k-team"), ("roles", "Ops", "OPS")],
)
def test_a_name_that_folds_into_another_is_409(
    client: TestClient, collection: str, taken: str, clash: str
) -> None:
    url = f"/api/administration/{collection}"
    assert client.post(url, json={"name": taken}).status_code == 201
    assert client.post(url, json={"name": clash}).status_code == 409


def test_a_name_check_compares_a_bounded_number_of_rows(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import creating N users checked each login against every user (N squared under the write lock):
    SQL now narrows the rows that Python compares."""
    for n in range(30):
        assert client.post("/api/administration/roles", json={"name": f"Role {n}"}).status_code == 201
        body = {"login": f"user{n}", "password": "a passphrase 4 tests"}
        assert client.post("/api/administration/users", json=body).status_code == 201
    compared: list[str] = []

    def counting_key(name: str) -> str:
        compared.append(name)
        return name_key(name)

    monkeypatch.setattr(repository, "name_key", counting_key)
    body = {"login": "USER7", "password": "a passphrase 4 tests"}
    assert client.post("/api/administration/users", json=body).status_code == 409
    assert client.post("/api/administration/roles", json={"name": "role 7"}).status_code == 409
    assert client.post("/api/administration/roles", json={"name": "Role 30"}).status_code == 201
    assert len(compared) <= 6, compared  # each check: the name's key and the row that clashes
