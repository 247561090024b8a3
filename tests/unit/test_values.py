"""The typed value codecs: decoding API JSON with precise errors, and encoding stored values."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

import pytest

from blockrepo.elements.values import (
    TypedValue,
    ValueProblem,
    check_name,
    decode_value,
    encode_value,
    value_decoder,
)
from blockrepo.metamodel.snapshot import AttributeDef, LiteralDef

BASE = AttributeDef(
    id=1,
    name="Attr",
    description="",
    value_type="text",
    multiple=False,
    mandatory=False,
    group_id=1,
    group_name="g",
    unit=None,
    min_value=None,
    max_value=None,
    builtin_type_id=None,
    position=0,
)


def attr(value_type: str, **changes: Any) -> AttributeDef:
    return replace(BASE, value_type=value_type, **changes)


ENUM = attr("enum", literals=(LiteralDef(7, "low", "", None, 0), LiteralDef(8, "high", "", None, 1)))


@pytest.mark.parametrize(
    ("attribute", "raw", "stored"),
    [
        (attr("text"), "hello", TypedValue(text="hello")),
        (attr("richtext"), "<b>x</b>", TypedValue(text="<b>x</b>")),
        (attr("number"), 1500, TypedValue(number=1500.0)),
        (attr("number"), 2.5, TypedValue(number=2.5)),
        (attr("date"), "2026-02-28", TypedValue(date=dt.date(2026, 2, 28))),
        (
            attr("dateInterval"),
            {"start": "2020-01-01", "end": "2021-12-31"},
            TypedValue(date=dt.date(2020, 1, 1), date_end=dt.date(2021, 12, 31)),
        ),
        (
            attr("dateInterval"),
            {"start": None, "end": "2021-12-31"},
            TypedValue(date_end=dt.date(2021, 12, 31)),
        ),
        (attr("dateInterval"), {"start": "2020-01-01"}, TypedValue(date=dt.date(2020, 1, 1))),
        (attr("boolean"), False, TypedValue(boolean=False)),
        (ENUM, "high", TypedValue(literal_id=8)),
        (attr("responsibility"), "anna", TypedValue(text="anna")),
    ],
)
def test_decode_and_encode_round_trip(attribute: AttributeDef, raw: Any, stored: TypedValue) -> None:
    assert decode_value(attribute, raw) == stored
    expected = {"start": raw.get("start"), "end": raw.get("end")} if isinstance(raw, dict) else raw
    assert encode_value(attribute, stored) == expected


def test_integral_numbers_encode_as_integers() -> None:
    encoded = encode_value(attr("number"), TypedValue(number=1500.0))
    assert encoded == 1500 and isinstance(encoded, int)
    assert encode_value(attr("number"), TypedValue(number=0.25)) == 0.25


@pytest.mark.parametrize("number", [2.0**53 + 2, 1e300, -1e20, 9007199254740992.0 * 4])
def test_integral_doubles_beyond_2_53_stay_floats(number: float) -> None:
    # Regression: int(1e300) is a 301-digit integer that orjson refuses; the write committed, then the
    # response (and every later read of the element) failed with 500.
    encoded = encode_value(attr("number"), TypedValue(number=number))
    assert isinstance(encoded, float) and encoded == number
    assert encode_value(attr("number"), TypedValue(number=2.0**53 - 1)) == 2**53 - 1


@pytest.mark.parametrize(
    ("attribute", "raw", "code"),
    [
        (attr("text"), 5, "wrong_type"),
        (attr("text"), "", "empty_value"),
        (attr("text"), "x" * 4001, "too_long"),
        (attr("text"), "a\x00b", "invalid_character"),
        (attr("number"), "12", "wrong_type"),
        (attr("number"), True, "wrong_type"),
        (attr("number"), None, "wrong_type"),
        (attr("number", min_value=0.0), -1, "out_of_range"),
        (attr("number", max_value=10.0), 10.5, "out_of_range"),
        (attr("number"), 2**60, "out_of_range"),
        (attr("date"), "2026-02-30", "bad_date"),
        (attr("date"), "26-1-1", "bad_date"),
        (attr("date"), "2026-01-01T00:00:00", "bad_date"),
        (attr("date"), 20260101, "wrong_type"),
        (attr("dateInterval"), {"start": "2021-01-01", "end": "2020-01-01"}, "bad_interval"),
        (attr("dateInterval"), {"start": None, "end": None}, "empty_value"),
        (attr("dateInterval"), {"begin": "2020-01-01"}, "wrong_type"),
        (attr("dateInterval"), "2020-01-01", "wrong_type"),
        (attr("boolean"), "true", "wrong_type"),
        (attr("boolean"), 1, "wrong_type"),
        (ENUM, "medium", "unknown_literal"),
        (ENUM, 1, "wrong_type"),
        (attr("responsibility"), 3, "wrong_type"),
        (attr("responsibility"), "", "unknown_user"),
    ],
)
def test_decode_rejects_with_a_precise_code(attribute: AttributeDef, raw: Any, code: str) -> None:
    with pytest.raises(ValueProblem) as problem:
        decode_value(attribute, raw)
    assert problem.value.code == code
    assert problem.value.message


def test_number_limits_are_inclusive() -> None:
    bounded = attr("number", min_value=0.0, max_value=10.0)
    assert decode_value(bounded, 0).number == 0.0
    assert decode_value(bounded, 10).number == 10.0


def test_unknown_literal_message_lists_the_literals() -> None:
    with pytest.raises(ValueProblem, match="low, high"):
        decode_value(ENUM, "medium")


def test_names_are_limited_to_255_characters_and_not_blank() -> None:
    assert check_name("x" * 255) == "x" * 255
    for bad in ("x" * 256, " ", "", None):
        with pytest.raises(ValueProblem):
            check_name(bad)


TRICKY_RAW: list[Any] = [
    "hello", "", " ", "x" * 4000, "x" * 4001, "x" * 1_000_001, "a\x00b", "low", "high", "medium", "LOW",
    0, 1, -1, 10, 10.5, 1500, 2.5, 2**53 - 1, 2**53, -(2**53), 2**60, 1e300, float("inf"), float("nan"),
    True, False, None, [], {}, ["low"], {"start": "2020-01-01"},
    "2026-02-28", "2026-02-30", "2026-13-01", "26-1-1", "2026-01-01T00:00:00", "2026-01-01\n",
    "20260101", "2026-W01-1", "\uff12\uff10\uff12\uff16-01-01", "\u0662\u0660\u0662\u0666-01-01",
    "2026-1-011", "+026-01-01", "2026--1-01",
]  # fmt: skip


@pytest.mark.parametrize(
    "attribute",
    [
        attr("text"),
        attr("richtext"),
        attr("number"),
        attr("number", min_value=0.0, max_value=10.0),
        attr("date"),
        attr("dateInterval"),
        attr("boolean"),
        ENUM,
        attr("enum", literals=(LiteralDef(7, "low", "", None, 0), LiteralDef(9, "low", "", None, 1))),
        attr("responsibility"),
    ],
    ids=lambda attribute: f"{attribute.value_type}{attribute.literals or ''}{attribute.min_value or ''}",
)
def test_value_decoder_answers_as_decode_value(attribute: AttributeDef) -> None:
    """The shortcuts of `value_decoder` (shared tuples, inline checks, remembered dates) change nothing:
    the same value or the same problem as `decode_value`, for every input, twice (the second time from
    what the decoder remembers)."""
    decode = value_decoder(attribute)
    for _ in range(2):
        for raw in TRICKY_RAW:
            try:
                expected: TypedValue | tuple[str, str] = decode_value(attribute, raw)
            except ValueProblem as problem:
                expected = (problem.code, problem.message)
            try:
                got: TypedValue | tuple[str, str] = decode(raw)
            except ValueProblem as problem:
                got = (problem.code, problem.message)
            assert got == expected, raw
            if isinstance(expected, TypedValue) and expected.number is not None:
                assert isinstance(got, TypedValue) and type(got.number) is float
