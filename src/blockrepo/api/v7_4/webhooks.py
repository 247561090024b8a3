"""Routes of the webhook API (API.md section 11): subscriptions, their secrets, test sends, pause and
resume, replay and the delivery log."""

from __future__ import annotations

from typing import Annotated, Any

from anyio import to_thread
from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from fastapi.openapi.models import Example
from starlette.responses import Response as StarletteResponse

from blockrepo.api.body import require_json_body
from blockrepo.api.context import (
    AppServices,
    RequestContext,
    principal_of,
    races_as_conflicts,
    request_context,
    session_context,
)
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import model_response
from blockrepo.auth.basic import Principal
from blockrepo.webhooks import service
from blockrepo.webhooks.schemas import (
    DeliveryOut,
    DeliveryPage,
    IssuedWebhookOut,
    Replay,
    SecretRotation,
    WebhookCreate,
    WebhookOut,
    WebhookUpdate,
)

router = APIRouter(prefix="/api/webhooks", dependencies=[Depends(races_as_conflicts)], tags=["webhooks"])

Id = Path(ge=1, le=2**31 - 1, description="a webhook's id")
JSON_BODY = [Depends(require_json_body)]

# Request examples (tests/api/test_request_examples.py sends each to a demo repository).
CREATE_EXAMPLES: dict[str, Example] = {
    "thin": {
        "summary": "Changes of current information systems, batched for two seconds",
        "value": {
            "name": "CMDB sync",
            "url": "https://cmdb.example.com/hooks/blockrepo",
            "events": ["element.created", "element.updated", "element.deleted"],
            "types": ["InformationSystem"],
            "conditions": [{"property": "status", "new": "CURRENT"}],
            "payload": "thin",
            "batchSeconds": 2,
        },
    },
}
UPDATE_EXAMPLES: dict[str, Example] = {
    "full": {
        "summary": "Relation events too, with whole elements in the payload (absent keys stay)",
        "value": {
            "events": ["element.created", "element.updated", "element.deleted", "relation.added"],
            "payload": "full",
            "batchSeconds": 5,
        },
    },
}
REPLAY_EXAMPLES: dict[str, Example] = {
    "fromRevision": {"summary": "Deliver again every change after revision 1", "value": {"fromRevision": 1}},
}
SECRET_EXAMPLES: dict[str, Example] = {
    "overlap": {
        "summary": "Sign with both secrets for a day while the receiver switches",
        "value": {"overlapSeconds": 86400},
    },
}
# One annotation for the route and the target check, which read the same body.
NewWebhook = Annotated[WebhookCreate, Body(openapi_examples=CREATE_EXAMPLES)]
ChangedWebhook = Annotated[WebhookUpdate, Body(openapi_examples=UPDATE_EXAMPLES)]


def _errors(*statuses: int) -> dict[int | str, Any]:
    return problem_responses(*sorted({401, 403, *statuses}))


def _created_target(body: NewWebhook, request: Request) -> None:
    """The target's check, before `request_context` takes the write lock: it resolves a name, which a
    slow name server could make last."""
    service.check_target(body.url, request.app.state.services.webhook_worker.targets)


def _updated_target(body: ChangedWebhook, request: Request) -> None:
    if body.url is not None:
        service.check_target(body.url, request.app.state.services.webhook_worker.targets)


