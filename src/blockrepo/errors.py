"""The project's error types; each carries its HTTP status and stable code, and one handler renders them.

Hierarchy:

    BlockrepoError                 500 internal_error
    ├── BadRequest                 400 bad_request
    │   ├── ValidationFailed       400 validation_failed   (errors[] with JSON pointers)
    │   ├── QuerySyntaxError       400 query_syntax
    │   └── UnsupportedApiVersion  400 unsupported_api_version
    ├── Unauthenticated            401 unauthenticated
    ├── Forbidden                  403 forbidden
    │   ├── CsrfTokenMissing       403 csrf_token_missing
    │   └── CsrfTokenInvalid       403 csrf_token_invalid
    ├── NotFound                   404 not_found
    │   └── UnknownType            404 unknown_type
    ├── Conflict                   409 conflict
    │   ├── NameConflict           409 name_conflict
    │   ├── HasChildren            409 has_children
    │   └── ConcurrentWrite        409 concurrent_write    (with Retry-After: send the request again)
    ├── PreconditionFailed         412 precondition_failed
    ├── PayloadTooLarge            413 payload_too_large
    ├── UnsupportedMediaType       415 unsupported_media_type
    ├── TooManyRequests            429 too_many_requests
    └── ServiceUnavailable         503 service_unavailable
        └── PasswordHashingBusy    503 password_hashing_busy (with Retry-After: every hash permit taken)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class ErrorItem:
    """One problem in a request, located by a JSON pointer into the body (or a parameter name) and, in an
    uploaded workbook, by its cell (`{"sheet", "row", "column", "header", "value"}`, the row as Excel numbers
    it, the value the problem is about)."""

    pointer: str
    code: str
    message: str
    cell: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        item: dict[str, Any] = {"pointer": self.pointer, "code": self.code, "message": self.message}
        if self.cell is not None:
            item["cell"] = self.cell
        return item


class BlockrepoError(Exception):
    """Base of every error the project raises on purpose."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    title: ClassVar[str] = "Internal Server Error"

    def __init__(
        self,
        detail: str | None = None,
        *,
        errors: list[ErrorItem] | None = None,
        headers: dict[str, str] | None = None,
        code: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail or self.title)
        self.detail = detail or self.title
        self.errors = errors or []
        self.headers = headers or {}
        self.instance_code = code or self.code
        self.extra = extra or {}


class BadRequest(BlockrepoError):
    status = 400
    code = "bad_request"
    title = "Bad Request"


def invalid_cursor(pointer: str) -> BadRequest:
    """400 `invalid_cursor` at `pointer` (`query:cursor`, or `/cursor` in a body): a cursor the service did
    not hand out for this listing, whatever is wrong with it."""
    message = "the cursor is not one this service handed out for this listing"
    return BadRequest(
        message,
        code="invalid_cursor",
        errors=[ErrorItem(pointer, "invalid_cursor", "pass the nextCursor of the previous page unchanged")],
    )


class ValidationFailed(BadRequest):
    code = "validation_failed"
    title = "Validation Failed"


class QuerySyntaxError(BadRequest):
    code = "query_syntax"
    title = "Query Syntax Error"


class UnsupportedApiVersion(BadRequest):
    code = "unsupported_api_version"
    title = "Unsupported API Version"


class Unauthenticated(BlockrepoError):
    status = 401
    code = "unauthenticated"
    title = "Unauthorized"


class Forbidden(BlockrepoError):
    status = 403
    code = "forbidden"
    title = "Forbidden"


class CsrfTokenMissing(Forbidden):
    code = "csrf_token_missing"


class CsrfTokenInvalid(Forbidden):
    code = "csrf_token_invalid"


class NotFound(BlockrepoError):
    status = 404
    code = "not_found"
    title = "Not Found"


class UnknownType(NotFound):
    code = "unknown_type"


class MethodNotAllowed(BlockrepoError):
    status = 405
    code = "method_not_allowed"
    title = "Method Not Allowed"


class Conflict(BlockrepoError):
    status = 409
    code = "conflict"
    title = "Conflict"


class NameConflict(Conflict):
    code = "name_conflict"


class HasChildren(Conflict):
    code = "has_children"


class ConcurrentWrite(Conflict):
    """A concurrent transaction was in the way (a deadlock, a lock wait that timed out); nothing was
    written and the same request may succeed when sent again."""

    code = "concurrent_write"


class PreconditionFailed(BlockrepoError):
    status = 412
    code = "precondition_failed"
    title = "Precondition Failed"


class PayloadTooLarge(BlockrepoError):
    status = 413
    code = "payload_too_large"
    title = "Payload Too Large"


class UnsupportedMediaType(BlockrepoError):
    status = 415
    code = "unsupported_media_type"
    title = "Unsupported Media Type"


class TooManyRequests(BlockrepoError):
    status = 429
    code = "too_many_requests"
    title = "Too Many Requests"


class ServiceUnavailable(BlockrepoError):
    status = 503
    code = "service_unavailable"
    title = "Service Unavailable"


class PasswordHashingBusy(ServiceUnavailable):
    code = "password_hashing_busy"
