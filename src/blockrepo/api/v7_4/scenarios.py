"""Routes of the scenario API (API.md section 11): create scenarios, compare them with main, settle their
conflicts and merge them. Elements are read and written in a scenario through the element routes."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query
from fastapi.openapi.models import Example
from starlette.responses import Response

from blockrepo.api.body import require_json_body
from blockrepo.api.context import RequestContext, element_write_context, read_context, request_context
from blockrepo.api.cursors import PLANNING
from blockrepo.api.element_answers import element_writer
from blockrepo.api.parameters import SCENARIO_KEY
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import JsonResponse, model_response
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.scenarios import comparison, merging, projection, review, service
from blockrepo.scenarios.schemas import (
    CommentIn,
    CommentOut,
    MergeIn,
    MergeRuleIn,
    MergeRuleOut,
    ResolutionIn,
    ResolutionOut,
    ReviewIn,
    ScenarioCreate,
    ScenarioOut,
    SharesIn,
    SharesOut,
)

router = APIRouter(prefix="/api/scenarios", tags=["scenarios"])

# The answers built as JSON directly (no model): their outline, so that clients and the contract test
# know their shape.
_OBJECTS = {"type": "array", "items": {"type": "object"}}
DIFF_PAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["scenario", "items", "nextCursor"],
    "properties": {
        "scenario": {"type": "object"},
        "against": {"type": "object"},
        "summary": {"type": "object"},
        "otherSummary": {"type": "object"},
        "openConflicts": {"type": "integer"},
        "items": _OBJECTS,
        "nextCursor": {"type": ["string", "null"]},
    },
}
CHANGES_PAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["items", "nextAfter"],
    "properties": {"items": _OBJECTS, "nextAfter": {"type": ["integer", "null"]}},
}
CHECKS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["checks", "mergeable"],
    "properties": {"checks": _OBJECTS, "mergeable": {"type": "boolean"}},
}

Key = Annotated[str, Path(description="the scenario's key", json_schema_extra=SCENARIO_KEY)]
JSON_BODY = [Depends(require_json_body)]

# Request examples (tests/api/test_request_examples.py sends each to a demo repository).
CREATE_EXAMPLES: dict[str, Example] = {
    "now": {
        "summary": "A scenario from main as it is now, effective on a date",
        "value": {
            "name": "ERP migration",
            "description": "The landscape once the old ERP is switched off",
            "effectiveDate": "2027-07-01",
        },
    },
    "past": {
        "summary": "A scenario from an earlier revision of main",
        "value": {"name": "Option B", "base": 1},
    },
}
RESOLUTION_EXAMPLES: dict[str, Example] = {
    "scenario": {
        "summary": "Keep the scenario's value of a field changed on both sides",
        "value": {"element": 128, "field": "Criticality", "take": "scenario"},
    },
    "value": {
        "summary": "Settle it with a third value",
        "value": {"element": 128, "field": "Criticality", "take": "value", "value": ["medium"]},
    },
}
MERGE_EXAMPLES: dict[str, Example] = {
    "dryRun": {"summary": "What the merge would write, writing nothing", "value": {"dryRun": True}},
    "merge": {"summary": "Merge into main", "value": {}},
}
DIFF_EXAMPLE: dict[str, Any] = {
    "scenario": {"key": "erp-migration-3f9a1c", "baseRevision": 120, "behindMain": 4},
    "summary": {"InformationSystem": {"updated": 1}},
    "openConflicts": 1,
    "items": [
        {
            "element": {"id": 128, "type": "InformationSystem", "name": "ERP"},
            "action": "updated",
            "fields": [
                {
                    "field": "Criticality",
                    "base": ["medium"],
                    "scenario": ["low"],
                    "main": ["high"],
                    "state": "conflict",
                },
                {
                    "field": "businessDomains",
                    "added": [{"id": 3, "name": "Finance"}],
                    "removed": [],
                    "state": "unchanged-in-main",
                },
            ],
            "conflicts": [
                {
                    "kind": "bothChanged",
                    "field": "Criticality",
                    "message": "Criticality was changed in main and in the scenario",
                }
            ],
        }
    ],
    "nextCursor": None,
}
# Two plans side by side (`against=scenario:<key>`): no conflicts, each plan's value and action.
PLANS_DIFF_EXAMPLE: dict[str, Any] = {
    "scenario": {"key": "option-a-3f9a1c", "baseRevision": 120, "behindMain": 4},
    "against": {"scenario": "option-b-7d21e0", "name": "Option B", "baseRevision": 120},
    "summary": {"InformationSystem": {"updated": 1, "created": 1}},
    "otherSummary": {"InformationSystem": {"updated": 1, "unchanged": 1}},
    "items": [
        {
            "element": {"id": 128, "type": "InformationSystem", "name": "ERP"},
            "action": "updated",
            "otherAction": "updated",
            "state": "differs",
            "fields": [
                {
                    "field": "Criticality",
                    "base": ["medium"],
                    "scenario": ["low"],
                    "other": ["high"],
                    "state": "differs",
                },
                {
                    "field": "description",
                    "base": ["ERP"],
                    "scenario": ["Kept for finance"],
                    "other": ["ERP"],
                    "state": "onlyHere",
                },
                {
                    "field": "businessDomains",
                    "added": [{"id": 3, "name": "Finance"}],
                    "removed": [],
                    "otherAdded": [{"id": 3, "name": "Finance"}],
                    "otherRemoved": [],
                    "state": "same",
                },
            ],
        },
        {
            "element": {"id": 131, "type": "InformationSystem", "name": "Billing Cloud"},
            "action": "created",
            "otherAction": "unchanged",
            "state": "onlyHere",
            "fields": [
                {"field": "name", "base": [], "scenario": ["Billing Cloud"], "other": [], "state": "onlyHere"}
            ],
        },
    ],
    "nextCursor": None,
}


REVIEW_EXAMPLES: dict[str, Example] = {
    "two": {
        "summary": "Two reviewers, one approval needed",
        "value": {"reviewers": ["anna", "bernd"], "requiredApprovals": 1},
    },
}
SHARE_EXAMPLES: dict[str, Example] = {
    "team": {
        "summary": "The editors write in it, the readers follow it",
        "value": {
            "shares": [{"role": "Business editor", "access": "write"}, {"role": "Reader", "access": "read"}]
        },
    },
    "none": {"summary": "Shared with no role", "value": {"shares": []}},
}
COMMENT_EXAMPLES: dict[str, Example] = {
    "field": {
        "summary": "A question on one field of one element",
        "value": {"element": 128, "field": "Criticality", "text": "Why does it become less critical?"},
    },
    "scenario": {"summary": "A comment on the whole scenario", "value": {"text": "Looks good to me."}},
}


def _errors(*statuses: int) -> dict[int | str, Any]:
    return problem_responses(*sorted({401, 403, *statuses}))


def _rules(ctx: RequestContext) -> review.ReviewRules:
    settings = ctx.settings
    return review.ReviewRules(settings.scenario_self_approval, settings.protected_main)


@router.post(
    "",
    operation_id="createScenario",
    status_code=201,
    response_model=ScenarioOut,
    responses=_errors(400, 415),
    dependencies=JSON_BODY,
    summary="Create a planning scenario",
)
def create_scenario(
    body: Annotated[ScenarioCreate, Body(openapi_examples=CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(element_write_context),
) -> Response:
    """A scenario from main now or from an earlier revision or time (`base`). Work in it with the element
    API and `?scenario=<key>` (or the `Blockrepo-Scenario` header): writes there never touch main."""
    scenario = service.create_scenario(ctx.db, ctx.actor, body)
    ctx.commit()
    return model_response(scenario, status_code=201, headers={"Location": f"/api/scenarios/{scenario.key}"})


@router.get(
    "",
    operation_id="listScenarios",
    response_model=list[ScenarioOut],
    responses=_errors(),
    summary="The caller's planning scenarios",
)
def list_scenarios(
    everyone: Annotated[bool, Query(description="every account's scenarios (a supervisor only)")] = False,
    ended: Annotated[bool, Query(description="merged and closed scenarios too")] = False,
    ctx: RequestContext = Depends(read_context),
) -> Response:
    """Newest first, each with how far main has moved on since its base (`behindMain`)."""
    return model_response(service.list_scenarios(ctx.db, ctx.actor, everyone=everyone, include_ended=ended))


@router.get(
    "/{key}",
    operation_id="getScenario",
    response_model=ScenarioOut,
    responses=_errors(404),
    summary="One planning scenario",
)
def get_scenario(key: Key, ctx: RequestContext = Depends(read_context)) -> Response:
    """Unknown, or not the caller's (only its owner and supervisors see a scenario): 404."""
    return model_response(service.scenario_out(ctx.db, service.visible_scenario(ctx.db, ctx.actor, key)))