@router.post(
    "",
    operation_id="createWebhook",
    status_code=201,
    response_model=IssuedWebhookOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=[*JSON_BODY, Depends(_created_target)],
    summary="Subscribe a receiver to changes",
)
def create_webhook(body: NewWebhook, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """The receiver at `url` gets the committed changes after `fromRevision` (default: from now on) that
    its owner, the caller, may read, in order, batched, signed per Standard Webhooks with the `secret` of
    the answer (shown this once). Needs VIEW_HISTORY. Targets on loopback, private, link-local or other
    internal addresses are refused unless the server's `webhook_allowed_networks` allows them. With
    `scope: "scenario:<key>"` it gets the changes written in that planning scenario instead (404 for a
    scenario the caller does not see), each event naming the scenario and its `scenarioChange`, and its
    cursor (`fromRevision`, `deliveredThrough`, a replay) counts the scenario's changes."""
    created = service.create_webhook(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, body)
    ctx.commit()
    return model_response(created, status_code=201, headers={"Location": f"/api/webhooks/{created.id}"})


@router.get(
    "",
    operation_id="listWebhooks",
    response_model=list[WebhookOut],
    responses=_errors(),
    summary="The caller's webhooks",
)
def list_webhooks(
    everyone: Annotated[bool, Query(description="every account's webhooks (a supervisor only)")] = False,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Without their secrets, newest first."""
    return model_response(service.list_webhooks(ctx.db, ctx.actor, everyone=everyone))


@router.get(
    "/{id}",
    operation_id="getWebhook",
    response_model=WebhookOut,
    responses=_errors(404),
    summary="One webhook",
)
def get_webhook(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """Its state: whether it is active, how far it delivered, failing since when."""
    return model_response(service.get_webhook(ctx.db, ctx.actor, id))


@router.patch(
    "/{id}",
    operation_id="updateWebhook",
    response_model=WebhookOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=[*JSON_BODY, Depends(_updated_target)],
    summary="Change what a webhook delivers and where",
)
def update_webhook(
    body: ChangedWebhook, id: int = Id, ctx: RequestContext = Depends(request_context)
) -> StarletteResponse:
    """What was delivered stays delivered: the change applies to the messages built from now on."""
    updated = service.update_webhook(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id, body)
    ctx.commit()
    return model_response(updated)


@router.delete(
    "/{id}",
    operation_id="deleteWebhook",
    status_code=204,
    responses=_errors(404, 409),
    summary="Delete a webhook",
)
def delete_webhook(id: int = Id, ctx: RequestContext = Depends(request_context)) -> Response:
    """With its delivery log."""
    service.delete_webhook(ctx.db, ctx.actor, ctx.changes, id)
    ctx.commit()
    return Response(status_code=204)


@router.post(
    "/{id}/pause",
    operation_id="pauseWebhook",
    response_model=WebhookOut,
    responses=_errors(404, 409),
    summary="Stop sending; the changes wait",
)
def pause_webhook(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """Nothing is sent until it is resumed; nothing is lost meanwhile (its cursor waits)."""
    paused = service.set_active(ctx.db, ctx.actor, id, active=False)
    ctx.commit()
    return model_response(paused)


@router.post(
    "/{id}/resume",
    operation_id="resumeWebhook",
    response_model=WebhookOut,
    responses=_errors(404, 409),
    summary="Send again, from where it stopped",
)
def resume_webhook(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """Also enables a webhook the worker disabled (after a 410 or too long failing)."""
    resumed = service.set_active(ctx.db, ctx.actor, id, active=True)
    ctx.commit()
    return model_response(resumed)


@router.post(
    "/{id}/replay",
    operation_id="replayWebhook",
    response_model=WebhookOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=JSON_BODY,
    summary="Deliver again every change after a revision",
)
def replay_webhook(
    body: Annotated[Replay, Body(openapi_examples=REPLAY_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """The replayed messages carry new message ids, so a receiver that deduplicates takes them."""
    replayed = service.replay(ctx.db, ctx.actor, id, body)
    ctx.commit()
    return model_response(replayed)


@router.post(
    "/{id}/secret",
    operation_id="rotateWebhookSecret",
    status_code=201,
    response_model=IssuedWebhookOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=JSON_BODY,
    summary="A new signing secret, both signing during an overlap",
)
def rotate_secret(
    body: Annotated[SecretRotation, Body(openapi_examples=SECRET_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """For `overlapSeconds` every message carries two signatures, one under each secret."""
    rotated = service.rotate_secret(ctx.db, ctx.actor, id, body)
    ctx.commit()
    return model_response(rotated, status_code=201)


@router.get(
    "/{id}/deliveries",
    operation_id="listWebhookDeliveries",
    response_model=DeliveryPage,
    responses=_errors(400, 404),
    summary="The delivery log",
)
def list_deliveries(
    id: int = Id,
    status: Annotated[str | None, Query(description="delivered or failed")] = None,
    before: Annotated[
        int | None, Query(ge=1, le=2**31 - 1, description="attempts older than this id")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Every attempt, newest first, with the receiver's status code, the start of its answer and the
    time it took."""
    return model_response(service.delivery_page(ctx.db, ctx.actor, id, status, before, limit))


@router.post(
    "/{id}/test",
    operation_id="testWebhook",
    response_model=DeliveryOut,
    responses=_errors(404),
    summary="Send a test message now",
)
async def test_webhook(request: Request, id: int = Id) -> StarletteResponse:
    """A signed `webhook.test` message, sent at once and logged; the answer tells how the receiver
    answered. It does not move the webhook's cursor."""
    services: AppServices = request.app.state.services
    principal = principal_of(request)
    request_id = request.scope["state"]["request_id"]
    message = await to_thread.run_sync(_test_message, services, principal, request_id, id)
    outcome = await services.webhook_worker.send(message)
    logged = await to_thread.run_sync(services.webhook_worker.record_test, message, outcome)
    return model_response(logged)


def _test_message(
    services: AppServices, principal: Principal, request_id: str, webhook_id: int
) -> service.Outgoing:
    with session_context(services, principal, request_id, writing=False) as ctx:
        return service.test_message(ctx.db, ctx.actor, webhook_id)
