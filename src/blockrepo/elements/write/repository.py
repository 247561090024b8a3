"""The SQL of element writes: set-based inserts of elements, values and relations, updates, deletions
and revision stamps."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    Table,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import Session

from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.repository import chunks, or_batches
from blockrepo.elements.values import TypedValue
from blockrepo.storage import bulk_insert
from blockrepo.storage.engine import TypedStatement, driver_rows, prepared_rows
from blockrepo.storage.prepared import PreparedStatement

# Many-row INSERTs go to the tables, not the mapped classes: a Core executemany skips the ORM's per-row
# bookkeeping, which costs more than the insert itself on a bulk write.
ROWS_PER_CALL = bulk_insert.ROWS_PER_CALL
ELEMENT = cast(Table, Element.__table__)
ELEMENT_VALUE = cast(Table, ElementValue.__table__)
RELATION = cast(Table, Relation.__table__)
RELATION_VALUE = cast(Table, RelationValue.__table__)


# The columns of the tuples many-row inserts take, in order.
ELEMENT_COLUMNS = (
    "type_id",
    "name",
    "description",
    "parent_id",
    "position",
    "revision",
    "created_at",
    "last_modified_at",
    "last_modified_by",
)
_PARENT_OF = itemgetter(ELEMENT_COLUMNS.index("parent_id"))
_WITHOUT_PARENT = tuple(name for name in ELEMENT_COLUMNS if name != "parent_id")
_PICK_WITHOUT_PARENT = itemgetter(*(ELEMENT_COLUMNS.index(name) for name in _WITHOUT_PARENT))
_TYPED_COLUMNS = ("text_value", "number_value", "date_value", "date_end", "bool_value", "literal_id")
VALUE_COLUMNS = ("element_id", "attribute_id", "position", *_TYPED_COLUMNS)
RELATION_COLUMNS = ("relation_type_id", "source_id", "target_id", "position")
RELATION_VALUE_COLUMNS = ("relation_id", "attribute_id", "position", *_TYPED_COLUMNS)


# --- writes ---------------------------------------------------------------------------------------


def bump_elements(db: Session, ids: Iterable[int], *, now: dt.datetime, user: str) -> None:
    """Elements whose JSON changed through a neighbour (relation, child): new revision, modification stamp."""
    for chunk in chunks(sorted(set(ids))):
        db.execute(
            update(Element)
            .where(Element.id.in_(chunk))
            .values(revision=Element.revision + 1, last_modified_at=now, last_modified_by=user)
        )


class NewRelation(NamedTuple):
    """A relation to insert (a tuple: a bulk write makes two an element, and a frozen dataclass was slow
    to build)."""

    relation_type_id: int
    source_id: int
    target_id: int
    position: int | None  # None: last on the source's end
    values: Mapping[int, Sequence[TypedValue]]


def insert_relations(db: Session, relations: Sequence[NewRelation]) -> None:
    """Insert relations and their values (one query for positions, one set-based INSERT, on PostgreSQL a
    COPY, each for relations and values)."""
    if not relations:
        return
    # Column by column (a bulk write makes two an element): the fields transposed at C level.
    type_ids, source_ids, target_ids, positions, values = map(list, zip(*relations, strict=True))
    if None in positions:
        open_positions = {(r.relation_type_id, r.source_id) for r in relations if r.position is None}
        next_position = next_source_positions(db, open_positions)
        for index, r in enumerate(relations):
            if r.position is None:
                key = (r.relation_type_id, r.source_id)
                positions[index] = position = next_position.get(key, 0)
                next_position[key] = position + 1
    columns = dict(zip(RELATION_COLUMNS, (type_ids, source_ids, target_ids, positions), strict=True))
    bulk_insert.insert_columns(db, RELATION, columns)
    if not any(values):  # mostly empty mappings
        return
    with_values = [r for r in relations if any(r.values.values())]
    if not with_values:
        return
    # A plain executemany is one round trip on every driver (RETURNING in parameter order is not, on
    # SQLite); the new ids come back in one query over the unique (type, source, target) triples.
    relation_ids: dict[tuple[int, int, int], int] = {}
    for chunk in chunks(with_values):
        for row in db.execute(
            select(Relation.id, Relation.relation_type_id, Relation.source_id, Relation.target_id).where(
                Relation.relation_type_id.in_({r.relation_type_id for r in chunk}),
                Relation.source_id.in_({r.source_id for r in chunk}),
                Relation.target_id.in_({r.target_id for r in chunk}),
            )
        ):
            relation_ids[(row.relation_type_id, row.source_id, row.target_id)] = row.id
    value_rows = [
        value_row(
            relation_ids[(relation.relation_type_id, relation.source_id, relation.target_id)],
            attribute_id,
            position,
            value,
        )
        for relation in with_values
        for attribute_id, values in relation.values.items()
        for position, value in enumerate(values)
    ]
    bulk_insert.insert_tuples(
        db, RELATION_VALUE, RELATION_VALUE_COLUMNS, value_rows, any_order=True, bucket_by=1
    )  # by attribute


def next_source_positions(db: Session, keys: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """(relation type id, source id) -> the position after the last of the source's relations."""
    by_type: dict[int, list[int]] = {}
    for relation_type_id, source_id in keys:
        by_type.setdefault(relation_type_id, []).append(source_id)
    clauses = [
        (and_(Relation.relation_type_id == rt_id, Relation.source_id.in_(chunk)), len(chunk))
        for rt_id, sources in by_type.items()
        for chunk in chunks(sorted(sources))
    ]
    positions: dict[tuple[int, int], int] = {}
    for batch in or_batches(clauses):
        for r in db.execute(
            select(Relation.relation_type_id, Relation.source_id, func.max(Relation.position).label("last"))
            .where(or_(*batch))
            .group_by(Relation.relation_type_id, Relation.source_id)
        ):
            positions[(r.relation_type_id, r.source_id)] = int(r.last) + 1
    return positions


