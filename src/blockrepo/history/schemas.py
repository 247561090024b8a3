"""Shapes of the history API as published in the OpenAPI description (responses are built as plain dicts)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class PropertyChange(BaseModel):
    """One property of one changeset: `old`/`new` value lists, or for a relation end (and `children`) the
    related elements `added` and `removed`. Values are in their element-API JSON form."""

    model_config = ConfigDict(extra="allow")

    property: str = Field(
        description="property name as of that revision (attribute, built-in or relation end); an attribute "
        "renamed since keeps the name it had then"
    )
    old: list[Any] | None = Field(None, description="values before (plain properties)")
    new: list[Any] | None = Field(None, description="values after (plain properties)")
    added: list[Any] | None = Field(None, description="related elements added (relation ends), `{id, name}`")
    removed: list[Any] | None = Field(None, description="related elements removed (relation ends)")
    order: list[int] | None = Field(
        None,
        description="ids of the end in their new order, present only when the write also reordered the end "
        "(without it: removed entries go, added ones come last, a re-added id keeps its place)",
    )


class Changeset(BaseModel):
    """What one revision did to one element, to the metamodel or to the administration data.

    `entity` says which: for `element`, `type`/`id`/`name` name the element (its name after the change, or
    before a deletion) and `subject` is null; for `metamodel` and `administration`, `type`/`id`/`name` are
    null and `subject` names what changed as `<kind> <name>` (for example `user anna`, `role Editors`,
    `attribute Costs`, `attribute group Finance`, `type Product`, `relation type BusinessUnit_Product`)."""

    revision: int = Field(
        description="the revision: assigned in commit order, shared by one request's changes"
    )
    timestamp: str = Field(description="when the request that made the revision began (ISO-8601 UTC)")
    user: str = Field(description="login of the user who made the change")
    requestId: str = Field(description="X-Request-ID of the request that made the change")
    via: str | None = Field(
        None,
        description="what authenticated the change: `basic`, `session` or `token:<public id>` (null: the "
        "command line, the service itself, or a change older than this record)",
    )
    viaScenario: str | None = Field(
        None,
        description="the planning scenario whose merge made the change, or, in a history read in a "
        "scenario, the one it was made in (its key; null: made in main)",
    )
    scenarioChange: int | None = Field(
        None,
        description="only in a history read in a scenario: the scenario's number of a change made there "
        "and not in main (`revision` is then main's revision when it was made); absent for main's",
    )
    entity: Literal["element", "metamodel", "administration"]
    operation: Literal["created", "updated", "deleted"]
    type: str | None = Field(description="building block type (element changes)")
    id: int | None = Field(description="element id (element changes)")
    name: str | None = Field(description="element name (element changes)")
    subject: str | None = Field(description="what changed (metamodel and administration changes)")
    changes: list[PropertyChange] = Field(
        description="the changed properties the caller may read; a created element lists every non-empty "
        "property as new, a deleted one every non-empty property as old"
    )


_EXAMPLE_PAGE: dict[str, Any] = {
    "items": [
        {
            "revision": 42,
            "timestamp": "2026-11-22T09:30:00.123Z",
            "user": "anna",
            "requestId": "5f0c3a9e",
            "via": "token:4fQ9xT2mLp0a",
            "entity": "element",
            "operation": "updated",
            "type": "BusinessProcess",
            "id": 4205,
            "name": "Order handling",
            "subject": None,
            "changes": [
                {"property": "Criticality", "old": ["medium"], "new": ["high"]},
                {"property": "informationSystems", "added": [{"id": 17, "name": "ERP"}], "removed": []},
            ],
        },
        {
            "revision": 41,
            "timestamp": "2026-11-22T09:12:44.001Z",
            "user": "system",
            "requestId": "0b7d11c2",
            "via": "session",
            "entity": "administration",
            "operation": "created",
            "type": None,
            "id": None,
            "name": None,
            "subject": "user anna",
            "changes": [{"property": "roles", "old": [], "new": ["Readers"]}],
        },
    ],
    "nextCursor": "WyJmIiw0MSwxMDNd",
}


class HistoryPage(BaseModel):
    """One page of changesets. `nextCursor` (opaque) fetches the next page; null on the last one."""

    model_config = ConfigDict(json_schema_extra={"examples": [_EXAMPLE_PAGE]})

    items: list[Changeset]
    nextCursor: str | None


# How history names attributes and who reads their past values (API.md 9), said alike by every history read.
ATTRIBUTE_IDENTITY_NOTE = """A change names an attribute as it was named when the change was recorded (a
rename is a metamodel changeset of its own). Who may read it follows that attribute, never the name: a renamed
attribute keeps its visibility (its group of today), and a deleted one stays readable only to those who may
read the group it was in when it was deleted (only to supervisors once that group is deleted too), even when
another attribute bears its name now."""

FEED_DESCRIPTION = (
    """Every changeset after revision `sinceRevision` (default 0), in commit order (ascending
revision, then the order of the changes within it), including metamodel and administration changes.

