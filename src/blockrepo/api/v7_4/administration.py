"""Routes of the administration API (version 7.4): users, roles, attributes and attribute groups."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Response
from fastapi.openapi.models import Example
from starlette.responses import Response as StarletteResponse

from blockrepo.administration import attributes, groups, roles, users
from blockrepo.administration.schemas import (
    AttributeCreate,
    AttributeGroupCreate,
    AttributeGroupOut,
    AttributeGroupUpdate,
    AttributeUpdate,
    CurrentUserOut,
    RoleCreate,
    RoleOut,
    RoleUpdate,
    UserCreate,
    UserOut,
    UserUpdate,
)
from blockrepo.api.body import require_json_body
from blockrepo.api.context import RequestContext, races_as_conflicts, request_context
from blockrepo.api.problem_docs import problem_responses
from blockrepo.api.responses import model_response
from blockrepo.metamodel.schemas import AttributeOut
from blockrepo.metamodel.service import committed_metamodel
from blockrepo.metamodel.snapshot import Metamodel

router = APIRouter(
    prefix="/api/administration", dependencies=[Depends(races_as_conflicts)], tags=["administration"]
)


def _errors(*, write: bool = False, item: bool = False) -> dict[int | str, Any]:
    statuses = [401, 403]
    if item:
        statuses.append(404)
    if write:
        statuses += [400, 409, 415]
    return problem_responses(*sorted(statuses))


Id = Path(ge=1, le=2**31 - 1, description="a positive integer id")
JSON_BODY = [Depends(require_json_body)]

# Request examples name the demo's accounts, roles, groups and attributes (blockrepo demo), so each one can
# be sent as it stands to a demo repository (tests/api/test_request_examples.py does).
USER_CREATE_EXAMPLES: dict[str, Example] = {
    "editor": {
        "summary": "An architect who maintains the business architecture",
        "value": {
            "login": "carla",
            "firstName": "Carla",
            "lastName": "Conti",
            "email": "carla@alpenrad.example",
            "enabled": True,
            "roles": ["Business editor"],
            "password": "Spoke-Saddle-Chainring-42",
        },
    },
}
USER_UPDATE_EXAMPLES: dict[str, Example] = {
    "roles": {
        "summary": "Grant another role (the list replaces the user's roles)",
        "value": {"roles": ["Reader", "Business editor"]},
    },
    "disable": {
        "summary": "Disable the account (its sessions and tokens stop working)",
        "value": {"enabled": False},
    },
    "password": {"summary": "Set a new password", "value": {"password": "Derailleur-Cassette-17"}},
}
ROLE_CREATE_EXAMPLES: dict[str, Example] = {
    "architect": {
        "summary": "A role that inherits Reader and maintains the application landscape",
        "value": {
            "name": "Application architect",
            "description": "Maintains information systems, their flows and technical components",
            "subRoles": ["Reader"],
            "typePermissions": {
                "InformationSystem": ["read", "create", "update", "delete"],
                "InformationFlow": ["read", "create", "update", "delete"],
                "TechnicalComponent": ["read", "update"],
            },
            "functionalPermissions": ["VIEW_HISTORY", "MASSDATA", "EXPORT"],
        },
    },
}
ROLE_UPDATE_EXAMPLES: dict[str, Example] = {
    "functions": {
        "summary": "Replace the functional permissions (absent keys stay)",
        "value": {"functionalPermissions": ["VIEW_HISTORY", "MASSDATA", "EXPORT", "IMPORT"]},
    },
}
ATTRIBUTE_CREATE_EXAMPLES: dict[str, Example] = {
    "enum": {
        "summary": "An enumeration with coloured literals, in a group, for two types",
        "value": {
            "name": "Hosting",
            "description": "Where the system runs",
            "valueType": "enum",
            "multiple": False,
            "mandatory": False,
            "group": "Operations",
            "types": ["InformationSystem", "TechnicalComponent"],
            "literals": [
                {"name": "on premises", "color": "#6d4c41"},
                {"name": "private cloud", "color": "#1565c0"},
                {"name": "public cloud", "color": "#00838f"},
            ],
        },
    },
    "number": {
        "summary": "A number with a unit and bounds, also on a relation type",
        "value": {
            "name": "Users",
            "description": "Named users of the system",
            "valueType": "number",
            "unit": "persons",
            "min": 0,
            "max": 100000,
            "types": ["InformationSystem"],
            "relationTypes": ["BusinessUnit_InformationSystem"],
        },
    },
}
ATTRIBUTE_UPDATE_EXAMPLES: dict[str, Example] = {
    "types": {
        "summary": "Activate the attribute for one more type (the list replaces the old one)",
        "value": {"types": ["BusinessProcess", "InformationSystem", "ItService"], "mandatory": False},
    },
}
GROUP_CREATE_EXAMPLES: dict[str, Example] = {
    "restricted": {
        "summary": "A group that readers may read and editors may write, taking over an attribute",
        "value": {
            "name": "Lifecycle",
            "description": "Dates of going live and retiring",
            "attributes": ["Go-live"],
            "permissions": [
                {"role": "Reader", "read": True, "write": False},
                {"role": "Business editor", "read": True, "write": True},
            ],
        },
    },
}
GROUP_UPDATE_EXAMPLES: dict[str, Example] = {
    "permissions": {
        "summary": "Let readers read the group too (the list replaces the permissions)",
        "value": {
            "permissions": [
                {"role": "Business editor", "read": True, "write": True},
                {"role": "Reader", "read": True, "write": False},
            ]
        },
    },
}

# --- users ---------------------------------------------------------------------------------------------


@router.get(
    "/users/current",
    operation_id="getCurrentUser",
    response_model=CurrentUserOut,
    summary="The caller and effective permissions",
)
def current_user(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """Needs no permission: every user may see their own account and what they may do. With a session
    cookie, `sessionIdleTimeout` says how long the session may stay idle (each request renews it), so that
    a client can keep it alive while its user works in a form."""
    idle = ctx.settings.session_idle_timeout if ctx.principal.via == "session" else None
    return model_response(users.current_user(ctx.db, ctx.actor, ctx.metamodel, session_idle_timeout=idle))


@router.get(
    "/users",
    operation_id="listUsers",
    response_model=list[UserOut],
    responses=_errors(),
    summary="Every user",
)
def list_users(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(users.list_users(ctx.db, ctx.actor))


@router.post(
    "/users",
    operation_id="createUser",
    status_code=201,
    response_model=UserOut,
    responses=_errors(write=True),
    dependencies=JSON_BODY,
    summary="Create a user",
)
def create_user(
    body: Annotated[UserCreate, Body(openapi_examples=USER_CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_USERS. The password is write-only and stored as an Argon2id hash; the login itself and
    the 30,000 most common passwords (ignoring case) are refused with 400 `validation_failed`, item code
    `weak_password` at `/password`. A user id is never handed out again, not even after its user was
    deleted. Only a supervisor may grant a role that carries Supervisor (`Supervisor` itself, or a role
    with it among its sub-roles, directly or through others); anybody else gets 403 `supervisor_only`."""
    user_id = users.create_user(ctx.db, ctx.actor, ctx.changes, body, ctx.services.passwords.hash)
    ctx.commit()
    return model_response(
        users.read_user(ctx.db, user_id),
        status_code=201,
        headers={"Location": f"/api/administration/users/{user_id}"},
    )