def delete_relations(db: Session, relation_ids: Iterable[int]) -> None:
    """Relations by id; their values go with them (ON DELETE CASCADE)."""
    for chunk in chunks(sorted(set(relation_ids))):
        db.execute(delete(Relation).where(Relation.id.in_(chunk)))


def set_relation_positions(db: Session, positions: Mapping[int, int]) -> None:
    if positions:
        db.execute(
            update(Relation),
            [{"id": relation_id, "position": position} for relation_id, position in positions.items()],
        )


def replace_relation_values(db: Session, values: Mapping[int, Mapping[int, Sequence[TypedValue]]]) -> None:
    """relation id -> attribute id -> the attribute's new value list."""
    by_attribute: dict[int, list[int]] = {}
    for relation_id, by_attr in values.items():
        for attribute_id in by_attr:
            by_attribute.setdefault(attribute_id, []).append(relation_id)
    clauses = [
        (and_(RelationValue.attribute_id == attribute_id, RelationValue.relation_id.in_(chunk)), len(chunk))
        for attribute_id, relation_ids in by_attribute.items()
        for chunk in chunks(sorted(relation_ids))
    ]
    for batch in or_batches(clauses):
        db.execute(delete(RelationValue).where(or_(*batch)))
    rows = [
        {"relation_id": relation_id, "attribute_id": attribute_id, "position": position, **value.columns()}
        for relation_id, by_attr in values.items()
        for attribute_id, attribute_values in by_attr.items()
        for position, value in enumerate(attribute_values)
    ]
    if rows:
        db.execute(insert(RELATION_VALUE), rows)


def delete_elements(db: Session, ids: Sequence[int]) -> None:
    """Delete elements with their values and relations (ON DELETE CASCADE).

    `ids` lists parents before their children (as `subtree_ids` does); chunks are deleted deepest first, so
    no statement leaves a child pointing at a deleted parent."""
    ordered = list(reversed(ids))
    for chunk in chunks(ordered):
        db.execute(delete(Element).where(Element.id.in_(chunk)))


