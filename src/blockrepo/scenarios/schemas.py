"""Request and response bodies of the scenario API (API.md section 11)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field

from blockrepo.json_integers import integral_number_as_int
from blockrepo.metamodel.schemas import ApiModel
from blockrepo.name_normalization import Name

# The bounds come before the validator so that the description states them as minimum and maximum.
ElementId = Annotated[
    int, Field(ge=1, le=2**31 - 1, description="the element's id"), BeforeValidator(integral_number_as_int)
]


class ScenarioCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "ERP migration",
                    "description": "The landscape once the old ERP is switched off",
                    "effectiveDate": "2027-07-01",
                }
            ]
        }
    )

    name: str = Field(min_length=1, max_length=255)
    description: str = Field("", max_length=10_000)
    base: Annotated[int, BeforeValidator(integral_number_as_int)] | str | None = Field(
        None,
        description="main's revision (a number) or time (ISO 8601) to start from; default: main as it is now",
        json_schema_extra={
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 2**31 - 1},
                {"type": "string", "format": "date-time"},
                {"type": "string", "format": "date"},
                {"type": "null"},
            ]
        },
    )
    effective_date: str | None = Field(
        None,
        description="the day the planned changes take effect (YYYY-MM-DD)",
        json_schema_extra={"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
    )


class ApprovalOut(ApiModel):
    user: str
    approved_at: str


class ReviewOut(ApiModel):
    reviewers: list[str]
    required_approvals: int
    proposed_at: str
    approvals: list[ApprovalOut] = Field(description="approvals of the scenario as it is now")
    approved: bool = Field(description="enough approvals of the scenario as it is now to merge it")


class ScenarioOut(ApiModel):
    key: str = Field(description="names the scenario: `?scenario=<key>` or the `Blockrepo-Scenario` header")
    name: str
    description: str
    effective_date: str | None
    base_revision: int = Field(description="main's revision the scenario starts from")
    behind_main: int = Field(description="revisions main has moved on since the base")
    owner: str
    state: Literal["open", "merged", "closed"]
    created_at: str
    version: int = Field(description="moves with every write in the scenario")
    changes: int = Field(description="change rows written in the scenario")
    changed_elements: int
    merged_revision: int | None = None
    merged_by: str | None = None
    merged_at: str | None = None
    review: ReviewOut | None = Field(None, description="its review, once it is proposed for one")


class ReviewIn(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"reviewers": ["anna", "bernd"], "requiredApprovals": 1}]}
    )

    reviewers: list[Name] = Field(min_length=1, max_length=50, description="logins of the reviewers")
    required_approvals: Annotated[
        int,
        Field(ge=1, le=50, description="approvals a merge needs"),
        BeforeValidator(integral_number_as_int),
    ] = 1


class ShareIn(ApiModel):
    role: Name = Field(description="the role's name")
    access: Literal["read", "write"] = Field(
        "read", description="`read`: its members see the scenario; `write`: they also write in it"
    )


class SharesIn(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "shares": [
                        {"role": "Business editor", "access": "write"},
                        {"role": "Reader", "access": "read"},
                    ]
                }
            ]
        }
    )

    shares: list[ShareIn] = Field(
        max_length=50, description="every role the scenario is shared with (an empty list: none)"
    )


class SharesOut(ApiModel):
    shares: list[ShareIn]


class CommentIn(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"element": 128, "field": "Criticality", "text": "Why lower?"}]}
    )

    element: ElementId | None = None
    field: str | None = Field(None, min_length=1, max_length=255, description="a field of the element")
    text: str = Field(min_length=1, max_length=10_000)


class CommentOut(ApiModel):
    id: int
    element: int | None
    field: str | None
    author: str
    text: str
    created_at: str


class ResolutionIn(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"element": 128, "field": "Criticality", "take": "scenario"}]}
    )

    element: ElementId
    field: str = Field(
        min_length=1,
        max_length=255,
        description='the conflicting field, or "*" for the element as a whole (deleted on one side)',
    )
    take: Literal["scenario", "main", "value"]
    value: list[Any] | None = Field(None, description='with `take: "value"`: the field\'s values')


class ResolutionOut(ApiModel):
    element: int
    field: str
    take: str
    value: list[Any] | None = None
    resolved_by: str
    resolved_at: str


class MergeIn(ApiModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"dryRun": True}]})

    dry_run: bool = Field(False, description="list what the merge would do and change nothing")


class MergeRuleIn(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Every system has a responsible",
                    "query": "InformationSystem[count(@Responsible) = 0];",
                    "required": True,
                }
            ]
        }
    )

    name: str = Field(min_length=1, max_length=255)
    query: str = Field(
        min_length=1, max_length=10_000, description="iteraQL selecting the elements that break the rule"
    )
    required: bool = Field(False, description="a scenario that breaks it cannot merge")


class MergeRuleOut(ApiModel):
    id: int
    name: str
    query: str
    required: bool
    created_by: str
    created_at: str
