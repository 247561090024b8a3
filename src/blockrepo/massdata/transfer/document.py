"""An import document: what a JSON or xlsx export holds, read into memory."""

from __future__ import annotations

import codecs
import json
import marshal
import re
from array import array
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
    # type name -> records: each a dict, or the record's JSON text as a memoryview of the body (JSON
    # import), or the record in `marshal`'s bytes (xlsx import), made a dict when its turn comes
    # (`record_of`)
    elements: dict[str, list[Any]] = field(default_factory=dict)
    # type name -> each record's `name` member as the reader read it (the JSON import's scanner while
    # finding the record's end, or the xlsx reader), or UNREAD: the importer's survey of the names then
    # parses no record again
    names: dict[str, list[Any]] = field(default_factory=dict)
    users: list[Any] = field(default_factory=list)  # {"login", "firstName", "lastName"} that values name
    # The revision the file was exported at and its mark (`revisions.repository.revision_mark`): where
    # this repository's revision has that mark, records' ids name the elements they describe (a renamed
    # element stays the same element); elsewhere names decide.
    revision: int | None = None
    revision_mark: str | None = None
    # type name -> each record's `id` member as the reader read it, like `names`
    ids: dict[str, list[Any]] = field(default_factory=dict)
    # An xlsx import: where each record's values are in the workbook (`locate`)
    cells: CellMap | None = None
    # A model of another tool (ArchiMate): a record holds what that tool knows of an element, so what it
    # leaves out (attributes, the parent) is kept, not emptied as a record of a whole state would have it.
    keep_unlisted: bool = False
    # The records' ids name stored elements, whatever the revision mark (the caller resolved them: an
    # ArchiMate import, by identifiers it checked).
    ids_trusted: bool = False
    # A relation end a record lists empty is emptied (an ArchiMate import lists empty the mapped ends the
    # model leaves empty); elsewhere it keeps its relations, like an end the record leaves out.
    empty_ends_empty: bool = False


@dataclass
class SheetCells:
    """Where one type's records are in a workbook: the sheet, each record's row (as Excel numbers it) and
    each column's letter by its header."""

    sheet: str
    # A machine int each, not an int object: a workbook's row numbers stay through the whole import.
    rows: array[int] = field(default_factory=lambda: array("i"))
    columns: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (letter, header shown)


@dataclass
class CellMap:
    """The cells of a workbook's records by type name, to name the cell of a problem found in a record."""

    types: dict[str, SheetCells] = field(default_factory=dict)

    def locate(self, pointer: str) -> dict[str, Any] | None:
        """The cell of `pointer` (`/elements/<type>/<record>/<key>/…`): sheet, row, column and header;
        the row alone for a problem of the whole record; None for a pointer outside the records."""
        parts = pointer.split("/")
        if len(parts) < 4 or parts[1] != "elements" or not parts[3].isdigit():
            return None
        sheet = self.types.get(_unescaped(parts[2]))
        index = int(parts[3])
        if sheet is None or index >= len(sheet.rows):
            return None
        cell: dict[str, Any] = {"sheet": sheet.sheet, "row": sheet.rows[index]}
        if len(parts) > 4 and (column := sheet.columns.get(_unescaped(parts[4]))) is not None:
            cell["column"], cell["header"] = column
        return cell