def _set_state(key: str, state: str, ctx: RequestContext) -> Response:
    scenario = service.set_state(ctx.db, ctx.actor, key, state)
    ctx.commit()
    return model_response(scenario)


@router.post(
    "/{key}/close",
    operation_id="closeScenario",
    response_model=ScenarioOut,
    responses=_errors(404, 409),
    summary="Close a planning scenario",
)
def close_scenario(key: Key, ctx: RequestContext = Depends(element_write_context)) -> Response:
    """A closed scenario takes no writes and cannot be merged; it stays readable and can be reopened."""
    return _set_state(key, "closed", ctx)


@router.post(
    "/{key}/reopen",
    operation_id="reopenScenario",
    response_model=ScenarioOut,
    responses=_errors(404, 409),
    summary="Reopen a closed planning scenario",
)
def reopen_scenario(key: Key, ctx: RequestContext = Depends(element_write_context)) -> Response:
    """A merged scenario stays merged (409)."""
    return _set_state(key, "open", ctx)


@router.get(
    "/{key}/diff",
    operation_id="diffScenario",
    responses={
        200: {
            "description": "A page of the scenario's elements compared",
            "content": {
                "application/json": {
                    "schema": DIFF_PAGE_SCHEMA,
                    "examples": {
                        "main": {"summary": "Against main, three ways", "value": DIFF_EXAMPLE},
                        "scenario": {
                            "summary": "Against another scenario: two plans side by side",
                            "value": PLANS_DIFF_EXAMPLE,
                        },
                    },
                }
            },
        },
        **_errors(400, 404),
    },
    response_class=JsonResponse,
    summary="Compare a scenario with main, with its base or with another scenario",
)
def diff_scenario(
    key: Key,
    against: Annotated[
        str,
        Query(
            max_length=100,
            description="`main` (three ways: base, scenario, main now), `base`, main as it stood at "
            "`revision:<n>` or `time:<ISO-8601>` since the base (needs VIEW_HISTORY), or "
            "`scenario:<key>`: another scenario you may see, two plans side by side (its value under "
            "`other`)",
            examples=["main", "base", "revision:42", "time:2026-07-01T00:00:00Z", "scenario:option-b-7d21e0"],
        ),
    ] = "main",
    limit: Annotated[int | None, Query(ge=1, le=1000, description="elements a page (default 100)")] = None,
    cursor: Annotated[
        str | None, Query(max_length=200, description="`nextCursor` of the page before")
    ] = None,
    ctx: RequestContext = Depends(read_context),
) -> JsonResponse:
    """Per element and field: the value at the base, in the scenario and in main, with a state:
    `unchanged-in-main` (only the scenario changed it), `changed` (main changed it too, alike, or a
    relation end both changed: merged as sets) or `conflict`. Relation ends come as entries `added` and
    `removed`. Conflicts are listed per element with their kind (`bothChanged`, `deletedInMain`,
    `changedInMain`, `relationToDeleted`, `nameTaken`, `cycle`, `metamodelChanged`) and resolution.
    What the caller may not read is left out, as in history. The first page counts elements by type and
    action and the open conflicts.

    `against=scenario:<key>` compares two plans ("option A against option B"): every element either
    scenario changed, each field either changed with its value at this scenario's base (`base`), in this
    scenario (`scenario`) and in the other (`other`), relation ends as each plan's `added`/`removed` and
    `otherAdded`/`otherRemoved`, and a state: `same`, `onlyHere` (only this scenario changed it),
    `onlyThere` (only the other did) or `differs`. Each element has both plans' actions (`action`,
    `otherAction`, `unchanged` for a plan that leaves it alone) and a `state` of its own; the page names
    the other scenario (`against`), and its first page counts both plans' actions (`summary`,
    `otherSummary`). Each plan is read as it sees itself (main at its own base and its changes); there are
    no conflicts between two plans. An unknown scenario, or one the caller may not see, is 404."""
    position = ctx.services.cursors.open(PLANNING, cursor, "query:cursor")
    return _sealed(
        ctx,
        comparison.diff(ctx.db, ctx.actor, ctx.metamodel, key, against=against, limit=limit, cursor=position),
    )


