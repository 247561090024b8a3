"""Parses iteraQL text into the syntax tree with a lark LALR grammar; errors say where they are.

The text is checked against the limits first (`limits.py`). Nothing here recurses per step or per operator:
steps and `&`/`|` chains are flat lists in the grammar, a run of `!` is one rule, and the parse tree is
transformed without recursion, so only parenthesis nesting (bounded by the limits) deepens the syntax tree.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any, cast

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from blockrepo.errors import ErrorItem, QuerySyntaxError
from blockrepo.massdata.query.limits import QueryLimits, check_limits
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
    TextMethod,
    Value,
)

GRAMMAR = r"""
query: step ("/" step)* ";"?
step: name filter?
?filter: "[" disjunction "]"

predicate: disjunction
?disjunction: conjunction ("|" conjunction)+ -> any_of
            | conjunction
?conjunction: negation ("&" negation)+ -> all_of
            | negation
?negation: NOT+ atom -> negate
         | atom
?atom: "(" disjunction ")"
     | comparison
     | call
     | count
comparison: property COMPARATOR literal
call: property "(" literal ")"
property: "@" name ("." NAME)*
count: COUNT "(" count_target ")" COMPARATOR literal
count_target: name filter? -> count_end
            | "@" name -> count_property

?name: NAME | STRING
literal: STRING | NUMBER | DATE | DATETIME | NULL | TRUE | FALSE

COUNT: "count"
NOT: "!"
NULL: "null"
TRUE: "true"
FALSE: "false"
COMPARATOR: "!=" | "<=" | ">=" | "=" | "<" | ">"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
STRING: /"(?:[^"\\]|\\.)*"/ | /'(?:[^'\\]|\\.)*'/
DATETIME.3: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?/
DATE.2: /\d{4}-\d{2}-\d{2}/
NUMBER: /-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/

%import common.WS
%ignore WS
"""

TEXT_METHODS = ("contains", "containsIgnoreCase", "startsWith", "endsWith")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_ESCAPE_PATTERN = re.compile(r"\\(.)", re.DOTALL)
# How the parser's terminals read in an error message.
_TERMINAL_WORDS = {
    "NAME": "a name",
    "STRING": "a string",
    "NUMBER": "a number",
    "DATE": "a date",
    "DATETIME": "a date-time",
    "COMPARATOR": "a comparison operator (= != < > <= >=)",
    "$END": "the end of the query",
}

_parser = Lark(GRAMMAR, parser="lalr", start=["query", "predicate"], maybe_placeholders=False)


class QueryInvalid(QuerySyntaxError):
    """The query parses but does not make sense (an unknown name, a value of the wrong kind)."""

    code = "query_invalid"


def position_of(token: Token) -> Position:
    return Position(offset=token.start_pos or 0, line=token.line or 1, column=token.column or 1)


def query_error(
    message: str,
    pos: Position,
    *,
    pointer: str,
    invalid: bool = False,
    text: str | None = None,
    code: str | None = None,
) -> QuerySyntaxError:
    """A 400 that names the position; `invalid` for meaning errors, else a syntax error; `code` replaces
    the class's code where a client may want to tell the case apart."""
    detail = f"{message} (at {pos.describe()})"
    if text is not None:
        detail += "\n" + _caret(text, pos)
    cls = QueryInvalid if invalid else QuerySyntaxError
    return cls(
        detail,
        code=code,
        errors=[ErrorItem(pointer=pointer, code=code or cls.code, message=f"{message} at {pos.describe()}")],
        extra={"position": {"offset": pos.offset, "line": pos.line, "column": pos.column}},
    )


def _caret(text: str, pos: Position) -> str:
    lines = text.splitlines() or [""]
    line = lines[min(pos.line, len(lines)) - 1]
    return f"{line}\n{' ' * (pos.column - 1)}^"


def _unescape(quoted: str) -> str:
    return _ESCAPE_PATTERN.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), quoted[1:-1])