def _unescaped(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _bad(pointer: str, message: str) -> BadRequest:
    return BadRequest(message, code="malformed_body", errors=[ErrorItem(pointer, "malformed_body", message)])


def _malformed(message: str) -> BadRequest:
    return BadRequest(f"malformed JSON: {message}", code="malformed_json")


# What `Document.names` holds for a record whose end the scanner did not find (nor read its name).
UNREAD = object()


def record_of(record: Any) -> Any:
    """A record of `Document.elements` as a parsed value (orjson.JSONDecodeError for malformed text)."""
    if record.__class__ is memoryview:
        return orjson.loads(record)
    return marshal.loads(record) if record.__class__ is bytes else record


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


# The standard library's scanner checks each value (`raw_decode`, in C) as it checked the whole body before;
# orjson parses it. NaN and Infinity, which only the scanner takes, are refused as orjson refuses them.
_SCANNER = json.JSONDecoder(parse_constant=_refuse_constant)
_WHITESPACE = b" \t\n\r"
_SPACE = re.compile(rb"[ \t\n\r]*+")
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
# Inside an array or object, everything up to its next bracket: strings (whose brackets do not count) are
# taken whole, so that the loop in `_value_end` runs once per bracket, not per byte or string.
_TO_BRACKET = re.compile(rb'(?:[^"\\\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+', re.DOTALL)
_SCALAR = re.compile(rb"[-+.0-9A-Za-z]*+")
_OPENING = b"[{"
_CLOSING = b"]}"
_ESCAPED_NUL = ESCAPED_NUL.decode()
# Bytes of the body decoded at a time to find where its records end (`_Splitter.record_end`): a record
# longer goes the slower way; the decoded window takes up to four times as much (characters above U+FFFF).
DECODED_WINDOW = 1 << 16


def _member(pointer: str, key: str) -> str:
    return pointer + "/" + key.replace("~", "~0").replace("/", "~1")


class _Splitter:
    """Walks the document's outer object and its `elements` object on the body's bytes, and cuts each
    record out of the body (a memoryview, no copy) without building the record: a parsed 27 MB export held
    about six times its size in Python objects, and orjson's parse twice that at its peak, before the
    import had begun; and the body is never decoded whole (one character above U+FFFF made the decoded
    body four bytes per character). Each value is decoded and checked on its own. The record is parsed
    once the importer reaches it, and let go once it is a draft; between two records this thread lets go
    of the GIL, so the event loop is not held for the whole body."""

    def __init__(self, body: memoryview, check_nul: bool) -> None:
        self.body = body
        self.at = 0
        self.check_nul = check_nul
        self.nul_pointers: list[str] = []
        self.names: dict[str, list[Any]] = {}  # type name -> `records`' names
        self.ids: dict[str, list[Any]] = {}  # type name -> `records`' ids
        # A decoded piece of the body (`record_end`), the byte its first character starts at, and how many
        # more bytes than characters the records read from it so far took (their non-ASCII characters).
        self.window: str | None = None
        self.window_at = 0
        self.window_shift = 0

    def space(self) -> None:
        if self.at < len(self.body) and self.body[self.at] in _WHITESPACE:  # exports are mostly compact
            match = _SPACE.match(self.body, self.at)
            assert match is not None
            self.at = match.end()

    def expect(self, char: str) -> None:
        if not self.next_is(char):
            raise _malformed(f"expected {char!r} at byte {self.at}")

    def next_is(self, char: str) -> bool:
        self.space()
        if self.at < len(self.body) and self.body[self.at] == ord(char):
            self.at += 1
            return True
        return False

    def _value_end(self, start: int) -> int:
        """Where the value at `start` ends, found from its brackets and strings; `value_text` checks it."""
        body = self.body
        if start >= len(body):
            raise _malformed(f"expected a value at byte {start}")
        first = body[start]
        if first == 0x22:  # "
            string = _STRING.match(body, start)
            if string is None:
                raise _malformed(f"unterminated string starting at byte {start}")
            return string.end()
        if first not in _OPENING:
            scalar = _SCALAR.match(body, start)
            assert scalar is not None
            if scalar.end() == start:
                raise _malformed(f"expected a value at byte {start}")
            return scalar.end()
        depth = 0
        at = start
        while True:
            between = _TO_BRACKET.match(body, at)
            assert between is not None
            at = between.end()
            if at >= len(body):
                raise _malformed(f"unterminated value starting at byte {start}")
            byte = body[at]
            if byte in _OPENING:
                depth += 1
            elif byte in _CLOSING:
                depth -= 1
                if depth == 0:
                    return at + 1
            else:  # a string left open, or a backslash outside any string
                raise _malformed(f"unexpected byte at {at}")
            at += 1

    def value_text(self) -> tuple[int, str]:
        """The next value's start and its text, checked as JSON."""
        self.space()
        start = self.at
        end = self._value_end(start)
        try:
            text: str = codecs.utf_8_decode(self.body[start:end], "strict", True)[0]
        except UnicodeDecodeError as exc:
            raise _malformed(str(exc)) from None
        try:
            _, length = _SCANNER.raw_decode(text)
        except (ValueError, RecursionError) as exc:
            raise _malformed(f"{exc} (in the value at byte {start})") from None
        if length != len(text):
            raise _malformed(f"unexpected character in the value at byte {start}")
        self.at = end
        return start, text

    def value(self, pointer: str) -> Any:
        _, text = self.value_text()
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise _malformed(f"{pointer or '/'}: {exc}") from None
        if self.check_nul and _ESCAPED_NUL in text:
            self.nul_pointers += [pointer + p for p in nul_pointers(value)]
        return value

    def key(self, pointer: str) -> str:
        at, text = self.value_text()
        try:
            key = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise _malformed(f"{pointer or '/'}: {exc}") from None
        if not isinstance(key, str):
            raise _malformed(f"an object's key must be a string (byte {at})")
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

    def record_end(self, start: int) -> tuple[int, tuple[Any, Any]] | None:
        """Where the object at `start` ends and its `name` and `id` members (None where it has none), found
        and checked by the scanner on a decoded window of the body, whose end one C call finds, rather than by
        `value_text`, which walks its brackets in Python and decodes it alone; None where that does not
        tell (`value_text` then reports the problem)."""
        for fresh in (False, True):
            text = self.window
            if fresh or text is None or start - self.window_at - self.window_shift >= len(text):
                piece = self.body[start : start + DECODED_WINDOW]
                try:
                    text = codecs.utf_8_decode(piece, "strict", False)[0]
                except UnicodeDecodeError as exc:
                    # Up to the bad byte: the record that holds it goes to `value_text`, which reports it.
                    text = codecs.utf_8_decode(piece[: exc.start], "strict", False)[0]
                self.window, self.window_at, self.window_shift = text, start, 0
                fresh = True
            at = start - self.window_at - self.window_shift
            try:
                value, end = _SCANNER.raw_decode(text, at)
            except (ValueError, RecursionError):
                if fresh:  # malformed, or an object longer than a window
                    self.window = None
                    return None
                continue  # perhaps cut off by the window's end: again from a window that starts here
            record = text[at:end]
            size = len(record) if record.isascii() else len(record.encode())
            self.window_shift += size - len(record)
            return start + size, (value.get("name"), value.get("id"))
        return None

    def records(self, pointer: str) -> tuple[list[memoryview], list[Any], list[Any]]:
        """The JSON texts of an array's items (after its `[`), as views of the body, and the `name` and
        `id` of each as `record_end` read them (UNREAD where it did not)."""
        records: list[memoryview] = []
        names: list[Any] = []
        ids: list[Any] = []
        if self.next_is("]"):
            return records, names, ids
        check_nul, body = self.check_nul, self.body
        self.window = None  # the keys read since the last array are not counted in `window_shift`
        while True:
            self.space()
            start = self.at
            # A record is an object; a file with escaped NULs goes the way that finds where they are.
            found = None if check_nul or start >= len(body) or body[start] != 0x7B else self.record_end(start)
            if found is not None:
                self.at, (name, element_id) = found
                names.append(name)
                ids.append(element_id)
            else:
                names.append(UNREAD)
                ids.append(UNREAD)
                self.window = None  # what `value_text` reads is not counted in `window_shift`
                start, text = self.value_text()
                if check_nul and _ESCAPED_NUL in text:
                    self.value_at(text, f"{pointer}/{len(records)}")
                del text
            records.append(body[start : self.at])
            if self.next_is("]"):
                return records, names, ids
            self.expect(",")

    def value_at(self, text: str, pointer: str) -> None:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return  # reported as malformed when the importer reaches it
        self.nul_pointers += [pointer + p for p in nul_pointers(value)]

    def document(self) -> dict[str, Any] | None:
        """The outer object, its `elements`' arrays as lists of record texts; None if it is no object.
        The names and ids `records` read go to `self.names` and `self.ids`."""
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
                    if self.next_is("["):
                        elements[type_name], self.names[type_name], self.ids[type_name] = self.records(where)
                    else:
                        elements[type_name] = self.value(where)
                body[key] = elements
            else:
                body[key] = self.value(pointer)
        self.end()
        return body

    def end(self) -> None:
        self.space()
        if self.at != len(self.body):
            raise _malformed(f"unexpected byte at {self.at}")


def parse_json_document(raw: bytes | bytearray) -> Document:
    """A JSON export (`format` blockrepo-export) as a document; 400 for anything else. The records are
    views of `raw`, which lives as long as they do: it must not be changed."""
    splitter = _Splitter(memoryview(raw), ESCAPED_NUL in raw)
    del raw
    body = splitter.document()
    del splitter.body, splitter.window
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
    revision, mark = body.get("revision"), body.get("revisionMark")
    return Document(
        metamodel=metamodel,
        elements=elements,
        users=users,
        names=splitter.names,
        revision=revision if isinstance(revision, int) and not isinstance(revision, bool) else None,
        revision_mark=mark if isinstance(mark, str) else None,
        ids=splitter.ids,
    )
