"""Lookups of stored elements (by id, by name, logins, partners), locks, the hierarchy and placements, and
the chunking every element query shares."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import (
    ARRAY,
    Select,
    String,
    and_,
    bindparam,
    func,
    literal,
    or_,
    select,
    text,
    true,
)
from sqlalchemy.orm import Session

from blockrepo.access.models import User
from blockrepo.elements.models import Element, Relation
from blockrepo.elements.values import TypedValue
from blockrepo.storage import transactions

# Ids per IN list: far below the bind-parameter limits of SQLite (32766) and PostgreSQL (65535).
CHUNK_SIZE = 500


T = TypeVar("T")


def chunks(items: Sequence[T], size: int = CHUNK_SIZE) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def or_batches(clauses: Sequence[tuple[Any, int]], limit: int = 4 * CHUNK_SIZE) -> Iterator[list[Any]]:
    """Group (clause, bind parameter count) pairs into OR-able batches of at most `limit` parameters."""
    batch: list[Any] = []
    size = 0
    for clause, count in clauses:
        if batch and size + count > limit:
            yield batch
            batch, size = [], 0
        batch.append(clause)
        size += count + 1
    if batch:
        yield batch


def typed_row(row: Any) -> TypedValue:
    """The value in a row of the typed value columns (text_value … literal_id) of either value table."""
    return TypedValue(
        text=row.text_value,
        number=row.number_value,
        date=row.date_value,
        date_end=row.date_end,
        boolean=row.bool_value,
        literal_id=row.literal_id,
    )


def any_element(db: Session) -> bool:
    """Whether the repository holds at least one element."""
    return db.scalar(select(Element.id).limit(1)) is not None


def find_by_ids(db: Session, ids: Iterable[int]) -> dict[int, tuple[int, str]]:
    """id -> (type id, name) of every existing element among `ids` (any type)."""
    found: dict[int, tuple[int, str]] = {}
    for chunk in chunks(sorted(set(ids))):
        for r in db.execute(select(Element.id, Element.type_id, Element.name).where(Element.id.in_(chunk))):
            found[r.id] = (r.type_id, r.name)
    return found


def ids_after(db: Session, type_id: int, after: int, limit: int) -> list[int]:
    """Up to `limit` ids of the type's elements above `after`, ascending."""
    statement = (
        select(Element.id)
        .where(Element.type_id == type_id, Element.id > after)
        .order_by(Element.id)
        .limit(limit)
    )
    return [int(element_id) for element_id in db.scalars(statement)]


def find_by_names(db: Session, names: Mapping[int, Iterable[str]]) -> dict[tuple[int, str], int]:
    """(type id, name) -> id for every existing element among the names asked per type (one query unless
    there are more names than fit one statement)."""
    found: dict[tuple[int, str], int] = {}
    lists = [
        (type_id, chunk) for type_id, type_names in names.items() for chunk in chunks(sorted(set(type_names)))
    ]
    connection = db.connection()
    if connection.dialect.name == "sqlite":
        # Handed to the driver as it is, like `ids_by_name`: an import resolves thousands of names a chunk,
        # and SQLAlchemy's expansion of the IN lists and its rows cost more than the query.
        for batch in or_batches([(each, len(each[1])) for each in lists]):
            where = " OR ".join(f"(type_id = ? AND name IN ({', '.join('?' * len(c))}))" for _, c in batch)
            parameters = [value for type_id, chunk in batch for value in (type_id, *chunk)]
            sql = f"SELECT id, type_id, name FROM element WHERE {where}"
            for element_id, type_id, name in connection.exec_driver_sql(sql, tuple(parameters)):
                found[(type_id, name)] = element_id
        return found
    clauses = [
        (and_(Element.type_id == type_id, Element.name.in_(chunk)), len(chunk)) for type_id, chunk in lists
    ]
    for batch in or_batches(clauses):
        for r in connection.execute(select(Element.id, Element.type_id, Element.name).where(or_(*batch))):
            found[(r.type_id, r.name)] = r.id
    return found


def existing_logins(db: Session, logins: Iterable[str]) -> set[str]:
    """The logins among `logins` that name a user (one query per chunk: a body may list many)."""
    found: set[str] = set()
    for chunk in chunks(sorted(set(logins))):
        found.update(db.scalars(select(User.login).where(User.login.in_(chunk))))
    return found


@dataclass(frozen=True, slots=True)
class PartnerCheck:
    """Elements that would join `holder` on a relation type whose opposite end holds one value."""

    relation_type_id: int
    holder_is_source: bool
    holder_id: int | None
    other_ids: tuple[int, ...]


