"""All SQL of building blocks: batched reads (a fixed number of queries per batch) and set-based writes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlalchemy import Table, and_, bindparam, delete, func, insert, literal, or_, select, update
from sqlalchemy.orm import Session, aliased
from sqlalchemy.sql.elements import BindParameter

from blockrepo.access.models import User
from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.values import TypedValue
from blockrepo.metamodel.snapshot import RelationEnd
from blockrepo.storage import bulk_insert

# Ids per IN list: far below the bind-parameter limits of SQLite (32766) and PostgreSQL (65535).
CHUNK_SIZE = 500
# Many-row INSERTs go to the tables, not the mapped classes: a Core executemany skips the ORM's per-row
# bookkeeping, which costs more than the insert itself on a bulk write.
ELEMENT_VALUE = cast(Table, ElementValue.__table__)
RELATION = cast(Table, Relation.__table__)
RELATION_VALUE = cast(Table, RelationValue.__table__)
T = TypeVar("T")


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
_SIBLING = aliased(Element, name="sibling")

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
_LOAD_RELATION_VALUES = (
    select(
        RelationValue.relation_id,
        RelationValue.attribute_id,
        RelationValue.text_value,
        RelationValue.number_value,
        RelationValue.date_value,
        RelationValue.date_end,
        RelationValue.bool_value,
        RelationValue.literal_id,
    )
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


# --- lookups used by validation -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ElementHead:
    id: int
    type_id: int
    name: str
    parent_id: int | None
    revision: int


def lock_element(db: Session, type_id: int, element_id: int) -> ElementHead | None:
    """The element's row, locked until the transaction ends (SQLite: the writer already holds the lock)."""
    row = db.execute(
        select(Element.id, Element.type_id, Element.name, Element.parent_id, Element.revision)
        .where(Element.id == element_id, Element.type_id == type_id)
        .with_for_update()
    ).one_or_none()
    return None if row is None else ElementHead(row.id, row.type_id, row.name, row.parent_id, row.revision)


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


def name_owner(db: Session, type_id: int, name: str) -> int | None:
    """The id of the element of the type that carries `name`, if any."""
    return db.scalar(select(Element.id).where(Element.type_id == type_id, Element.name == name))


def ancestor_ids(db: Session, element_id: int) -> list[int]:
    """The element and its ancestors, nearest first (one recursive query)."""
    chain = select(Element.id, Element.parent_id).where(Element.id == element_id).cte(recursive=True)
    chain = chain.union_all(
        select(Element.id, Element.parent_id).join(chain, Element.id == chain.c.parent_id)
    )
    return list(db.scalars(select(chain.c.id)))


def subtree_ids(db: Session, root_id: int) -> list[int]:
    """The element and all its descendants (one recursive query); parents come before their children."""
    tree = select(Element.id, literal(0).label("depth")).where(Element.id == root_id).cte(recursive=True)
    tree = tree.union_all(
        select(Element.id, (tree.c.depth + 1).label("depth")).join(tree, Element.parent_id == tree.c.id)
    )
    return list(db.scalars(select(tree.c.id).order_by(tree.c.depth, tree.c.id)))


def has_children(db: Session, element_id: int) -> bool:
    return db.scalar(select(Element.id).where(Element.parent_id == element_id).limit(1)) is not None


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


def element_names(db: Session, ids: Iterable[int]) -> dict[int, str]:
    return {element_id: name for element_id, (_, name) in find_by_ids(db, ids).items()}


# --- writes ---------------------------------------------------------------------------------------


def insert_element(
    db: Session,
    *,
    type_id: int,
    name: str,
    description: str,
    parent_id: int | None,
    now: dt.datetime,
    user: str,
) -> int:
    """A new element, placed last among its siblings; returns its id."""
    return int(
        db.execute(
            insert(Element)
            .values(
                type_id=type_id,
                name=name,
                description=description,
                parent_id=parent_id,
                position=_next_position(type_id, parent_id),
                revision=1,
                created_at=now,
                last_modified_at=now,
                last_modified_by=user,
            )
            .returning(Element.id)
        ).scalar_one()
    )