def insert_elements(db: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    bulk_insert.insert_rows(db, ELEMENT, rows)


def insert_named_elements(
    db: Session, rows_by_type: Sequence[Sequence[Sequence[Any]]]
) -> list[dict[str, int]]:
    """Insert elements, each row a tuple of ELEMENT_COLUMNS, the rows of one type per list; returns
    name -> new id for each list.

    SQLite: the ids are handed out here, in row order, as AUTOINCREMENT would hand them out (one past the
    largest ever used), and the rows go in with them, on the write pipeline when one runs: nothing is read
    back, and the next id is read once for every type. That is safe in a transaction: a SQLite write
    transaction is the only writer from its first write on, and one whose snapshot went stale before it
    could write is refused (SQLITE_BUSY_SNAPSHOT), so no other writer can take these ids in between.
    PostgreSQL: SQLAlchemy's batched INSERT … RETURNING. (Copying the rows and looking their ids up by
    name was slow for a load into an empty repository (bench/README.md): a table the planner still
    believes empty is scanned once per name, whatever the query's shape.)"""
    if not any(rows_by_type):
        return [{} for _ in rows_by_type]
    if db.get_bind().dialect.name != "sqlite":
        statement = insert(ELEMENT).returning(ELEMENT.c.name, ELEMENT.c.id)
        return [
            {
                name: element_id
                for name, element_id in db.execute(
                    statement, [dict(zip(ELEMENT_COLUMNS, row, strict=True)) for row in rows]
                )
            }
            if rows
            else {}
            for rows in rows_by_type
        ]
    first = _next_element_id(db)
    handed_out = []
    for rows in rows_by_type:
        names: Sequence[str] = ELEMENT_COLUMNS
        if list(map(_PARENT_OF, rows)).count(None) == len(rows):
            # Every row at the top: parent_id left out (NULL all the same), as sqlite3 binds a None
            # through its adapter lookup.
            names, rows = _WITHOUT_PARENT, list(map(_PICK_WITHOUT_PARENT, rows))
        ids = range(first, first + len(rows))
        bulk_insert.insert_tuples(db, ELEMENT, ("id", *names), list(map(_with_id, ids, rows)))
        handed_out.append(dict(zip(map(_NAME_OF, rows), ids, strict=True)))
        first += len(rows)
    return handed_out


_NAME_OF = itemgetter(ELEMENT_COLUMNS.index("name"))  # the same index without parent_id, which follows
_NEXT_ELEMENT_ID = (
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'element'), 0), "
    "coalesce((SELECT max(id) FROM element), 0)) + 1"
)


def _with_id(element_id: int, row: Sequence[Any]) -> tuple[Any, ...]:
    return (element_id, *row)


def _next_element_id(db: Session) -> int:
    """SQLite: the id AUTOINCREMENT gives the next element (ids are never used twice, deleted or not)."""
    ((next_id,),) = driver_rows(db.connection(), _NEXT_ELEMENT_ID, ())
    return int(next_id)


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


