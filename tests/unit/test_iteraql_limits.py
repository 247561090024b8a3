"""iteraQL limits and literal ranges, checked before parsing: each refused with a 400 naming the limit or the
position; chains of steps, `&`/`|` and `!` are parsed and compiled without recursion however long."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor, load_actor
from blockrepo.access.models import User
from blockrepo.elements.models import Element
from blockrepo.errors import QuerySyntaxError
from blockrepo.massdata.query.compiler import QueryCompiler, compile_filter, compile_query
from blockrepo.massdata.query.evaluator import ElementJson, Evaluator
from blockrepo.massdata.query.limits import QueryLimitExceeded, QueryLimits, check_limits
from blockrepo.massdata.query.parser import parse_predicate, parse_query
from blockrepo.massdata.query.syntax import And, Comparison, Not, Or
from blockrepo.metamodel.repository import load_metamodel
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine

DEFAULTS = QueryLimits()
# Far beyond anything the service accepts: what the code does without the limits' protection.
UNLIMITED = QueryLimits(
    max_length=10**8, max_steps=10**8, max_nesting=10**8, max_operators=10**8, max_number_length=4000
)
# Items of a chain: several times the frames `shallow_stack` leaves, so a recursion per item would fail.
CHAIN = 1_000
STEPS = 300


@contextmanager
def shallow_stack(frames: int = 200) -> Iterator[None]:
    """Lets the code inside use at most `frames` more frames of the interpreter's stack."""
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    default = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(default)


def refused(text: str, limits: QueryLimits = DEFAULTS) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_predicate(text, limits=limits)
    return caught.value


def test_defaults_equal_the_settings_defaults() -> None:
    assert QueryLimits.from_settings(Settings(database_url="sqlite://")) == DEFAULTS


@pytest.mark.parametrize(
    ("text", "code", "setting", "column"),
    [
        ("@name = 'x' & " * 1000 + "@id = 1", "query_too_long", "query_max_length", None),
        ("A" + "/children" * 12, "query_too_many_steps", "query_max_steps", 1 + 11 * 9 + 1),
        ("!" * 17 + "@id = 1", "query_too_deep", "query_max_nesting", 17),
        ("! " * 17 + "@id = 1", "query_too_deep", "query_max_nesting", 33),
        ("(" * 17 + "@id = 1" + ")" * 17, "query_too_deep", "query_max_nesting", 17),
        ("count(children[" * 9 + "@id = 1" + "]) > 0" * 9, "query_too_deep", "query_max_nesting", 126),
        ("@id=1&" * 129 + "@id=1", "query_too_many_operators", "query_max_operators", 129 * 6),
        ("@id=1|" * 129 + "@id=1", "query_too_many_operators", "query_max_operators", 129 * 6),
        ("!(@id=1)&" * 65 + "@id=1", "query_too_many_operators", "query_max_operators", 64 * 9 + 1),
        ("@name = '" + "x" * 2001 + "'", "query_literal_too_long", "query_max_string_length", 9),
        ("@id = " + "9" * 5000, "query_literal_too_long", "query_max_number_length", 7),
    ],
)
def test_each_limit_is_named_with_its_code_and_position(
    text: str, code: str, setting: str, column: int | None
) -> None:
    error = refused(text)
    assert isinstance(error, QueryLimitExceeded)
    assert error.status == 400 and error.instance_code == code
    assert setting in error.detail
    assert error.extra["limit"]["name"] == setting
    assert error.errors[0].code == code and error.errors[0].pointer == "filter"
    if column is not None:
        assert error.extra["position"]["column"] == column


def test_queries_within_the_limits_pass_the_scan() -> None:
    check_limits("A" + "/children" * 11 + ";", DEFAULTS, pointer="/query")
    check_limits("@id=1&" * 128 + "@id=1", DEFAULTS, pointer="filter")
    check_limits("!" * 16 + "@id = 1", DEFAULTS, pointer="filter")
    check_limits("[" + "(" * 15 + "@id = 1" + ")" * 15 + "]", DEFAULTS, pointer="filter")
    check_limits("@name = '" + "x" * 2000 + "' & @id != 1.5e300", DEFAULTS, pointer="filter")


def test_operators_and_brackets_inside_strings_do_not_count() -> None:
    text = "@name = '" + "(!&|/[" * 300 + '\' | @description.contains("!!!!!!!!!!!!!!!!!!!!!!!!")'
    check_limits(text, DEFAULTS, pointer="filter")
    assert isinstance(parse_predicate(text), Or)


def test_the_limits_are_the_configured_ones() -> None:
    tight = QueryLimits(max_length=20, max_steps=2, max_nesting=2, max_operators=1, max_string_length=3)
    assert refused("@name = 'abcd'", tight).instance_code == "query_literal_too_long"
    assert refused("@id=1&@id=2|@id=3", tight).instance_code == "query_too_many_operators"
    assert refused("(((@id = 1)))", tight).instance_code == "query_too_deep"
    assert refused("@name = '" + "x" * 30 + "'", tight).instance_code == "query_too_long"
    with pytest.raises(QueryLimitExceeded) as caught:
        parse_query("A/b/c", limits=tight)
    assert caught.value.instance_code == "query_too_many_steps"
    assert parse_query("A/b", limits=tight).navigation[0].name == "b"


