"""Entity tags of elements (the revision, plus a digest of the reader's view for a reader who does not see
every key): If-Match compares the revision, If-None-Match the whole tag."""

from __future__ import annotations

from collections.abc import Callable


def element_etag(revision: int, view_tag: str = "") -> str:
    """The ETag of an element at `revision` as a reader with `view_tag` (`ElementView.tag`) sees it.

    The body depends on the revision and on what the reader may see; two readers who see different keys
    must never share a tag, or a cache (the browser's, shared by whoever logs in next) revalidates one
    reader's copy with the other's tag and shows it."""
    return f'W/"{revision}{view_tag}"'


def _opaque(tag: str) -> str:
    """The tag without its weakness prefix and quotes (a bare `3` is accepted as well)."""
    tag = tag.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    return tag.strip('"')


def if_match_check(header: str | None) -> Callable[[int], bool] | None:
    """A test of the current revision for an If-Match header (None: no precondition).

    Accepts `*`, `W/"3"`, `"3"`, a bare `3` and any of them with a view digest (`W/"3.ab12…"`: a reader who
    sees fewer keys holds the same revision), also as a comma-separated list; a tag that is not a revision
    matches nothing (so the request fails with 412, as RFC 9110 asks)."""
    if header is None or not header.strip():
        return None
    revisions: set[int] = set()
    for raw in header.split(","):
        if raw.strip() == "*":
            return lambda _revision: True
        revision = _opaque(raw).partition(".")[0]
        if revision.isascii() and revision.isdigit() and len(revision) < 19:
            revisions.add(int(revision))
    return lambda revision: revision in revisions


def none_match(header: str, etag: str) -> bool:
    """Whether an If-None-Match header names `etag` (weak comparison: the whole tag, digest included), so
    that a 304 is given only for the body this reader would get."""
    if header == etag:  # what a browser sends back
        return True
    current = _opaque(etag)
    return any(raw.strip() == "*" or _opaque(raw) == current for raw in header.split(","))


def not_modified(if_none_match: str | None, etag: str) -> bool:
    """Whether a GET with this If-None-Match header (None: not sent) is answered 304 for `etag`."""
    return if_none_match is not None and none_match(if_none_match, etag)
