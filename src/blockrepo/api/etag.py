"""Entity tags of elements: `W/"<revision>"`, and the If-Match precondition against a revision."""

from __future__ import annotations

from collections.abc import Callable


def element_etag(revision: int) -> str:
    return f'W/"{revision}"'


def if_match_check(header: str | None) -> Callable[[int], bool] | None:
    """A test of the current revision for an If-Match header (None: no precondition).

    Accepts `*`, `W/"3"`, `"3"` and a bare `3`, also as a comma-separated list; a tag that is not a
    revision matches nothing (so the request fails with 412, as RFC 9110 asks)."""
    if header is None or not header.strip():
        return None
    revisions: set[int] = set()
    for raw in header.split(","):
        tag = raw.strip()
        if tag == "*":
            return lambda _revision: True
        if tag.startswith("W/"):
            tag = tag[2:]
        tag = tag.strip('"')
        if tag.isascii() and tag.isdigit() and len(tag) < 19:
            revisions.add(int(tag))
    return lambda revision: revision in revisions
