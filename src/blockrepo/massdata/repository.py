"""SQL of bulk writes: set-based inserts and updates (executemany), and the lookups they need for many
elements at once (one statement per chunk, never one per element)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import (
    ARRAY,
    Select,
    String,
    Table,
    and_,
    bindparam,
    delete,
    func,
    literal,
    or_,
    select,
    text,
    true,
    update,
)
from sqlalchemy.orm import Session

from blockrepo.elements.models import Element, ElementValue
from blockrepo.elements.repository import chunks, or_batches
from blockrepo.storage import bulk_insert

ELEMENT = cast(Table, Element.__table__)
ELEMENT_VALUE = cast(Table, ElementValue.__table__)
ROWS_PER_CALL = bulk_insert.ROWS_PER_CALL


def plan_with_parameters(db: Session) -> None:
    """PostgreSQL: plan the rest of the transaction's statements with their actual parameters.

    psycopg prepares a statement at its fifth execution, and PostgreSQL may then keep, per connection, a
    generic plan made while a table was small or had no statistics yet (a bulk load into a new repository,
    before autovacuum analyzes it): name lookups then scanned every element of the type, and each
    10,000-element request of a 100,000-element load took longer than the one before (6.7 s, 22 s, 37 s,
    54 s …; bench/massdata_scale.py). A bulk write plans its few dozen statements at no noticeable cost;
    reads keep their cached plans, which planning 1,000-id arrays anew would slow down."""
    if db.get_bind().dialect.name == "postgresql":
        db.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))


def existing_ids(db: Session, type_id: int, ids: Iterable[int], *, lock: bool) -> set[int]:
    """The ids among `ids` that are elements of the type (locked for update when asked)."""
    found: set[int] = set()
    for chunk in chunks(sorted(set(ids))):
        statement = select(Element.id).where(Element.type_id == type_id, Element.id.in_(chunk))
        found.update(db.scalars(statement.with_for_update() if lock else statement))
    return found


def parent_chains(db: Session, ids: Iterable[int]) -> dict[int, int | None]:
    """id -> parent id of the given elements and all their ancestors (one recursive query per chunk)."""
    parents: dict[int, int | None] = {}
    for chunk in chunks(sorted(set(ids))):
        chain = select(Element.id, Element.parent_id).where(Element.id.in_(chunk)).cte(recursive=True)
        chain = chain.union(
            select(Element.id, Element.parent_id).join(chain, Element.id == chain.c.parent_id)
        )
        parents.update((row.id, row.parent_id) for row in db.execute(select(chain.c.id, chain.c.parent_id)))
    return parents


def subtrees(db: Session, root_ids: Sequence[int]) -> list[int]:
    """The roots and all their descendants, parents before children (one recursive query per chunk)."""
    depth_of: dict[int, int] = {}
    for chunk in chunks(sorted(set(root_ids))):
        tree = select(Element.id, literal(0).label("depth")).where(Element.id.in_(chunk)).cte(recursive=True)
        tree = tree.union_all(
            select(Element.id, (tree.c.depth + 1).label("depth")).join(tree, Element.parent_id == tree.c.id)
        )
        for row in db.execute(select(tree.c.id, func.max(tree.c.depth)).group_by(tree.c.id)):
            depth_of[row[0]] = max(depth_of.get(row[0], 0), int(row[1]))
    return sorted(depth_of, key=lambda element_id: (depth_of[element_id], element_id))


def last_child_positions(
    db: Session, type_id: int, parent_ids: Iterable[int | None]
) -> dict[int | None, int]:
    """parent id (None: top level) -> the largest position among its children of the type."""
    wanted = set(parent_ids)
    positions: dict[int | None, int] = {}
    if None in wanted:
        top = db.scalar(
            select(func.max(Element.position)).where(Element.type_id == type_id, Element.parent_id.is_(None))
        )
        if top is not None:
            positions[None] = int(top)
    clauses = [
        (Element.parent_id.in_(chunk), len(chunk))
        for chunk in chunks(sorted(p for p in wanted if p is not None))
    ]
    for batch in or_batches(clauses):
        for row in db.execute(
            select(Element.parent_id, func.max(Element.position))
            .where(Element.type_id == type_id, or_(*batch))
            .group_by(Element.parent_id)
        ):
            positions[row[0]] = int(row[1])
    return positions


def insert_elements(db: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    bulk_insert.insert_rows(db, ELEMENT, rows)


def ids_by_name(db: Session, type_id: int, names: Iterable[str]) -> dict[str, int]:
    """name -> id of the type's elements among `names` (names are unique per type)."""
    found: dict[str, int] = {}
    postgresql = db.get_bind().dialect.name == "postgresql"
    for chunk in chunks(sorted(set(names))):
        statement = (
            _ids_by_name_postgresql(type_id)
            if postgresql
            else select(Element.name, Element.id).where(Element.type_id == type_id, Element.name.in_(chunk))
        )
        for name, element_id in db.execute(statement, {"names": list(chunk)} if postgresql else {}):
            found[name] = element_id
    return found


