"""Query parameters several routes share: their JSON Schema (`json_schema_extra` of a `Query`), or the
whole parameter."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query
from pydantic.config import JsonDict

# Revisions are 32-bit integer columns in the repository.
LARGEST_REVISION = 2**31 - 1
REVISION: JsonDict = {"type": "integer", "minimum": 0, "maximum": LARGEST_REVISION}
# A revision number or an ISO-8601 time (or a date); empty means "not given", so a form's empty field
# reads the current state.
REVISION_OR_TIME_BRANCHES: list[JsonDict] = [
    REVISION,
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "date"},
    {"type": "string", "maxLength": 0},
]
# In a JSON body a revision may also come as a string of digits (nine, so that it stays a 32-bit revision).
REVISION_TEXT: JsonDict = {"type": "string", "pattern": "^[0-9]{1,9}$"}
REVISION_OR_TIME: JsonDict = {"anyOf": list(REVISION_OR_TIME_BRANCHES)}
# `asOf` of a read of many elements: the state as it was at a revision or a time.
AsOfQuery = Annotated[
    str | None,
    Query(
        alias="asOf",
        description="a revision number or an ISO-8601 time: the state as it was then; empty: today",
        json_schema_extra=REVISION_OR_TIME,
    ),
]


def given(value: str | None) -> str | None:
    """A query parameter's value, with an empty one taken as not given."""
    return value or None
