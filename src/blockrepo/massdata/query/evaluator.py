"""Evaluates iteraQL on element JSON in Python: the engine for reads as of a past revision.

Today's elements are filtered in the database (`compiler.py`); a past state exists only as element JSON
folded from history, so `asOf` reads evaluate the same syntax tree on that JSON instead. Names are resolved
by the compiler (same 400/403 answers, same permission rules), and every rule mirrors its SQL counterpart:
multi-valued properties match when any value does, `!=` is the negation of `=`, enumerations compare by
literal and order by literal position, a time compared with a date means that whole UTC day.

Work is batched: a predicate is evaluated on a list of elements at once, and the related elements that
`count(end[...])` or a navigation step needs are loaded in one call of the loader per step.
"""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from blockrepo.massdata.query.compiler import (
    CHILDREN,
    PARENT,
    QueryCompiler,
    ResolvedProperty,
    day_bounds,
    literal_order_matches,
    text_matches,
)
from blockrepo.massdata.query.syntax import (
    And,
    Comparison,
    Count,
    Not,
    Or,
    Predicate,
    PropertyRef,
    Query,
    Step,
    TextMatch,
)
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef

ElementJson = dict[str, Any]
# Loads the element JSON (every property the actor may read) of those ids that are elements of the type.
Loader = Callable[[BlockTypeDef, Sequence[int]], list[ElementJson]]
# Yields the elements of a type, a batch at a time.
TypeScan = Callable[[BlockTypeDef], Iterable[list[ElementJson]]]

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
}


def compare(left: Any, op: str, right: Any) -> bool:
    """`left op right`; a missing value (None) satisfies nothing, as SQL NULL does."""
    if left is None:
        return False
    return _OPERATORS[op](left, right)


def parse_timestamp(raw: str) -> dt.datetime:
    """A `lastModificationTime` of the element JSON as an aware UTC datetime."""
    return dt.datetime.fromisoformat(raw.replace("Z", "+00:00")).astimezone(dt.UTC)


def _day_compare(moment: dt.datetime, op: str, day: dt.date) -> bool:
    """A time against a whole UTC day, as the compiler's `_day_comparison`."""
    start, end = day_bounds(day)
    during = start <= moment and (end is None or moment < end)
    if op == "=":
        return during
    if op == "!=":
        return not during
    if op == "<":
        return moment < start
    if op == "<=":
        return moment < start or during
    if op == ">":
        return not (moment < start or during)
    return moment >= start