def _sealed(ctx: RequestContext, page: dict[str, Any]) -> JsonResponse:
    page["nextCursor"] = ctx.services.cursors.seal(PLANNING, page["nextCursor"])
    return JsonResponse(page)


@router.get(
    "/{key}/resolutions",
    operation_id="listScenarioResolutions",
    response_model=list[ResolutionOut],
    responses=_errors(404),
    summary="How a scenario's conflicts are settled",
)
def list_resolutions(key: Key, ctx: RequestContext = Depends(read_context)) -> Response:
    return model_response(comparison.list_resolutions(ctx.db, ctx.actor, key))


@router.post(
    "/{key}/resolutions",
    operation_id="resolveScenarioConflict",
    response_model=ResolutionOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=JSON_BODY,
    summary="Settle a conflict of a scenario",
)
def resolve_conflict(
    key: Key,
    body: Annotated[ResolutionIn, Body(openapi_examples=RESOLUTION_EXAMPLES)],
    ctx: RequestContext = Depends(element_write_context),
) -> Response:
    """`take`: `scenario`, `main`, or `value` with the field's values. Stored with the scenario and
    honoured by its diff and its merge; settling the same field again replaces it."""
    resolution = comparison.resolve(ctx.db, ctx.actor, ctx.metamodel, key, body)
    ctx.commit()
    return model_response(resolution)


