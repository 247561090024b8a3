"""`storage.bulk_insert` stores rows exactly as a Core insert does (verbatim columns too) and reports a
broken constraint as SQLAlchemy's IntegrityError, on SQLite (executemany) and PostgreSQL (COPY) alike."""

from __future__ import annotations

import datetime as dt
from typing import cast

import orjson
import pytest
from sqlalchemy import Table, func, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from blockrepo.elements.models import Element, Relation
from blockrepo.metamodel.models import RelationType
from blockrepo.revisions.models import Change, Revision
from blockrepo.storage import bulk_insert
from blockrepo.storage.engine import build_engine

ELEMENT = cast(Table, Element.__table__)
RELATION = cast(Table, Relation.__table__)
CHANGE = cast(Table, Change.__table__)


def _element_row(name: str, moment: dt.datetime) -> dict[str, object]:
    return {
        "type_id": 1,  # the default metamodel's first type
        "name": name,
        "description": "",
        "parent_id": None,
        "position": 0,
        "revision": 1,
        "created_at": moment,
        "last_modified_at": moment,
        "last_modified_by": "system",
    }


def test_rows_are_stored_as_a_core_insert_stores_them(database_url: str) -> None:
    engine = build_engine(database_url)
    moment = dt.datetime(2026, 11, 23, 20, 0, 0, 123456, tzinfo=dt.UTC)
    try:
        with Session(engine) as db:
            db.execute(insert(ELEMENT), [_element_row("by core", moment)])
            rows = [_element_row(f"bulk {n}", moment) for n in range(bulk_insert.ROWS_PER_CALL + 3)]
            bulk_insert.insert_rows(db, ELEMENT, rows)
            stored = db.execute(
                select(
                    Element.name, Element.last_modified_at, func.cast(Element.created_at, ELEMENT.c.name.type)
                )
                .where(Element.name.in_(["by core", "bulk 0", f"bulk {len(rows) - 1}"]))
                .order_by(Element.name)
            ).all()
            count = db.scalar(select(func.count()).where(Element.name.like("bulk %")))
    finally:
        engine.dispose()
    assert count == len(rows)
    assert [row[0] for row in stored] == ["bulk 0", f"bulk {len(rows) - 1}", "by core"]
    # The same stored form (SQLite compares the text): one bulk write and one ORM write sort together.
    assert len({row[2] for row in stored}) == 1
    assert {row[1].replace(tzinfo=None) for row in stored} == {moment.replace(tzinfo=None)}


def test_a_broken_constraint_is_an_integrity_error(database_url: str) -> None:
    engine = build_engine(database_url)
    try:
        with Session(engine) as db:
            element_id = db.execute(
                insert(ELEMENT).returning(ELEMENT.c.id), [_element_row("holder", dt.datetime.now(dt.UTC))]
            ).scalar_one()
            relation_type = db.scalar(select(func.min(RelationType.id)))
            assert relation_type is not None
            row = {
                "relation_type_id": relation_type,
                "source_id": element_id,
                "target_id": 10**9,
                "position": 0,
            }
            with pytest.raises(IntegrityError):
                bulk_insert.insert_rows(db, RELATION, [row])
    finally:
        engine.dispose()


def test_verbatim_json_text_reads_back_as_the_json_column_stores_it(database_url: str) -> None:
    changes = [{"property": "Costs", "old": [], "new": [12.5]}, {"property": "name", "new": ["Ä ✓"]}]
    engine = build_engine(database_url)
    try:
        with Session(engine) as db:
            revision = (db.scalar(select(func.max(Revision.id))) or 0) + 1
            db.execute(
                insert(Revision).values(
                    id=revision, created_at=dt.datetime.now(dt.UTC), user_login="u", request_id="r"
                )
            )
            row = {"revision": revision, "entity": "element", "operation": "updated", "element_id": 1}
            db.execute(insert(CHANGE), [{**row, "element_name": "by core", "changes": changes}])
            text = orjson.dumps(changes).decode()
            bulk_insert.insert_rows(
                db, CHANGE, [{**row, "element_name": "verbatim", "changes": text}], verbatim={"changes"}
            )
            stored = db.execute(
                select(Change.element_name, Change.changes)
                .where(Change.revision == revision)
                .order_by(Change.element_name)
            ).all()
    finally:
        engine.dispose()
    # Stored once as JSON, not as a JSON string holding the text.
    assert [tuple(row) for row in stored] == [("by core", changes), ("verbatim", changes)]