def attribute_value(attribute: AttributeDef, raw: Any, part: str | None = None) -> Any:
    """A JSON value of an attribute as the Python value its typed column holds (enums: the literal's
    position, or None for a literal that no longer exists)."""
    value_type = attribute.value_type
    if value_type == "dateInterval":
        bound = raw.get("end" if part == "end" else "start") if isinstance(raw, dict) else None
        return dt.date.fromisoformat(bound) if isinstance(bound, str) else None
    if value_type == "date":
        return dt.date.fromisoformat(raw) if isinstance(raw, str) else None
    if value_type == "number":
        return float(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else None
    if value_type == "enum":
        literal = attribute.literal_named(str(raw))
        return literal.position if literal is not None else None
    return raw


def column_value(element: ElementJson, name: str) -> Any:
    """The value of a core column (id, name, description, revision, lastModification*) of element JSON."""
    if name == "lastModificationTime":
        stamps = element.get(name) or []
        return parse_timestamp(stamps[0]) if stamps else None
    values = element.get(name) or []
    if not values:
        return "" if name == "description" else None
    return values[0]


def _references(element: ElementJson, link: ResolvedProperty) -> list[dict[str, Any]]:
    """The related elements the element lists along an end, `parent` or `children`."""
    key = link.kind if link.kind in (PARENT, CHILDREN) else link.end.name if link.end else ""
    return [entry for entry in element.get(key) or [] if isinstance(entry, dict)]


class Evaluator:
    """Evaluates predicates and queries on element JSON, with names resolved by a `QueryCompiler`.

    The tree must have compiled with that compiler first (`compile_filter` / `compile_query`): that is what
    answers 400 or 403 for names, literals and value kinds, so evaluation itself never fails."""

    def __init__(self, compiler: QueryCompiler, load: Loader) -> None:
        self.compiler = compiler
        self.load = load

    # --- queries -----------------------------------------------------------------------------------

    def query_elements(self, query: Query, scan: TypeScan) -> list[ElementJson]:
        """The elements a query selects (of its last step's type). The first step scans its type a batch at
        a time; each navigation step loads the elements the previous step's elements list, in one call."""
        type_def = self.compiler.readable_type(query.start)
        selected: list[ElementJson] = []
        for batch in scan(type_def):
            selected.extend(self.filter(query.start.where, type_def, batch))
        for step in query.navigation:
            link = self.compiler.link(type_def, step)
            if link.end is not None:
                type_def = self.compiler.metamodel.type_by_id(link.end.other_type_id)
            related = sorted({ref["id"] for element in selected for ref in _references(element, link)})
            selected = self.filter(step.where, type_def, self.load(type_def, related))
        return selected

    def filter(
        self, where: Predicate | None, type_def: BlockTypeDef, elements: list[ElementJson]
    ) -> list[ElementJson]:
        if where is None:
            return elements
        return [e for e, ok in zip(elements, self.matches(where, type_def, elements), strict=True) if ok]

    # --- predicates --------------------------------------------------------------------------------

    def matches(self, node: Predicate, type_def: BlockTypeDef, elements: Sequence[ElementJson]) -> list[bool]:
        """Whether each element satisfies the predicate."""
        if isinstance(node, (And, Or)):
            combine = all if isinstance(node, And) else any
            parts = [self.matches(part, type_def, elements) for part in node.parts]
            return [combine(per_element) for per_element in zip(*parts, strict=True)]
        if isinstance(node, Not):
            return [not ok for ok in self.matches(node.part, type_def, elements)]
        if isinstance(node, Comparison):
            test = self.comparison(node, type_def)
        elif isinstance(node, TextMatch):
            test = self.text_match(node, type_def)
        else:
            return self.count(node, type_def, elements)
        return [test(element) for element in elements]

    def comparison(self, node: Comparison, type_def: BlockTypeDef) -> Callable[[ElementJson], bool]:
        prop = self.compiler.resolve(type_def, node.prop)
        op, value = node.op, node.value
        if value.kind == "null":
            present = self.present(prop, node.prop)
            return (lambda e: not present(e)) if op == "=" else present
        if prop.value_type == "reference":
            key = "id" if value.kind == "number" else "name"
            wanted = value.value

            def refers(element: ElementJson) -> bool:
                return any(ref.get(key) == wanted for ref in _references(element, prop))

            return (lambda e: not refers(e)) if op == "!=" else refers
        if prop.kind == "column":
            assert prop.column is not None
            name = node.prop.name
            operand = self.compiler.operand(prop, value, node.prop)
            if prop.value_type == "datetime" and not isinstance(operand, dt.datetime):
                return lambda e: _moment_matches(column_value(e, name), op, operand)
            return lambda e: compare(column_value(e, name), op, operand)
        attribute = prop.attribute
        assert attribute is not None
        part = node.prop.part
        if attribute.value_type == "enum":
            literal = attribute.literal_named(str(value.value))
            assert literal is not None  # the compiler refused an unknown literal
            if op in ("=", "!="):
                positions = {literal.position}
            else:
                positions = {
                    lit.position
                    for lit in attribute.literals
                    if literal_order_matches(lit.position, op, literal.position)
                }

            def has_literal(element: ElementJson) -> bool:
                return any(
                    attribute_value(attribute, raw) in positions for raw in element.get(attribute.name) or []
                )

            return (lambda e: not has_literal(e)) if op == "!=" else has_literal
        operand = self.compiler.operand(prop, value, node.prop)
        if op == "!=":
            return lambda e: (
                not any(
                    compare(attribute_value(attribute, raw, part), "=", operand)
                    for raw in e.get(attribute.name) or []
                )
            )
        return lambda e: any(
            compare(attribute_value(attribute, raw, part), op, operand) for raw in e.get(attribute.name) or []
        )

    def text_match(self, node: TextMatch, type_def: BlockTypeDef) -> Callable[[ElementJson], bool]:
        prop = self.compiler.resolve(type_def, node.prop)
        method, needle = node.method, str(node.value.value)
        if prop.value_type == "reference":
            return lambda e: any(
                text_matches(str(ref.get("name", "")), method, needle) for ref in _references(e, prop)
            )
        if prop.kind == "column":
            name = node.prop.name
            return lambda e: text_matches(str(column_value(e, name) or ""), method, needle)
        attribute = prop.attribute
        assert attribute is not None
        if attribute.value_type == "enum":
            # Matched on today's literal names, as the compiler does.
            positions = {lit.position for lit in attribute.literals if text_matches(lit.name, method, needle)}
            return lambda e: any(
                attribute_value(attribute, raw) in positions for raw in e.get(attribute.name) or []
            )
        return lambda e: any(
            isinstance(raw, str) and text_matches(raw, method, needle) for raw in e.get(attribute.name) or []
        )

    def count(self, node: Count, type_def: BlockTypeDef, elements: Sequence[ElementJson]) -> list[bool]:
        limit = node.value.value
        if node.is_property:
            return [compare(len(element.get(node.target) or []), node.op, limit) for element in elements]
        link = self.compiler.link(type_def, Step(node.target, None, node.pos))
        references = [_references(element, link) for element in elements]
        if node.where is None:
            return [compare(len(refs), node.op, limit) for refs in references]
        other_type = self.compiler.metamodel.type_by_id(link.end.other_type_id) if link.end else type_def
        related = sorted({ref["id"] for refs in references for ref in refs})
        satisfying = {e["id"][0] for e in self.filter(node.where, other_type, self.load(other_type, related))}
        return [
            compare(sum(1 for ref in refs if ref["id"] in satisfying), node.op, limit) for refs in references
        ]

    def present(self, prop: ResolvedProperty, ref: PropertyRef) -> Callable[[ElementJson], bool]:
        """The property is not empty (for an interval part: some value has that bound)."""
        if prop.kind == "column":
            if prop.column == "description":
                return lambda e: column_value(e, "description") != ""
            return lambda e: True
        if prop.kind == "attribute":
            attribute = prop.attribute
            assert attribute is not None
            if ref.part is None:
                return lambda e: bool(e.get(attribute.name))
            part = ref.part
            return lambda e: any(
                attribute_value(attribute, raw, part) is not None for raw in e.get(attribute.name) or []
            )
        return lambda e: bool(_references(e, prop))


def _moment_matches(moment: Any, op: str, day: Any) -> bool:
    return isinstance(moment, dt.datetime) and _day_compare(moment, op, day)
