"""`/api/element/{type}/{id}` as the lanes in front of routing (GET, and PUT/PATCH) recognise it."""

from __future__ import annotations

import re

from blockrepo.elements.write.drafts import LARGEST_ID

# A type name and an id of at most 10 digits without a leading zero. A NUL in the name is left to the
# routes, which refuse it; the lanes would pass it to the database.
_ELEMENT_PATH = re.compile(r"/api/element/([^/\x00]+)/([1-9][0-9]{0,9})")


def element_in_path(path: str) -> tuple[str, int] | None:
    """The type name and id a lane answers for, or None where the routed operations must answer (another
    path, an id beyond the path parameter's range)."""
    match = _ELEMENT_PATH.fullmatch(path)
    if match is None:
        return None
    element_id = int(match[2])
    return None if element_id > LARGEST_ID else (match[1], element_id)
