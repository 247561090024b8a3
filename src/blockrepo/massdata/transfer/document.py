"""An import document: what a JSON or xlsx export holds, read into memory."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from blockrepo.errors import BadRequest, ErrorItem
from blockrepo.massdata.transfer.plan import FORMAT
from blockrepo.nul_characters import refuse_nul_in_json


@dataclass
class Document:
    metamodel: dict[str, Any] | None
    elements: dict[str, list[Any]] = field(default_factory=dict)  # type name -> records
    users: list[Any] = field(default_factory=list)  # {"login", "firstName", "lastName"} that values name


def _bad(pointer: str, message: str) -> BadRequest:
    return BadRequest(message, code="malformed_body", errors=[ErrorItem(pointer, "malformed_body", message)])


def parse_json_document(raw: bytes | bytearray) -> Document:
    """A JSON export (`format` blockrepo-export) as a document; 400 for anything else."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON: {exc}", code="malformed_json") from None
    refuse_nul_in_json(raw, body)
    if not isinstance(body, dict):
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
