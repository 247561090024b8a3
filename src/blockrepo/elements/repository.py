"""All SQL of building blocks: batched reads (a fixed number of queries per batch) and set-based writes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar, cast

from sqlalchemy import (
    ARRAY,
    Select,
    String,
    Table,
    and_,
    bindparam,
    delete,
    exists,
    func,
    insert,
    literal,
    or_,
    select,
    text,
    true,
    update,
)
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import BindParameter

from blockrepo.access.models import User
from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.values import TypedValue
from blockrepo.metamodel.snapshot import RelationEnd
from blockrepo.storage import bulk_insert
from blockrepo.storage.engine import TypedStatement, driver_rows

# Ids per IN list: far below the bind-parameter limits of SQLite (32766) and PostgreSQL (65535).
CHUNK_SIZE = 500
# Many-row INSERTs go to the tables, not the mapped classes: a Core executemany skips the ORM's per-row
# bookkeeping, which costs more than the insert itself on a bulk write.
ELEMENT = cast(Table, Element.__table__)
ELEMENT_VALUE = cast(Table, ElementValue.__table__)
RELATION = cast(Table, Relation.__table__)
RELATION_VALUE = cast(Table, RelationValue.__table__)
T = TypeVar("T")
ROWS_PER_CALL = bulk_insert.ROWS_PER_CALL
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


@dataclass(slots=True)
class LoadedRelation:
    """One value of a relation end: the relation row seen from the element that holds the end."""

    relation_id: int
    other_id: int
    other_name: str
    position: int
    values: dict[int, list[TypedValue]] = field(default_factory=dict)


@dataclass(slots=True)
class LoadedElement:
    id: int
    type_id: int
    name: str
    description: str
    parent_id: int | None
    parent_name: str | None
    position: int
    revision: int
    last_modified_at: dt.datetime
    last_modified_by: str
    children: list[tuple[int, str]] = field(default_factory=list)
    values: dict[int, list[TypedValue]] = field(default_factory=dict)
    ends: dict[str, list[LoadedRelation]] = field(default_factory=dict)


@dataclass(frozen=True)
class Selection:
    """Which parts of the elements a read loads (what is not selected costs no query)."""

    children: bool = True
    attribute_ids: frozenset[int] = frozenset()
    ends: tuple[RelationEnd, ...] = ()
    relation_attribute_ids: frozenset[int] = frozenset()


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


def _typed(row: Any) -> TypedValue:
    return TypedValue(
        text=row.text_value,
        number=row.number_value,
        date=row.date_value,
        date_end=row.date_end,
        boolean=row.bool_value,
        literal_id=row.literal_id,
    )


def load_elements(
    db: Session, type_id: int, ids: Sequence[int], selection: Selection
) -> dict[int, LoadedElement]:
    """The elements of one type among `ids` (others are skipped), with what `selection` asks for.

    Per chunk of ids: elements with parent names; children; values; relations of source ends; relations of
    target ends; relation values: six queries at most, however many ids, values or relations there are."""
    loaded: dict[int, LoadedElement] = {}
    unique_ids = list(dict.fromkeys(ids))
    for chunk in chunks(unique_ids):
        loaded.update(_load_chunk(db, type_id, chunk, selection))
    return loaded


# Aliases built once: a fresh `aliased()` per call re-adapts its columns on first use, which cost more
# than the queries themselves on a GET by id (measured with bench/get_by_id.py).
_PARENT = aliased(Element, name="parent")
_OTHER = aliased(Element, name="other")

# The statements of a batched load, built once with expanding parameters: building and coercing a select
# per call cost more than running it (an update loads its element twice, bench/hot_path.py). Values come
# as columns, not mapped objects, so no identity map is filled.
_IDS: BindParameter[Any] = bindparam("ids", expanding=True)
_LOAD_ELEMENTS = (
    select(
        Element.id,
        Element.name,
        Element.description,
        Element.parent_id,
        _PARENT.name.label("parent_name"),
        Element.position,
        Element.revision,
        Element.last_modified_at,
        Element.last_modified_by,
    )
    .outerjoin(_PARENT, _PARENT.id == Element.parent_id)
    .where(Element.id.in_(_IDS), Element.type_id == bindparam("type_id"))
)
_LOAD_CHILDREN = (
    select(Element.parent_id, Element.id, Element.name)
    .where(Element.parent_id.in_(_IDS))
    .order_by(Element.parent_id, Element.position, Element.id)
)
_VALUE_COLUMNS = (
    ElementValue.text_value,
    ElementValue.number_value,
    ElementValue.date_value,
    ElementValue.date_end,
    ElementValue.bool_value,
    ElementValue.literal_id,
)
_LOAD_VALUES = (
    select(ElementValue.element_id, ElementValue.attribute_id, *_VALUE_COLUMNS)
    .where(
        ElementValue.element_id.in_(_IDS),
        ElementValue.attribute_id.in_(bindparam("attribute_ids", expanding=True)),
    )
    .order_by(ElementValue.element_id, ElementValue.attribute_id, ElementValue.position, ElementValue.id)
)
_RELATION_COLUMNS = (
    Relation.id,
    Relation.relation_type_id,
    Relation.source_id,
    Relation.target_id,
    Relation.position,
    _OTHER.name,
)
_LOAD_SOURCE_RELATIONS = (
    select(*_RELATION_COLUMNS)
    .join(_OTHER, _OTHER.id == Relation.target_id)
    .where(
        Relation.source_id.in_(_IDS),
        Relation.relation_type_id.in_(bindparam("relation_type_ids", expanding=True)),
    )
    .order_by(Relation.source_id, Relation.relation_type_id, Relation.position, Relation.id)
)
_LOAD_TARGET_RELATIONS = (
    select(*_RELATION_COLUMNS)
    .join(_OTHER, _OTHER.id == Relation.source_id)
    .where(
        Relation.target_id.in_(_IDS),
        Relation.relation_type_id.in_(bindparam("relation_type_ids", expanding=True)),
    )
    .order_by(Relation.target_id, Relation.relation_type_id, Relation.id)
)
_RELATION_VALUE_COLUMNS = (
    RelationValue.relation_id,
    RelationValue.attribute_id,
    RelationValue.text_value,
    RelationValue.number_value,
    RelationValue.date_value,
    RelationValue.date_end,
    RelationValue.bool_value,
    RelationValue.literal_id,
)
_LOAD_RELATION_VALUES = (
    select(*_RELATION_VALUE_COLUMNS)
    .where(
        RelationValue.relation_id.in_(
            select(Relation.id).where(
                or_(
                    and_(
                        Relation.source_id.in_(_IDS),
                        Relation.relation_type_id.in_(bindparam("outgoing", expanding=True)),
                    ),
                    and_(
                        Relation.target_id.in_(_IDS),
                        Relation.relation_type_id.in_(bindparam("incoming", expanding=True)),
                    ),
                )
            )
        ),
        RelationValue.attribute_id.in_(bindparam("attribute_ids", expanding=True)),
    )
    .order_by(RelationValue.relation_id, RelationValue.attribute_id, RelationValue.position, RelationValue.id)
)


def _load_chunk(
    db: Session, type_id: int, ids: Sequence[int], selection: Selection
) -> dict[int, LoadedElement]:
    rows = db.execute(_LOAD_ELEMENTS, {"ids": list(ids), "type_id": type_id})
    loaded = {
        r.id: LoadedElement(
            id=r.id,
            type_id=type_id,
            name=r.name,
            description=r.description,
            parent_id=r.parent_id,
            parent_name=r.parent_name,
            position=r.position,
            revision=r.revision,
            last_modified_at=r.last_modified_at,
            last_modified_by=r.last_modified_by,
        )
        for r in rows
    }
    if not loaded:
        return loaded
    found = list(loaded)
    if selection.children:
        for row in db.execute(_LOAD_CHILDREN, {"ids": found}):
            loaded[row.parent_id].children.append((row.id, row.name))
    if selection.attribute_ids:
        parameters = {"ids": found, "attribute_ids": sorted(selection.attribute_ids)}
        for r in db.execute(_LOAD_VALUES, parameters):
            loaded[r.element_id].values.setdefault(r.attribute_id, []).append(_typed(r))
    if selection.ends:
        _load_relations(db, loaded, found, selection)
    return loaded


def _load_relations(
    db: Session, loaded: dict[int, LoadedElement], ids: Sequence[int], selection: Selection
) -> None:
    source_ends = {e.relation_type.id: e for e in selection.ends if e.holder_is_source}
    target_ends = {e.relation_type.id: e for e in selection.ends if not e.holder_is_source}
    by_relation: dict[int, LoadedRelation] = {}
    for element in loaded.values():
        for end in selection.ends:
            element.ends[end.name] = []
    if source_ends:
        parameters = {"ids": ids, "relation_type_ids": sorted(source_ends)}
        for r in db.execute(_LOAD_SOURCE_RELATIONS, parameters):
            item = LoadedRelation(r.id, r.target_id, r.name, r.position)
            loaded[r.source_id].ends[source_ends[r.relation_type_id].name].append(item)
            by_relation[r.id] = item
    if target_ends:
        # A target end has no order of its own: its values come in the order the relations were made.
        parameters = {"ids": ids, "relation_type_ids": sorted(target_ends)}
        for r in db.execute(_LOAD_TARGET_RELATIONS, parameters):
            item = LoadedRelation(r.id, r.source_id, r.name, r.position)
            loaded[r.target_id].ends[target_ends[r.relation_type_id].name].append(item)
            # A self relation can show up on both ends of one batch; its values belong to both.
            by_relation.setdefault(r.id, item)
            if by_relation[r.id] is not item:
                item.values = by_relation[r.id].values
    if not selection.relation_attribute_ids:
        return
    with_attributes_out = [
        rt_id for rt_id, end in source_ends.items() if _has_selected(end, selection.relation_attribute_ids)
    ]
    with_attributes_in = [
        rt_id for rt_id, end in target_ends.items() if _has_selected(end, selection.relation_attribute_ids)
    ]
    if not with_attributes_out and not with_attributes_in:
        return
    parameters = {
        "ids": ids,
        "outgoing": with_attributes_out,
        "incoming": with_attributes_in,
        "attribute_ids": sorted(selection.relation_attribute_ids),
    }
    for value in db.execute(_LOAD_RELATION_VALUES, parameters):
        target = by_relation.get(value.relation_id)
        if target is not None:
            target.values.setdefault(value.attribute_id, []).append(_typed(value))


def _has_selected(end: RelationEnd, attribute_ids: frozenset[int]) -> bool:
    return any(a.id in attribute_ids for a in end.relation_type.attributes)


# --- one element, read to be updated --------------------------------------------------------------------


_ID: BindParameter[int] = bindparam("element_id")
# Locked on PostgreSQL (the row only: the parent's name comes from the nullable side of an outer join);
# on SQLite the writer holds the database lock already.
_ONE_ELEMENT = TypedStatement(
    select(
        Element.name,
        Element.description,
        Element.parent_id,
        _PARENT.name,
        Element.position,
        Element.revision,
        Element.last_modified_at,
        Element.last_modified_by,
    )
    .outerjoin(_PARENT, _PARENT.id == Element.parent_id)
    .where(Element.id == _ID, Element.type_id == bindparam("type_id"))
    .with_for_update(of=Element)
)
_ONE_CHILDREN = TypedStatement(
    select(Element.id, Element.name).where(Element.parent_id == _ID).order_by(Element.position, Element.id)
)
_ONE_VALUES = TypedStatement(
    select(ElementValue.attribute_id, *_VALUE_COLUMNS)
    .where(ElementValue.element_id == _ID)
    .order_by(ElementValue.attribute_id, ElementValue.position, ElementValue.id)
)
_ONE_AS_SOURCE = TypedStatement(
    select(Relation.id, Relation.relation_type_id, Relation.target_id, _OTHER.name, Relation.position)
    .join(_OTHER, _OTHER.id == Relation.target_id)
    .where(Relation.source_id == _ID)
    .order_by(Relation.relation_type_id, Relation.position, Relation.id)
)
_ONE_AS_TARGET = TypedStatement(
    select(Relation.id, Relation.relation_type_id, Relation.source_id, _OTHER.name, Relation.position)
    .join(_OTHER, _OTHER.id == Relation.source_id)
    .where(Relation.target_id == _ID)
    .order_by(Relation.relation_type_id, Relation.id)
)
_ONE_RELATION_VALUES = TypedStatement(
    select(*_RELATION_VALUE_COLUMNS)
    .where(
        RelationValue.relation_id.in_(
            select(Relation.id).where(or_(Relation.source_id == _ID, Relation.target_id == _ID))
        )
    )
    .order_by(RelationValue.relation_id, RelationValue.attribute_id, RelationValue.position, RelationValue.id)
)


def _typed_columns(row: Sequence[Any]) -> TypedValue:
    """A value from (..., text, number, date, date end, boolean, literal) at the end of a typed row."""
    return TypedValue(row[-6], row[-5], row[-4], row[-3], row[-2], row[-1])


def load_element_for_update(
    db: Session, type_id: int, element_id: int, selection: Selection
) -> LoadedElement | None:
    """The element of the type with what `selection` asks for (None: there is none), its row locked until
    the transaction ends: the state a single update checks its precondition and plans against, read
    once. One statement each for the row, children, values, relations as source, as target and relation
    values, whatever the element holds; what the selection leaves out is skipped as the rows come."""
    connection = db.connection()
    key = {"element_id": element_id}
    row = next(iter(_ONE_ELEMENT.rows(connection, {**key, "type_id": type_id})), None)
    if row is None:
        return None
    name, description, parent_id, parent_name, position, revision, modified_at, modified_by = row
    element = LoadedElement(
        element_id,
        type_id,
        name,
        description,
        parent_id,
        parent_name,
        position,
        revision,
        modified_at,
        modified_by,
    )
    if selection.children:
        element.children = [(child[0], child[1]) for child in _ONE_CHILDREN.rows(connection, key)]
    if selection.attribute_ids:
        wanted = selection.attribute_ids
        for value in _ONE_VALUES.rows(connection, key):
            if value[0] in wanted:
                element.values.setdefault(value[0], []).append(_typed_columns(value))
    if not selection.ends:
        return element
    by_relation: dict[int, LoadedRelation] = {}
    element.ends = {end.name: [] for end in selection.ends}
    for holds_source, statement in ((True, _ONE_AS_SOURCE), (False, _ONE_AS_TARGET)):
        ends = {e.relation_type.id: e for e in selection.ends if e.holder_is_source is holds_source}
        if not ends:
            continue
        for relation_id, relation_type_id, other_id, other_name, relation_position in statement.rows(
            connection, key
        ):
            holding = ends.get(relation_type_id)
            if holding is None:
                continue
            item = LoadedRelation(relation_id, other_id, other_name, relation_position)
            element.ends[holding.name].append(item)
            # A relation of the element with itself is on both ends; its values belong to both.
            known = by_relation.setdefault(relation_id, item)
            if known is not item:
                item.values = known.values
    attribute_ids = selection.relation_attribute_ids
    if not any(_has_selected(end, attribute_ids) for end in selection.ends):
        return element
    for value in _ONE_RELATION_VALUES.rows(connection, key):
        target = by_relation.get(value[0])
        if target is not None and value[1] in attribute_ids:
            target.values.setdefault(value[1], []).append(_typed_columns(value))
    return element


# --- lookups used by validation -------------------------------------------------------------------


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


def find_by_names(db: Session, names: Mapping[int, Iterable[str]]) -> dict[tuple[int, str], int]:
    """(type id, name) -> id for every existing element among the names asked per type (one query unless
    there are more names than fit one statement)."""
    clauses = [
        (and_(Element.type_id == type_id, Element.name.in_(chunk)), len(chunk))
        for type_id, type_names in names.items()
        for chunk in chunks(sorted(set(type_names)))
    ]
    found: dict[tuple[int, str], int] = {}
    for batch in or_batches(clauses):
        for r in db.execute(select(Element.id, Element.type_id, Element.name).where(or_(*batch))):
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


# --- values of one attribute everywhere (metamodel edits) ----------------------------------------------


def _element_values_where(
    attribute_id: int, type_ids: Collection[int] | None, literal_ids: Collection[int] | None
) -> Any:
    condition = ElementValue.attribute_id == attribute_id
    if type_ids is not None:
        condition = and_(
            condition,
            ElementValue.element_id.in_(select(Element.id).where(Element.type_id.in_(list(type_ids)))),
        )
    if literal_ids is not None:
        condition = and_(condition, ElementValue.literal_id.in_(list(literal_ids)))
    return condition


def attribute_values(
    db: Session,
    attribute_id: int,
    *,
    type_ids: Collection[int] | None = None,
    holding: Collection[int] | None = None,
) -> list[tuple[int, str, int, int | None, TypedValue]]:
    """(element id, element name, type id, literal id, value) of every value of the attribute (on elements
    of `type_ids`, or all; only on elements holding one of the literals `holding`, or all), in each
    element's order."""
    condition = _element_values_where(attribute_id, type_ids, None)
    if holding is not None:
        condition = and_(
            condition,
            ElementValue.element_id.in_(
                select(ElementValue.element_id).where(
                    ElementValue.attribute_id == attribute_id, ElementValue.literal_id.in_(list(holding))
                )
            ),
        )
    rows = db.execute(
        select(ElementValue, Element.name, Element.type_id)
        .join(Element, Element.id == ElementValue.element_id)
        .where(condition)
        .order_by(ElementValue.element_id, ElementValue.position, ElementValue.id)
    ).all()
    return [
        (value.element_id, name, type_id, value.literal_id, _typed(value)) for value, name, type_id in rows
    ]


