"""A column-oriented reader of element JSON for streams, exports and bulk history: the same JSON as
`elements.view.read_elements` (a test holds them equal), built for throughput.

`read_elements` builds ORM objects and typed values per row, fine for a page; a stream of 100,000 elements
needs less per row. This reader fetches plain tuples for a whole batch (one query each for elements,
children, values, relations per end direction and relation values), encodes each value with a function
chosen once per attribute, and renders from a template fixed once per view. Memory stays proportional to
one batch. The dicts it returns share list objects (every empty property is one shared `[]`, the type
name list is shared): serialize or compare them, never change them in place.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ARRAY, Connection, Executable, Integer, and_, any_, bindparam, or_, select
from sqlalchemy.orm import Session, aliased

from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.repository import chunks
from blockrepo.elements.values import encode_number
from blockrepo.elements.view import HEAD_KEYS, TAIL_KEYS, ElementView, format_timestamp
from blockrepo.metamodel.snapshot import AttributeDef

Encoder = Callable[[Any], Any]
# Rows of element_value / relation_value as selected below: (owner, attribute, text, number, date,
# date_end, boolean, literal).
_VALUE_COLUMNS = (
    ElementValue.text_value,
    ElementValue.number_value,
    ElementValue.date_value,
    ElementValue.date_end,
    ElementValue.bool_value,
    ElementValue.literal_id,
)
_RELATION_VALUE_COLUMNS = (
    RelationValue.text_value,
    RelationValue.number_value,
    RelationValue.date_value,
    RelationValue.date_end,
    RelationValue.bool_value,
    RelationValue.literal_id,
)
READ_BATCH = 1000
# The value of every empty property in rendered JSON: one shared list, so rendered elements are read-only.
_EMPTY: list[Any] = []


def _present(condition: Any) -> list[Any]:
    return [] if condition is None else [condition]


@dataclass(frozen=True)
class _Statements:
    """What `_read_chunk` runs, each with the parameter `ids` (a list of element ids)."""

    elements: Executable
    children: Executable
    values: Executable
    source: Executable
    target: Executable


def _iso(value: dt.date | None) -> str | None:
    return None if value is None else value.isoformat()


def value_encoder(attribute: AttributeDef) -> Encoder:
    """row -> API JSON value, as `elements.values.encode_value` encodes it; the row holds the six typed
    columns from index 2 on."""
    value_type = attribute.value_type
    if value_type == "number":
        return lambda row: None if row[3] is None else encode_number(row[3])
    if value_type == "date":
        return lambda row: _iso(row[4])
    if value_type == "dateInterval":
        return lambda row: {"start": _iso(row[4]), "end": _iso(row[5])}
    if value_type == "boolean":
        return lambda row: row[6]
    if value_type == "enum":
        names = {literal.id: literal.name for literal in attribute.literals}
        return lambda row: names.get(row[7])
    return lambda row: row[2]


class ElementReader:
    """Reads the element JSON of one view (type, actor's visible keys, fields) for batches of ids."""

    def __init__(self, view: ElementView) -> None:
        self.view = view
        self.type_name = view.type_def.name
        self.encoders = {p.id: value_encoder(p) for p in view.properties}
        self.source_ends = {e.relation_type.id: e.name for e in view.ends if e.holder_is_source}
        self.target_ends = {e.relation_type.id: e.name for e in view.ends if not e.holder_is_source}
        self.end_names = [e.name for e in view.ends]
        # relation type id -> the readable attributes its relations show (only attributable types)
        self.relation_attributes = {rt: attrs for rt, attrs in view.relation_attributes.items()}
        self.relation_encoders = {
            a.id: value_encoder(a) for attrs in self.relation_attributes.values() for a in attrs
        }
        self.with_children = "children" in view.head
        self.key_of_attribute = {p.id: p.name for p in view.properties}
        keys = [*view.head, *(p.name for p in view.properties), *self.end_names, *view.tail]
        self.template: dict[str, Any] = dict.fromkeys(keys, _EMPTY)
        self.shown = {key: key in self.template for key in (*HEAD_KEYS, *TAIL_KEYS)}
        self.type_value = [self.type_name]
        self._built: dict[str, _Statements] = {}

    def read(self, db: Session, ids: Sequence[int]) -> list[dict[str, Any]]:
        """The JSON of `ids` (in that order; ids not of the type are skipped)."""
        out: list[dict[str, Any]] = []
        for chunk in chunks(list(dict.fromkeys(ids)), READ_BATCH):
            rendered = self._read_chunk(db, chunk)
            out.extend(rendered[i] for i in chunk if i in rendered)
        return out

    def _statements(self, dialect: str) -> _Statements:
        """The statements of a chunk, built once per reader and database: a stream runs them hundreds of
        times, and building a select costs more than the database needs to answer it."""
        statements = self._built.get(dialect)
        if statements is None:
            statements = self._built[dialect] = self._build(dialect)
        return statements

    def _build(self, dialect: str) -> _Statements:
        def among_ids(column: Any) -> Any:
            if dialect == "postgresql":
                # One array parameter: PostgreSQL parses and plans `= ANY($1)` once, where an IN list
                # of 1,000 parameters costs it milliseconds per statement.
                return column == any_(bindparam("ids", type_=ARRAY(Integer)))
            return column.in_(bindparam("ids", expanding=True))

        def narrowed(column: Any, shown: Iterable[int], every: Iterable[int]) -> Any:
            # Only when the view leaves something out: without the condition, the holder's index is the
            # only one that fits, even where statistics are missing (a table a bulk load has just filled).
            return None if set(shown) == set(every) else column.in_(list(shown))

        type_def = self.view.type_def
        parent = aliased(Element)
        other = aliased(Element)
        type_id = type_def.id
        own_ends = [end.relation_type.id for end in type_def.ends.values() if end.holder_is_source]
        other_ends = [end.relation_type.id for end in type_def.ends.values() if not end.holder_is_source]
        attributes = narrowed(ElementValue.attribute_id, self.encoders, (p.id for p in type_def.properties))
        sources = narrowed(Relation.relation_type_id, self.source_ends, own_ends)
        targets = narrowed(Relation.relation_type_id, self.target_ends, other_ends)
        return _Statements(
            elements=select(
                Element.id,
                Element.revision,
                Element.name,
                Element.description,
                Element.parent_id,
                parent.name,
                Element.last_modified_at,
                Element.last_modified_by,
            )
            .outerjoin(parent, parent.id == Element.parent_id)
            .where(among_ids(Element.id), Element.type_id == type_id),
            children=select(Element.parent_id, Element.id, Element.name)
            .where(among_ids(Element.parent_id))
            .order_by(Element.parent_id, Element.position, Element.id),
            values=select(ElementValue.element_id, ElementValue.attribute_id, *_VALUE_COLUMNS)
            .where(among_ids(ElementValue.element_id), *_present(attributes))
            .order_by(
                ElementValue.element_id, ElementValue.attribute_id, ElementValue.position, ElementValue.id
            ),
            source=select(
                Relation.id, Relation.relation_type_id, Relation.source_id, Relation.target_id, other.name
            )
            .join(other, other.id == Relation.target_id)
            .where(among_ids(Relation.source_id), *_present(sources))
            .order_by(Relation.source_id, Relation.relation_type_id, Relation.position, Relation.id),
            target=select(
                Relation.id, Relation.relation_type_id, Relation.target_id, Relation.source_id, other.name
            )
            .join(other, other.id == Relation.source_id)
            .where(among_ids(Relation.target_id), *_present(targets))
            .order_by(Relation.target_id, Relation.relation_type_id, Relation.id),
        )

    def _read_chunk(self, db: Session, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
        # Core execution on the session's connection: plain rows, no ORM result processing per row.
        connection = db.connection()
        statements = self._statements(connection.dialect.name)
        parameters = {"ids": list(ids)}
        rows = connection.execute(statements.elements, parameters).all()
        if not rows:
            return {}
        found = {"ids": [row[0] for row in rows]}
        children: dict[int | None, list[dict[str, Any]]] = {}
        if self.with_children:
            for parent_id, child_id, child_name in connection.execute(statements.children, found).all():
                children.setdefault(parent_id, []).append({"id": child_id, "name": child_name})
        values: dict[int, dict[int, list[Any]]] = {}
        if self.encoders:
            encoders = self.encoders
            # Rows come ordered by element: one dict lookup per element, not per value.
            current: int | None = None
            own: dict[int, list[Any]] = {}
            for row in connection.execute(statements.values, found).all():
                if row[0] != current:
                    current = row[0]
                    own = values[current] = {}
                encoder = encoders.get(row[1])
                if encoder is None:
                    continue  # not in the view (the query is not narrowed when the view shows them all)
                encoded = own.get(row[1])
                if encoded is None:
                    own[row[1]] = [encoder(row)]
                else:
                    encoded.append(encoder(row))
        ends = self._relations(connection, statements, found["ids"])
        # Elements written by one request share their modification time: format each time once.
        stamps: dict[Any, str] = {}
        return {row[0]: self._render(row, children, values, ends, stamps) for row in rows}

    def _relations(
        self, connection: Connection, statements: _Statements, ids: Sequence[int]
    ) -> dict[int, dict[str, list[dict[str, Any]]]]:
        ends: dict[int, dict[str, list[dict[str, Any]]]] = {}
        by_relation: dict[int, list[tuple[int, dict[str, Any]]]] = {}  # relation id -> (type, entry)
        queries = []
        if self.source_ends:
            queries.append((self.source_ends, statements.source, True))
        if self.target_ends:
            queries.append((self.target_ends, statements.target, False))
        with_attributes: dict[bool, list[int]] = {True: [], False: []}
        relation_attributes = self.relation_attributes
        for names, statement, holder_is_source in queries:
            for relation_id, rt_id, holder, other_id, other_name in connection.execute(
                statement, {"ids": ids}
            ).all():
                end_name = names.get(rt_id)
                if end_name is None:
                    continue  # an end the view leaves out
                entry: dict[str, Any] = {"id": other_id, "name": other_name}
                attributes = relation_attributes.get(rt_id)
                if attributes is not None:
                    entry["attributes"] = {a.name: [] for a in attributes}
                    by_relation.setdefault(relation_id, []).append((rt_id, entry))
                    if rt_id not in with_attributes[holder_is_source]:
                        with_attributes[holder_is_source].append(rt_id)
                held = ends.get(holder)
                if held is None:
                    ends[holder] = {end_name: [entry]}
                else:
                    held.setdefault(end_name, []).append(entry)
        if by_relation and self.relation_encoders:
            clauses = []
            if with_attributes[True]:
                clauses.append(
                    and_(Relation.source_id.in_(ids), Relation.relation_type_id.in_(with_attributes[True]))
                )
            if with_attributes[False]:
                clauses.append(
                    and_(Relation.target_id.in_(ids), Relation.relation_type_id.in_(with_attributes[False]))
                )
            names_of = {a.id: a.name for attrs in self.relation_attributes.values() for a in attrs}
            for row in connection.execute(
                select(RelationValue.relation_id, RelationValue.attribute_id, *_RELATION_VALUE_COLUMNS)
                .where(
                    RelationValue.relation_id.in_(select(Relation.id).where(or_(*clauses))),
                    RelationValue.attribute_id.in_(list(self.relation_encoders)),
                )
                .order_by(
                    RelationValue.relation_id,
                    RelationValue.attribute_id,
                    RelationValue.position,
                    RelationValue.id,
                )
            ):
                value = self.relation_encoders[row[1]](row)
                for _, entry in by_relation.get(row[0], ()):
                    entry["attributes"][names_of[row[1]]].append(value)
        return ends

    def _render(
        self,
        row: Any,
        children: dict[int | None, list[dict[str, Any]]],
        values: dict[int, dict[int, list[Any]]],
        ends: dict[int, dict[str, list[dict[str, Any]]]],
        stamps: dict[Any, str],
    ) -> dict[str, Any]:
        element_id, revision, name, description, parent_id, parent_name, modified_at, modified_by = row
        # A copy of the template holds every key in the view's order, empty; filling keys keeps the order.
        out = self.template.copy()
        shown = self.shown
        if shown["id"]:
            out["id"] = [element_id]
        if shown["type"]:
            out["type"] = self.type_value
        if shown["revision"]:
            out["revision"] = [revision]
        if shown["name"]:
            out["name"] = [name]
        if description and shown["description"]:
            out["description"] = [description]
        if parent_id is not None and shown["parent"]:
            out["parent"] = [{"id": parent_id, "name": parent_name}]
        if shown["children"] and element_id in children:
            out["children"] = children[element_id]
        own = values.get(element_id)
        if own:
            key_of = self.key_of_attribute
            for attribute_id, encoded in own.items():
                out[key_of[attribute_id]] = encoded
        related = ends.get(element_id)
        if related:
            out.update(related)
        if shown["lastModificationTime"]:
            stamp = stamps.get(modified_at)
            if stamp is None:
                stamp = stamps[modified_at] = format_timestamp(modified_at)
            out["lastModificationTime"] = [stamp]
        if shown["lastModificationUser"]:
            out["lastModificationUser"] = [modified_by]
        return out
