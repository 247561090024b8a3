"""The landscape of the iteraQL hardening tests: an ordinary editor with MASSDATA and a few elements."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.testclient import TestClient

from tests.helpers import create_attribute, create_role, create_user

EDITOR, PASSWORD = "erika", "erika-password-1"
COSTS = {"ERP": 5, "CRM": 700, "Shop": None}


def populate(app: FastAPI, client: TestClient) -> dict[str, int]:
    """An editor with MASSDATA (and VIEW_HISTORY, for `asOf`), information systems with costs and a
    process hierarchy twelve levels deep."""
    create_attribute(app, "Costs", "number", types=["InformationSystem"])
    readable = {t: ["read", "create", "update"] for t in ("BusinessProcess", "InformationSystem")}
    create_role(app, "editor", types=readable, functional=["MASSDATA", "VIEW_HISTORY"])
    create_user(app, EDITOR, PASSWORD, roles=["editor"])
    ids: dict[str, int] = {}
    for name, costs in COSTS.items():
        body = {"name": [name], "Costs": [] if costs is None else [costs]}
        response = client.post("/api/element/InformationSystem", json=body)
        assert response.status_code == 201, response.text
        ids[name] = response.json()["id"][0]
    parent: int | None = None
    for level in range(12):
        body = {"name": [f"Level {level}"], **({"parent": [parent]} if parent else {})}
        response = client.post("/api/element/BusinessProcess", json=body)
        assert response.status_code == 201, response.text
        parent = ids[f"Level {level}"] = response.json()["id"][0]
    return ids
