"""Request and response bodies of the report API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from blockrepo.metamodel.schemas import ApiModel
from blockrepo.name_normalization import Name

TEXT_MAX = 20_000
FIELDS_MAX = 500
ReportKind = Literal["list", "query", "diagram"]

LIST_EXAMPLE: dict[str, Any] = {
    "name": "Current systems",
    "description": "Every information system in production, by name",
    "kind": "list",
    "type": "InformationSystem",
    "filter": '@status = "CURRENT"',
    "sort": "name",
    "fields": ["name", "status"],
}


class ReportFields(ApiModel):
    """The members a report is made of; which belong to which kind is checked by the service."""

    description: str | None = Field(None, max_length=TEXT_MAX)
    type_name: str | None = Field(
        None, alias="type", min_length=1, max_length=255, description="`list`: the type listed"
    )
    filter_text: str | None = Field(
        None, alias="filter", max_length=TEXT_MAX, description="`list`: an iteraQL predicate (inside `[...]`)"
    )
    query: str | None = Field(None, max_length=TEXT_MAX, description="`query`: an iteraQL query")
    sort: str | None = Field(
        None, max_length=TEXT_MAX, description="`list`, `query`: comma-separated keys, `-` for descending"
    )
    fields: list[str] | None = Field(
        None, max_length=FIELDS_MAX, description="`list`, `query`: the property names to return"
    )
    config: dict[str, Any] | None = Field(
        None, description="`diagram`: the web interface's diagram configuration (at most 64 KiB as JSON)"
    )


class ReportCreate(ReportFields):
    model_config = ConfigDict(json_schema_extra={"examples": [LIST_EXAMPLE]})

    name: str = Field(min_length=1, max_length=255)
    kind: ReportKind


class ReportPatch(ReportFields):
    """The members to change; a change of `kind` drops the members of the former kind not given."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "Systems in production"}]})

    name: str | None = Field(None, min_length=1, max_length=255)
    kind: ReportKind | None = None


class ReportOut(ApiModel):
    id: int
    name: str
    description: str
    kind: ReportKind
    type_name: str | None = Field(alias="type")
    filter_text: str | None = Field(alias="filter")
    query: str | None
    sort: str | None
    fields: list[str] | None
    config: dict[str, Any] | None
    owner: str
    access: Literal["own", "edit", "view"] = Field(
        description="what the caller may do: `own` (change, share, delete), `edit` (change), `view` (run)"
    )
    created_at: str
    created_by: str
    updated_at: str
    updated_by: str


class ReportShareIn(ApiModel):
    role: Name = Field(description="the role's name")
    access: Literal["view", "edit"] = Field(
        "view", description="`view`: its members see and run the report; `edit`: they also change it"
    )


class ReportSharesIn(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"shares": [{"role": "Business editor", "access": "edit"}, {"role": "Reader"}]}]
        }
    )

    shares: list[ReportShareIn] = Field(
        max_length=50, description="every role the report is shared with (an empty list: none)"
    )


class ReportSharesOut(ApiModel):
    shares: list[ReportShareIn]
