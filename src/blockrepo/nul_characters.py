"""NUL (U+0000) in client input: found with JSON pointers, so that each input path refuses it in one place.

No stored text may hold NUL: PostgreSQL refuses it in text (a 500, even in a mere lookup) where SQLite
would store it, so both databases get the same clear 400 before anything reaches them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

from blockrepo.errors import ErrorItem, ValidationFailed

NUL = "\x00"
# JSON can carry NUL only as this escape (a raw control character is malformed JSON), so a body without
# it needs no walk.
ESCAPED_NUL = b"\\u0000"
MAX_REPORTED = 20


def json_pointer(path: list[str]) -> str:
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in path)


def nul_pointers(value: Any, limit: int = MAX_REPORTED) -> list[str]:
    """JSON pointers of the strings (member names included) in a parsed JSON value that hold NUL.

    Walks with its own stack: a body nested as deep as the JSON parser allows must not exhaust Python's."""
    found: list[str] = []
    stack: list[tuple[list[str], Any]] = [([], value)]
    while stack and len(found) < limit:
        path, item = stack.pop()
        if isinstance(item, str):
            if NUL in item:
                found.append(json_pointer(path))
        elif isinstance(item, dict):
            for key, member in reversed(item.items()):
                if NUL in key:
                    found.append(json_pointer([*path, key]))
                stack.append(([*path, key], member))
        elif isinstance(item, list):
            stack.extend(([*path, str(index)], member) for index, member in reversed(list(enumerate(item))))
    return found[:limit]


def nul_error(pointers: list[str]) -> ValidationFailed:
    items = [
        ErrorItem(pointer, "invalid_character", "text must not contain NUL (U+0000)") for pointer in pointers
    ]
    where = ", ".join(pointer or "/" for pointer in pointers)
    return ValidationFailed(f"text must not contain NUL (U+0000): {where}", errors=items)


def refuse_nul_in_json(raw: bytes | bytearray, value: Any) -> None:
    """Raise `ValidationFailed` naming every place (up to a limit) where the parsed body holds NUL."""
    if ESCAPED_NUL not in raw:
        return
    pointers = nul_pointers(value)
    if pointers:
        raise nul_error(pointers)


def nul_in_url(path: str, query_string: bytes) -> ValidationFailed | None:
    """The error for a URL whose (percent-decoded) path or any query parameter holds NUL; None if none does.

    Pointers follow the parameter convention of validation errors: `path`, `query:<name>`."""
    pointers = ["path"] if NUL in path else []
    if b"%00" in query_string:
        pointers += [
            f"query:{name}"
            for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
            if NUL in name or NUL in value
        ][:MAX_REPORTED]
    return nul_error(pointers) if pointers else None
