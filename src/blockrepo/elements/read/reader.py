"""A column-oriented reader of element JSON for streams, exports and bulk history: the same JSON as
`elements.read.view.ElementView.render` (a test holds them equal), built for throughput.

`read.repository.load_elements` builds typed values per row, fine for a page or a write; a stream of 100,000
elements needs less per row. This reader runs one query each for elements, children, values, relations per
end direction and relation values for a whole batch, each compiled to SQL once per reader and dialect and
fetched as the driver's plain tuples (no SQLAlchemy row or type processing: on SQLite that alone halved the
time of a stream). Each value is encoded from the driver's form by a function chosen once per attribute and
dialect, and each element rendered from a template fixed once per view. A read has two halves, `fetch` (the
database's) and `render` (Python's), so that a stream can fetch its next batch while it renders this one
(`read_batches`). Memory stays proportional to one batch. The dicts it returns share list objects (every
empty property is one shared `[]`, the type name list is shared): serialize or compare them, never change
them in place.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import (
    ARRAY,
    Connection,
    Dialect,
    Integer,
    Select,
    any_,
    bindparam,
    func,
    literal_column,
    select,
)
from sqlalchemy.orm import Session, aliased

from blockrepo.elements.models import Element, ElementValue, Relation, RelationValue
from blockrepo.elements.read.view import HEAD_KEYS, TAIL_KEYS, ElementView, format_timestamp
from blockrepo.elements.repository import chunks
from blockrepo.elements.values import encode_number
from blockrepo.metamodel.snapshot import AttributeDef
from blockrepo.storage.engine import driver_rows

Encoder = Callable[[Any], Any]
Row = tuple[Any, ...]
READ_BATCH = 1000
# The value of every empty property in rendered JSON: one shared list, so rendered elements are read-only.
_EMPTY: list[Any] = []


def _present(condition: Any) -> list[Any]:
    return [] if condition is None else [condition]


def _value_columns(table: Any, sqlite: bool) -> list[Any]:
    """The typed columns of a value row as the reader selects them (from index 2 of each row).

    SQLite: (value, date_end); exactly one typed group is set per row, and SQLite returns each column
    in its stored form (text, real, integer), so one COALESCE carries any value. Fewer columns matter on
    SQLite: Python 3.11's driver releases and takes back the GIL for every column of every row, a
    large share of the instructions of a stream (bench/README.md). PostgreSQL: (text, number, date, date_end,
    boolean, literal), typed by the driver."""
    if sqlite:
        value = func.coalesce(
            table.c.text_value,
            table.c.number_value,
            table.c.date_value,
            table.c.bool_value,
            table.c.literal_id,
        )
        return [value, table.c.date_end]
    return [
        table.c.text_value,
        table.c.number_value,
        table.c.date_value,
        table.c.date_end,
        table.c.bool_value,
        table.c.literal_id,
    ]


def _iso(value: dt.date | None) -> str | None:
    return None if value is None else value.isoformat()


def value_encoder(attribute: AttributeDef, sqlite: bool) -> Encoder:
    """driver row (see `_value_columns`) -> the API JSON value, as `elements.values.encode_value`
    encodes it. SQLite stores dates as ISO text already and booleans as 0/1."""
    value_type = attribute.value_type
    if sqlite:
        if value_type == "number":
            return lambda row: None if row[2] is None else encode_number(float(row[2]))
        if value_type == "dateInterval":
            return lambda row: {"start": row[2], "end": row[3]}
        if value_type == "boolean":
            return lambda row: None if row[2] is None else bool(row[2])
        if value_type == "enum":
            names = {literal.id: literal.name for literal in attribute.literals}
            return lambda row: names.get(row[2])
        return lambda row: row[2]  # text, richtext, responsibility, date
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


def _timestamp(stored: Any) -> str:
    """A stored modification time in the API's form; SQLite gives SQLAlchemy's text form (UTC)."""
    return format_timestamp(dt.datetime.fromisoformat(stored) if isinstance(stored, str) else stored)


@dataclass(frozen=True)
class _Query:
    """A statement compiled once for one dialect; run with the ids of a batch, it gives the driver's rows."""

    sql: str
    order: tuple[str, ...] | None  # parameter names in position order (SQLite); None: by name
    fixed: dict[str, Any]  # every other parameter, fixed when the reader was built

    @classmethod
    def compile(cls, statement: Select[Any], dialect: Dialect) -> _Query:
        compiled = statement.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
        order = tuple(compiled.positiontup or ()) if compiled.positional else None
        return cls(compiled.string, order, dict(compiled.construct_params()))

    def rows(self, connection: Connection, ids: Any) -> Sequence[Row]:
        parameters = {**self.fixed, "ids": ids}
        arguments: Any = parameters if self.order is None else tuple(parameters[n] for n in self.order)
        # Straight on the driver's cursor, without a SQLAlchemy Row for each row; statement counters still
        # see it (`driver_rows`).
        return driver_rows(connection, self.sql, arguments)


