"""Request and response bodies of the webhook API (API.md section 11)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, ConfigDict, Field

from blockrepo.json_integers import integral_number_as_int
from blockrepo.metamodel.schemas import ApiModel
from blockrepo.name_normalization import Name

EVENT_TYPES = (
    "element.created",
    "element.updated",
    "element.deleted",
    "relation.added",
    "relation.removed",
    "metamodel.changed",
    "administration.changed",
    "import.completed",
    "token.created",
    "token.updated",
    "token.deleted",
    "webhook.disabled",
    # Of a scenario's webhook (`scope: scenario:<key>`) only: what happens to the scenario as a whole.
    "scenario.proposed",
    "scenario.approved",
    "scenario.commented",
    "scenario.synced",
    "scenario.merged",
    "scenario.closed",
    "scenario.reopened",
    "scenario.reverted",
)
EventType = Literal[
    "element.created",
    "element.updated",
    "element.deleted",
    "relation.added",
    "relation.removed",
    "metamodel.changed",
    "administration.changed",
    "import.completed",
    "token.created",
    "token.updated",
    "token.deleted",
    "webhook.disabled",
    "scenario.proposed",
    "scenario.approved",
    "scenario.commented",
    "scenario.synced",
    "scenario.merged",
    "scenario.closed",
    "scenario.reopened",
    "scenario.reverted",
]
BatchSeconds = Annotated[int, Field(ge=0, le=3600), BeforeValidator(integral_number_as_int)]
Revision = Annotated[int, Field(ge=0, le=2**31 - 1), BeforeValidator(integral_number_as_int)]
OverlapSeconds = Annotated[int, Field(ge=0, le=30 * 86400), BeforeValidator(integral_number_as_int)]


class Condition(ApiModel):
    """Holds for an element event that changes `property`, from `old` (if given) to `new` (if given); for
    a relation, `new` names an added end and `old` a removed one."""

    property: str = Field(min_length=1, max_length=255)
    old: Any = None
    new: Any = None


class WebhookCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "CMDB sync",
                    "url": "https://cmdb.example.com/hooks/blockrepo",
                    "events": ["element.created", "element.updated", "element.deleted"],
                    "types": ["InformationSystem"],
                    "conditions": [{"property": "status", "new": "CURRENT"}],
                    "payload": "thin",
                    "batchSeconds": 2,
                }
            ]
        }
    )

    name: str = Field(min_length=1, max_length=255)
    url: str = Field(min_length=1, max_length=2048, description="an http or https URL")
    events: list[EventType] = Field(min_length=1, max_length=len(EVENT_TYPES))
    types: list[Name] | None = Field(
        None, max_length=1000, description="only element and relation events of these types"
    )
    conditions: list[Condition] | None = Field(
        None, max_length=32, description="only element and relation events for which every one holds"
    )
    scope: str = Field(
        "main",
        pattern=r"^(main|scenario:[A-Za-z0-9._~-]{1,64})$",
        description="the landscape whose changes it delivers: `main`, or `scenario:<key>`, the changes "
        "written in that planning scenario and what happens to it (element, relation and `scenario.*` "
        "events)",
    )
    payload: Literal["thin", "full"] = Field(
        "thin", description="thin: ids and the changes; full: also each element as the REST API renders it"
    )
    batch_seconds: BatchSeconds = Field(
        0, description="gather the changes of this many seconds after the first into one message"
    )
    from_revision: Revision | None = Field(
        None,
        description="deliver the changes after this revision (a scenario's webhook: after this "
        "`scenarioChange`; default: from now on)",
    )


class WebhookUpdate(ApiModel):
    name: str | None = Field(None, min_length=1, max_length=255)
    url: str | None = Field(None, min_length=1, max_length=2048)
    events: list[EventType] | None = Field(None, min_length=1, max_length=len(EVENT_TYPES))
    types: list[Name] | None = Field(None, max_length=1000)
    conditions: list[Condition] | None = Field(None, max_length=32)
    payload: Literal["thin", "full"] | None = None
    batch_seconds: BatchSeconds | None = None


class SecretRotation(ApiModel):
    overlap_seconds: OverlapSeconds = Field(
        86400, description="how long messages are signed with the old secret too"
    )


class Replay(ApiModel):
    from_revision: Revision = Field(
        description="deliver again every change after this revision (a scenario's webhook: after this "
        "`scenarioChange`)"
    )


class WebhookOut(ApiModel):
    id: int
    name: str
    url: str
    owner: str
    created_by: str
    created_at: str
    events: list[str]
    types: list[str] | None
    conditions: list[dict[str, Any]] | None
    scope: str
    payload: str
    batch_seconds: int
    active: bool
    disabled_at: str | None
    disabled_reason: str | None
    delivered_through: int = Field(
        description="every change up to this revision (a scenario's webhook: this `scenarioChange`) was "
        "delivered or passed over"
    )
    attempts: int = Field(description="failed attempts of the message now due")
    next_attempt_at: str | None
    failing_since: str | None
    last_delivered_at: str | None


class IssuedWebhookOut(WebhookOut):
    secret: str = Field(description="the signing secret (`whsec_…`): shown this once")


class DeliveryOut(ApiModel):
    id: int
    message_id: str
    kind: str
    first_revision: int | None
    last_revision: int | None
    events: int
    attempt: int
    status: str
    response_status: int | None
    response_snippet: str | None
    error: str | None
    duration_ms: int
    attempted_at: str


class DeliveryPage(ApiModel):
    items: list[DeliveryOut]
    next_before: int | None = Field(description="pass as `before` for older attempts (null: no more)")
