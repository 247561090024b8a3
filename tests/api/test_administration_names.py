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
