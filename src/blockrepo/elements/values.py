"""Typed value codecs: API JSON <-> the typed columns of one value row, per attribute value type."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
import re
import sys
from collections.abc import Callable
from functools import partial
from operator import attrgetter
from typing import Any, NamedTuple

from blockrepo.metamodel.snapshot import AttributeDef
from blockrepo.name_normalization import InvalidName, normalized_name

NAME_MAX_LENGTH = 255
TEXT_MAX_LENGTH = 4000
RICHTEXT_MAX_LENGTH = 1_000_000
LOGIN_MAX_LENGTH = 255
# Numbers are stored as IEEE doubles (both databases): every finite JSON number within the attribute's
# min/max is accepted and stored as the nearest double, so a number such as 1e29 or 0.1 reads back as the
# same JSON number. A JSON integer beyond 2**53 is refused, as a double would silently change its digits
# (the parser hands integers beyond 64 bits over as doubles already, which are then taken as doubles); a
# number beyond the range of a double (1e400) is refused naming its pointer.
LARGEST_EXACT_INTEGER = 2**53 - 1
_DATE_PATTERN = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class ValueProblem(Exception):
    """One value that does not fit its property: a stable code and a message for `errors[]`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class TypedValue(NamedTuple):
    """One value in its storage form: exactly the columns its value type uses are set. A tuple, in the
    order of the typed columns: a bulk write makes hundreds of thousands, and a frozen dataclass took a
    microsecond each to build."""

    text: str | None = None
    number: float | None = None
    date: dt.date | None = None
    date_end: dt.date | None = None
    boolean: bool | None = None
    literal_id: int | None = None

    def columns(self) -> dict[str, Any]:
        """The value as keyword arguments of an ElementValue / RelationValue row."""
        return {
            "text_value": self.text,
            "number_value": self.number,
            "date_value": self.date,
            "date_end": self.date_end,
            "bool_value": self.boolean,
            "literal_id": self.literal_id,
        }


def _typed(columns: tuple[Any, Any, Any, Any, Any, Any]) -> TypedValue:
    """A TypedValue from its six columns in order, built by tuple.__new__ directly: the NamedTuple's own
    constructor runs a Python function with keyword defaults for each of a bulk write's many values."""
    return _NEW_TUPLE(TypedValue, columns)


_NEW_TUPLE = tuple.__new__


def check_text(raw: Any, max_length: int, what: str = "a string") -> str:
    """A JSON string without NUL characters (PostgreSQL text cannot hold them) of at most `max_length`."""
    if not isinstance(raw, str):
        raise ValueProblem("wrong_type", f"expected {what}, got {json_type(raw)}")
    if "\x00" in raw:
        raise ValueProblem("invalid_character", "text must not contain NUL characters")
    if len(raw) > max_length:
        raise ValueProblem("too_long", f"at most {max_length} characters allowed, got {len(raw)}")
    return raw


def check_name(raw: Any) -> str:
    """An element name as it is stored and looked up: `normalized_name` of a string within the limit."""
    name = check_text(raw, NAME_MAX_LENGTH)
    try:
        return normalized_name(name, NAME_MAX_LENGTH)
    except InvalidName as problem:
        raise ValueProblem(problem.code, problem.message) from None


def parse_date(raw: Any) -> dt.date:
    if not isinstance(raw, str):
        raise ValueProblem("wrong_type", f'expected a date "YYYY-MM-DD", got {json_type(raw)}')
    if not (_plain_date_shape(raw) or _DATE_PATTERN.match(raw)):
        raise ValueProblem("bad_date", f'expected a date "YYYY-MM-DD", got {raw!r}')
    try:
        return dt.date.fromisoformat(raw)
    except ValueError as exc:
        raise ValueProblem("bad_date", f"{raw!r} is not a calendar date") from exc


def _plain_date_shape(raw: str) -> bool:
    """ASCII "dddd-dd-dd": what `_DATE_PATTERN` matches but for other scripts' digits and a final line
    break, checked without the regular expression, which took longer than the date's parsing."""
    return (
        len(raw) == 10
        and raw[4] == "-"
        and raw[7] == "-"
        and raw.isascii()
        and raw[:4].isdigit()
        and raw[5:7].isdigit()
        and raw[8:].isdigit()
    )


def json_type(raw: Any) -> str:
    if raw is None:
        return "null"
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, (int, float)):
        return "a number"
    if isinstance(raw, str):
        return "a string"
    if isinstance(raw, list):
        return "an array"
    if isinstance(raw, dict):
        return "an object"
    return type(raw).__name__


