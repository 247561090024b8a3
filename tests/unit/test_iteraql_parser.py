"""iteraQL text -> syntax tree, and syntax errors that name their position."""

from __future__ import annotations

import datetime as dt

import pytest

from blockrepo.errors import QuerySyntaxError
from blockrepo.massdata.query.parser import parse_predicate, parse_query
from blockrepo.massdata.query.syntax import And, Comparison, Count, Not, Or, TextMatch


def test_bare_type() -> None:
    query = parse_query("InformationSystem;")
    assert query.start.name == "InformationSystem"
    assert query.start.where is None
    assert query.navigation == ()


def test_semicolon_is_optional_and_whitespace_free() -> None:
    assert parse_query("  InformationSystem \n").start.name == "InformationSystem"


def test_navigation_with_a_filter_at_each_step() -> None:
    query = parse_query('BusinessProcess[@name = "Sales"]/informationSystems[@Costs > 10]/predecessors;')
    assert [s.name for s in (query.start, *query.navigation)] == [
        "BusinessProcess",
        "informationSystems",
        "predecessors",
    ]
    assert isinstance(query.navigation[0].where, Comparison)
    assert query.navigation[1].where is None


def test_precedence_not_binds_tighter_than_and_tighter_than_or() -> None:
    where = parse_predicate("@a = 1 | !@b = 2 & @c = 3")
    assert isinstance(where, Or)
    first, second = where.parts
    assert isinstance(first, Comparison) and first.prop.name == "a"
    assert isinstance(second, And)
    assert isinstance(second.parts[0], Not)


def test_parentheses_group() -> None:
    where = parse_predicate("(@a = 1 | @b = 2) & @c = 3")
    assert isinstance(where, And)
    assert isinstance(where.parts[0], Or)


def test_literals_of_every_kind() -> None:
    where = parse_predicate(
        '@a = "x\\"y" & @b = \'single\' & @c = -1.5e2 & @d = 2025-01-31 & @e = 2025-01-31T10:00:00Z'
        " & @f = null & @g = true & @h = false & @i = 42"
    )
    assert isinstance(where, And)
    values = [p.value for p in where.parts if isinstance(p, Comparison)]
    assert [(v.kind, v.value) for v in values] == [
        ("string", 'x"y'),
        ("string", "single"),
        ("number", -150.0),
        ("date", dt.date(2025, 1, 31)),
        ("datetime", dt.datetime(2025, 1, 31, 10, tzinfo=dt.UTC)),
        ("null", None),
        ("boolean", True),
        ("boolean", False),
        ("number", 42),
    ]


def test_quoted_property_names_and_parts() -> None:
    where = parse_predicate('@"Annual costs" >= 10 & @runtimePeriod.end < 2030-01-01')
    assert isinstance(where, And)
    first, second = where.parts
    assert isinstance(first, Comparison) and first.prop.name == "Annual costs" and first.op == ">="
    assert isinstance(second, Comparison) and (second.prop.name, second.prop.part) == ("runtimePeriod", "end")


@pytest.mark.parametrize("method", ["contains", "containsIgnoreCase", "startsWith", "endsWith"])
def test_text_functions(method: str) -> None:
    where = parse_predicate(f'@name.{method}("ER")')
    assert isinstance(where, TextMatch)
    assert (where.prop.name, where.method, where.value.value) == ("name", method, "ER")


def test_count_forms() -> None:
    where = parse_predicate('count(informationSystems[@status = "CURRENT"]) > 2 & count(@Tags) = 0')
    assert isinstance(where, And)
    relation_count, value_count = where.parts
    assert isinstance(relation_count, Count)
    assert (relation_count.target, relation_count.is_property, relation_count.op) == (
        "informationSystems",
        False,
        ">",
    )
    assert isinstance(relation_count.where, Comparison)
    assert isinstance(value_count, Count) and value_count.is_property


def test_count_is_an_ordinary_name_elsewhere() -> None:
    query = parse_query("A/count[@count = 1]")
    assert query.navigation[0].name == "count"


def _syntax_error(text: str, *, predicate: bool = False) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as caught:
        if predicate:
            parse_predicate(text)
        else:
            parse_query(text)
    return caught.value


@pytest.mark.parametrize(
    ("text", "line", "column", "fragment"),
    [
        ("InformationSystem[@name = ]", 1, 27, "unexpected ']'"),
        ('InformationSystem[@name = "x"', 1, 30, "unexpected end of the query; expected ']'"),
        ("InformationSystem[@name ~ 1]", 1, 25, "unexpected character '~'"),
        ("InformationSystem[@name = 1 && @id = 2]", 1, 30, "unexpected '&'"),
        ("InformationSystem;\nBusinessProcess", 2, 1, "unexpected 'BusinessProcess'"),
        ('InformationSystem[\n  @name.matches("x")]', 2, 9, "unknown function 'matches'"),
        ("InformationSystem[@a.b.c = 1]", 1, 24, "unexpected '.c'"),
        ("InformationSystem[@d = 2025-02-30]", 1, 24, "not a valid date"),
        ("InformationSystem[name = 1]", 1, 19, "unexpected 'name'"),
        ("/x", 1, 1, "unexpected '/'"),
    ],
)
def test_syntax_errors_name_the_position(text: str, line: int, column: int, fragment: str) -> None:
    error = _syntax_error(text)
    assert error.status == 400
    assert fragment in error.detail
    assert f"line {line}, column {column}" in error.detail
    assert error.extra["position"]["line"] == line
    assert error.extra["position"]["column"] == column
    assert error.errors[0].pointer == "/query"


def test_error_detail_shows_a_caret_under_the_position() -> None:
    error = _syntax_error("Type[@a = = 1]")
    assert error.detail.endswith("Type[@a = = 1]\n          ^")


def test_expected_tokens_are_listed() -> None:
    error = _syntax_error("Type[@a 1]")
    assert "a comparison operator" in error.detail


def test_empty_query() -> None:
    assert "empty" in _syntax_error("   ").detail


def test_filter_errors_point_at_the_filter_parameter() -> None:
    error = _syntax_error("@name = ", predicate=True)
    assert error.errors[0].pointer == "filter"
    assert error.extra["position"]["column"] == 9


def test_a_whole_query_is_not_a_filter() -> None:
    error = _syntax_error("Type[@a = 1]", predicate=True)
    assert error.extra["position"] == {"offset": 0, "line": 1, "column": 1}
