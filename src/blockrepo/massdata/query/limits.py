"""Limits on iteraQL text, checked by one linear scan before the parser or the database sees it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from blockrepo.errors import ErrorItem, QuerySyntaxError
from blockrepo.massdata.query.syntax import Position
from blockrepo.settings import Settings


@dataclass(frozen=True)
class QueryLimits:
    """How large a query may be. The defaults equal those of `Settings` (a test keeps them in step).

    Each bounds what a query costs before it costs anything: the steps and the nesting bound how deeply
    the compiled SQL nests (and so the stack of the SQL compiler and SQLite's expression depth of 1000),
    the operators bound how many subqueries and parameters it has (PostgreSQL takes at most 65,535)."""

    max_length: int = 10_000
    max_steps: int = 12
    max_nesting: int = 16
    max_operators: int = 128
    max_string_length: int = 2_000
    max_number_length: int = 40

    @classmethod
    def from_settings(cls, settings: Settings) -> QueryLimits:
        return cls(
            max_length=settings.query_max_length,
            max_steps=settings.query_max_steps,
            max_nesting=settings.query_max_nesting,
            max_operators=settings.query_max_operators,
            max_string_length=settings.query_max_string_length,
            max_number_length=settings.query_max_number_length,
        )


class QueryLimitExceeded(QuerySyntaxError):
    """A query beyond one of the limits (400). The instance code names which: `query_too_long`,
    `query_too_many_steps`, `query_too_deep`, `query_too_many_operators`, `query_literal_too_long`."""

    code = "query_limit_exceeded"
    title = "Query Too Large"


# One token of the scan. Strings may be unterminated (the parser reports that afterwards); a run starting
# with a digit is a number, date or date-time (and whatever sticks to it), measured as one literal.
_TOKEN = re.compile(
    r"""
    (?P<string>"(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<number>\.?[0-9][0-9A-Za-z_.:+\-]*)
    |(?P<not>!(?!=))
    |(?P<junction>[&|])
    |(?P<open>[(\[])
    |(?P<close>[)\]])
    |(?P<step>/)
    |(?P<space>\s+)
    |(?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


def position_at(text: str, offset: int) -> Position:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Position(offset=offset, line=line, column=column)


def limit_error(
    code: str, message: str, *, pointer: str, setting: str, limit: int, pos: Position | None = None
) -> QueryLimitExceeded:
    where = f" (at {pos.describe()})" if pos is not None else ""
    extra: dict[str, Any] = {"limit": {"name": setting, "value": limit}}
    if pos is not None:
        extra["position"] = {"offset": pos.offset, "line": pos.line, "column": pos.column}
    return QueryLimitExceeded(
        f"{message}{where}; the limit {setting} is {limit}",
        code=code,
        errors=[ErrorItem(pointer=pointer, code=code, message=f"{message}{where}")],
        extra=extra,
    )


def nul_error(text: str, offset: int, pointer: str) -> QuerySyntaxError:
    pos = position_at(text, offset)
    message = f"a query may not contain the NUL character (at {pos.describe()})"
    return QuerySyntaxError(
        message,
        code="query_nul_character",
        errors=[ErrorItem(pointer=pointer, code="query_nul_character", message=message)],
        extra={"position": {"offset": pos.offset, "line": pos.line, "column": pos.column}},
    )


def check_limits(text: str, limits: QueryLimits, *, pointer: str) -> None:
    """Raise `QueryLimitExceeded` for the first limit the text exceeds, in reading order (the length
    first), or `QuerySyntaxError` (`query_nul_character`) for a NUL anywhere: PostgreSQL takes none in
    text. One pass, no recursion: the text may be anything a client sends."""
    if len(text) > limits.max_length:
        raise limit_error(
            "query_too_long",
            f"the query is {len(text)} characters long",
            pointer=pointer,
            setting="query_max_length",
            limit=limits.max_length,
        )
    nul = text.find("\x00")
    if nul >= 0:
        raise nul_error(text, nul, pointer)
    depth = negations = operators = steps = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "space":
            continue  # `! ! x` is as deep as `!!x`
        start = match.start()
        if kind != "not":
            negations = 0
        if kind == "string" and len(match.group()) - 2 > limits.max_string_length:
            raise limit_error(
                "query_literal_too_long",
                f"a string of {len(match.group()) - 2} characters",
                pointer=pointer,
                setting="query_max_string_length",
                limit=limits.max_string_length,
                pos=position_at(text, start),
            )
        elif kind == "number" and len(match.group()) > limits.max_number_length:
            raise limit_error(
                "query_literal_too_long",
                f"a number of {len(match.group())} characters",
                pointer=pointer,
                setting="query_max_number_length",
                limit=limits.max_number_length,
                pos=position_at(text, start),
            )
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif kind == "step":
            steps += 1
            if steps + 1 > limits.max_steps:
                raise limit_error(
                    "query_too_many_steps",
                    f"more than {limits.max_steps} steps",
                    pointer=pointer,
                    setting="query_max_steps",
                    limit=limits.max_steps,
                    pos=position_at(text, start),
                )
        if kind == "not":
            negations += 1
        if kind in ("not", "open") and depth + negations > limits.max_nesting:
            raise limit_error(
                "query_too_deep",
                f"more than {limits.max_nesting} levels of parentheses, brackets and '!'",
                pointer=pointer,
                setting="query_max_nesting",
                limit=limits.max_nesting,
                pos=position_at(text, start),
            )
        if kind in ("not", "junction"):
            operators += 1
            if operators > limits.max_operators:
                raise limit_error(
                    "query_too_many_operators",
                    f"more than {limits.max_operators} operators (&, |, !)",
                    pointer=pointer,
                    setting="query_max_operators",
                    limit=limits.max_operators,
                    pos=position_at(text, start),
                )