def delete_attribute_everywhere(
    db: Session,
    attribute_id: int,
    *,
    type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
) -> None:
    """Delete the attribute's values on elements (of `type_ids`, or all; of `literal_ids`, or all)."""
    db.execute(
        delete(ElementValue)
        .where(_element_values_where(attribute_id, type_ids, literal_ids))
        .execution_options(synchronize_session=False)
    )


def _relation_values_where(
    attribute_id: int, relation_type_ids: Collection[int] | None, literal_ids: Collection[int] | None
) -> Any:
    condition = RelationValue.attribute_id == attribute_id
    if relation_type_ids is not None:
        condition = and_(
            condition,
            RelationValue.relation_id.in_(
                select(Relation.id).where(Relation.relation_type_id.in_(list(relation_type_ids)))
            ),
        )
    if literal_ids is not None:
        condition = and_(condition, RelationValue.literal_id.in_(list(literal_ids)))
    return condition


@dataclass(frozen=True, slots=True)
class RelationValueRow:
    """One value of a relation attribute with the relation's two elements as (id, name, type id)."""

    relation_id: int
    relation_type_id: int
    source: tuple[int, str, int]
    target: tuple[int, str, int]
    literal_id: int | None
    value: TypedValue


def relation_attribute_values(
    db: Session,
    attribute_id: int,
    *,
    relation_type_ids: Collection[int] | None = None,
    holding: Collection[int] | None = None,
) -> list[RelationValueRow]:
    """Every value of the relation attribute (on relations of `relation_type_ids`, or all; only on
    relations holding one of the literals `holding`, or all), in each relation's order."""
    condition = _relation_values_where(attribute_id, relation_type_ids, None)
    if holding is not None:
        condition = and_(
            condition,
            RelationValue.relation_id.in_(
                select(RelationValue.relation_id).where(
                    RelationValue.attribute_id == attribute_id, RelationValue.literal_id.in_(list(holding))
                )
            ),
        )
    source = aliased(Element)
    target = aliased(Element)
    rows = db.execute(
        select(
            RelationValue,
            Relation.relation_type_id,
            source.id,
            source.name,
            source.type_id,
            target.id,
            target.name,
            target.type_id,
        )
        .join(Relation, Relation.id == RelationValue.relation_id)
        .join(source, source.id == Relation.source_id)
        .join(target, target.id == Relation.target_id)
        .where(condition)
        .order_by(RelationValue.relation_id, RelationValue.position, RelationValue.id)
    ).all()
    return [
        RelationValueRow(
            row[0].relation_id,
            row[1],
            (row[2], row[3], row[4]),
            (row[5], row[6], row[7]),
            row[0].literal_id,
            _typed(row[0]),
        )
        for row in rows
    ]


