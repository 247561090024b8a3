"""Query parameters several routes share: their JSON Schema (`json_schema_extra` of a `Query`), or the
whole parameter."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Query
from pydantic.config import JsonDict

from blockrepo.errors import ErrorItem, ValidationFailed

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


# A planning scenario a request works in (API.md section 11): the query parameter or the header.
SCENARIO_HEADER = "Blockrepo-Scenario"
SCENARIO_KEY: JsonDict = {"type": "string", "maxLength": 64}
ScenarioQuery = Annotated[
    str | None,
    Query(
        alias="scenario",
        description="a planning scenario's key: read or write there, not in main (or send the "
        "`Blockrepo-Scenario` header); empty: main",
        json_schema_extra=SCENARIO_KEY,
    ),
]
ScenarioHeader = Annotated[
    str | None,
    Header(alias=SCENARIO_HEADER, description="a planning scenario's key, as the `scenario` parameter"),
]


def scenario_named(query: str | None, header: str | None) -> str | None:
    """The scenario a request names (None: main); 400 when the parameter and the header name two."""
    query, header = given(query), given(header)
    if query is not None and header is not None and query != header:
        raise ValidationFailed(
            "the scenario parameter and the Blockrepo-Scenario header name different scenarios",
            errors=[ErrorItem("query:scenario", "two_scenarios", f"{query!r} and {header!r}")],
        )
    return query or header
