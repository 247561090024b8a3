"""An import document: what a JSON or xlsx export holds, read into memory."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NoReturn

import orjson

from blockrepo.errors import BadRequest, ErrorItem
from blockrepo.massdata.transfer.plan import FORMAT
from blockrepo.nul_characters import ESCAPED_NUL, MAX_REPORTED, NUL, nul_error, nul_pointers


@dataclass
class Document:
    metamodel: dict[str, Any] | None
    # type name -> records: each a dict, or (JSON import) the record's JSON text, parsed when its turn
    # comes (`record_of`)
    elements: dict[str, list[Any]] = field(default_factory=dict)
    users: list[Any] = field(default_factory=list)  # {"login", "firstName", "lastName"} that values name


def _bad(pointer: str, message: str) -> BadRequest:
    return BadRequest(message, code="malformed_body", errors=[ErrorItem(pointer, "malformed_body", message)])


def _malformed(message: str) -> BadRequest:
    return BadRequest(f"malformed JSON: {message}", code="malformed_json")


def record_of(record: Any) -> Any:
    """A record of `Document.elements` as a parsed value (orjson.JSONDecodeError for malformed text)."""
    return orjson.loads(record) if record.__class__ is str else record


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


# The standard library's scanner finds where each value ends (`raw_decode`, in C); orjson parses what it
# finds. NaN and Infinity, which only the scanner takes, are refused as orjson refuses them.
_SCANNER = json.JSONDecoder(parse_constant=_refuse_constant)
_SPACE = re.compile(r"[ \t\n\r]*")
_ESCAPED_NUL = ESCAPED_NUL.decode()


def _member(pointer: str, key: str) -> str:
    return pointer + "/" + key.replace("~", "~0").replace("/", "~1")


class _Splitter:
    """Walks the document's outer object and its `elements` object, and cuts each record's JSON text
    out of the body without building the record: a parsed 27 MB export held about six times its size in
    Python objects, and orjson's parse twice that at its peak, before the import had begun. The record
    is parsed once the importer reaches it, and let go once it is a draft; between two records this
    thread lets go of the GIL, so the event loop is not held for the whole body."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.check_nul = _ESCAPED_NUL in text
        self.nul_pointers: list[str] = []

    def space(self) -> None:
        match = _SPACE.match(self.text, self.at)
        assert match is not None
        self.at = match.end()

    def expect(self, char: str) -> None:
        self.space()
        if self.text.startswith(char, self.at):
            self.at += 1
            return
        raise _malformed(f"expected {char!r} at character {self.at}")

    def next_is(self, char: str) -> bool:
        self.space()
        if self.text.startswith(char, self.at):
            self.at += 1
            return True
        return False

    def value_text(self) -> str:
        self.space()
        start = self.at
        try:
            _, self.at = _SCANNER.raw_decode(self.text, start)
        except (ValueError, RecursionError) as exc:
            raise _malformed(str(exc)) from None
        return self.text[start : self.at]

    def value(self, pointer: str) -> Any:
        text = self.value_text()
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise _malformed(f"{pointer or '/'}: {exc}") from None
        if self.check_nul and _ESCAPED_NUL in text:
            self.nul_pointers += [pointer + p for p in nul_pointers(value)]
        return value

    def key(self, pointer: str) -> str:
        at = self.at
        try:
            key = orjson.loads(self.value_text())
        except orjson.JSONDecodeError as exc:
            raise _malformed(f"{pointer or '/'}: {exc}") from None
        if not isinstance(key, str):
            raise _malformed(f"an object's key must be a string (character {at})")
        self.expect(":")
        if self.check_nul and NUL in key:
            self.nul_pointers.append(_member(pointer, key))
        return key

    def members(self, pointer: str) -> Iterator[str]:
        """The keys of an object (after its `{`) in order, each as its value is next to read."""
        if self.next_is("}"):
            return
        while True:
            yield self.key(pointer)
            if self.next_is("}"):
                return
            self.expect(",")

    def records(self, pointer: str) -> list[str]:
        """The JSON texts of an array's items (after its `[`)."""
        records: list[str] = []
        if self.next_is("]"):
            return records
        check_nul = self.check_nul
        while True:
            record = self.value_text()
            if check_nul and _ESCAPED_NUL in record:
                self.value_at(record, f"{pointer}/{len(records)}")
            records.append(record)
            if self.next_is("]"):
                return records
            self.expect(",")

    def value_at(self, text: str, pointer: str) -> None:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return  # reported as malformed when the importer reaches it
        self.nul_pointers += [pointer + p for p in nul_pointers(value)]

    def document(self) -> dict[str, Any] | None:
        """The outer object, its `elements`' arrays as lists of record texts; None if it is no object."""
        if not self.next_is("{"):
            self.value("")
            self.end()
            return None
        body: dict[str, Any] = {}
        for key in self.members(""):
            pointer = _member("", key)
            if key == "elements" and self.next_is("{"):
                elements: dict[str, Any] = {}
                for type_name in self.members(pointer):
                    where = _member(pointer, type_name)
                    elements[type_name] = self.records(where) if self.next_is("[") else self.value(where)
                body[key] = elements
            else:
                body[key] = self.value(pointer)
        self.end()
        return body

    def end(self) -> None:
        self.space()
        if self.at != len(self.text):
            raise _malformed(f"unexpected character at {self.at}")


def parse_json_document(raw: bytes | bytearray) -> Document:
    """A JSON export (`format` blockrepo-export) as a document; 400 for anything else."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed(str(exc)) from None
    splitter = _Splitter(text)
    body = splitter.document()
    del text, splitter.text
    if splitter.nul_pointers:
        raise nul_error(splitter.nul_pointers[:MAX_REPORTED])
    if body is None:
        raise _bad("", "an export is a JSON object")
    if body.get("format") != FORMAT:
        raise _bad("/format", f'format must be "{FORMAT}" (the file of an export)')
    metamodel = body.get("metamodel")
    if metamodel is not None and not isinstance(metamodel, dict):
        raise _bad("/metamodel", "metamodel must be an object")
    elements = body.get("elements", {})
    if not isinstance(elements, dict) or not all(isinstance(v, list) for v in elements.values()):
        raise _bad("/elements", "elements must map type names to arrays of records")
    users = body.get("users", [])
    if not isinstance(users, list):
        raise _bad("/users", "users must be an array")
    return Document(metamodel=metamodel, elements=elements, users=users)