def taken_partners(db: Session, checks: Sequence[PartnerCheck]) -> dict[tuple[int, bool, int], int]:
    """(relation type id, holder is source, other id) -> the partner that the other element already has on
    its single-valued end, when that partner is not the holder itself (one query for all checks)."""
    clauses = []
    for check in checks:
        column = Relation.target_id if check.holder_is_source else Relation.source_id
        for chunk in chunks(sorted(set(check.other_ids))):
            clauses.append(
                (and_(Relation.relation_type_id == check.relation_type_id, column.in_(chunk)), len(chunk))
            )
    # (relation type, holder is source, other) -> the holders that want that other element; indexed so that
    # each row found costs one lookup, however many checks and ids there are (bulk writes pass thousands).
    wanted: dict[tuple[int, bool, int], set[int | None]] = {}
    for check in checks:
        for other_id in check.other_ids:
            wanted.setdefault((check.relation_type_id, check.holder_is_source, other_id), set()).add(
                check.holder_id
            )
    taken: dict[tuple[int, bool, int], int] = {}
    for batch in or_batches(clauses):
        for r in db.execute(
            select(Relation.relation_type_id, Relation.source_id, Relation.target_id).where(or_(*batch))
        ):
            sides = ((True, r.source_id, r.target_id), (False, r.target_id, r.source_id))
            for holder_is_source, holder, other in sides:
                key = (r.relation_type_id, holder_is_source, other)
                requesters = wanted.get(key)
                # Taken when someone other than its current partner wants the other element.
                if requesters and requesters != {holder}:
                    taken[key] = holder
    return taken


# --- many elements at once ----------------------------------------------------------------


def plan_with_parameters(db: Session) -> None:
    """PostgreSQL: plan the rest of the transaction's statements with their actual parameters.

    psycopg prepares a statement at its fifth execution, and PostgreSQL may then keep, per connection, a
    generic plan made while a table was small or had no statistics yet (a bulk load into a new repository,
    before autovacuum analyzes it): name lookups then scanned every element of the type, and each
    10,000-element request of a 100,000-element load took longer than the one before (figures in
    bench/README.md). A bulk write plans its few dozen statements at no noticeable cost;
    reads keep their cached plans, which planning 1,000-id arrays anew would slow down."""
    if db.get_bind().dialect.name == "postgresql":
        db.execute(text("SET LOCAL plan_cache_mode = force_custom_plan"))


def lock_structure(db: Session) -> None:
    """Serialise a structural element write with every other one (`storage.transactions.lock_structure`)."""
    transactions.lock_structure(db)


def lock_elements(db: Session, type_id: int, ids: Iterable[int]) -> dict[int, int]:
    """id -> revision of the elements of the type among `ids`, locked until the transaction ends (SQLite:
    the writer already holds the lock). Ids in ascending order, so that two writers lock in one order."""
    found: dict[int, int] = {}
    for chunk in chunks(sorted(set(ids))):
        statement = select(Element.id, Element.revision).where(
            Element.type_id == type_id, Element.id.in_(chunk)
        )
        found.update((row.id, row.revision) for row in db.execute(statement.with_for_update()))
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


def ids_by_name(db: Session, type_id: int, names: Iterable[str]) -> dict[str, int]:
    """name -> id of the type's elements among `names` (names are unique per type)."""
    found: dict[str, int] = {}
    if db.get_bind().dialect.name == "postgresql":
        for chunk in chunks(sorted(set(names))):
            for name, element_id in db.execute(_ids_by_name_postgresql(type_id), {"names": list(chunk)}):
                found[name] = element_id
        return found
    connection = db.connection()
    for chunk in chunks(sorted(set(names))):
        # Handed to the driver as it is: SQLAlchemy's expansion of an IN list of 500 names cost more than
        # the query (a bulk write checks every name it creates).
        marks = ", ".join("?" * len(chunk))
        sql = f"SELECT name, id FROM element WHERE type_id = ? AND name IN ({marks})"
        for name, element_id in connection.exec_driver_sql(sql, (type_id, *chunk)):
            found[name] = element_id
    return found


def _ids_by_name_postgresql(type_id: int) -> Select[str, int]:
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


# --- whole types (imports, exports) --------------------------------------------------------------------


def placement_by_name(db: Session, type_id: int) -> dict[str, tuple[int, int | None, int]]:
    """name -> (id, parent id, position) of every element of the type."""
    rows = db.execute(
        select(Element.name, Element.id, Element.parent_id, Element.position).where(
            Element.type_id == type_id
        )
    )
    return {row[0]: (row[1], row[2], row[3]) for row in rows}


def placements(db: Session, type_id: int) -> list[tuple[int, int | None, int]]:
    """(id, parent id, position) of every element of the type."""
    return [
        (row[0], row[1], row[2])
        for row in db.execute(
            select(Element.id, Element.parent_id, Element.position).where(Element.type_id == type_id)
        )
    ]
