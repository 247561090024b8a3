"""Role and attribute group name clashes are 409, also for names SQLite's lower() does not fold."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient


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
