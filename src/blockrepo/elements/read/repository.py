"""The SQL that loads elements as typed rows (`LoadedElement`): a batch of ids in a fixed number of
queries, or one id locked, the state a single update checks and plans against."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    Select,
    and_,
    bindparam,
    cast,
    literal_column,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased
from sqlalchemy.sql.elements import BindParameter

from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.repository import chunks, typed_row
from blockrepo.elements.values import TypedValue
from blockrepo.metamodel.snapshot import RelationEnd
from blockrepo.storage.engine import TypedStatement


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


def load_elements(
    db: Session, type_id: int, ids: Sequence[int], selection: Selection, *, locked: bool = False
) -> dict[int, LoadedElement]:
    """The elements of one type among `ids` (others are skipped), with what `selection` asks for.

    Per chunk of ids: elements with parent names; children; values; relations of source ends; relations of
    target ends; relation values: six queries at most, however many ids, values or relations there are.
    With `locked`, `ids` holds one id, whose row stays locked until the transaction ends (`_load_locked`)."""
    if locked:
        (element_id,) = ids
        element = _load_locked(db, type_id, element_id, selection)
        return {} if element is None else {element_id: element}
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
            loaded[r.element_id].values.setdefault(r.attribute_id, []).append(typed_row(r))
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
            target.values.setdefault(value.attribute_id, []).append(typed_row(value))


def _has_selected(end: RelationEnd, attribute_ids: frozenset[int]) -> bool:
    return any(a.id in attribute_ids for a in end.relation_type.attributes)


# --- one element, locked: read to be updated -----------------------------------------------------------


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
    .with_for_update(of=Element),
    prepared=True,
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


@dataclass(frozen=True, slots=True)
class _Parts:
    """Which of an element's parts a locked read loads besides its row."""

    children: bool
    values: bool
    as_source: bool
    as_target: bool
    relation_values: bool


_Rows = Sequence[Sequence[Any]]


class _PartsAtOnce:
    """Children, values, relations and their values of one element in one statement (PostgreSQL): a PUT
    is a dozen round trips there, and each costs the worker more CPU in psycopg than SQLite takes for the
    read (bench/README.md). The parts are a UNION ALL of rows of one shape, a part number first and sort
    keys that give each part the order of its own statement (`_ONE_CHILDREN` ...); the rows come back
    split into the rows those statements return."""

    def __init__(self, parts: _Parts) -> None:
        branches = []
        if parts.children:
            children = _part(1, (Element.position, Element.id), Element.id, name=Element.name)
            branches.append(children.where(Element.parent_id == _ID))
        if parts.values:
            branches.append(
                _part(
                    2,
                    (ElementValue.attribute_id, ElementValue.position, ElementValue.id),
                    ElementValue.attribute_id,
                    values=_VALUE_COLUMNS,
                ).where(ElementValue.element_id == _ID)
            )
        for number, holds, other in (
            (3, Relation.source_id, Relation.target_id),
            (4, Relation.target_id, Relation.source_id),
        ):
            if (parts.as_source, parts.as_target)[number - 3]:
                order = (
                    (Relation.relation_type_id, Relation.position, Relation.id)
                    if number == 3
                    else (Relation.relation_type_id, Relation.id)
                )
                branches.append(
                    _part(
                        number,
                        order,
                        Relation.id,
                        Relation.relation_type_id,
                        other,
                        Relation.position,
                        name=_OTHER.name,
                    )
                    .join(_OTHER, _OTHER.id == other)
                    .where(holds == _ID)
                )
        if parts.relation_values:
            branches.append(
                _part(
                    5,
                    (
                        RelationValue.relation_id,
                        RelationValue.attribute_id,
                        RelationValue.position,
                        RelationValue.id,
                    ),
                    RelationValue.relation_id,
                    RelationValue.attribute_id,
                    values=_RELATION_VALUE_COLUMNS[2:],
                ).where(
                    RelationValue.relation_id.in_(
                        select(Relation.id).where(or_(Relation.source_id == _ID, Relation.target_id == _ID))
                    )
                )
            )
        self._statement = (
            TypedStatement(union_all(*branches).order_by("part", "s1", "s2", "s3", "s4"), prepared=True)
            if branches
            else None
        )

    def rows(self, connection: Connection, key: dict[str, int]) -> tuple[_Rows, _Rows, _Rows, _Rows, _Rows]:
        split: tuple[list[Any], ...] = ([], [], [], [], [])
        if self._statement is not None:
            for row in self._statement.rows(connection, key):
                part = row[0]
                if part == 1:
                    split[0].append((row[5], row[9]))
                elif part == 2:
                    split[1].append((row[5], *row[10:]))
                elif part == 5:
                    split[4].append((row[5], row[6], *row[10:]))
                else:
                    split[part - 1].append((row[5], row[6], row[7], row[9], row[8]))
        return split[0], split[1], split[2], split[3], split[4]