@router.post(
    "/{key}/merge",
    operation_id="mergeScenario",
    responses={
        200: {"description": "What was (or, with `dryRun`, would be) written into main"},
        **_errors(400, 404, 409, 415),
    },
    response_class=JsonResponse,
    dependencies=JSON_BODY,
    summary="Merge a scenario into main",
)
def merge_scenario(
    key: Key,
    body: Annotated[MergeIn, Body(openapi_examples=MERGE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> JsonResponse:
    """The scenario's net field state written into main in one transaction and one revision: elements it
    created, then its changes (relation ends as additions and removals on main's current ends), then its
    deletions, each checked as any write is. Open conflicts: 409 `scenario_conflicts` listing them;
    a change main refuses (a name taken meanwhile, a cycle): 409 `merge_refused` naming the element.
    Elements created in the scenario get their id in main at the merge (`created` maps them)."""
    ctx.changes.scenario = key
    limits = QueryLimits.from_settings(ctx.settings)
    answer = merging.merge(element_writer(ctx), key, body, _rules(ctx), limits)
    if not body.dry_run:
        revision = ctx.changes.flush(ctx.db)
        merging.record_merge(ctx.db, key, revision)
        answer["revision"] = revision
    ctx.commit()
    return JsonResponse(answer)


@router.post(
    "/{key}/review",
    operation_id="proposeScenario",
    response_model=ScenarioOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=JSON_BODY,
    summary="Propose a scenario for review",
)
def propose_scenario(
    key: Key,
    body: Annotated[ReviewIn, Body(openapi_examples=REVIEW_EXAMPLES)],
    ctx: RequestContext = Depends(element_write_context),
) -> Response:
    """Reviewers see the scenario, comment on it and approve it; a merge then needs `requiredApprovals`
    of its current version (a later change makes earlier approvals lapse)."""
    scenario = review.propose(ctx.db, ctx.actor, key, body)
    ctx.commit()
    return model_response(scenario)


@router.get(
    "/{key}/shares",
    operation_id="listScenarioShares",
    response_model=SharesOut,
    responses=_errors(404),
    summary="The roles a planning scenario is shared with",
)
def list_scenario_shares(key: Key, ctx: RequestContext = Depends(read_context)) -> Response:
    """For whoever sees the scenario."""
    return model_response(service.shares_of(ctx.db, ctx.actor, key))


@router.put(
    "/{key}/shares",
    operation_id="shareScenario",
    response_model=SharesOut,
    responses=_errors(400, 404, 415),
    dependencies=JSON_BODY,
    summary="Share a planning scenario with roles",
)
def share_scenario(
    key: Key,
    body: Annotated[SharesIn, Body(openapi_examples=SHARE_EXAMPLES)],
    ctx: RequestContext = Depends(element_write_context),
) -> Response:
    """Replaces the roles the scenario is shared with (its owner or a supervisor; 403 otherwise). Members
    of a role see the scenario, its diff, history and review; with `write` they also write in it. Closing,
    proposing, settling conflicts, syncing and merging stay with the owner. Attribute-group and type
    permissions apply inside the scenario as in main."""
    shares = service.share(ctx.db, ctx.actor, key, body)
    ctx.commit()
    return model_response(shares)


@router.post(
    "/{key}/approvals",
    operation_id="approveScenario",
    response_model=ScenarioOut,
    responses=_errors(404, 409),
    summary="Approve a scenario as it is now",
)
def approve_scenario(key: Key, ctx: RequestContext = Depends(element_write_context)) -> Response:
    """By one of its reviewers, or a holder of APPROVE_SCENARIOS; never by its owner unless the setting
    `scenario_self_approval` allows it (403 `self_approval`)."""
    scenario = review.approve(ctx.db, ctx.actor, key, _rules(ctx))
    ctx.commit()
    return model_response(scenario)


@router.get(
    "/{key}/comments",
    operation_id="listScenarioComments",
    response_model=list[CommentOut],
    responses=_errors(404),
    summary="The comments on a scenario",
)
def list_comments(key: Key, ctx: RequestContext = Depends(read_context)) -> Response:
    return model_response(review.list_comments(ctx.db, ctx.actor, key))


@router.post(
    "/{key}/comments",
    operation_id="commentScenario",
    status_code=201,
    response_model=CommentOut,
    responses=_errors(400, 404, 415),
    dependencies=JSON_BODY,
    summary="Comment on a scenario, an element or a field",
)
def comment_scenario(
    key: Key,
    body: Annotated[CommentIn, Body(openapi_examples=COMMENT_EXAMPLES)],
    ctx: RequestContext = Depends(element_write_context),
) -> Response:
    made = review.comment(ctx.db, ctx.actor, key, body)
    ctx.commit()
    return model_response(made, status_code=201)


@router.post(
    "/{key}/sync",
    operation_id="syncScenario",
    response_model=ScenarioOut,
    responses=_errors(404, 409),
    summary="Bring a scenario up to date with main",
)
def sync_scenario(key: Key, ctx: RequestContext = Depends(element_write_context)) -> Response:
    """Moves the base to main's newest revision: main's changes fold in, each settled conflict becomes the
    scenario's own change as its resolution says. Open conflicts: 409 `scenario_conflicts` listing them
    (settle them first). Afterwards `behindMain` is 0."""
    scenario = merging.sync(element_writer(ctx), key)
    ctx.commit()
    return model_response(scenario)


@router.get(
    "/{key}/changes",
    operation_id="listScenarioChanges",
    responses={
        200: {
            "description": "A page of the scenario's changesets",
            "content": {"application/json": {"schema": CHANGES_PAGE_SCHEMA}},
        },
        **_errors(400, 404),
    },
    response_class=JsonResponse,
    summary="What was written in a scenario, by whom and when",
)
def scenario_changes(
    key: Key,
    element: Annotated[int | None, Query(ge=1, le=2**31 - 1, description="one element's changes")] = None,
    after: Annotated[int, Query(ge=0, le=2**31 - 1, description="`nextAfter` of the page before")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000, description="changesets a page")] = 100,
    ctx: RequestContext = Depends(read_context),
) -> JsonResponse:
    """Oldest first, in the shape of main's history, each with `mainRevision` (main's revision when it was
    written). Kept after a merge: the original authors and times of what the merge brought into main,
    whose revision names the scenario (`viaScenario`)."""
    return JsonResponse(
        service.changes(ctx.db, ctx.actor, ctx.metamodel, key, element_id=element, after=after, limit=limit)
    )


@router.post(
    "/{key}/revert",
    operation_id="revertScenario",
    status_code=201,
    response_model=ScenarioOut,
    responses=_errors(404, 409),
    summary="Make a scenario that undoes a merged one",
)
def revert_scenario(key: Key, ctx: RequestContext = Depends(element_write_context)) -> Response:
    """A new scenario, based on main now, holding the inverse of what the merge brought into main (from
    main's history): reviewed and merged like any other. 409 `not_merged` for a scenario not merged."""
    scenario = merging.revert(element_writer(ctx), key)
    ctx.commit()
    return model_response(scenario, status_code=201, headers={"Location": f"/api/scenarios/{scenario.key}"})


RULE_EXAMPLES: dict[str, Example] = {
    "responsible": {
        "summary": "Every information system has a responsible: required before a merge",
        "value": {
            "name": "Every system has a responsible",
            "query": "InformationSystem[count(@Responsible) = 0];",
            "required": True,
        },
    },
}
rules_router = APIRouter(prefix="/api/scenario-rules", tags=["scenarios"])


@router.get(
    "/{key}/checks",
    operation_id="checkScenario",
    responses={
        200: {
            "description": "Each rule's result on the scenario",
            "content": {"application/json": {"schema": CHECKS_SCHEMA}},
        },
        **_errors(404),
    },
    response_class=JsonResponse,
    summary="Run the merge rules on a scenario",
)
def check_scenario(key: Key, ctx: RequestContext = Depends(read_context)) -> JsonResponse:
    """Each rule of `/api/scenario-rules` run on the scenario as it stands: passed, how many elements
    break it and the first of them (of types the caller may read). `mergeable` is false while a required
    rule fails: the merge answers 409 `checks_failed` then."""
    limits = QueryLimits.from_settings(ctx.settings)
    return JsonResponse(review.checks(ctx.db, ctx.actor, ctx.metamodel, key, limits))


@rules_router.get(
    "",
    operation_id="listScenarioRules",
    response_model=list[MergeRuleOut],
    responses=_errors(),
    summary="The rules scenarios are checked against",
)
def list_rules(ctx: RequestContext = Depends(read_context)) -> Response:
    return model_response(review.list_rules(ctx.db))


@rules_router.post(
    "",
    operation_id="createScenarioRule",
    status_code=201,
    response_model=MergeRuleOut,
    responses=_errors(400, 409, 415),
    dependencies=JSON_BODY,
    summary="Add a rule scenarios are checked against",
)
def create_rule(
    body: Annotated[MergeRuleIn, Body(openapi_examples=RULE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> Response:
    """An iteraQL query selecting the elements that break the rule; `required` stops the merge of a
    scenario that breaks it. A supervisor's."""
    limits = QueryLimits.from_settings(ctx.settings)
    rule = review.create_rule(ctx.db, ctx.actor, ctx.metamodel, body, limits)
    ctx.commit()
    return model_response(rule, status_code=201, headers={"Location": f"/api/scenario-rules/{rule.id}"})


@rules_router.delete(
    "/{id}",
    operation_id="deleteScenarioRule",
    status_code=204,
    responses=_errors(404),
    summary="Remove a rule",
)
def delete_rule(
    rule_id: Annotated[int, Path(alias="id", ge=1, le=2**31 - 1, description="a rule's id")],
    ctx: RequestContext = Depends(request_context),
) -> Response:
    review.delete_rule(ctx.db, ctx.actor, rule_id)
    ctx.commit()
    return Response(status_code=204)


projection_router = APIRouter(prefix="/api/projection", tags=["scenarios"])
PROJECTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["at", "type", "scenarios", "items", "nextCursor"],
    "properties": {
        "at": {"type": "string", "format": "date"},
        "type": {"type": "string"},
        "scenarios": _OBJECTS,
        "items": _OBJECTS,
        "nextCursor": {"type": ["string", "null"]},
    },
}


PROJECTION_DIFF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["from", "to", "type", "scenarios", "items", "nextCursor"],
    "properties": {
        "from": {"type": "object", "properties": {"at": {"type": "string", "format": "date"}}},
        "to": {"type": "object", "properties": {"at": {"type": "string", "format": "date"}}},
        "type": {"type": "string"},
        "scenarios": _OBJECTS,
        "items": _OBJECTS,
        "nextCursor": {"type": ["string", "null"]},
    },
}
ScenarioKeys = Annotated[
    str | None,
    Query(
        max_length=2000,
        description="keys of open scenarios, comma-separated: each applies if effective by the date "
        "(no effective date: always), in the order of their dates",
    ),
]
ProjectionLimit = Annotated[int | None, Query(ge=1, le=1000, description="elements a page (default 100)")]
ProjectionCursor = Annotated[str | None, Query(max_length=200, description="`nextCursor` of the page before")]
ProjectedType = Annotated[
    str, Query(alias="type", min_length=1, max_length=255, description="the building block type")
]


def _keys(scenarios: str | None) -> list[str]:
    return [key.strip() for key in (scenarios or "").split(",") if key.strip()]


@projection_router.get(
    "/diff",
    operation_id="compareProjections",
    responses={
        200: {
            "description": "A page of the type's elements that differ between the two dates",
            "content": {"application/json": {"schema": PROJECTION_DIFF_SCHEMA}},
        },
        **_errors(400, 404, 409),
    },
    response_class=JsonResponse,
    summary="The landscape on two dates compared",
)
def compare_projections(
    from_: Annotated[
        dt.date, Query(alias="from", description="the earlier date (`base`)", examples=["2027-01-01"])
    ],
    to: Annotated[dt.date, Query(description="the later date (`main`)", examples=["2027-07-01"])],
    type_name: ProjectedType,
    scenarios: ScenarioKeys = None,
    limit: ProjectionLimit = None,
    cursor: ProjectionCursor = None,
    ctx: RequestContext = Depends(read_context),
) -> JsonResponse:
    """The type's landscape projected to `from` and to `to` (as `GET /api/projection` projects it, with
    the scenarios effective by each date) compared in the diff shape of `GET /api/history/diff`: a page,
    by id, of the elements that differ, each `created` (there on `to` only: a scenario's new element, or a
    runtime period that has begun), `deleted` (there on `from` only) or `updated`, with each differing
    field's value on `from` (`base`) and on `to` (`main`), relation ends and `children` as the entries
    `added` and `removed`. What the caller may not read is left out. Needs MASSDATA and read on the type."""
    return _sealed(
        ctx,
        projection.compare(
            ctx.db,
            ctx.actor,
            ctx.metamodel,
            start=from_,
            end=to,
            type_name=type_name,
            scenario_keys=_keys(scenarios),
            limit=limit,
            cursor=ctx.services.cursors.open(PLANNING, cursor, "query:cursor"),
        ),
    )


@projection_router.get(
    "",
    operation_id="projectLandscape",
    responses={
        200: {
            "description": "A page of the type's elements as they will be on the date",
            "content": {"application/json": {"schema": PROJECTION_SCHEMA}},
        },
        **_errors(400, 404, 409),
    },
    response_class=JsonResponse,
    summary="The landscape as it will be on a date",
)
def project_landscape(
    at: Annotated[dt.date, Query(description="the date to project to", examples=["2027-07-01"])],
    type_name: ProjectedType,
    scenarios: ScenarioKeys = None,
    fields: Annotated[
        str | None, Query(max_length=2000, description="comma-separated keys to answer (default: all)")
    ] = None,
    limit: ProjectionLimit = None,
    cursor: ProjectionCursor = None,
    ctx: RequestContext = Depends(read_context),
) -> JsonResponse:
    """Main now, with the chosen scenarios' changes effective by `at` applied as their merges would apply
    them (field by field, relation ends as additions and removals, new and deleted elements), without the
    elements whose `runtimePeriod` has ended by `at` or not yet begun. By id, paged; what the caller may
    not read is left out. Needs MASSDATA and read on the type."""
    keys = _keys(scenarios)
    names = None if fields is None else [name.strip() for name in fields.split(",") if name.strip()]
    return _sealed(
        ctx,
        projection.project(
            ctx.db,
            ctx.actor,
            ctx.metamodel,
            at=at,
            type_name=type_name,
            scenario_keys=keys,
            fields=names,
            limit=limit,
            cursor=ctx.services.cursors.open(PLANNING, cursor, "query:cursor"),
        ),
    )