@router.get(
    "/users/{id}",
    operation_id="getUser",
    response_model=UserOut,
    responses=_errors(item=True),
    summary="One user",
)
def get_user(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(users.get_user(ctx.db, ctx.actor, id))


@router.put(
    "/users/{id}",
    operation_id="updateUser",
    response_model=UserOut,
    responses=_errors(write=True, item=True),
    dependencies=JSON_BODY,
    summary="Change a user",
)
def update_user(
    body: Annotated[UserUpdate, Body(openapi_examples=USER_UPDATE_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_USERS. Absent keys stay. A new password follows the rules of `createUser` (400
    `weak_password`; the new login counts if it changes too). A new password, a new login or disabling
    invalidates the user's sessions and cached credentials at once, in every process. The last enabled
    supervisor cannot be disabled or demoted (409 `last_supervisor`). Only a supervisor may change a user
    who is a supervisor (holds a role that carries Supervisor, enabled or not) or grant a role that
    carries Supervisor; anybody else gets 403 `supervisor_only` and nothing changes."""
    outcome = users.update_user(ctx.db, ctx.actor, ctx.changes, id, body, ctx.services.passwords.hash)
    ctx.commit()
    if outcome.credentials_changed:
        ctx.services.credentials.forget_user(id)
        ctx.services.auth.throttle.forget_user(id)
    return model_response(users.read_user(ctx.db, id))


@router.delete(
    "/users/{id}",
    operation_id="deleteUser",
    status_code=204,
    responses=_errors(write=True, item=True),
    summary="Delete a user",
)
def delete_user(id: int = Id, ctx: RequestContext = Depends(request_context)) -> Response:
    """Needs ADMIN_USERS. Nobody can delete themself (409 `self_deletion`), and the last enabled supervisor
    cannot be deleted (409 `last_supervisor`). Only a supervisor may delete a user who is a supervisor
    (403 `supervisor_only`)."""
    users.delete_user(ctx.db, ctx.actor, ctx.changes, id)
    ctx.commit()
    ctx.services.credentials.forget_user(id)
    ctx.services.auth.throttle.forget_user(id)
    return Response(status_code=204)


# --- roles ---------------------------------------------------------------------------------------------


@router.get(
    "/roles",
    operation_id="listRoles",
    response_model=list[RoleOut],
    responses=_errors(),
    summary="Every role",
)
def list_roles(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(roles.list_roles(ctx.db, ctx.actor, ctx.metamodel))


@router.post(
    "/roles",
    operation_id="createRole",
    status_code=201,
    response_model=RoleOut,
    responses=_errors(write=True),
    dependencies=JSON_BODY,
    summary="Create a role",
)
def create_role(
    body: Annotated[RoleCreate, Body(openapi_examples=ROLE_CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_ROLES. A role inherits every right of its sub-roles (transitively). Only a supervisor
    may name a role that carries Supervisor (`Supervisor` itself, or a role with it among its sub-roles)
    as a sub-role; anybody else gets 403 `supervisor_only`."""
    role_id = roles.create_role(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, body)
    ctx.commit()
    return model_response(
        roles.read_role(ctx.db, ctx.metamodel, role_id),
        status_code=201,
        headers={"Location": f"/api/administration/roles/{role_id}"},
    )


@router.get(
    "/roles/{id}",
    operation_id="getRole",
    response_model=RoleOut,
    responses=_errors(item=True),
    summary="One role",
)
def get_role(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(roles.get_role(ctx.db, ctx.actor, ctx.metamodel, id))


@router.put(
    "/roles/{id}",
    operation_id="updateRole",
    response_model=RoleOut,
    responses=_errors(write=True, item=True),
    dependencies=JSON_BODY,
    summary="Change a role",
)
def update_role(
    body: Annotated[RoleUpdate, Body(openapi_examples=ROLE_UPDATE_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_ROLES. Absent keys stay; a sent list or map replaces the whole value. The built-in
    `Supervisor` cannot be changed (409 `immutable_role`); sub-role cycles are refused (400). Only a
    supervisor may change a role that carries Supervisor or add such a role as a sub-role (403
    `supervisor_only`). Other rights may be granted to any role, one the caller holds included: give
    ADMIN_ROLES to trusted administrators only."""
    roles.update_role(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id, body)
    ctx.commit()
    return model_response(roles.read_role(ctx.db, ctx.metamodel, id))


@router.delete(
    "/roles/{id}",
    operation_id="deleteRole",
    status_code=204,
    responses=_errors(write=True, item=True),
    summary="Delete a role",
)
def delete_role(id: int = Id, ctx: RequestContext = Depends(request_context)) -> Response:
    """Needs ADMIN_ROLES. The built-in `Supervisor` cannot be deleted (409 `immutable_role`); only a
    supervisor may delete a role that carries Supervisor (403 `supervisor_only`)."""
    roles.delete_role(ctx.db, ctx.actor, ctx.changes, id)
    ctx.commit()
    return Response(status_code=204)


# --- attributes ----------------------------------------------------------------------------------------


def _fresh(ctx: RequestContext) -> Metamodel:
    return committed_metamodel(ctx.db, ctx.services.metamodels)


@router.get(
    "/attributes",
    operation_id="listAttributes",
    response_model=list[AttributeOut],
    responses=_errors(),
    summary="Every attribute",
)
def list_attributes(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """Needs ADMIN_ATTRIBUTES. User-defined attributes only (the built-ins of a type are listed by
    `/api/metamodel/types/{type}`)."""
    return model_response(attributes.list_attributes(ctx.actor, ctx.metamodel))


@router.post(
    "/attributes",
    operation_id="createAttribute",
    status_code=201,
    response_model=AttributeOut,
    responses=_errors(write=True),
    dependencies=JSON_BODY,
    summary="Create an attribute",
)
def create_attribute(
    body: Annotated[AttributeCreate, Body(openapi_examples=ATTRIBUTE_CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_ATTRIBUTES. The name is unique across the repository and may not clash with a built-in,
    reserved word or relation end of the types it is activated for. Activating it for a relation type
    makes that type's relations carry it as `"attributes"`."""
    attribute_id = attributes.create_attribute(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, body)
    ctx.commit()
    return model_response(
        attributes.read_attribute(_fresh(ctx), attribute_id),
        status_code=201,
        headers={"Location": f"/api/administration/attributes/{attribute_id}"},
    )


@router.get(
    "/attributes/{id}",
    operation_id="getAttribute",
    response_model=AttributeOut,
    responses=_errors(item=True),
    summary="One attribute",
)
def get_attribute(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(attributes.get_attribute(ctx.actor, ctx.metamodel, id))


@router.put(
    "/attributes/{id}",
    operation_id="updateAttribute",
    response_model=AttributeOut,
    responses=_errors(write=True, item=True),
    dependencies=JSON_BODY,
    summary="Change an attribute",
)
def update_attribute(
    body: Annotated[AttributeUpdate, Body(openapi_examples=ATTRIBUTE_UPDATE_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_ATTRIBUTES. Absent keys stay; a sent list replaces the whole list. Values the change
    takes away (literals left out, types or relation types deactivated) are deleted and recorded in
    history per element. Changing `valueType` while values exist, or `multiple: false` while an element
    holds several values, is refused (409 `in_use`)."""
    attributes.update_attribute(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id, body)
    ctx.commit()
    return model_response(attributes.read_attribute(_fresh(ctx), id))


@router.delete(
    "/attributes/{id}",
    operation_id="deleteAttribute",
    status_code=204,
    responses=_errors(write=True, item=True),
    summary="Delete an attribute",
)
def delete_attribute(id: int = Id, ctx: RequestContext = Depends(request_context)) -> Response:
    """Needs ADMIN_ATTRIBUTES. Deletes every value of the attribute; each element that had one gets a new
    revision and an "updated" changeset in history."""
    attributes.delete_attribute(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id)
    ctx.commit()
    return Response(status_code=204)


# --- attribute groups ----------------------------------------------------------------------------------


@router.get(
    "/attributegroups",
    operation_id="listAttributeGroups",
    response_model=list[AttributeGroupOut],
    responses=_errors(),
    summary="Every attribute group",
)
def list_groups(ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    """Needs ADMIN_ATTRIBUTES. Rule: if no role has read on a group, everyone may read it; otherwise only
    those roles. Write needs read; if no role has write, only an unrestricted group is writable."""
    return model_response(groups.list_groups(ctx.db, ctx.actor, ctx.metamodel))


@router.post(
    "/attributegroups",
    operation_id="createAttributeGroup",
    status_code=201,
    response_model=AttributeGroupOut,
    responses=_errors(write=True),
    dependencies=JSON_BODY,
    summary="Create an attribute group",
)
def create_group(
    body: Annotated[AttributeGroupCreate, Body(openapi_examples=GROUP_CREATE_EXAMPLES)],
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_ATTRIBUTES. Listed attributes move into the new group."""
    group_id = groups.create_group(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, body)
    ctx.commit()
    return model_response(
        groups.read_group(ctx.db, _fresh(ctx), group_id),
        status_code=201,
        headers={"Location": f"/api/administration/attributegroups/{group_id}"},
    )


@router.get(
    "/attributegroups/{id}",
    operation_id="getAttributeGroup",
    response_model=AttributeGroupOut,
    responses=_errors(item=True),
    summary="One attribute group",
)
def get_group(id: int = Id, ctx: RequestContext = Depends(request_context)) -> StarletteResponse:
    return model_response(groups.get_group(ctx.db, ctx.actor, ctx.metamodel, id))


@router.put(
    "/attributegroups/{id}",
    operation_id="updateAttributeGroup",
    response_model=AttributeGroupOut,
    responses=_errors(write=True, item=True),
    dependencies=JSON_BODY,
    summary="Change an attribute group",
)
def update_group(
    body: Annotated[AttributeGroupUpdate, Body(openapi_examples=GROUP_UPDATE_EXAMPLES)],
    id: int = Id,
    ctx: RequestContext = Depends(request_context),
) -> StarletteResponse:
    """Needs ADMIN_ATTRIBUTES. Absent keys stay. Attributes left out of a sent `attributes` list move to
    the default group; the default group cannot be renamed (409 `default_group`)."""
    groups.update_group(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id, body)
    ctx.commit()
    return model_response(groups.read_group(ctx.db, _fresh(ctx), id))


@router.delete(
    "/attributegroups/{id}",
    operation_id="deleteAttributeGroup",
    status_code=204,
    responses=_errors(write=True, item=True),
    summary="Delete an attribute group",
)
def delete_group(id: int = Id, ctx: RequestContext = Depends(request_context)) -> Response:
    """Needs ADMIN_ATTRIBUTES. Its attributes move to the default group, which itself always exists (409
    `default_group`)."""
    groups.delete_group(ctx.db, ctx.actor, ctx.metamodel, ctx.changes, id)
    ctx.commit()
    return Response(status_code=204)
