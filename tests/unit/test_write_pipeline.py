"""`storage.write_pipeline`: pipelined inserts run in order, whatever the request runs next sees them, a
failed one stops the rest and surfaces its error, and the block leaves nothing running behind it."""

from __future__ import annotations

import datetime as dt
import sys
import threading
from collections.abc import Sequence
from typing import cast

import pytest
from sqlalchemy import Table, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blockrepo import interpreter
from blockrepo.elements.models import Element
from blockrepo.storage import bulk_insert, write_pipeline
from blockrepo.storage.engine import build_engine
from blockrepo.storage.write_pipeline import WritePipeline, pipelined

ELEMENT = cast(Table, Element.__table__)
MOMENT = dt.datetime(2026, 11, 24, 20, 0, tzinfo=dt.UTC)


def _columns(names: list[str]) -> dict[str, Sequence[object]]:
    count = len(names)
    return {
        "type_id": [1] * count,  # the default metamodel's first type
        "name": names,
        "description": [""] * count,
        "position": list(range(count)),
        "revision": [1] * count,
        "created_at": [MOMENT] * count,
        "last_modified_at": [MOMENT] * count,
        "last_modified_by": ["system"] * count,
    }


def _count(db: Session, prefix: str) -> int:
    return db.scalar(select(func.count()).where(Element.name.like(f"{prefix}%"))) or 0


def test_what_runs_next_on_the_connection_sees_every_pipelined_row(database_url: str) -> None:
    engine = build_engine(database_url)
    try:
        # More rows than one statement holds: the block runs several.
        per_batch = bulk_insert.SQLITE_PARAMETERS_PER_STATEMENT // len(_columns([])) + 7
        with Session(engine) as db, db.begin():
            with pipelined(db):
                for batch in range(4):
                    names = [f"piped {batch} {n}" for n in range(per_batch)]
                    bulk_insert.insert_columns(db, ELEMENT, _columns(names))
                    # A read of the request's own thread waits for the inserts before it.
                    assert _count(db, "piped ") == (batch + 1) * len(names)
                bulk_insert.insert_columns(db, ELEMENT, _columns(["piped last"]))
            assert _count(db, "piped ") == 4 * per_batch + 1
            # Rows keep the order they were given in: ids follow it.
            rows = db.execute(
                select(Element.id, Element.name).where(Element.name.like("piped %")).order_by(Element.id)
            ).all()
            assert [name for _, name in rows][-1] == "piped last"
            assert [name for _, name in rows][:2] == ["piped 0 0", "piped 0 1"]
    finally:
        engine.dispose()


def test_a_failed_insert_is_raised_by_the_next_statement_and_the_rest_never_runs(database_url: str) -> None:
    engine = build_engine(database_url)
    try:
        with Session(engine) as db:
            with pytest.raises(IntegrityError), db.begin(), pipelined(db):
                bulk_insert.insert_columns(db, ELEMENT, _columns(["twice"]))
                bulk_insert.insert_columns(db, ELEMENT, _columns(["twice"]))  # (type, name) is unique
                bulk_insert.insert_columns(db, ELEMENT, _columns(["after the failure"]))
                _count(db, "")  # raises the insert's error
                pytest.fail("the statement after a failed pipelined insert ran")
            with db.begin():
                assert _count(db, "twice") == 0
                assert _count(db, "after the failure") == 0
    finally:
        engine.dispose()


def test_a_failure_is_raised_when_the_block_ends_at_the_latest(database_url: str) -> None:
    engine = build_engine(database_url)
    try:
        with Session(engine) as db:
            with pytest.raises(IntegrityError), db.begin(), pipelined(db):
                bulk_insert.insert_columns(db, ELEMENT, _columns(["again", "again"]))
            with db.begin():
                assert _count(db, "again") == 0
    finally:
        engine.dispose()


def test_statements_after_a_failure_are_skipped_and_the_first_error_is_raised() -> None:
    pipeline = WritePipeline()
    ran: list[str] = []

    def fail() -> None:
        ran.append("fail")
        raise ValueError("the first failure")

    try:
        pipeline.submit(lambda: ran.append("first"))
        pipeline.submit(fail)
        pipeline.submit(lambda: ran.append("after"))
        with pytest.raises(ValueError, match="the first failure"):
            pipeline.wait()
    finally:
        pipeline.close()
    assert ran == ["first", "fail"]


def test_an_error_in_the_block_drops_the_waiting_statements(database_url: str) -> None:
    engine = build_engine(database_url)
    started, release = threading.Event(), threading.Event()

    def hold_the_pipeline() -> None:
        started.set()
        release.wait(10)

    try:
        with Session(engine) as db:
            with pytest.raises(RuntimeError, match="the write failed"), db.begin(), pipelined(db):
                connection = db.connection()
                info = connection.info
                write_pipeline.submit_statement(connection, hold_the_pipeline)
                bulk_insert.insert_columns(db, ELEMENT, _columns(["never written"]))
                started.wait(10)
                release.set()
                raise RuntimeError("the write failed")
            assert write_pipeline.INFO_KEY not in info  # the connection is free again
            with db.begin():
                assert _count(db, "never written") == 0
    finally:
        engine.dispose()


def test_the_switch_interval_is_lowered_while_a_pipeline_runs_and_restored_after(database_url: str) -> None:
    engine = build_engine(database_url)
    before = sys.getswitchinterval()
    inside: list[float] = []
    try:
        with Session(engine) as db, db.begin(), pipelined(db):
            inside.append(sys.getswitchinterval())
    finally:
        engine.dispose()
    assert sys.getswitchinterval() == before
    if engine.dialect.name == "sqlite":
        assert inside == [pytest.approx(min(before, interpreter.SWITCH_INTERVAL))]
    else:  # PostgreSQL's rows go in as COPY at once: no pipeline
        assert inside == [before]