def _decode_number(attribute: AttributeDef, raw: Any) -> TypedValue:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ValueProblem("wrong_type", f"expected a number, got {json_type(raw)}")
    if isinstance(raw, int) and abs(raw) > LARGEST_EXACT_INTEGER:
        raise ValueProblem(
            "out_of_range", f"integers beyond ±{LARGEST_EXACT_INTEGER} cannot be stored exactly"
        )
    number = float(raw)
    if not math.isfinite(number):
        raise ValueProblem(
            "out_of_range",
            f"the number is beyond what a double holds (magnitude at most {sys.float_info.max!r})",
        )
    if attribute.min_value is not None and number < attribute.min_value:
        raise ValueProblem("out_of_range", f"{raw} is below the minimum {encode_number(attribute.min_value)}")
    if attribute.max_value is not None and number > attribute.max_value:
        raise ValueProblem("out_of_range", f"{raw} is above the maximum {encode_number(attribute.max_value)}")
    return _typed((None, number, None, None, None, None))


def _decode_interval(raw: Any) -> TypedValue:
    if not isinstance(raw, dict):
        raise ValueProblem(
            "wrong_type", f'expected {{"start": date|null, "end": date|null}}, got {json_type(raw)}'
        )
    unknown = sorted(set(raw) - {"start", "end"})
    if unknown:
        raise ValueProblem("wrong_type", f"a date interval has only start and end, not {', '.join(unknown)}")
    start = None if raw.get("start") is None else parse_date(raw["start"])
    end = None if raw.get("end") is None else parse_date(raw["end"])
    if start is None and end is None:
        raise ValueProblem("empty_value", "a date interval needs a start or an end; send [] to clear it")
    if start is not None and end is not None and start > end:
        raise ValueProblem(
            "bad_interval", f"the start {start.isoformat()} is after the end {end.isoformat()}"
        )
    return _typed((None, None, start, end, None, None))


def _decode_text(attribute: AttributeDef, raw: Any) -> TypedValue:
    text = check_text(raw, TEXT_MAX_LENGTH)
    if not text:
        raise ValueProblem("empty_value", "an empty string is not a value; send [] to clear")
    return _typed((text, None, None, None, None, None))


def _decode_richtext(attribute: AttributeDef, raw: Any) -> TypedValue:
    text = check_text(raw, RICHTEXT_MAX_LENGTH)
    if not text:
        raise ValueProblem("empty_value", "an empty string is not a value; send [] to clear")
    return _typed((text, None, None, None, None, None))


def _decode_date(attribute: AttributeDef, raw: Any) -> TypedValue:
    return _typed((None, None, parse_date(raw), None, None, None))


def _decode_boolean(attribute: AttributeDef, raw: Any) -> TypedValue:
    if not isinstance(raw, bool):
        raise ValueProblem("wrong_type", f"expected true or false, got {json_type(raw)}")
    return _typed((None, None, None, None, raw, None))


def _decode_enum(attribute: AttributeDef, raw: Any) -> TypedValue:
    name = check_text(raw, NAME_MAX_LENGTH, "a literal name")
    literal = attribute.literal_named(name)
    if literal is None:
        # Literal names are stored normalised: a padded or decomposed spelling names the same literal.
        with contextlib.suppress(InvalidName):
            literal = attribute.literal_named(normalized_name(name))
    if literal is None:
        allowed = ", ".join(lit.name for lit in attribute.literals) or "none"
        raise ValueProblem("unknown_literal", f"{name!r} is not a literal of {attribute.name} ({allowed})")
    return _typed((None, None, None, None, None, literal.id))


def _decode_responsibility(attribute: AttributeDef, raw: Any) -> TypedValue:
    login = check_text(raw, LOGIN_MAX_LENGTH, "a user login")
    try:
        login = normalized_name(login)
    except InvalidName:
        raise ValueProblem("unknown_user", f"{login!r} names no user") from None
    return _typed((login, None, None, None, None, None))


# value type -> decoder: one lookup per value (a bulk write decodes hundreds of thousands).
_DECODERS = {
    "text": _decode_text,
    "richtext": _decode_richtext,
    "number": _decode_number,
    "date": _decode_date,
    "dateInterval": lambda attribute, raw: _decode_interval(raw),
    "boolean": _decode_boolean,
    "enum": _decode_enum,
    "responsibility": _decode_responsibility,
}


def decode_value(attribute: AttributeDef, raw: Any) -> TypedValue:
    """One API JSON value of `attribute` in storage form, or ValueProblem.

    A responsibility is returned as its login; whether that user exists is checked by the caller in one
    batched query for the whole request."""
    decoder = _DECODERS.get(attribute.value_type)
    if decoder is None:
        raise ValueProblem("wrong_type", f"the value type {attribute.value_type!r} is not supported")
    return decoder(attribute, raw)