def _name(token: Token) -> str:
    return _unescape(token) if token.type == "STRING" else str(token)


@v_args(inline=True)
class _ToSyntax(Transformer_NonRecursive[Token, Any]):
    """Turns lark's parse tree into the frozen syntax tree of `syntax.py`."""

    def __init__(self, pointer: str, text: str) -> None:
        super().__init__()
        self.pointer = pointer
        self.text = text

    def error(self, message: str, pos: Position, code: str | None = None) -> QuerySyntaxError:
        return query_error(message, pos, pointer=self.pointer, text=self.text, code=code)

    def query(self, start: Step, *navigation: Step) -> Query:
        return Query(start=start, navigation=tuple(navigation))

    def step(self, name: Token, where: Predicate | None = None) -> Step:
        return Step(name=_name(name), where=where, pos=position_of(name))

    def predicate(self, where: Predicate) -> Predicate:
        return where

    def any_of(self, *parts: Predicate) -> Or:
        return Or(tuple(parts))

    def all_of(self, *parts: Predicate) -> And:
        return And(tuple(parts))

    def negate(self, *bangs_and_part: Any) -> Predicate:
        # Every atom compiles to a two-valued condition, so `!!p` is `p`: a run of `!` is one `Not` or none.
        part = cast(Predicate, bangs_and_part[-1])
        return Not(part) if len(bangs_and_part) % 2 == 0 else part

    def property(self, name: Token, *parts: Token) -> tuple[Token, list[Token]]:
        return name, list(parts)

    def comparison(self, prop: tuple[Token, list[Token]], op: Token, value: Value) -> Comparison:
        name, parts = prop
        if len(parts) > 1:
            raise self.error(
                f"unexpected '.{parts[1]}' after '@{_name(name)}.{parts[0]}'", position_of(parts[1])
            )
        ref = PropertyRef(_name(name), str(parts[0]) if parts else None, position_of(name))
        return Comparison(ref, str(op), value, position_of(op))

    def call(self, prop: tuple[Token, list[Token]], value: Value) -> TextMatch:
        name, parts = prop
        if not parts:
            raise self.error(
                f"'@{_name(name)}' is not a function; use '@{_name(name)}.contains(\"…\")'", position_of(name)
            )
        method = parts[-1]
        if str(method) not in TEXT_METHODS:
            raise self.error(
                f"unknown function '{method}'; use one of {', '.join(TEXT_METHODS)}", position_of(method)
            )
        if len(parts) > 2:
            raise self.error(f"unexpected '.{parts[1]}'", position_of(parts[1]))
        ref = PropertyRef(_name(name), str(parts[0]) if len(parts) == 2 else None, position_of(name))
        kind = cast(TextMethod, str(method))
        return TextMatch(ref, kind, value, position_of(method))

    def count(
        self, keyword: Token, target: tuple[Token, bool, Predicate | None], op: Token, value: Value
    ) -> Count:
        name, is_property, where = target
        return Count(_name(name), is_property, where, str(op), value, position_of(keyword))

    def count_end(self, name: Token, where: Predicate | None = None) -> tuple[Token, bool, Predicate | None]:
        return name, False, where

    def count_property(self, name: Token) -> tuple[Token, bool, Predicate | None]:
        return name, True, None

    def number(self, text: str, pos: Position) -> int | float:
        """An integer within 64 bits or a finite double: the range both databases compare exactly."""
        if any(c in text for c in ".eE"):
            number = float(text)
            if not math.isfinite(number):
                raise self.error(f"{text} is beyond the range of a number", pos, "query_number_out_of_range")
            return number
        try:
            whole = int(text)
        except ValueError:  # more digits than Python converts; only reachable with a raised length limit
            whole = INT64_MAX + 1
        if not INT64_MIN <= whole <= INT64_MAX:
            raise self.error(
                f"{text if len(text) <= 40 else text[:20] + '…'} is beyond the range of a 64-bit integer",
                pos,
                "query_number_out_of_range",
            )
        return whole

    def literal(self, token: Token) -> Value:
        pos = position_of(token)
        kind = token.type
        if kind == "STRING":
            return Value("string", _unescape(token), pos)
        if kind == "NUMBER":
            return Value("number", self.number(str(token), pos), pos)
        if kind == "DATE":
            try:
                return Value("date", dt.date.fromisoformat(token), pos)
            except ValueError:
                raise self.error(f"'{token}' is not a valid date", pos) from None
        if kind == "DATETIME":
            try:
                moment = dt.datetime.fromisoformat(str(token).replace("Z", "+00:00"))
            except ValueError:
                raise self.error(f"'{token}' is not a valid date-time", pos) from None
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.UTC)
            try:
                moment.astimezone(dt.UTC)
            except OverflowError:
                raise self.error(
                    f"'{token}' is outside the years 1 to 9999 in UTC", pos, "query_date_out_of_range"
                ) from None
            return Value("datetime", moment, pos)
        if kind == "NULL":
            return Value("null", None, pos)
        return Value("boolean", kind == "TRUE", pos)


