"""Compiles an iteraQL syntax tree into one SQL condition on the `element` table, run by the database.

Every predicate becomes a semi-join (`element.id IN (SELECT … FROM element_value …)`) or a correlated
count, so the database picks the index: the typed-value indexes `(attribute_id, number_value)` etc. serve
comparisons, `relation`'s source and target indexes serve navigation and `count`. Nothing loads a type into
Python. Every compiled atom is two-valued (never SQL NULL), so `!` and `!=` mean exactly "not".
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    CTE,
    BigInteger,
    ColumnElement,
    Float,
    Integer,
    Select,
    String,
    and_,
    false,
    func,
    literal,
    not_,
    or_,
    select,
    true,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import aliased
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import GenericFunction

from blockrepo.access.actor import Actor
from blockrepo.elements.models import Element, ElementValue, Relation
from blockrepo.errors import Forbidden, QuerySyntaxError
from blockrepo.massdata.query.parser import query_error
from blockrepo.massdata.query.syntax import (
    And,
    Comparison,
    Count,
    Not,
    Or,
    Position,
    Predicate,
    PropertyRef,
    Query,
    Step,
    TextMatch,
    Value,
)
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, Metamodel, RelationEnd

ElementTable = Any  # the mapped class `Element` or an `aliased(Element)`
Condition = ColumnElement[bool]
PARENT, CHILDREN = "parent", "children"

_VALUE_COLUMNS = {
    "text": ElementValue.text_value,
    "richtext": ElementValue.text_value,
    "responsibility": ElementValue.text_value,
    "number": ElementValue.number_value,
    "date": ElementValue.date_value,
    "boolean": ElementValue.bool_value,
    "enum": ElementValue.literal_id,
}


_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class text_position(GenericFunction[int]):
    """1-based position of a substring, 0 if absent: instr() on SQLite, strpos() on PostgreSQL."""

    type = Integer()
    name = "text_position"
    inherit_cache = True


@compiles(text_position, "sqlite")
def _text_position_sqlite(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    return f"instr({compiler.process(element.clauses, **kw)})"


@compiles(text_position)
def _text_position_default(element: text_position, compiler: SQLCompiler, **kw: Any) -> str:
    return f"strpos({compiler.process(element.clauses, **kw)})"


class ascii_folded(GenericFunction[str]):
    """The text with A-Z lower-cased and every other character kept: lower() on SQLite (which folds only
    ASCII), translate() on PostgreSQL (whose lower() would fold other letters too)."""

    type = String()
    name = "ascii_folded"
    inherit_cache = True


@compiles(ascii_folded, "sqlite")
def _ascii_folded_sqlite(element: ascii_folded, compiler: SQLCompiler, **kw: Any) -> str:
    return f"lower({compiler.process(element.clauses, **kw)})"


@compiles(ascii_folded)
def _ascii_folded_default(element: ascii_folded, compiler: SQLCompiler, **kw: Any) -> str:
    return f"translate({compiler.process(element.clauses, **kw)}, '{_UPPER}', '{_UPPER.lower()}')"


def number_parameter(value: Any) -> Any:
    """A number bound as what it is: an integer as BIGINT, a fraction as a double. Bound with the
    column's type instead, PostgreSQL would cast it to INTEGER for `id`, `revision` and counts (out of range
    beyond 32 bits) and round 1.5 to 2."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return literal(value, BigInteger() if isinstance(value, int) else Float())


def _compare(column: Any, op: str, value: Any) -> Condition:
    value = number_parameter(value)
    if op == "=":
        return column == value  # type: ignore[no-any-return]
    if op == "!=":
        return column != value  # type: ignore[no-any-return]
    if op == "<":
        return column < value  # type: ignore[no-any-return]
    if op == ">":
        return column > value  # type: ignore[no-any-return]
    if op == "<=":
        return column <= value  # type: ignore[no-any-return]
    return column >= value  # type: ignore[no-any-return]


def _text_match(column: Any, method: str, needle: str) -> Condition:
    if method == "contains":
        return text_position(column, needle) > 0
    if method == "containsIgnoreCase":
        return text_position(ascii_folded(column), ascii_lower(needle)) > 0
    if method == "startsWith":
        return func.substr(column, 1, len(needle)) == needle
    # Portable "ends with": the tail of the text from length - n + 1. A shorter text yields a shorter
    # tail on both SQLite and PostgreSQL, so it never equals the needle.
    return func.substr(column, func.length(column) - len(needle) + 1) == needle


