"""What an element write answers, for the routes and the write lane alike: the update, its ETag and body."""

from __future__ import annotations

from typing import Any

from blockrepo.api.context import RequestContext
from blockrepo.api.etag import element_etag, if_match_check
from blockrepo.api.responses import JsonResponse
from blockrepo.elements import service
from blockrepo.elements.read import by_id as reading


def element_writer(ctx: RequestContext) -> service.Writer:
    return service.Writer(ctx.db, ctx.metamodel, ctx.actor, ctx.changes)


def view_tag_of(ctx: RequestContext, element: dict[str, Any]) -> str:
    """The part of the element's ETag that names what the acting user sees of its type."""
    type_def = ctx.metamodel.type_named(element["type"][0])
    return "" if type_def is None else reading.view_tag(ctx.metamodel, ctx.actor, type_def)


def in_scenario(view_tag: str, key: str) -> str:
    """The view tag of an element read in a planning scenario: its own for every scenario, so that a copy
    of the element as main (or another scenario) has it is never revalidated by the scenario's tag; the
    revision still leads the tag, so If-Match reads it alike."""
    return f"{view_tag}.s-{key}"


def update_element(
    ctx: RequestContext, type_name: str, element_id: int, body: dict[str, Any], if_match: str | None
) -> tuple[dict[str, Any], str]:
    """PUT and PATCH by id: the element after the update, committed, and its view tag."""
    element = service.update_element(
        element_writer(ctx), type_name, element_id, body, if_match=if_match_check(if_match)
    )
    ctx.commit()
    return element, view_tag_of(ctx, element)


def element_response(
    element: dict[str, Any], view_tag: str, status: int = 200, headers: dict[str, str] | None = None
) -> JsonResponse:
    etag = element_etag(element["revision"][0], view_tag)
    return JsonResponse(element, status_code=status, headers={"ETag": etag, **(headers or {})})
