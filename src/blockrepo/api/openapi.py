"""Builds the published OpenAPI 3.1 description of one API version from its routes, completed with what
every operation shares: the security schemes, the API-Version and X-Request-ID headers, and problem+json
errors.

Route modules describe their own operations (summaries, bodies, examples, their specific error statuses
through `api.problem_docs.problem_responses`); this module adds the cross-cutting parts in one pass, so no
route has to repeat them and none can forget them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import orjson
from fastapi.openapi.utils import get_openapi
from starlette.routing import BaseRoute

from blockrepo import SUPPORTED_API_VERSIONS, __version__
from blockrepo.api.limits import publish_limits
from blockrepo.api.middleware import REQUEST_ID_PATTERN
from blockrepo.api.problem_docs import PROBLEM_SCHEMA
from blockrepo.api.versions import ApiVersion
from blockrepo.auth.middleware import is_public
from blockrepo.problem import PROBLEM_MEDIA_TYPE, WWW_AUTHENTICATE
from blockrepo.settings import Settings

OPERATION_METHODS = ("get", "put", "post", "patch", "delete", "head", "options")
PROBLEM_REF = "#/components/schemas/Problem"
# FastAPI documents request validation as 422 with its own schema; blockrepo answers 400 problem+json.
_FASTAPI_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")

SECURITY_SCHEMES: dict[str, Any] = {
    "basicAuth": {
        "type": "http",
        "scheme": "basic",
        "description": "RFC 7617 Basic credentials (UTF-8), accepted on every endpoint. Verified credentials "
        "are cached briefly, so repeating them costs no password hash.",
    },
    "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "brp_ + 50 characters of [0-9A-Za-z]",
        "description": "An API token (`POST /api/tokens`), accepted on every endpoint: no cookie is set and "
        "no `X-XSRF-TOKEN` is needed. It acts as its owner, narrowed by its restriction.",
    },
    "sessionCookie": {
        "type": "apiKey",
        "in": "cookie",
        "name": "JSESSIONID",
        "description": "The session started by a login or by a request with credentials. PATCH, POST, PUT "
        "and DELETE authenticated by this cookie alone must also send `X-XSRF-TOKEN` (the value of the "
        "`XSRF-TOKEN` cookie).",
    },
}

RESPONSE_HEADERS: dict[str, Any] = {
    "X-Request-ID": {
        "description": "Identifies the request in the service's log and history; a valid one sent by the "
        "client is echoed.",
        "schema": {"type": "string"},
    },
    "API-Version": {
        "description": "The API version that answered.",
        "schema": {"type": "string", "examples": [SUPPORTED_API_VERSIONS[-1]]},
    },
}

REQUEST_PARAMETERS: dict[str, Any] = {
    "API-Version": {
        "name": "API-Version",
        "in": "header",
        "required": False,
        "description": "The API version the client expects; an unsupported one gets 400 "
        "`unsupported_api_version`.",
        "schema": {"type": "string", "enum": list(SUPPORTED_API_VERSIONS)},
    },
    "X-Request-ID": {
        "name": "X-Request-ID",
        "in": "header",
        "required": False,
        "description": "The client's id for this request, echoed in the response, the log and the history "
        f"when it matches `{REQUEST_ID_PATTERN.pattern}`; any other value is replaced by an id of the "
        "service's own, so the header never makes a request fail.",
        "schema": {"type": "string"},
    },
}


def _problem(description: str, **extra_headers: Any) -> dict[str, Any]:
    return {
        "description": description,
        "headers": dict(extra_headers),
        "content": {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": PROBLEM_REF}}},
    }


def _bad_request() -> dict[str, Any]:
    return _problem(
        "Bad request: for example an unsupported `API-Version` (`unsupported_api_version`), an invalid "
        "parameter (`validation_failed`, every problem listed in `errors[]`) or a query parameter the "
        "operation does not have (`unknown_query_parameter`, each named in `errors[]` at `query:<name>`)"
    )


CHALLENGE_HEADER: dict[str, Any] = {
    "description": "The Basic challenge",
    "schema": {"type": "string", "examples": [WWW_AUTHENTICATE]},
}


def _unauthenticated() -> dict[str, Any]:
    return _problem("Neither valid credentials nor a valid session (`unauthenticated`)")


def _any_other_error() -> dict[str, Any]:
    return _problem(
        "Any other error, always problem+json: 413 `payload_too_large`, 415 `unsupported_media_type`, 429 "
        "`too_many_requests` (with `Retry-After`), 500 `internal_error` (a fault of the service), 503 "
        "`password_hashing_busy` (with `Retry-After`: credentials to verify while every hash permit is taken)"
    )


def _complete_operation(path: str, operation: dict[str, Any]) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    for status in [s for s, r in responses.items() if s == "422" and _is_fastapi_validation(r)]:
        del responses[status]
    responses.setdefault("400", _bad_request())
    if is_public(path):
        operation["security"] = []
    else:
        responses.setdefault("401", _unauthenticated())
    responses.setdefault("default", _any_other_error())
    for status, response in responses.items():
        if "$ref" in response:
            continue
        headers = response.setdefault("headers", {})
        if status == "401":
            headers.setdefault("WWW-Authenticate", copy.deepcopy(CHALLENGE_HEADER))
        for name in RESPONSE_HEADERS:
            headers.setdefault(name, {"$ref": f"#/components/headers/{name}"})
        problem = response.get("content", {}).get(PROBLEM_MEDIA_TYPE)
        if problem is not None:
            problem["schema"] = {"$ref": PROBLEM_REF}

    parameters: list[dict[str, Any]] = operation.setdefault("parameters", [])
    present = {(p.get("in"), str(p.get("name", "")).lower()) for p in parameters if "$ref" not in p}
    for name in REQUEST_PARAMETERS:
        if ("header", name.lower()) not in present:
            parameters.append({"$ref": f"#/components/parameters/{name}"})
    for parameter in parameters:
        _optional_parameter_schema(parameter)


def _optional_parameter_schema(parameter: dict[str, Any]) -> None:
    # An optional parameter is left out, never sent as null: FastAPI's `X | None` becomes plain `X`.
    schema = parameter.get("schema", {})
    branches = schema.get("anyOf")
    if parameter.get("required") or not isinstance(branches, list):
        return
    kept = [branch for branch in branches if branch != {"type": "null"}]
    if len(kept) == 1 and len(kept) < len(branches):
        del schema["anyOf"]
        parameter["schema"] = {**kept[0], **schema}


def _is_fastapi_validation(response: dict[str, Any]) -> bool:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return str(schema.get("$ref", "")).endswith("/HTTPValidationError")


def _tags(document: dict[str, Any], version: ApiVersion) -> list[dict[str, str]]:
    used: list[str] = []
    for item in document.get("paths", {}).values():
        for method in OPERATION_METHODS:
            for tag in item.get(method, {}).get("tags", []):
                if tag not in used:
                    used.append(tag)
    order = {name: index for index, name in enumerate(version.tag_descriptions)}
    used.sort(key=lambda tag: (order.get(tag.lower(), len(order)), tag))
    return [
        {"name": tag, "description": version.tag_descriptions[tag.lower()]}
        if tag.lower() in version.tag_descriptions
        else {"name": tag}
        for tag in used
    ]


def build_openapi(version: ApiVersion, routes: Sequence[BaseRoute], settings: Settings) -> dict[str, Any]:
    """The complete description of `version`, built from that version's routes, with the limits of
    `settings`."""
    document = get_openapi(
        title=version.title,
        version=version.number,
        summary=f"blockrepo {__version__}: enterprise-architecture repository, "
        f"LUY/iteraplan compatible REST API {version.number}",
        description=version.description,
        routes=list(routes),
        license_info={"name": "Apache-2.0", "identifier": "Apache-2.0"},
    )
    for path, item in document.get("paths", {}).items():
        for method in OPERATION_METHODS:
            if method in item:
                _complete_operation(path, item[method])
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Problem"] = copy.deepcopy(PROBLEM_SCHEMA)
    components["securitySchemes"] = copy.deepcopy(SECURITY_SCHEMES)
    components["headers"] = copy.deepcopy(RESPONSE_HEADERS)
    components["parameters"] = copy.deepcopy(REQUEST_PARAMETERS)
    for name in _FASTAPI_VALIDATION_SCHEMAS:  # the first refers to the second: drop in this order
        if f'"#/components/schemas/{name}"'.encode() not in orjson.dumps(document):
            schemas.pop(name, None)
    document["security"] = [{"basicAuth": []}, {"bearerAuth": []}, {"sessionCookie": []}]
    document["tags"] = _tags(document, version)
    published: dict[str, Any] = publish_limits(document, settings)
    return published