@dataclass(frozen=True)
class CompiledQuery:
    """The type of the result and the condition that selects its elements on the given element table.

    The condition reads the ids of the steps before the last from `steps`, one common table expression
    each, in order. A statement using the condition adds them first (`Select.add_cte(*steps)`): SQLAlchemy
    then renders each step once, reading the one before by name, instead of descending from the last step
    to the first (a recursion as deep as the chain)."""

    type_def: BlockTypeDef
    condition: Condition
    steps: tuple[CTE, ...] = ()


@dataclass(frozen=True)
class ResolvedProperty:
    """What a `@name` refers to on one type."""

    kind: str  # "column", "attribute", "end", "parent", "children"
    value_type: str  # text/number/date/datetime/... or "reference"
    column: str | None = None  # Element column for kind "column"
    attribute: AttributeDef | None = None
    end: RelationEnd | None = None


_CORE_COLUMNS = {
    "id": ("number", "id"),
    "name": ("text", "name"),
    "description": ("text", "description"),
    "revision": ("number", "revision"),
    "lastModificationTime": ("datetime", "last_modified_at"),
    "lastModificationUser": ("text", "last_modified_by"),
}


class QueryCompiler:
    """Resolves the names of a query for one actor (400 `query_invalid` or 403 where it may not) and
    builds its SQL; the as-of evaluator reuses the resolution."""

    def __init__(self, metamodel: Metamodel, actor: Actor, text: str, pointer: str) -> None:
        self.metamodel = metamodel
        self.actor = actor
        self.text = text
        self.pointer = pointer

    def error(self, message: str, pos: Position) -> QuerySyntaxError:
        return query_error(message, pos, pointer=self.pointer, invalid=True, text=self.text)

    # --- names -------------------------------------------------------------------------------------

    def readable_type(self, step: Step) -> BlockTypeDef:
        type_def = self.metamodel.type_named(step.name)
        if type_def is None:
            known = ", ".join(t.name for t in self.metamodel.types if self.actor.can_type(t.id, "read"))
            raise self.error(f"unknown type '{step.name}'; known types: {known}", step.pos)
        if not self.actor.can_type(type_def.id, "read"):
            raise Forbidden(f"you may not read elements of type {type_def.name}")
        return type_def

    def visible_end(self, type_def: BlockTypeDef, name: str) -> RelationEnd | None:
        end = type_def.ends.get(name)
        if end is None or not self.actor.can_type(end.other_type_id, "read"):
            return None
        return end

    def navigable_names(self, type_def: BlockTypeDef) -> list[str]:
        names = sorted(e.name for e in type_def.ends.values() if self.actor.can_type(e.other_type_id, "read"))
        return [*names, PARENT, CHILDREN] if type_def.hierarchical else names

    def resolve(self, type_def: BlockTypeDef, ref: PropertyRef) -> ResolvedProperty:
        name = ref.name
        found: ResolvedProperty | None = None
        if name in _CORE_COLUMNS:
            value_type, column = _CORE_COLUMNS[name]
            found = ResolvedProperty("column", value_type, column=column)
        elif name in (PARENT, CHILDREN) and type_def.hierarchical:
            found = ResolvedProperty(name, "reference")
        else:
            attribute = type_def.property_named(name)
            if attribute is not None and (attribute.builtin or self.actor.can_read_group(attribute.group_id)):
                found = ResolvedProperty("attribute", attribute.value_type, attribute=attribute)
            else:
                end = self.visible_end(type_def, name)
                if end is not None:
                    found = ResolvedProperty("end", "reference", end=end)
        if found is None:
            raise self.error(f"type {type_def.name} has no property '{name}'", ref.pos)
        if ref.part is not None and not (found.value_type == "dateInterval" and ref.part in ("start", "end")):
            raise self.error(
                f"'@{name}.{ref.part}' is not a property; only a dateInterval has '.start' and '.end'",
                ref.pos,
            )
        return found

    # --- queries -----------------------------------------------------------------------------------

    def query(self, query: Query, target: ElementTable) -> CompiledQuery:
        """Each step but the last becomes a common table expression that the next one reads its ids from:
        a chain of steps is a flat list in SQL, where subqueries nested in subqueries would overflow
        SQLite's parser stack (a fixed 100 levels before SQLite 3.46) at about a dozen steps."""
        steps = (query.start, *query.navigation)
        type_def = self.readable_type(query.start)
        previous: Select[tuple[int]] | None = None
        ctes: list[CTE] = []
        for index, step in enumerate(steps):
            last = index == len(steps) - 1
            table = target if last else aliased(Element)
            conditions: list[Condition] = []
            if previous is not None:
                link = self.link(type_def, step)
                if link.end is not None:
                    type_def = self.metamodel.type_by_id(link.end.other_type_id)
                # The elements that the previous step's elements list under the end are those whose
                # opposite end lists one of them.
                conditions.append(self.reference(self.reverse(link), table, ids=previous))
            conditions.insert(0, table.type_id == type_def.id)
            if step.where is not None:
                conditions.append(self.predicate(step.where, table, type_def))
            if last:
                return CompiledQuery(type_def, and_(*conditions), tuple(ctes))
            step_ids = select(table.id.label("id")).where(*conditions).cte(f"step_{index}")
            # PostgreSQL would inline each step into the next and join them all as nested-loop semi-joins,
            # which re-run the inner steps for every outer row (an hour for twelve `/children` steps over
            # a dozen rows before ANALYZE). Materialized, each step is one set the next hashes against.
            ctes.append(step_ids.prefix_with("MATERIALIZED", dialect="postgresql"))
            previous = select(ctes[-1].c.id)
        raise AssertionError("unreachable")  # pragma: no cover

    def link(self, holder: BlockTypeDef, step: Step) -> ResolvedProperty:
        """A relation end, `parent` or `children` of the holder type, to navigate or count along."""
        if step.name in (PARENT, CHILDREN) and holder.hierarchical:
            return ResolvedProperty(step.name, "reference")
        end = self.visible_end(holder, step.name)
        if end is None:
            raise self.error(
                f"type {holder.name} has no relation end '{step.name}'; "
                f"navigable: {', '.join(self.navigable_names(holder))}",
                step.pos,
            )
        return ResolvedProperty("end", "reference", end=end)

    def reverse(self, link: ResolvedProperty) -> ResolvedProperty:
        if link.kind == PARENT:
            return ResolvedProperty(CHILDREN, "reference")
        if link.kind == CHILDREN:
            return ResolvedProperty(PARENT, "reference")
        end = link.end
        assert end is not None
        return ResolvedProperty(
            "end", "reference", end=self.metamodel.type_by_id(end.other_type_id).ends[end.opposite_name]
        )

    # --- predicates --------------------------------------------------------------------------------

    def predicate(self, node: Predicate, table: ElementTable, type_def: BlockTypeDef) -> Condition:
        if isinstance(node, And):
            return and_(*(self.predicate(p, table, type_def) for p in node.parts))
        if isinstance(node, Or):
            return or_(*(self.predicate(p, table, type_def) for p in node.parts))
        if isinstance(node, Not):
            return not_(self.predicate(node.part, table, type_def))
        if isinstance(node, Comparison):
            return self.comparison(node, table, type_def)
        if isinstance(node, TextMatch):
            return self.text_match(node, table, type_def)
        return self.count(node, table, type_def)

    def comparison(self, node: Comparison, table: ElementTable, type_def: BlockTypeDef) -> Condition:
        prop = self.resolve(type_def, node.prop)
        op, value = node.op, node.value
        if value.kind == "null":
            if op not in ("=", "!="):
                raise self.error(f"null can only be compared with = or !=, not {op}", node.pos)
            present = self.present(prop, table, node.prop)
            return not_(present) if op == "=" else present
        if prop.value_type == "dateInterval" and node.prop.part is None:
            name = node.prop.name
            message = f"compare '@{name}.start' or '@{name}.end', or '@{name}' with null"
            raise self.error(message, node.prop.pos)
        if prop.value_type == "reference":
            if op not in ("=", "!="):
                raise self.error(f"'@{node.prop.name}' refers to elements; compare it with = or !=", node.pos)
            if value.kind == "number" and isinstance(value.value, int):
                wanted = number_parameter(value.value)
                matches = self.reference(prop, table, lambda other: other.id == wanted)
            elif value.kind == "string":
                matches = self.reference(prop, table, lambda other: other.name == value.value)
            else:
                raise self.error(
                    f"'@{node.prop.name}' compares with an element name (string) or id (integer)", value.pos
                )
            return not_(matches) if op == "!=" else matches
        if prop.value_type == "enum":
            return self.enum_comparison(prop, node, table)
        if prop.value_type == "boolean" and (op not in ("=", "!=") or value.kind != "boolean"):
            raise self.error(f"'@{node.prop.name}' is a boolean: compare it with = true or = false", node.pos)
        operand = self.operand(prop, value, node.prop)
        if prop.kind == "column":
            assert prop.column is not None
            column = getattr(table, prop.column)
            if prop.value_type == "datetime" and value.kind == "date":
                return _day_comparison(column, op, operand)
            return _compare(column, op, operand)
        assert prop.attribute is not None
        column = _value_column(prop.attribute, node.prop.part)
        if op == "!=":
            return not_(self.has_value(table, prop.attribute, column == operand))
        return self.has_value(table, prop.attribute, _compare(column, op, operand))

    def enum_comparison(self, prop: ResolvedProperty, node: Comparison, table: ElementTable) -> Condition:
        attribute = prop.attribute
        assert attribute is not None
        value = node.value
        if value.kind != "string":
            raise self.error(
                f"'@{attribute.name}' is an enumeration: compare it with a literal name", value.pos
            )
        literal_def = attribute.literal_named(str(value.value))
        if literal_def is None:
            names = ", ".join(lit.name for lit in attribute.literals)
            raise self.error(
                f"'{value.value}' is not a literal of {attribute.name}; literals: {names}", value.pos
            )
        if node.op in ("=", "!="):
            ids = [literal_def.id]
        else:
            # Literals are ordered as the metamodel lists them: `@Criticality > "low"`.
            ids = [
                lit.id
                for lit in attribute.literals
                if literal_order_matches(lit.position, node.op, literal_def.position)
            ]
        matches = self.has_value(table, attribute, ElementValue.literal_id.in_(ids)) if ids else false()
        return not_(matches) if node.op == "!=" else matches

    def text_match(self, node: TextMatch, table: ElementTable, type_def: BlockTypeDef) -> Condition:
        prop = self.resolve(type_def, node.prop)
        if node.value.kind != "string":
            raise self.error(f"{node.method}() takes a string", node.value.pos)
        needle = str(node.value.value)
        if prop.value_type == "reference":
            return self.reference(prop, table, lambda other: _text_match(other.name, node.method, needle))
        if prop.value_type == "enum":
            attribute = prop.attribute
            assert attribute is not None
            ids = [lit.id for lit in attribute.literals if text_matches(lit.name, node.method, needle)]
            return self.has_value(table, attribute, ElementValue.literal_id.in_(ids)) if ids else false()
        if prop.value_type not in ("text", "richtext", "responsibility"):
            raise self.error(f"{node.method}() applies to text, not to '@{node.prop.name}'", node.pos)
        if prop.kind == "column":
            assert prop.column is not None
            return _text_match(getattr(table, prop.column), node.method, needle)
        assert prop.attribute is not None
        return self.has_value(
            table, prop.attribute, _text_match(ElementValue.text_value, node.method, needle)
        )

    def count(self, node: Count, table: ElementTable, type_def: BlockTypeDef) -> Condition:
        if node.value.kind != "number" or not isinstance(node.value.value, int) or node.value.value < 0:
            raise self.error("count() compares with a whole number", node.value.pos)
        limit = node.value.value
        if node.is_property:
            attribute = type_def.property_named(node.target)
            if attribute is None or not (attribute.builtin or self.actor.can_read_group(attribute.group_id)):
                raise self.error(f"type {type_def.name} has no property '{node.target}'", node.pos)
            counted = (
                select(func.count())
                .where(ElementValue.element_id == table.id, ElementValue.attribute_id == attribute.id)
                .scalar_subquery()
            )
            return _compare(counted, node.op, limit)
        link = self.link(type_def, Step(node.target, None, node.pos))
        other_type = self.metamodel.type_by_id(link.end.other_type_id) if link.end else type_def
        where = node.where
        condition = (lambda other: self.predicate(where, other, other_type)) if where is not None else None
        # "At least one" and "none" are semi-joins, which use the indexes better than counting.
        if (node.op, limit) in ((">", 0), (">=", 1), ("!=", 0)):
            return self.reference(link, table, condition)
        if (node.op, limit) in (("=", 0), ("<", 1), ("<=", 0)):
            return not_(self.reference(link, table, condition))
        return _compare(self.reference_count(link, table, condition), node.op, limit)

    # --- building blocks ---------------------------------------------------------------------------

    def operand(self, prop: ResolvedProperty, value: Value, ref: PropertyRef) -> Any:
        """The Python value to bind for a comparison with a property of the given value type."""
        value_type = prop.value_type
        if prop.kind == "attribute" and value_type == "dateInterval":
            value_type = "date"
        if value_type in ("text", "richtext", "responsibility"):
            if value.kind != "string":
                raise self.error(f"'@{ref.name}' is text: compare it with a string", value.pos)
            return value.value
        if value_type == "number":
            if value.kind != "number":
                raise self.error(f"'@{ref.name}' is a number: compare it with a number", value.pos)
            return value.value
        if value_type == "boolean":
            return value.value
        if value_type == "date":
            if value.kind == "date":
                return value.value
            if value.kind == "string":
                try:
                    return dt.date.fromisoformat(str(value.value))
                except ValueError:
                    pass
            raise self.error(f"'@{ref.name}' is a date: compare it with a date like 2025-01-31", value.pos)
        if value_type == "datetime":
            moment: Any = value.value
            if value.kind == "string":
                try:
                    moment = dt.datetime.fromisoformat(str(value.value).replace("Z", "+00:00"))
                except ValueError:
                    moment = None
            if isinstance(moment, dt.datetime):
                moment = moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
                try:
                    return moment.astimezone(dt.UTC)
                except OverflowError:
                    raise query_error(
                        f"'{value.value}' is outside the years 1 to 9999 in UTC",
                        value.pos,
                        pointer=self.pointer,
                        text=self.text,
                        code="query_date_out_of_range",
                    ) from None
            if isinstance(moment, dt.date):
                return moment
            raise self.error(
                f"'@{ref.name}' is a point in time: compare it with a date or a date-time", value.pos
            )
        raise self.error(f"'@{ref.name}' cannot be compared", ref.pos)  # pragma: no cover

    def has_value(self, table: ElementTable, attribute: AttributeDef, condition: Condition) -> Condition:
        """The element has a value of the attribute that satisfies the condition."""
        return table.id.in_(  # type: ignore[no-any-return]
            select(ElementValue.element_id).where(ElementValue.attribute_id == attribute.id, condition)
        )

    def present(self, prop: ResolvedProperty, table: ElementTable, ref: PropertyRef) -> Condition:
        """The property is not empty."""
        if prop.kind == "column":
            if prop.column == "description":
                return table.description != ""  # type: ignore[no-any-return]
            return true()
        if prop.kind == "attribute":
            assert prop.attribute is not None
            column = ElementValue.date_end if ref.part == "end" else ElementValue.date_value
            condition: Condition = column.is_not(None) if ref.part is not None else true()
            return self.has_value(table, prop.attribute, condition)
        return self.reference(prop, table)

    def reference(
        self,
        link: ResolvedProperty,
        table: ElementTable,
        condition: Callable[[ElementTable], Condition] | None = None,
        *,
        ids: Select[tuple[int]] | None = None,
    ) -> Condition:
        """The element refers, along the link, to some element that satisfies the condition and is among
        the ids (each optional: without either, to any element)."""
        other = aliased(Element)
        if link.kind == PARENT:
            if ids is not None:
                return and_(table.parent_id.is_not(None), table.parent_id.in_(ids))
            if condition is None:
                return table.parent_id.is_not(None)  # type: ignore[no-any-return]
            return and_(
                table.parent_id.is_not(None), table.parent_id.in_(select(other.id).where(condition(other)))
            )
        if link.kind == CHILDREN:
            children = select(other.parent_id).where(other.parent_id.is_not(None))
            if ids is not None:
                children = children.where(other.id.in_(ids))
            if condition is not None:
                children = children.where(condition(other))
            return table.id.in_(children)  # type: ignore[no-any-return]
        end = link.end
        assert end is not None
        holder_column, other_column = _relation_columns(end)
        related = select(holder_column).where(Relation.relation_type_id == end.relation_type.id)
        if ids is not None:
            related = related.where(other_column.in_(ids))
        if condition is not None:
            related = related.join(other, other.id == other_column).where(condition(other))
        return table.id.in_(related)  # type: ignore[no-any-return]

    def reference_count(
        self,
        link: ResolvedProperty,
        table: ElementTable,
        condition: Callable[[ElementTable], Condition] | None,
    ) -> Any:
        """How many elements the element refers to along the link (that satisfy the condition)."""
        other = aliased(Element)
        counted: Select[Any]
        if link.kind == CHILDREN:
            counted = select(func.count()).select_from(other).where(other.parent_id == table.id)
        elif link.kind == PARENT:
            counted = select(func.count()).select_from(other).where(other.id == table.parent_id)
        else:
            end = link.end
            assert end is not None
            holder_column, other_column = _relation_columns(end)
            counted = (
                select(func.count())
                .select_from(Relation)
                .where(Relation.relation_type_id == end.relation_type.id, holder_column == table.id)
            )
            if condition is not None:
                counted = counted.join(other, other.id == other_column)
        if condition is not None:
            counted = counted.where(condition(other))
        return counted.scalar_subquery()