The feed shows a revision only once every smaller one has committed or failed for good (on PostgreSQL writes
commit side by side, so it may lag behind the newest write by the writes still under way; a failed write may
leave its number unused), so it has no gaps: follow `nextCursor` while it is not null; once it is null you
have everything committed so far, and the next poll asks for `sinceRevision=<revision of the last item
seen>`. A client that does this never misses or repeats a changeset. A page may end inside a revision with
many changesets; `nextCursor` resumes inside it.

Element changes of types the caller may not read are left out, and so are the properties the caller may not
read; a changeset none of whose changes the caller may read is left out whole. Pages stay full past left-out
changesets; a page that would have to skip more than 20,000 of them ends early (possibly with fewer items)
with a `nextCursor` past them, so a restricted caller too never misses or repeats what it may see.
Administration changes are shown to holders of the matching administration permission (`user` and `role`
subjects: ADMIN_USERS / ADMIN_ROLES; `attribute`, `attribute group`: ADMIN_ATTRIBUTES). Needs
VIEW_HISTORY.

"""
    + ATTRIBUTE_IDENTITY_NOTE
)

ELEMENT_HISTORY_DESCRIPTION = (
    """The changesets of one element, newest first, including its deletion. Relation
changes appear on both ends as `added`/`removed`. Needs VIEW_HISTORY and read on the type; properties in
attribute groups the caller may not read, and relation ends to types the caller may not read, are left out;
a changeset that changed nothing else is left out whole.

In a planning scenario (`scenario`, or the `Blockrepo-Scenario` header): the scenario's own changesets of
the element first, newest first (`viaScenario` names the scenario, `scenarioChange` numbers the change and
`revision` is main's revision when it was made), then main's up to the scenario's base; 404 if the element
never existed there.

"""
    + ATTRIBUTE_IDENTITY_NOTE
)

TYPE_HISTORY_DESCRIPTION = (
    """The changesets of every element of the type, deleted ones included, newest
first. Same permissions and filtering as the history of one element, and in a planning scenario the same
reading: the scenario's own changesets of the type's elements first, then main's up to its base.

"""
    + ATTRIBUTE_IDENTITY_NOTE
)

FROM_DESCRIPTION = (
    "lower bound, inclusive: a revision number, or an ISO-8601 time (changesets stamped at or after it)"
)
TO_DESCRIPTION = (
    "upper bound, inclusive: a revision number, or an ISO-8601 time (changesets stamped at or before it)"
)
LIMIT_DESCRIPTION = "page size: default {setting:page_size}, at most {setting:max_page_size}"
CURSOR_DESCRIPTION = "the `nextCursor` of the previous page (opaque)"
SINCE_DESCRIPTION = "the last revision the client has seen completely (default 0: from the beginning)"
# An `asOf` read has today's shape, so it names attributes as today; identity, not name, picks the values.
AS_OF_ATTRIBUTE_NAMES = (
    "An attribute's past values appear under its name of today; a deleted attribute's do not appear at all, "
    "even when another attribute bears its name now."
)
AS_OF_DESCRIPTION = (
    "read the repository as it stood at a revision (an integer) or a time (ISO-8601; the newest revision "
    "stamped at or before it); deleted elements are readable as they were before their deletion. "
    + AS_OF_ATTRIBUTE_NAMES
)
