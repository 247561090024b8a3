"""OpenAPI fragments for problem+json error responses, shared by the route modules."""

from __future__ import annotations

from typing import Any

from blockrepo.problem import PROBLEM_MEDIA_TYPE

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "title": "Problem",
    "description": "RFC 9457 problem details with a stable `code` and the problems of a request body.",
    "required": ["type", "title", "status", "detail", "code", "requestId", "errors"],
    "properties": {
        "type": {"type": "string", "example": "about:blank"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string", "description": "stable snake_case error code"},
        "requestId": {"type": ["string", "null"]},
        "errors": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["pointer", "code", "message"],
                "properties": {
                    "pointer": {"type": "string", "description": "JSON pointer into the body, e.g. /Costs/0"},
                    "code": {"type": "string"},
                    "message": {"type": "string"},
                    "cell": {
                        "type": "object",
                        "description": "in an uploaded xlsx workbook: where the problem is, the row as Excel "
                        "numbers it",
                        "properties": {
                            "sheet": {"type": "string"},
                            "row": {"type": "integer"},
                            "column": {"type": "string", "example": "F"},
                            "header": {"type": "string"},
                            "value": {"description": "the value the problem is about, as the file holds it"},
                        },
                    },
                },
            },
        },
    },
    "additionalProperties": True,
}

_DESCRIPTIONS = {
    400: "Bad request: malformed JSON (`malformed_json`), an invalid body (`validation_failed`, every "
    "problem listed in `errors[]` with a JSON pointer) or a query parameter the operation does not have "
    "(`unknown_query_parameter`, each named in `errors[]` at `query:<name>`)",
    401: "Not authenticated (`unauthenticated`)",
    403: "The caller lacks the permission (`forbidden`)",
    404: "Unknown type (`unknown_type`) or element (`not_found`)",
    405: "Method not allowed on this path",
    409: "Conflict (`name_conflict`, `has_children`)",
    412: "If-Match does not match the current revision (`precondition_failed`); nothing changed",
    413: "The body exceeds the size limit, {setting:max_body_bytes} (`payload_too_large`)",
    415: "The body is not `application/json` (`unsupported_media_type`)",
}


def problem_responses(
    *statuses: int, examples: dict[int, dict[str, Any]] | None = None
) -> dict[int | str, Any]:
    """`responses=` entries for the given error statuses, each a problem+json body."""
    responses: dict[int | str, Any] = {}
    for status in statuses:
        content: dict[str, Any] = {"schema": PROBLEM_SCHEMA}
        if examples and status in examples:
            content["example"] = examples[status]
        responses[status] = {
            "description": _DESCRIPTIONS.get(status, "Error"),
            "content": {PROBLEM_MEDIA_TYPE: content},
        }
    return responses