def _ids_by_name_postgresql(type_id: int) -> Select[tuple[str, int]]:
    """One lookup in the (type, name) index per name. Before autovacuum has analyzed a table that a bulk
    load has just filled, PostgreSQL plans `name IN (…)` as a filter over every element of the type, which
    made a load of 100,000 elements slow down with every request (bench/massdata_scale.py); a lateral
    lookup with LIMIT 1 is planned as an index probe whatever the statistics say."""
    names = func.unnest(bindparam("names", type_=ARRAY(String))).table_valued("name").render_derived(name="n")
    match = (
        select(Element.id)
        .where(Element.type_id == type_id, Element.name == names.c.name)
        .limit(1)
        .lateral("e")
    )
    return select(names.c.name, match.c.id).select_from(names).join(match, true())


def set_parents(db: Session, parents: Mapping[int, int]) -> None:
    """element id -> new parent id, for elements whose parent was created in the same request."""
    if not parents:
        return
    statement = (
        update(ELEMENT)
        .where(ELEMENT.c.id == bindparam("element_id"))
        .values(parent_id=bindparam("new_parent"))
    )
    db.execute(statement, [{"element_id": e, "new_parent": p} for e, p in parents.items()])


def update_elements(db: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """Each row: element_id, name, description, parent_id, position, revision, last_modified_at/by."""
    if not rows:
        return
    statement = (
        update(ELEMENT)
        .where(ELEMENT.c.id == bindparam("element_id"))
        .values(
            name=bindparam("new_name"),
            description=bindparam("new_description"),
            parent_id=bindparam("new_parent_id"),
            position=bindparam("new_position"),
            revision=bindparam("new_revision"),
            last_modified_at=bindparam("modified_at"),
            last_modified_by=bindparam("modified_by"),
        )
    )
    for start in range(0, len(rows), ROWS_PER_CALL):
        db.execute(statement, list(rows[start : start + ROWS_PER_CALL]))


def insert_values(db: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    bulk_insert.insert_rows(db, ELEMENT_VALUE, rows)


def delete_values(db: Session, pairs: Iterable[tuple[int, int]]) -> None:
    """Every value of each (element id, attribute id) pair."""
    rows = [{"element": e, "attribute": a} for e, a in pairs]
    if not rows:
        return
    statement = delete(ELEMENT_VALUE).where(
        and_(
            ELEMENT_VALUE.c.element_id == bindparam("element"),
            ELEMENT_VALUE.c.attribute_id == bindparam("attribute"),
        )
    )
    for start in range(0, len(rows), ROWS_PER_CALL):
        db.execute(statement, rows[start : start + ROWS_PER_CALL])


def restore_stamps(db: Session, stamps: Sequence[tuple[int, int, Any, str]]) -> None:
    """(element id, revision, last modified at, by): put back what a write that changed nothing moved."""
    if not stamps:
        return
    statement = (
        update(ELEMENT)
        .where(ELEMENT.c.id == bindparam("element_id"))
        .values(
            revision=bindparam("old_revision"),
            last_modified_at=bindparam("old_at"),
            last_modified_by=bindparam("old_by"),
        )
    )
    rows = [{"element_id": e, "old_revision": r, "old_at": a, "old_by": b} for e, r, a, b in stamps]
    for start in range(0, len(rows), ROWS_PER_CALL):
        db.execute(statement, rows[start : start + ROWS_PER_CALL])
