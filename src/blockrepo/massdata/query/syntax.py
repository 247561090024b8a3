"""The syntax tree of iteraQL: what the parser produces and the compiler consumes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Position:
    """Where a piece of the query text starts: 0-based offset, 1-based line and column."""

    offset: int
    line: int
    column: int

    def describe(self) -> str:
        return f"line {self.line}, column {self.column}"


@dataclass(frozen=True)
class Value:
    """A literal on the right of a comparison. `kind` says how it was written."""

    kind: Literal["string", "number", "date", "datetime", "boolean", "null"]
    value: str | float | int | bool | dt.date | dt.datetime | None
    pos: Position


@dataclass(frozen=True)
class PropertyRef:
    """`@name` or `@"Annual costs"`, optionally with a part such as `@runtimePeriod.start`."""

    name: str
    part: str | None
    pos: Position


@dataclass(frozen=True)
class Comparison:
    prop: PropertyRef
    op: str  # = != < > <= >=
    value: Value
    pos: Position


# containsIgnoreCase folds case with SQL lower(): on SQLite that folds ASCII letters only.
TextMethod = Literal["contains", "containsIgnoreCase", "startsWith", "endsWith"]


@dataclass(frozen=True)
class TextMatch:
    """`@prop.contains("x")`, `.containsIgnoreCase("x")`, `.startsWith("x")`, `.endsWith("x")`."""

    prop: PropertyRef
    method: TextMethod
    value: Value
    pos: Position


@dataclass(frozen=True)
class Count:
    """`count(end) > n`, `count(end[predicate]) >= n`, `count(children)`, `count(@Tags)`."""

    target: str
    is_property: bool  # written with @: counts an attribute's values
    where: Predicate | None
    op: str
    value: Value
    pos: Position


@dataclass(frozen=True)
class And:
    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    parts: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    part: Predicate


Predicate = Comparison | TextMatch | Count | And | Or | Not


@dataclass(frozen=True)
class Step:
    """The type of a query (first step) or a relation end to navigate along, each with an optional filter."""

    name: str
    where: Predicate | None
    pos: Position


@dataclass(frozen=True)
class Query:
    start: Step
    navigation: tuple[Step, ...]