@pytest.mark.parametrize("text", ['@name = "a\x00b"', "@name\x00 = 'a'", "\x00", "@name = 'a' & @id = 1\x00"])
def test_nul_is_refused_with_its_position(text: str) -> None:
    error = refused(text)
    assert error.instance_code == "query_nul_character"
    assert error.extra["position"]["offset"] == text.index("\x00")
    assert f"column {text.index(chr(0)) + 1}" in error.detail


@pytest.mark.parametrize(
    "number",
    [str(2**63), str(-(2**63) - 1), "18446744073709551616", "9" * 40, "1e309", "-1e309", "1" * 400 + ".0"],
)
def test_numbers_beyond_64_bits_or_not_finite_are_refused_with_their_position(number: str) -> None:
    error = refused(f"@id = {number}", QueryLimits(max_number_length=4000))
    assert error.instance_code == "query_number_out_of_range"
    assert error.extra["position"]["column"] == 7


def test_a_number_beyond_what_python_converts_is_out_of_range_not_a_crash() -> None:
    error = refused("@id = " + "9" * 3999 + " & count(children) > 1", UNLIMITED)
    assert error.instance_code == "query_number_out_of_range"


@pytest.mark.parametrize("number", [str(2**63 - 1), str(-(2**63)), "1e308", "1e-400", "0.5"])
def test_numbers_at_the_edges_of_the_range_are_accepted(number: str) -> None:
    where = parse_predicate(f"count(children) > {number}")
    assert where is not None


@pytest.mark.parametrize("moment", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_date_times_outside_the_utc_range_are_refused_with_their_position(moment: str) -> None:
    error = refused(f"@lastModificationTime < {moment}")
    assert error.instance_code == "query_date_out_of_range"
    assert error.extra["position"]["column"] == 25


# --- no recursion per step or per operator -----------------------------------------------------------


def test_a_run_of_negations_is_one_not_or_none() -> None:
    with shallow_stack():
        odd = parse_predicate("!" * (CHAIN + 1) + "@id = 1", limits=UNLIMITED)
        even = parse_predicate("!" * CHAIN + "@id = 1", limits=UNLIMITED)
    assert isinstance(odd, Not) and isinstance(odd.part, Comparison)
    assert isinstance(even, Comparison)


def test_long_chains_of_junctions_and_steps_parse_flat() -> None:
    with shallow_stack():
        conjunction = parse_predicate("@id = 1" + " & @id = 1" * CHAIN, limits=UNLIMITED)
        disjunction = parse_predicate("@id = 1" + " | !@id = 1" * CHAIN, limits=UNLIMITED)
        query = parse_query("BusinessProcess" + "/children" * CHAIN + ";", limits=UNLIMITED)
    assert isinstance(conjunction, And) and len(conjunction.parts) == CHAIN + 1
    assert isinstance(disjunction, Or) and len(disjunction.parts) == CHAIN + 1
    assert len(query.navigation) == CHAIN


@pytest.fixture
def repository(database_url: str) -> Iterator[tuple[Session, Metamodel, Actor]]:
    engine = build_engine(database_url)
    with Session(engine) as db:
        system = db.scalars(select(User).where(User.login == "system")).one()
        yield db, load_metamodel(db, 0), load_actor(db, system)
    engine.dispose()


def test_long_chains_compile_to_sql_without_recursion(repository: tuple[Session, Metamodel, Actor]) -> None:
    db, metamodel, actor = repository
    type_def = metamodel.type_named("BusinessProcess")
    assert type_def is not None
    query = parse_query("BusinessProcess" + "/children" * STEPS + ";", limits=UNLIMITED)
    where = parse_predicate("@id = 1" + " | @name = 'x'" * CHAIN, limits=UNLIMITED)
    with shallow_stack():
        compiled = compile_query(query, metamodel, actor)
        steps = select(Element.id).add_cte(*compiled.steps).where(compiled.condition)
        steps_sql = str(steps.compile(db.get_bind()))
        condition = compile_filter(where, type_def, metamodel, actor)
        where_sql = str(select(Element.id).where(condition).compile(db.get_bind()))
    assert f"step_{STEPS - 1}" in steps_sql
    assert where_sql.count(" OR ") == CHAIN


def test_long_chains_evaluate_without_recursion(repository: tuple[Session, Metamodel, Actor]) -> None:
    _db, metamodel, actor = repository
    type_def = metamodel.type_named("BusinessProcess")
    assert isinstance(type_def, BlockTypeDef)
    elements: list[ElementJson] = [{"id": [1], "name": ["Sales"]}, {"id": [2], "name": ["Hiring"]}]
    evaluator = Evaluator(QueryCompiler(metamodel, actor, "", "filter"), lambda _type, _ids: [])
    anything = parse_predicate("@id = 0" + " | @name = 'Sales'" * CHAIN, limits=UNLIMITED)
    everything = parse_predicate("@id > 0" + " & !@name = 'x'" * CHAIN, limits=UNLIMITED)
    with shallow_stack():
        assert evaluator.matches(anything, type_def, elements) == [True, False]
        assert evaluator.matches(everything, type_def, elements) == [True, True]
