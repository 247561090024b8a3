"""Helpers of the access tests: create roles and users over HTTP and act as them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI
from sqlalchemy import insert, select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.elements.models import Element, Relation
from blockrepo.metamodel.models import BlockType, RelationType
from blockrepo.storage.engine import build_engine

PASSWORD = "a-long-test-password"


def create_role(client: TestClient, name: str, **fields: Any) -> dict[str, Any]:
    response = client.post("/api/administration/roles", json={"name": name, **fields})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def create_user(client: TestClient, login: str, roles: list[str], **fields: Any) -> dict[str, Any]:
    body = {"login": login, "password": PASSWORD, "roles": roles, **fields}
    response = client.post("/api/administration/users", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


@contextmanager
def acting_as(app: FastAPI, login: str, password: str = PASSWORD) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.auth = (login, password)
        yield client


@contextmanager
def database(url: str) -> Iterator[Session]:
    """A direct session on the test repository, for set-up the API under test does not offer."""
    engine = build_engine(url)
    try:
        with Session(engine) as db:
            yield db
    finally:
        engine.dispose()


def insert_element(url: str, type_name: str, name: str, parent_id: int | None = None) -> int:
    now = dt.datetime.now(dt.UTC)
    with database(url) as db:
        type_id = db.scalar(select(BlockType.id).where(BlockType.name == type_name))
        element_id = db.execute(
            insert(Element)
            .values(
                type_id=type_id,
                name=name,
                description="",
                parent_id=parent_id,
                position=0,
                revision=1,
                created_at=now,
                last_modified_at=now,
                last_modified_by="system",
            )
            .returning(Element.id)
        ).scalar_one()
        db.commit()
        return int(element_id)


def insert_relation(url: str, relation_type: str, source_id: int, target_id: int) -> int:
    with database(url) as db:
        type_id = db.scalar(select(RelationType.id).where(RelationType.name == relation_type))
        relation_id = db.execute(
            insert(Relation)
            .values(relation_type_id=type_id, source_id=source_id, target_id=target_id, position=0)
            .returning(Relation.id)
        ).scalar_one()
        db.commit()
        return int(relation_id)