@dataclass(frozen=True)
class _Statements:
    """What `ElementReader.fetch` runs, each with the parameter `ids` (element ids; relation ids for
    `relation_values`), in the form `ids` takes for the dialect, and how the driver's value rows are
    shown: attribute id -> (property key, encoder) for elements, attribute id -> encoder for relations."""

    elements: _Query
    children: _Query
    values: _Query
    source: _Query
    target: _Query
    relation_values: _Query
    ids: Callable[[Sequence[int]], Any]
    properties: dict[int, tuple[str, Encoder]]
    relation_encoders: dict[int, Encoder]


@dataclass(frozen=True)
class Fetched:
    """The driver rows of one batch (`ElementReader.fetch`) and the statements that gave them; relation
    rows come with their end names by relation type id, one pair per end direction."""

    statements: _Statements
    elements: Sequence[Row]
    children: Sequence[Row]
    values: Sequence[Row]
    relations: list[tuple[dict[int, str], Sequence[Row]]]
    relation_values: Sequence[Row]


class ElementReader:
    """Reads the element JSON of one view (type, actor's visible keys, fields) for batches of ids."""

    def __init__(self, view: ElementView) -> None:
        self.view = view
        self.type_name = view.type_def.name
        self.end_names = [e.name for e in view.ends]
        self.source_ends = {e.relation_type.id: e.name for e in view.ends if e.holder_is_source}
        self.target_ends = {e.relation_type.id: e.name for e in view.ends if not e.holder_is_source}
        # relation type id -> the readable attributes its relations show (only attributable types)
        self.relation_attributes = {rt: attrs for rt, attrs in view.relation_attributes.items()}
        self.relation_attribute_names = {
            a.id: a.name for attrs in self.relation_attributes.values() for a in attrs
        }
        self.with_children = "children" in view.head
        keys = [*view.head, *(p.name for p in view.properties), *self.end_names, *view.tail]
        self.template: dict[str, Any] = dict.fromkeys(keys, _EMPTY)
        self.shown = {key: key in self.template for key in (*HEAD_KEYS, *TAIL_KEYS)}
        self.type_value = [self.type_name]
        self._built: dict[str, _Statements] = {}

    def read(self, db: Session | Connection, ids: Sequence[int]) -> list[dict[str, Any]]:
        """The JSON of `ids` (in that order; ids not of the type are skipped)."""
        out: list[dict[str, Any]] = []
        for batch in self.read_batches(db, chunks(list(dict.fromkeys(ids)), READ_BATCH), prefetch=False):
            out.extend(batch)
        return out

    def read_batches(
        self, db: Session | Connection, batches: Iterable[Sequence[int]], *, prefetch: bool | None = None
    ) -> Generator[list[dict[str, Any]], None, None]:
        """The JSON of each batch of ids (at most READ_BATCH, no repeats; in that order, ids not of the type
        skipped). `batches` may query `db` itself (a keyset page): it is only ever advanced where the rows
        are fetched.

        With `prefetch` (by default on PostgreSQL) the rows of the next batch are fetched in a thread of
        their own while this one renders, and the caller encodes, the current batch: psycopg lets go of the
        GIL for as long as it waits on the server, so the database and the Python work overlap on two
        cores (a faster NDJSON stream, bench/README.md). Only that thread touches the
        connection meanwhile. SQLite gains nothing: Python 3.11's sqlite3 takes the GIL back for every
        column it reads, so a fetching thread would fight the rendering one for it."""
        pending = iter(batches)

        def fetch_next() -> tuple[Sequence[int], Fetched] | None:
            ids = next(pending, None)
            return None if ids is None else (ids, self.fetch(db, ids))

        def ordered(fetched: tuple[Sequence[int], Fetched]) -> list[dict[str, Any]]:
            ids, rows = fetched
            rendered = self.render(rows)
            return [rendered[i] for i in ids if i in rendered]

        if prefetch is None:
            prefetch = (
                db.dialect.name != "sqlite"
                if isinstance(db, Connection)
                else db.get_bind().dialect.name != "sqlite"
            )
        if not prefetch:
            while (fetched := fetch_next()) is not None:
                yield ordered(fetched)
            return
        # A generator closed early (a client that went away) leaves the `with` only once the fetch in
        # flight has finished with the connection, before the caller closes the session.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="blockrepo-prefetch") as fetcher:
            future = fetcher.submit(fetch_next)
            while (fetched := future.result()) is not None:
                future = fetcher.submit(fetch_next)
                yield ordered(fetched)

    def _statements(self, dialect: Dialect) -> _Statements:
        """Built once per reader and dialect: a stream runs them hundreds of times, and building and
        compiling a select costs more than the database needs to answer it."""
        statements = self._built.get(dialect.name)
        if statements is None:
            statements = self._built[dialect.name] = self._build(dialect)
        return statements

    def _build(self, dialect: Dialect) -> _Statements:
        sqlite = dialect.name == "sqlite"
        properties = {p.id: (p.name, value_encoder(p, sqlite)) for p in self.view.properties}
        relation_encoders = {
            a.id: value_encoder(a, sqlite) for attrs in self.relation_attributes.values() for a in attrs
        }

        def among_ids(column: Any) -> Any:
            if sqlite:
                # One JSON array parameter: the statement text stays the same whatever the batch size
                # (an IN list of n parameters is a new statement for every n).
                listed: Any = select(literal_column("value")).select_from(
                    func.json_each(bindparam("ids", "[]"))
                )
                return column.in_(listed)
            # One array parameter: PostgreSQL parses and plans `= ANY($1)` once, where an IN list of 1,000
            # parameters costs it milliseconds per statement.
            return column == any_(bindparam("ids", [], type_=ARRAY(Integer)))

        def narrowed(column: Any, shown: Iterable[int], every: Iterable[int]) -> Any:
            # Only when the view leaves something out: without the condition, the holder's index is the
            # only one that fits, even where statistics are missing (a table a bulk load has just filled).
            return None if set(shown) == set(every) else column.in_(sorted(shown))

        type_def = self.view.type_def
        parent = aliased(Element)
        other = aliased(Element)
        value_table, relation_value_table = ElementValue.__table__, RelationValue.__table__
        own_ends = [end.relation_type.id for end in type_def.ends.values() if end.holder_is_source]
        other_ends = [end.relation_type.id for end in type_def.ends.values() if not end.holder_is_source]
        every_attribute = (p.id for p in type_def.properties)
        shown_attributes = narrowed(ElementValue.attribute_id, properties, every_attribute)
        sources = narrowed(Relation.relation_type_id, self.source_ends, own_ends)
        targets = narrowed(Relation.relation_type_id, self.target_ends, other_ends)
        statements = {
            "elements": select(
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
            .where(among_ids(Element.id), Element.type_id == type_def.id),
            "children": select(Element.parent_id, Element.id, Element.name)
            .where(among_ids(Element.parent_id))
            .order_by(Element.parent_id, Element.position, Element.id),
            "values": select(
                ElementValue.element_id, ElementValue.attribute_id, *_value_columns(value_table, sqlite)
            )
            .where(among_ids(ElementValue.element_id), *_present(shown_attributes))
            .order_by(
                ElementValue.element_id, ElementValue.attribute_id, ElementValue.position, ElementValue.id
            ),
            "source": select(
                Relation.id, Relation.relation_type_id, Relation.source_id, Relation.target_id, other.name
            )
            .join(other, other.id == Relation.target_id)
            .where(among_ids(Relation.source_id), *_present(sources))
            .order_by(Relation.source_id, Relation.relation_type_id, Relation.position, Relation.id),
            "target": select(
                Relation.id, Relation.relation_type_id, Relation.target_id, Relation.source_id, other.name
            )
            .join(other, other.id == Relation.source_id)
            .where(among_ids(Relation.target_id), *_present(targets))
            .order_by(Relation.target_id, Relation.relation_type_id, Relation.id),
            "relation_values": select(
                RelationValue.relation_id,
                RelationValue.attribute_id,
                *_value_columns(relation_value_table, sqlite),
            )
            .where(
                among_ids(RelationValue.relation_id),
                RelationValue.attribute_id.in_(sorted(relation_encoders) or [0]),
            )
            .order_by(
                RelationValue.relation_id,
                RelationValue.attribute_id,
                RelationValue.position,
                RelationValue.id,
            ),
        }
        compiled = {name: _Query.compile(statement, dialect) for name, statement in statements.items()}
        # SQLite: a JSON array; PostgreSQL: an array literal, which psycopg passes on as it is, where it
        # builds a list parameter item by item in Python, once per statement (a tenth of a stream).
        ids: Callable[[Sequence[int]], Any] = (
            (lambda ids: orjson.dumps(list(ids)).decode())
            if sqlite
            else (lambda ids: "{" + ",".join(map(str, ids)) + "}")
        )
        return _Statements(ids=ids, properties=properties, relation_encoders=relation_encoders, **compiled)

    def fetch(self, db: Session | Connection, ids: Sequence[int]) -> Fetched:
        """The driver rows of the elements among `ids` (at most one batch): the database half of a read,
        which `render` turns into JSON without touching the database. `db` may be a bare connection (GET
        by id, which skips the ORM session)."""
        connection = db if isinstance(db, Connection) else db.connection()
        statements = self._statements(connection.dialect)
        rows = statements.elements.rows(connection, statements.ids(ids))
        if not rows:
            return Fetched(statements, rows, (), (), [], ())
        found = statements.ids([row[0] for row in rows])
        children = statements.children.rows(connection, found) if self.with_children else ()
        values = statements.values.rows(connection, found) if statements.properties else ()
        relations = []
        if self.source_ends:
            relations.append((self.source_ends, statements.source.rows(connection, found)))
        if self.target_ends:
            relations.append((self.target_ends, statements.target.rows(connection, found)))
        relation_values: Sequence[Row] = ()
        attributable = self.relation_attributes
        if attributable and statements.relation_encoders:
            # The relations whose entries show attributes: those of an attributable type on an end in view.
            relation_ids = sorted(
                {
                    row[0]
                    for names, end_rows in relations
                    for row in end_rows
                    if row[1] in names and row[1] in attributable
                }
            )
            # One parameter whatever the number of relations (a JSON or array value, not a list); run
            # even for none, so that a view's reads cost the same number of statements whatever the data.
            relation_values = statements.relation_values.rows(connection, statements.ids(relation_ids))
        return Fetched(statements, rows, children, values, relations, relation_values)

    def render(self, fetched: Fetched) -> dict[int, dict[str, Any]]:
        """The JSON of fetched rows, by id. Each element is rendered from its row first; children, values
        and relation entries then go straight into its dict (a property still holding the shared empty list
        gets a list of its own), without an intermediate dict per element."""
        statements = fetched.statements
        # Elements written by one request share their modification time: format each time once.
        stamps: dict[Any, str] = {}
        rendered = {row[0]: self._render(row, stamps) for row in fetched.elements}
        for parent_id, child_id, child_name in fetched.children:
            _append(rendered[parent_id], "children", {"id": child_id, "name": child_name})
        properties = statements.properties
        # Rows come ordered by element: one dict lookup per element, not per value.
        current: int | None = None
        out: dict[str, Any] = {}
        for row in fetched.values:
            if row[0] != current:
                current = row[0]
                out = rendered[current]
            shown = properties.get(row[1])
            if shown is None:
                continue  # not in the view (the query is not narrowed when the view shows them all)
            key, encoder = shown
            encoded = out[key]
            if encoded is _EMPTY:
                out[key] = [encoder(row)]
            else:
                encoded.append(encoder(row))
        self._relations(fetched, rendered)
        return rendered

    def _relations(self, fetched: Fetched, rendered: dict[int, dict[str, Any]]) -> None:
        """Put the relation entries of the ends in the view into the `rendered` elements."""
        by_relation: dict[int, list[dict[str, Any]]] = {}  # relation id -> entries showing its attributes
        relation_attributes = self.relation_attributes
        for names, rows in fetched.relations:
            for relation_id, rt_id, holder, other_id, other_name in rows:
                end_name = names.get(rt_id)
                if end_name is None:
                    continue  # an end the view leaves out
                entry: dict[str, Any] = {"id": other_id, "name": other_name}
                attributes = relation_attributes.get(rt_id)
                if attributes is not None:
                    entry["attributes"] = {a.name: [] for a in attributes}
                    by_relation.setdefault(relation_id, []).append(entry)
                _append(rendered[holder], end_name, entry)
        relation_encoders = fetched.statements.relation_encoders
        names_of = self.relation_attribute_names
        for row in fetched.relation_values:
            value = relation_encoders[row[1]](row)
            for entry in by_relation.get(row[0], ()):
                entry["attributes"][names_of[row[1]]].append(value)

    def _render(self, row: Any, stamps: dict[Any, str]) -> dict[str, Any]:
        """An element's JSON from its row: every key of the view in order, the properties and ends empty
        (the shared `_EMPTY`) until `render` fills them."""
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
        if shown["lastModificationTime"]:
            stamp = stamps.get(modified_at)
            if stamp is None:
                stamp = stamps[modified_at] = _timestamp(modified_at)
            out["lastModificationTime"] = [stamp]
        if shown["lastModificationUser"]:
            out["lastModificationUser"] = [modified_by]
        return out


def _append(element: dict[str, Any], key: str, entry: Any) -> None:
    """Add `entry` to the list of `key`, which may still be the shared `_EMPTY` of the template."""
    entries = element[key]
    if entries is _EMPTY:
        element[key] = [entry]
    else:
        entries.append(entry)