_UPDATE_ELEMENT = (
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
_DELETE_VALUES = delete(ELEMENT_VALUE).where(
    and_(
        ELEMENT_VALUE.c.element_id == bindparam("element"),
        ELEMENT_VALUE.c.attribute_id == bindparam("attribute"),
    )
)
# The same two statements for a single update, at the driver level as its read.
_UPDATE_ONE_ELEMENT = TypedStatement(_UPDATE_ELEMENT)
_DELETE_ONE_VALUE = TypedStatement(_DELETE_VALUES)


def update_elements(db: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """Each row: element_id, name, description, parent_id, position, revision, last_modified_at/by."""
    if not rows:
        return
    if len(rows) == 1:  # a single update: at the driver level, as its read
        _UPDATE_ONE_ELEMENT.rows(db.connection(), rows[0])
        return
    for start in range(0, len(rows), ROWS_PER_CALL):
        db.execute(_UPDATE_ELEMENT, list(rows[start : start + ROWS_PER_CALL]))


def update_elements_and_values(
    db: Session,
    rows: Sequence[Mapping[str, Any]],
    value_pairs: Sequence[tuple[int, int]],
    value_rows: Sequence[Mapping[str, Any]],
) -> None:
    """`update_elements`, then `delete_values` of the pairs and `insert_values` of the rows. On PostgreSQL
    a single update's three are one statement (`_REPLACE_ONE`): each round trip there costs the worker
    more CPU in psycopg and in waking the server than the statement costs (bench/README.md)."""
    connection = db.connection()
    if len(rows) == 1 and value_pairs and connection.dialect.name == "postgresql":
        columns: dict[str, list[Any]] = {name: [] for name in _REPLACED_COLUMNS}
        for value in value_rows:
            for name in _REPLACED_COLUMNS:
                columns[name].append(value[name])
        # One type per array: a number attribute may hold ints and floats, the column holds doubles.
        columns["number_value"] = [None if n is None else float(n) for n in columns["number_value"]]
        prepared_rows(
            connection,
            _REPLACE_ONE,
            {**rows[0], "replaced": [attribute for _, attribute in value_pairs], **columns},
        )
        return
    update_elements(db, rows)
    delete_values(db, value_pairs)
    insert_values(db, value_rows)


_REPLACED_COLUMNS = (
    "attribute_id",
    "position",
    "text_value",
    "number_value",
    "date_value",
    "date_end",
    "bool_value",
    "literal_id",
)
# The element row's update, its replaced attributes' old values deleted and their new values inserted, in
# one statement: all three see the statement's snapshot, so the DELETE meets only the old values, and the
# row is locked already (read by `load_elements(..., locked=True)`).
_REPLACE_ONE = PreparedStatement(
    "WITH updated AS ("
    " UPDATE element SET name = %(new_name)s, description = %(new_description)s,"
    " parent_id = %(new_parent_id)s::integer, position = %(new_position)s::integer,"
    " revision = %(new_revision)s::integer, last_modified_at = %(modified_at)s,"
    " last_modified_by = %(modified_by)s"
    " WHERE id = %(element_id)s::integer"
    "), replaced AS ("
    " DELETE FROM element_value"
    " WHERE element_id = %(element_id)s::integer AND attribute_id = ANY(%(replaced)s::integer[])"
    ")"
    " INSERT INTO element_value"
    " (element_id, attribute_id, position, text_value, number_value, date_value, date_end, bool_value,"
    " literal_id)"
    " SELECT %(element_id)s::integer, value.* FROM unnest("
    "%(attribute_id)s::integer[], %(position)s::integer[], %(text_value)s::text[],"
    " %(number_value)s::double precision[], %(date_value)s::date[], %(date_end)s::date[],"
    " %(bool_value)s::boolean[], %(literal_id)s::integer[]) AS value"
)


def insert_values(db: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    bulk_insert.insert_rows(db, ELEMENT_VALUE, rows)


def insert_values_by_attribute(
    db: Session, by_attribute: Mapping[int, Sequence[tuple[int, Sequence[TypedValue]]]]
) -> None:
    """Element values given per attribute: attribute id -> (element id, its values in order) of each
    element that holds some (a bulk create's drafts, as they are).

    Written column by column (`bulk_insert.insert_columns`), values that fill the same typed columns in
    one insert without the columns they leave NULL (see `bulk_insert._without_nulls` for why), so that a
    single-valued attribute's values cost no tuple per row: the values of one kind of attribute fill the
    same columns, checked column by column at C level."""
    groups: dict[tuple[int, ...], dict[str, list[Any]]] = {}

    def group_of(filled: tuple[int, ...]) -> dict[str, list[Any]]:
        group = groups.get(filled)
        if group is None:
            group = groups[filled] = {
                "element_id": [],
                "attribute_id": [],
                "position": [],
                **{_TYPED_COLUMNS[index]: [] for index in filled},
            }
        return group

    for attribute_id, held in by_attribute.items():
        holders = list(map(_FIRST, held))
        lists = list(map(_SECOND, held))
        if not lists or max(map(len, lists)) != 1 or min(map(len, lists)) != 1:
            # Several (or no) values to some element: one row per value, then as below.
            holders = [holder for holder, values in held for _ in values]
            positions: list[int] = [position for values in lists for position in range(len(values))]
            typed = [value for values in lists for value in values]
        else:
            positions = [0] * len(holders)
            typed = list(map(_FIRST, lists))
        if not typed:
            continue
        columns = [list(map(getter, typed)) for getter in _TYPED_GETTERS]
        nulls = [column.count(None) for column in columns]
        if all(count in (0, len(typed)) for count in nulls):
            filled = tuple(index for index, count in enumerate(nulls) if not count)
            group = group_of(filled)
            group["element_id"] += holders
            group["attribute_id"] += [attribute_id] * len(typed)
            group["position"] += positions
            for index in filled:
                group[_TYPED_COLUMNS[index]] += columns[index]
            continue
        for holder, position, value in zip(holders, positions, typed, strict=True):  # a mixed attribute
            group = group_of(tuple(index for index, column in enumerate(value) if column is not None))
            group["element_id"].append(holder)
            group["attribute_id"].append(attribute_id)
            group["position"].append(position)
            for index, column in enumerate(value):
                if column is not None:
                    group[_TYPED_COLUMNS[index]].append(column)
    for group in groups.values():
        bulk_insert.insert_columns(db, ELEMENT_VALUE, group)


_FIRST, _SECOND = itemgetter(0), itemgetter(1)
_TYPED_GETTERS = [itemgetter(index) for index in range(len(_TYPED_COLUMNS))]


def value_row(holder_id: int, attribute_id: int, position: int, value: TypedValue) -> tuple[Any, ...]:
    """The row of VALUE_COLUMNS (or RELATION_VALUE_COLUMNS) that stores `value` for its holder."""
    return (holder_id, attribute_id, position, *value)


def delete_values(db: Session, pairs: Iterable[tuple[int, int]]) -> None:
    """Every value of each (element id, attribute id) pair."""
    rows = [{"element": e, "attribute": a} for e, a in pairs]
    if not rows:
        return
    if len(rows) == 1:  # a single update of one attribute: at the driver level, as its read
        _DELETE_ONE_VALUE.rows(db.connection(), rows[0])
        return
    for start in range(0, len(rows), ROWS_PER_CALL):
        db.execute(_DELETE_VALUES, rows[start : start + ROWS_PER_CALL])


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
