"""Races that validation cannot see become 409s, never 500s."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select

from blockrepo.elements.service import concurrent_change_guard
from blockrepo.elements.write import repository
from blockrepo.errors import Conflict, NameConflict
from blockrepo.metamodel.models import BlockType
from tests.helpers import session_of


def _row(type_id: int, name: str, parent_id: int | None, now: dt.datetime) -> dict[str, Any]:
    return {
        "type_id": type_id,
        "name": name,
        "description": "",
        "parent_id": parent_id,
        "position": 0,
        "revision": 1,
        "created_at": now,
        "last_modified_at": now,
        "last_modified_by": "t",
    }


def test_a_duplicate_name_that_slipped_past_validation_is_a_name_conflict(app: FastAPI) -> None:
    now = dt.datetime.now(dt.UTC)
    with session_of(app) as db:
        type_id = db.scalar(select(BlockType.id).where(BlockType.name == "BusinessProcess"))
        assert type_id is not None
        repository.insert_elements(db, [_row(type_id, "Twin", None, now)])
        with pytest.raises(NameConflict), concurrent_change_guard("Twin"):
            repository.insert_elements(db, [_row(type_id, "Twin", None, now)])
        db.rollback()


def test_a_vanished_target_is_a_conflict(app: FastAPI) -> None:
    now = dt.datetime.now(dt.UTC)
    with session_of(app) as db:
        type_id = db.scalar(select(BlockType.id).where(BlockType.name == "BusinessProcess"))
        assert type_id is not None
        with pytest.raises(Conflict) as raised, concurrent_change_guard("Orphan"):
            repository.insert_elements(db, [_row(type_id, "Orphan", 987654, now)])
        assert raised.type is Conflict
        db.rollback()