def _next_position(type_id: int, parent_id: int | None) -> Any:
    siblings = select(func.coalesce(func.max(Element.position), -1) + 1).where(Element.type_id == type_id)
    siblings = siblings.where(
        Element.parent_id.is_(None) if parent_id is None else Element.parent_id == parent_id
    )
    return siblings.scalar_subquery()


def update_element(
    db: Session,
    element_id: int,
    *,
    fields: Mapping[str, Any],
    move_to_parent: bool,
    now: dt.datetime,
    user: str,
) -> None:
    """Change the element's own columns and bump its revision; `move_to_parent` places it last under its
    new parent (given in `fields["parent_id"]`)."""
    values: dict[str, Any] = dict(fields)
    if move_to_parent:
        type_id = select(Element.type_id).where(Element.id == element_id).scalar_subquery()
        values["position"] = _next_position_of(type_id, fields.get("parent_id"))
    values.update(revision=Element.revision + 1, last_modified_at=now, last_modified_by=user)
    db.execute(update(Element).where(Element.id == element_id).values(**values))


def _next_position_of(type_id: Any, parent_id: int | None) -> Any:
    sibling = _SIBLING
    siblings = select(func.coalesce(func.max(sibling.position), -1) + 1).where(sibling.type_id == type_id)
    siblings = siblings.where(
        sibling.parent_id.is_(None) if parent_id is None else sibling.parent_id == parent_id
    )
    return siblings.scalar_subquery()


def bump_elements(db: Session, ids: Iterable[int], *, now: dt.datetime, user: str) -> None:
    """Elements whose JSON changed through a neighbour (relation, child): new revision, modification stamp."""
    for chunk in chunks(sorted(set(ids))):
        db.execute(
            update(Element)
            .where(Element.id.in_(chunk))
            .values(revision=Element.revision + 1, last_modified_at=now, last_modified_by=user)
        )


def replace_values(
    db: Session, element_id: int, values: Mapping[int, Sequence[TypedValue]], *, existing: bool = True
) -> None:
    """Each attribute in `values` gets exactly the given list (one DELETE, one batched INSERT)."""
    if existing and values:
        db.execute(
            delete(ElementValue).where(
                ElementValue.element_id == element_id, ElementValue.attribute_id.in_(list(values))
            )
        )
    rows = [
        {"element_id": element_id, "attribute_id": attribute_id, "position": position, **value.columns()}
        for attribute_id, attribute_values in values.items()
        for position, value in enumerate(attribute_values)
    ]
    if rows:
        db.execute(insert(ELEMENT_VALUE), rows)


@dataclass(frozen=True, slots=True)
class NewRelation:
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
    open_positions = {(r.relation_type_id, r.source_id) for r in relations if r.position is None}
    next_position = _next_source_positions(db, open_positions)
    rows = []
    for r in relations:
        position = r.position
        if position is None:
            key = (r.relation_type_id, r.source_id)
            position = next_position.get(key, 0)
            next_position[key] = position + 1
        rows.append(
            {
                "relation_type_id": r.relation_type_id,
                "source_id": r.source_id,
                "target_id": r.target_id,
                "position": position,
            }
        )
    bulk_insert.insert_rows(db, RELATION, rows)
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
        {
            "relation_id": relation_ids[(relation.relation_type_id, relation.source_id, relation.target_id)],
            "attribute_id": attribute_id,
            "position": position,
            **value.columns(),
        }
        for relation in with_values
        for attribute_id, values in relation.values.items()
        for position, value in enumerate(values)
    ]
    if value_rows:
        bulk_insert.insert_rows(db, RELATION_VALUE, value_rows)


def _next_source_positions(db: Session, keys: set[tuple[int, int]]) -> dict[tuple[int, int], int]:
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
