"""Routes of the token API (API.md section 11): mint, list, change, rotate and revoke API tokens."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from fastapi.openapi.models import Example
from starlette.responses import Response as StarletteResponse

from blockrepo.api.body import require_json_body
from blockrepo.api.context import AppServices, RequestContext, races_as_conflicts, request_context
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import model_response
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.scenarios import service as scenarios
from blockrepo.tokens import service
from blockrepo.tokens.schemas import (
    IssuedTokenOut,
    TokenCreate,
    TokenOut,
    TokenRevocation,
    TokenRotate,
    TokenUpdate,
)

router = APIRouter(prefix="/api/tokens", dependencies=[Depends(races_as_conflicts)], tags=["tokens"])

Id = Path(ge=1, le=2**31 - 1, description="a token's id")
JSON_BODY = [Depends(require_json_body)]
# The path of the public revocation by token string (auth/middleware.PUBLIC_PATHS).
REVOCATIONS_PATH = "/api/tokens/revocations"

# Request examples (tests/api/test_request_examples.py sends each to a demo repository). An expiry is at
# most `token_max_days` ahead, so a fixed date in an example leaves that window as time passes: the test
# sends the create example with its date moved, and says so.
TOKEN_CREATE_EXAMPLES: dict[str, Example] = {
    "readOnly": {
        "summary": "A read-only token for a nightly sync, limited to two types and one network",
        "value": {
            "name": "nightly CMDB sync",
            "expiresAt": "2027-06-30T00:00:00Z",
            "readOnly": True,
            "types": ["InformationSystem", "InformationFlow"],
            "allowedNetworks": ["10.20.0.0/16"],
        },
    },
}
TOKEN_UPDATE_EXAMPLES: dict[str, Example] = {
    "rename": {"summary": "Rename the token", "value": {"name": "nightly CMDB sync (EU)"}},
    "disable": {"summary": "Disable it for now (enable again with `true`)", "value": {"enabled": False}},
}
TOKEN_ROTATE_EXAMPLES: dict[str, Example] = {
    "overlap": {"summary": "The old token keeps working for ten minutes", "value": {"overlapSeconds": 600}},
}
REVOCATION_EXAMPLES: dict[str, Example] = {
    "leaked": {
        "summary": "A token string found in a public repository",
        "value": {"token": "brp_4fQ9xT2mLp0a7Rk2VbN8sWq1ZcX5yHd3JuE6gTo9iMn0aPl4Kf"},
    },
}


def _errors(*statuses: int) -> dict[int | str, Any]:
    return problem_responses(*sorted({401, 403, *statuses}))


def _settings(ctx: RequestContext) -> service.TokenSettings:
    services = ctx.services
    return service.TokenSettings(services.auth.tokens.peppers, services.settings.token_max_days)


@router.post(
    "",
    operation_id="createToken",
    status_code=201,
    response_model=IssuedTokenOut,
    responses=_errors(400, 409, 415),
    dependencies=JSON_BODY,
    summary="Mint an API token",
)
def create_token(
    body: Annotated[TokenCreate, Body(openapi_examples=TOKEN_CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """A token for `Authorization: Bearer brp_…`, acting as its owner narrowed by its restriction
    (`readOnly`, `types`, `attributeGroups`, `functions`, `allowedNetworks`, and `scenario`: it writes
    only in that planning scenario): it never may more than the owner, whose rights are read on every
    request. `expiresAt` is required. The answer holds the token itself, the only time it is shown: the
    server keeps only a keyed hash. A request authenticated by a token cannot mint one (403
    `token_cannot_mint`)."""
    issued = service.create_token(
        ctx.db,
        ctx.actor,
        ctx.metamodel,
        ctx.changes,
        body,
        _settings(ctx),
        ctx.principal.token,
        lambda owner, key: scenarios.can_see(ctx.db, owner, key),
    )
    ctx.commit()
    return model_response(issued, status_code=201, headers={"Location": f"/api/tokens/{issued.id}"})


@router.get(
    "",
    operation_id="listTokens",
    response_model=list[TokenOut],
    responses=_errors(),
    summary="The caller's API tokens",
)
def list_tokens(
    everyone: Annotated[bool, Query(description="every account's tokens (a supervisor only)")] = False,
    revoked: Annotated[bool, Query(description="revoked tokens too")] = False,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Without their secrets, newest first."""
    return model_response(
        service.list_tokens(ctx.db, ctx.actor, ctx.metamodel, everyone=everyone, revoked=revoked)
    )


@router.post(
    "/revocations",
    operation_id="revokeTokenString",
    status_code=204,
    responses=problem_responses(400, 415),
    dependencies=JSON_BODY,
    summary="Revoke a leaked token by its string",
)
def revoke_token_string(
    body: Annotated[TokenRevocation, Body(openapi_examples=REVOCATION_EXAMPLES)], request: Request
) -> Response:
    """Public, for secret scanners and for whoever finds a token where it does not belong: the token
    string is all it takes to use a token, so it is all it takes to revoke it. Always 204, whether or not
    the string named a live token (the answer tells nothing about it)."""
    services: AppServices = request.app.state.services
    principal = request.scope["state"].get("principal")
    with services.databases.session(writing=True) as db:
        changes = ChangeLog(
            user_login="anonymous" if principal is None else principal.login,
            request_id=request.scope["state"]["request_id"],
            via=None if principal is None else principal.credential,
        )
        if service.revoke_leaked(db, changes, body.token, services.auth.tokens.peppers):
            changes.flush(db)
            db.commit()
    return Response(status_code=204)


@router.get(
    "/{id}",
    operation_id="getToken",
    response_model=TokenOut,
    responses=_errors(404),
    summary="One API token",
)
def get_token(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """One of the caller's tokens (any, for a supervisor), without its secret."""
    return model_response(service.get_token(ctx.db, ctx.actor, ctx.metamodel, id))


@router.patch(
    "/{id}",
    operation_id="updateToken",
    response_model=TokenOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=JSON_BODY,
    summary="Rename, disable, enable or shorten an API token",
)
def update_token(
    body: Annotated[TokenUpdate, Body(openapi_examples=TOKEN_UPDATE_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Its restriction never changes (mint a new token instead); its expiry only comes earlier."""
    updated = service.update_token(
        ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id, body, _settings(ctx), ctx.principal.token
    )
    ctx.commit()
    return model_response(updated)


@router.delete(
    "/{id}",
    operation_id="revokeToken",
    status_code=204,
    responses=_errors(404, 409),
    summary="Revoke an API token",
)
def revoke_token(id: int = Id, ctx: RequestContext = Depends(request_context)) -> Response:
    """At once: every worker and host refuses it from the next request on. A token may revoke itself."""
    service.revoke_token(ctx.db, ctx.actor, ctx.changes, id, ctx.principal.token)
    ctx.commit()
    return Response(status_code=204)


@router.post(
    "/{id}/rotate",
    operation_id="rotateToken",
    status_code=201,
    response_model=IssuedTokenOut,
    responses=_errors(400, 404, 409, 415),
    dependencies=JSON_BODY,
    summary="Replace an API token, the old one working for an overlap",
)
def rotate_token(
    body: Annotated[TokenRotate, Body(openapi_examples=TOKEN_ROTATE_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """A new token with the same name, owner, restriction and expiry; the old one keeps working for
    `overlapSeconds` (revoked at once with 0). A token may rotate itself, so a job can renew its own."""
    issued = service.rotate_token(
        ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id, body, _settings(ctx), ctx.principal.token
    )
    ctx.commit()
    return model_response(issued, status_code=201, headers={"Location": f"/api/tokens/{issued.id}"})
