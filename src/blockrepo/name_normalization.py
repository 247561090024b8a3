"""Names as the service keeps them: trimmed, NFC-normalised, free of invisible characters (API.md 1.9).

Two names a reader cannot tell apart must not name two things: `Supervisor` and `Supervisor `, an
`É` composed and decomposed, `ERP` and `ERP` with a zero-width space, a BOM or a bidi override inside.
`normalized_name` is applied to every name on input (elements, references by name, users, roles,
attribute groups, attributes, literals); what it returns is what is stored and looked up, so the
databases' unique constraints and every equality test decide on the normalised name.

`name_key` is the uniqueness key of the names that are unique regardless of case (logins, roles,
attribute groups, attributes, types, relation types and ends; API.md says so of none of them, but they
were compared case-insensitively before, with SQL `lower()`, which folds only ASCII on SQLite): one
Python function, so both databases fold alike. Element and literal names stay case-sensitive, as their
unique constraints always were.
"""

from __future__ import annotations

import unicodedata
from functools import partial
from typing import Annotated

from pydantic import AfterValidator
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

# Control, format (zero-width, BOM, bidi controls, soft hyphen), surrogate, private-use and unassigned
# code points, and the line and paragraph separators: nothing a reader sees, or sees reliably.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties) outside those categories: fillers and
# variation selectors that render as nothing.
_IGNORABLE_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0000, 0xE0FFF),
)
EMPTY_CODE = "empty_value"
TOO_LONG_CODE = "too_long"
INVALID_CODE = "invalid_character"
EMPTY_MESSAGE = "a name must not be empty or blank"
# The JSON Schema keyword of a name field: at least one character that is not white space (the rest is
# refused with `invalid_character`, a rule no portable pattern states).
NAME_SCHEMA: JsonDict = {"pattern": r"\S"}


class InvalidName(ValueError):
    """A name that cannot be kept: a stable code and a message for `errors[]`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _refused(char: str) -> bool:
    if unicodedata.category(char) in _REFUSED_CATEGORIES:
        return True
    point = ord(char)
    return any(low <= point <= high for low, high in _IGNORABLE_RANGES)


def invisible_character_message(char: str) -> str:
    what = unicodedata.name(char, "") or f"category {unicodedata.category(char)}"
    return f"a name must not hold control or invisible format characters (U+{ord(char):04X} {what})"


def normalized_name(raw: str, max_length: int | None = None) -> str:
    """`raw` trimmed and in NFC, other space separators as plain spaces; InvalidName if it is blank, holds
    a character `_refused` names, or (rarely: NFC lengthens a few characters) grew beyond `max_length`."""
    # The usual name is printable ASCII: already NFC, with nothing to refuse; only spaces to trim.
    if raw.isascii() and raw.isprintable():
        name = raw.strip()
    else:
        name = unicodedata.normalize("NFC", raw.strip())
        for char in name:
            if _refused(char):
                raise InvalidName(INVALID_CODE, invisible_character_message(char))
        if not name.isascii():
            # A no-break or ideographic space inside looks like a space: keep it as one.
            name = "".join(" " if unicodedata.category(c) == "Zs" else c for c in name)
        if max_length is not None and len(name) > max_length:
            raise InvalidName(TOO_LONG_CODE, f"at most {max_length} characters allowed, got {len(name)}")
    if not name:
        raise InvalidName(EMPTY_CODE, EMPTY_MESSAGE)
    return name


def name_key(name: str) -> str:
    """The case-insensitive uniqueness key of a normalised name (full Unicode case folding, NFC)."""
    if name.isascii():
        return name.lower()
    return unicodedata.normalize("NFC", name.casefold())


def normalized_name_input(raw: str, max_length: int | None = None) -> str:
    """`normalized_name` as a Pydantic after-validator (the field's own bounds apply to what the client
    sent): a refused name is a validation error with the code of the problem."""
    try:
        return normalized_name(raw, max_length)
    except InvalidName as problem:
        raise PydanticCustomError(problem.code, problem.message) from None


def name_within(max_length: int) -> AfterValidator:
    """The validator of a name field of at most `max_length` characters, before and after normalising."""
    return AfterValidator(partial(normalized_name_input, max_length=max_length))


def normalized_reference_input(raw: str) -> str:
    """A name that refers to something, normalised like the names kept; a blank one stays blank, to be
    answered as naming nothing (unknown_role, unknown_attribute, …) as before."""
    return normalized_name_input(raw) if raw.strip() else ""


# A reference by name (a role, an attribute, a group), normalised like the name it refers to.
Name = Annotated[str, AfterValidator(normalized_reference_input)]
