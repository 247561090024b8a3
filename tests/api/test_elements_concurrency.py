"""Races that validation cannot see become 409s, never 500s."""

from __future__ import annotations

import datetime as dt

import pytest
from fastapi import FastAPI
from sqlalchemy import select

from blockrepo.elements import repository
from blockrepo.elements.service import concurrent_change_guard
from blockrepo.errors import Conflict, NameConflict
from blockrepo.metamodel.models import BlockType
from tests.helpers import session_of


def test_a_duplicate_name_that_slipped_past_validation_is_a_name_conflict(app: FastAPI) -> None:
    now = dt.datetime.now(dt.UTC)
    with session_of(app) as db:
        type_id = db.scalar(select(BlockType.id).where(BlockType.name == "BusinessProcess"))
        assert type_id is not None
        repository.insert_element(
            db, type_id=type_id, name="Twin", description="", parent_id=None, now=now, user="t"
        )
        with pytest.raises(NameConflict), concurrent_change_guard("Twin"):
            repository.insert_element(
                db, type_id=type_id, name="Twin", description="", parent_id=None, now=now, user="t"
            )
        db.rollback()


def test_a_vanished_target_is_a_conflict(app: FastAPI) -> None:
    now = dt.datetime.now(dt.UTC)
    with session_of(app) as db:
        type_id = db.scalar(select(BlockType.id).where(BlockType.name == "BusinessProcess"))
        assert type_id is not None
        with pytest.raises(Conflict) as raised, concurrent_change_guard("Orphan"):
            repository.insert_element(
                db, type_id=type_id, name="Orphan", description="", parent_id=987654, now=now, user="t"
            )
        assert raised.type is Conflict
        db.rollback()