def _describe_expected(expected: set[str] | frozenset[str]) -> str:
    words = set()
    for name in expected:
        if name in _TERMINAL_WORDS:
            words.add(_TERMINAL_WORDS[name])
            continue
        try:
            pattern = _parser.get_terminal(name).pattern
        except KeyError:
            words.add(name)
            continue
        words.add(f"'{pattern.value}'" if pattern.type == "str" else name.lower())
    return ", ".join(sorted(words))


def _syntax_error(exc: UnexpectedInput, text: str, pointer: str) -> QuerySyntaxError:
    if (isinstance(exc, UnexpectedToken) and exc.token.type == "$END") or isinstance(exc, UnexpectedEOF):
        lines = text.splitlines() or [""]
        pos = Position(offset=len(text), line=len(lines), column=len(lines[-1]) + 1)
        expected = _describe_expected(set(getattr(exc, "expected", ()) or ()))
        message = "unexpected end of the query" + (f"; expected {expected}" if expected else "")
        return query_error(message, pos, pointer=pointer, text=text)
    pos = Position(offset=exc.pos_in_stream or 0, line=exc.line, column=exc.column)
    if isinstance(exc, UnexpectedToken):
        expected = _describe_expected(exc.accepts or exc.expected)
        message = f"unexpected '{exc.token}'; expected {expected}"
    elif isinstance(exc, UnexpectedCharacters):
        message = f"unexpected character {exc.char!r}"
        if exc.allowed:
            message += f"; expected {_describe_expected(exc.allowed)}"
    else:  # pragma: no cover - lark raises only the kinds above for LALR
        message = "syntax error"
    return query_error(message, pos, pointer=pointer, text=text)


def _parse(text: str, start: str, pointer: str, limits: QueryLimits) -> Any:
    check_limits(text, limits, pointer=pointer)
    if not text.strip():
        raise query_error("the query is empty", Position(0, 1, 1), pointer=pointer)
    try:
        tree = _parser.parse(text, start=start)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text, pointer) from None
    try:
        return _ToSyntax(pointer, text).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, QuerySyntaxError):
            raise exc.orig_exc from None
        raise


def parse_query(text: str, *, pointer: str = "/query", limits: QueryLimits = QueryLimits()) -> Query:
    """`Type[predicate]/end[predicate];` -> syntax tree; `QuerySyntaxError` (400) naming the position,
    `QueryLimitExceeded` (400) naming the limit."""
    return cast(Query, _parse(text, "query", pointer, limits))


def parse_predicate(text: str, *, pointer: str = "filter", limits: QueryLimits = QueryLimits()) -> Predicate:
    """The inside of `[...]`, as the `filter` parameter takes it."""
    return cast(Predicate, _parse(text, "predicate", pointer, limits))