def value_decoder(attribute: AttributeDef) -> Callable[[Any], TypedValue]:
    """`decode_value` for one attribute, chosen once: for decoding many values of it (a bulk write decodes
    hundreds of thousands). The usual values take a shortcut with the same outcome: an enum's literals
    and the two booleans are tuples made once and shared, a number or a text is checked inline, a date
    already seen by this decoder is not parsed again. Anything else, every problem included, goes
    through `decode_value`, so both always answer alike."""
    value_type = attribute.value_type
    if value_type == "enum":
        return partial(_enum_value, _literal_values(attribute), attribute)
    if value_type == "boolean":
        return partial(_boolean_value, attribute)
    if value_type == "number":
        return partial(_number_value, attribute.min_value, attribute.max_value, attribute)
    if value_type == "text":
        return partial(_text_value, TEXT_MAX_LENGTH, attribute)
    if value_type == "richtext":
        return partial(_text_value, RICHTEXT_MAX_LENGTH, attribute)
    if value_type == "date":
        return partial(_date_value, {}, attribute)
    return partial(decode_value, attribute)


def _literal_values(attribute: AttributeDef) -> dict[str, TypedValue]:
    """Literal name -> its stored value, for the names `_decode_enum` accepts (the first literal of a
    name wins, as `literal_named` has it)."""
    values: dict[str, TypedValue] = {}
    for literal in attribute.literals:
        name = literal.name
        if len(name) <= NAME_MAX_LENGTH and "\x00" not in name:
            values.setdefault(name, _typed((None, None, None, None, None, literal.id)))
    return values


_TRUE = _typed((None, None, None, None, True, None))
_FALSE = _typed((None, None, None, None, False, None))


def _enum_value(literals: dict[str, TypedValue], attribute: AttributeDef, raw: Any) -> TypedValue:
    if raw.__class__ is str:
        value = literals.get(raw)
        if value is not None:
            return value
    return decode_value(attribute, raw)


def _boolean_value(attribute: AttributeDef, raw: Any) -> TypedValue:
    if raw is True:
        return _TRUE
    if raw is False:
        return _FALSE
    return decode_value(attribute, raw)


def _number_value(
    minimum: float | None, maximum: float | None, attribute: AttributeDef, raw: Any
) -> TypedValue:
    kind = raw.__class__
    # Exact classes: a bool is an int to isinstance, and is refused.
    if kind is float:
        number = raw if math.isfinite(raw) else None
    elif kind is int and -LARGEST_EXACT_INTEGER <= raw <= LARGEST_EXACT_INTEGER:
        number = float(raw)
    else:
        number = None
    if (
        number is not None
        and (minimum is None or number >= minimum)
        and (maximum is None or number <= maximum)
    ):
        return _NEW_TUPLE(TypedValue, (None, number, None, None, None, None))
    return decode_value(attribute, raw)


def _text_value(max_length: int, attribute: AttributeDef, raw: Any) -> TypedValue:
    if raw.__class__ is str and raw and len(raw) <= max_length and "\x00" not in raw:
        return _NEW_TUPLE(TypedValue, (raw, None, None, None, None, None))
    return decode_value(attribute, raw)


_DATES_REMEMBERED = 4096  # per decoder, which may serve many writes: about a megabyte


def _date_value(seen: dict[str, TypedValue], attribute: AttributeDef, raw: Any) -> TypedValue:
    if raw.__class__ is str:
        value = seen.get(raw)
        if value is None:
            value = decode_value(attribute, raw)  # only a valid date is remembered
            if len(seen) >= _DATES_REMEMBERED:
                seen.clear()
            seen[raw] = value
        return value
    return decode_value(attribute, raw)


def encode_number(number: float) -> int | float:
    """Integral numbers as JSON integers (1500, not 1500.0), as far as a double holds them exactly.

    Beyond ±2^53 a double is integral but no longer an exact integer (1e300 would become a 301-digit
    integer that JSON encoders refuse): it stays a float, as the client sent it."""
    return int(number) if number.is_integer() and abs(number) <= LARGEST_EXACT_INTEGER else number


def _iso(day: dt.date | None) -> str | None:
    return None if day is None else day.isoformat()


def _encode_enum(attribute: AttributeDef, value: TypedValue) -> Any:
    literal = None if value.literal_id is None else attribute.literal_by_id(value.literal_id)
    return None if literal is None else literal.name


# value type -> encoder: one lookup per value (a bulk write records hundreds of thousands).
_ENCODERS: dict[str, Callable[[AttributeDef, TypedValue], Any]] = {
    "number": lambda attribute, value: None if value.number is None else encode_number(value.number),
    "date": lambda attribute, value: _iso(value.date),
    "dateInterval": lambda attribute, value: {"start": _iso(value.date), "end": _iso(value.date_end)},
    "boolean": lambda attribute, value: value.boolean,
    "enum": _encode_enum,
}


def encode_value(attribute: AttributeDef, value: TypedValue) -> Any:
    """One stored value in its API JSON form (text, richtext and responsibility: its text)."""
    encoder = _ENCODERS.get(attribute.value_type)
    return value.text if encoder is None else encoder(attribute, value)


def value_encoder(attribute: AttributeDef) -> Callable[[TypedValue], Any]:
    """`encode_value` for one attribute, chosen once: for encoding many values of it."""
    encoder = _ENCODERS.get(attribute.value_type)
    return _TEXT if encoder is None else partial(encoder, attribute)


_TEXT = attrgetter("text")