_Column = ColumnElement[Any] | InstrumentedAttribute[Any]


def _part(
    number: int,
    order: Sequence[_Column],
    *integers: _Column,
    name: _Column | None = None,
    values: Sequence[_Column] | None = None,
) -> Select[*tuple[Any, ...]]:
    """One part's rows in the shape of `_PartsAtOnce`: part, four sort keys, four integers, a name and
    the six value columns, NULL (typed, as UNION ALL needs) where the part has nothing."""
    keys: list[_Column] = [*order, *[literal_column("0", Integer)] * (4 - len(order))]
    padded = [*integers, *[cast(null(), Integer)] * (4 - len(integers))]
    typed_nulls = [cast(null(), column.type) for column in _VALUE_COLUMNS]
    return select(
        literal_column(str(number), Integer).label("part"),
        *(key.label(f"s{index}") for index, key in enumerate(keys, 1)),
        *padded,
        name if name is not None else cast(null(), Element.name.type),
        *(values if values is not None else typed_nulls),
    )


# Which parts -> their statement, compiled once (thirty-two at most).
_AT_ONCE: dict[_Parts, _PartsAtOnce] = {}


def _parts_at_once(parts: _Parts) -> _PartsAtOnce:
    statement = _AT_ONCE.get(parts)
    if statement is None:
        statement = _AT_ONCE[parts] = _PartsAtOnce(parts)
    return statement


def _typed_columns(row: Sequence[Any]) -> TypedValue:
    """A value from (..., text, number, date, date end, boolean, literal) at the end of a typed row."""
    return TypedValue(row[-6], row[-5], row[-4], row[-3], row[-2], row[-1])


def _load_locked(db: Session, type_id: int, element_id: int, selection: Selection) -> LoadedElement | None:
    """The element of the type with what `selection` asks for (None: there is none), its row locked until
    the transaction ends: the state a single update checks its precondition and plans against, read
    once. A statement for the row, then one each for children, values, relations as source, as target
    and relation values (on PostgreSQL these five in one: `_parts_at_once`), whatever the element holds;
    what the selection leaves out is skipped as the rows come."""
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
    source_ends = {e.relation_type.id: e for e in selection.ends if e.holder_is_source}
    target_ends = {e.relation_type.id: e for e in selection.ends if not e.holder_is_source}
    attribute_ids = selection.relation_attribute_ids
    parts = _Parts(
        selection.children,
        bool(selection.attribute_ids),
        bool(source_ends),
        bool(target_ends),
        any(_has_selected(end, attribute_ids) for end in selection.ends),
    )
    relation_values: _Rows | None = None  # read after the relations where they are not read at once
    if connection.dialect.name == "postgresql":
        # The row lock is taken first, in a statement of its own: the parts are read in a snapshot taken
        # after it, so they show what the writer that held the lock committed.
        children, values, as_source, as_target, relation_values = _parts_at_once(parts).rows(connection, key)
    else:
        children = _ONE_CHILDREN.rows(connection, key) if parts.children else ()
        values = _ONE_VALUES.rows(connection, key) if parts.values else ()
        as_source = _ONE_AS_SOURCE.rows(connection, key) if parts.as_source else ()
        as_target = _ONE_AS_TARGET.rows(connection, key) if parts.as_target else ()
    if parts.children:
        element.children = [(child[0], child[1]) for child in children]
    wanted = selection.attribute_ids
    for value in values:
        if value[0] in wanted:
            element.values.setdefault(value[0], []).append(_typed_columns(value))
    if not selection.ends:
        return element
    by_relation: dict[int, LoadedRelation] = {}
    element.ends = {end.name: [] for end in selection.ends}
    for ends, relations in ((source_ends, as_source), (target_ends, as_target)):
        for relation_id, relation_type_id, other_id, other_name, relation_position in relations:
            holding = ends.get(relation_type_id)
            if holding is None:
                continue
            item = LoadedRelation(relation_id, other_id, other_name, relation_position)
            element.ends[holding.name].append(item)
            # A relation of the element with itself is on both ends; its values belong to both.
            known = by_relation.setdefault(relation_id, item)
            if known is not item:
                item.values = known.values
    if not parts.relation_values:
        return element
    if relation_values is None:
        relation_values = _ONE_RELATION_VALUES.rows(connection, key)
    for value in relation_values:
        target = by_relation.get(value[0])
        if target is not None and value[1] in attribute_ids:
            target.values.setdefault(value[1], []).append(_typed_columns(value))
    return element
