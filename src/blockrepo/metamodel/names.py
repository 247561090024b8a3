"""Rules for the names the metamodel hands out: what a type, relation end or attribute may be called."""

from __future__ import annotations

import re

from pydantic.config import JsonDict

from blockrepo.metamodel.snapshot import CORE_KEYS, READ_ONLY_KEYS, BlockTypeDef, Metamodel
from blockrepo.name_normalization import name_key

# Persistent names of types, relation types and relation ends: they appear in URLs, iteraQL and JSON keys.
IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
# Attribute names may read like labels ("Annual costs", "Go-live") but carry no character that iteraQL,
# `fields=a,b`, xlsx relation cells (`;`) or JSON pointers (`/`) would have to escape.
_ATTRIBUTE_NAME_BODY = r"[^\W_][\w .\-]{0,126}[\w.]|[^\W_]"
ATTRIBUTE_NAME = re.compile(rf"^(?:{_ATTRIBUTE_NAME_BODY})$")
# Keys every element carries, plus the key relation entries use for their attributes.
BUILTIN_KEYS = frozenset((*READ_ONLY_KEYS, *CORE_KEYS, "attributes"))
# Words of iteraQL and path segments next to `/api/massdata/{type}`: a type or property of that name would
# make a query or URL ambiguous.
RESERVED_WORDS = frozenset(
    {
        "null",
        "true",
        "false",
        "count",
        "and",
        "or",
        "not",
        "query",
        "export",
        "import",
        "metamodel",
        "current",
    }
)


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else re.escape(c) for c in word)


# The reserved names as one pattern for the published description (`is_reserved`, in any case).
_RESERVED_ALTERNATIVES = "|".join(
    _any_case(word) for word in sorted(RESERVED_WORDS | {key.lower() for key in BUILTIN_KEYS})
)
RESERVED_PATTERN = "^(?:" + _RESERVED_ALTERNATIVES + ")$|^" + _any_case("lastmodification")


def identifier_schema() -> JsonDict:
    """JSON Schema keywords for what `identifier_problem` accepts."""
    # `type` inside `not`: a bare pattern holds for any non-string, so an optional name's null would be
    # refused by the negation, while the service takes null as "not given".
    return {"pattern": IDENTIFIER.pattern, "not": {"type": "string", "pattern": RESERVED_PATTERN}}


def attribute_name_schema() -> JsonDict:
    """JSON Schema keywords for what `attribute_name_problem` accepts."""
    # The service trims an attribute name before it checks it (API.md 1.9), so white space around
    # either pattern is allowed.
    return {
        "pattern": rf"^\s*(?:{_ATTRIBUTE_NAME_BODY})\s*$",
        "not": {
            "type": "string",
            "pattern": rf"^\s*(?:(?:{_RESERVED_ALTERNATIVES})\s*$|{_any_case('lastmodification')})",
        },
    }


def is_reserved(name: str) -> bool:
    lowered = name.lower()
    return (
        lowered in RESERVED_WORDS
        or name in BUILTIN_KEYS
        or lowered in {k.lower() for k in BUILTIN_KEYS}
        or lowered.startswith("lastmodification")
    )


def identifier_problem(name: str) -> str | None:
    """Why `name` cannot be a type, relation type or relation end name (None: it can)."""
    # fullmatch: `$` would let a final line break through.
    if not IDENTIFIER.fullmatch(name):
        return "must start with a letter and hold only letters, digits and '_' (at most 128 characters)"
    if is_reserved(name):
        return f"'{name}' is a reserved word or built-in property"
    return None


def attribute_name_problem(name: str) -> str | None:
    """Why `name` cannot be an attribute name (None: it can)."""
    if not ATTRIBUTE_NAME.fullmatch(name):
        return (
            "must start with a letter or digit and hold only letters, digits, spaces, '.', '-' and '_' "
            "(at most 128 characters, no leading or trailing space)"
        )
    if is_reserved(name):
        return f"'{name}' is a reserved word or built-in property"
    return None


def property_names(block_type: BlockTypeDef) -> set[str]:
    """Every key an element of the type carries besides the common built-ins."""
    return {p.name for p in block_type.properties} | set(block_type.ends)


def clash_on_type(
    metamodel: Metamodel, type_name: str, name: str, *, ignore_attribute_id: int | None = None
) -> str | None:
    """Why `name` cannot become a new property of `type_name` (None: it can)."""
    block_type = metamodel.type_named(type_name)
    if block_type is None:
        return None
    key = name_key(name)
    for prop in block_type.properties:
        if prop.id != ignore_attribute_id and name_key(prop.name) == key:
            return f"type {type_name} already has a property '{prop.name}'"
    for end in block_type.ends:
        if name_key(end) == key:
            return f"type {type_name} already has a relation end '{end}'"
    return None