def delete_relation_attribute_everywhere(
    db: Session,
    attribute_id: int,
    *,
    relation_type_ids: Collection[int] | None = None,
    literal_ids: Collection[int] | None = None,
) -> None:
    """Delete the attribute's values on relations (of `relation_type_ids`, or all; of `literal_ids`, or
    all)."""
    db.execute(
        delete(RelationValue)
        .where(_relation_values_where(attribute_id, relation_type_ids, literal_ids))
        .execution_options(synchronize_session=False)
    )


# --- what metamodel edits ask of the stored elements ---------------------------------------------------


def type_has_elements(db: Session, type_id: int) -> bool:
    return bool(db.scalar(select(exists().where(Element.type_id == type_id))))


def type_has_parents(db: Session, type_id: int) -> bool:
    return bool(db.scalar(select(exists().where(Element.type_id == type_id, Element.parent_id.is_not(None)))))


def end_holds_several(db: Session, relation_type_id: int, *, holder_is_source: bool) -> bool:
    """Whether some element holds more than one value in this end of the relation type."""
    holder = Relation.source_id if holder_is_source else Relation.target_id
    query = (
        select(holder)
        .where(Relation.relation_type_id == relation_type_id)
        .group_by(holder)
        .having(func.count() > 1)
        .limit(1)
    )
    return db.scalar(query) is not None


def relations_of_type(db: Session, relation_type_id: int) -> list[tuple[int, str, int, str]]:
    """(source id, source name, target id, target name) of every relation of the type, in the order of
    the sources' lists (one query)."""
    source = aliased(Element)
    target = aliased(Element)
    rows = db.execute(
        select(source.id, source.name, target.id, target.name)
        .select_from(Relation)
        .join(source, source.id == Relation.source_id)
        .join(target, target.id == Relation.target_id)
        .where(Relation.relation_type_id == relation_type_id)
        .order_by(Relation.source_id, Relation.position, Relation.id)
    )
    return [(row[0], row[1], row[2], row[3]) for row in rows]


def delete_relations_of_type(db: Session, relation_type_id: int) -> None:
    """Every relation of the type (their values cascade)."""
    db.execute(delete(Relation).where(Relation.relation_type_id == relation_type_id))