def _relation_columns(end: RelationEnd) -> tuple[Any, Any]:
    """(column holding the element that has the end, column holding the elements it lists)."""
    if end.holder_is_source:
        return Relation.source_id, Relation.target_id
    return Relation.target_id, Relation.source_id


def _value_column(attribute: AttributeDef, part: str | None) -> Any:
    if attribute.value_type == "dateInterval":
        return ElementValue.date_end if part == "end" else ElementValue.date_value
    return _VALUE_COLUMNS[attribute.value_type]


def literal_order_matches(left: int, op: str, right: int) -> bool:
    return {"<": left < right, ">": left > right, "<=": left <= right, ">=": left >= right}[op]


def ascii_lower(text: str) -> str:
    """Lower-cases A-Z only, as SQLite's lower() does: both databases and the as-of evaluator agree."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans(_UPPER, _UPPER.lower())


def text_matches(text: str, method: str, needle: str) -> bool:
    if method == "contains":
        return needle in text
    if method == "containsIgnoreCase":
        return ascii_lower(needle) in ascii_lower(text)
    if method == "startsWith":
        return text.startswith(needle)
    return text.endswith(needle)


def day_bounds(day: dt.date) -> tuple[dt.datetime, dt.datetime | None]:
    """The first moment of a UTC day and of the next one; None after 9999-12-31, which has no next day."""
    start = dt.datetime.combine(day, dt.time(), tzinfo=dt.UTC)
    return start, None if day == dt.date.max else start + dt.timedelta(days=1)


def _day_comparison(column: Any, op: str, day: dt.date) -> Condition:
    """A time column against a whole day (UTC): `= 2025-01-31` means during that day."""
    start, end = day_bounds(day)
    before: Condition = column < start
    after: Condition = false() if end is None else column >= end
    if op == "=":
        return and_(not_(before), not_(after))
    if op == "!=":
        return or_(before, after)
    if op == "<":
        return before
    if op == "<=":
        return not_(after)
    if op == ">":
        return after
    return not_(before)


def compile_query(
    query: Query,
    metamodel: Metamodel,
    actor: Actor,
    *,
    target: ElementTable = Element,
    text: str | None = None,
    pointer: str = "/query",
) -> CompiledQuery:
    """The result type of `Type[…]/end[…]…` and the condition selecting its elements on `target`."""
    return QueryCompiler(metamodel, actor, text or "", pointer).query(query, target)


def compile_filter(
    predicate: Predicate,
    type_def: BlockTypeDef,
    metamodel: Metamodel,
    actor: Actor,
    *,
    target: ElementTable = Element,
    text: str | None = None,
    pointer: str = "filter",
) -> Condition:
    """The condition of a `filter` parameter (the inside of `[...]`) on elements of one type."""
    return QueryCompiler(metamodel, actor, text or "", pointer).predicate(predicate, target, type_def)
