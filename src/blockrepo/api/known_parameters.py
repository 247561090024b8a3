"""Unknown query parameters are refused (API.md section 9): 400 `unknown_query_parameter` naming each one,
so that a typo (`?query=` for `?filter=`, `?asof=` for `?asOf=`) is never answered as if it were absent.

The names an operation knows are the query parameters its route declares, its dependencies' included (a
hidden one too, such as the export's `asOf`, which the route refuses with a problem of its own), plus
`CROSS_CUTTING`. The check is one dependency that every versioned router carries (`refuse_unknown`); it
reads the matched route from the scope, so no route repeats it and none can forget it. It runs after
authentication and before every other dependency: nothing is read, locked or opened for such a request.
The description pages, `/health`, `/ready` and the web interface's static files are no operations of the
API and take any query (a cache buster, say). The lanes answer only requests without a query string
(`api/lanes/`), so every request with one reaches this check.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel

from blockrepo.errors import BadRequest, ErrorItem

CODE = "unknown_query_parameter"
# Query parameters every operation accepts besides its own: none in this API. `scenario` (API.md
# section 11) is declared by the operations that read or write in a planning scenario; the others refuse
# it, as a parameter or as the `Blockrepo-Scenario` header, so that a write meant for a scenario never
# lands on main.
CROSS_CUTTING: frozenset[str] = frozenset()
SCENARIO_CODE = "scenario_not_supported"
# A problem names at most this many parameters, each cut to this many characters: the answer stays small
# whatever the URL holds.
MOST_NAMED = 20
LONGEST_NAME = 100

# By the route's id (a route compares by its path and endpoint, so it is no dict key), with the route kept
# alive, so that its id is never another's.
_known: dict[int, tuple[APIRoute, frozenset[str]]] = {}


def declared_query_names(dependant: Dependant) -> frozenset[str]:
    """The names of the query parameters `dependant` and its dependencies read (a model of query parameters
    contributes its fields' names)."""
    names: set[str] = set()
    pending = [dependant]
    while pending:
        current = pending.pop()
        for field in current.query_params:
            model = field.field_info.annotation
            if isinstance(model, type) and issubclass(model, BaseModel):
                names.update(info.alias or name for name, info in model.model_fields.items())
            else:
                names.add(field.alias)
        pending.extend(current.dependencies)
    return frozenset(names)


def known_names(route: APIRoute) -> frozenset[str]:
    """What `route` accepts in its query string; worked out once per route."""
    cached = _known.get(id(route))
    if cached is None:
        cached = _known[id(route)] = (route, declared_query_names(route.dependant) | CROSS_CUTTING)
    return cached[1]


def unknown_query_parameters(unknown: list[str], known: Iterable[str]) -> BadRequest:
    """400 `unknown_query_parameter` with an error item at `query:<name>` for each unknown name."""
    named = [
        name if len(name) <= LONGEST_NAME else name[:LONGEST_NAME] + "…" for name in unknown[:MOST_NAMED]
    ]
    accepted = ", ".join(sorted(known)) or "no query parameters"
    more = f" (and {len(unknown) - MOST_NAMED} more)" if len(unknown) > MOST_NAMED else ""
    return BadRequest(
        f"unknown query parameter {', '.join(map(repr, named))}{more}; this operation takes {accepted}",
        code=CODE,
        errors=[
            ErrorItem(f"query:{name}", CODE, f"this operation has no query parameter {name!r}")
            for name in named
        ],
    )


async def refuse_unknown(request: Request) -> None:
    """The dependency of every versioned router: 400 for a query string that names a parameter the matched
    operation does not know, or a scenario header for an operation that works on main only."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    if request.headers.get("blockrepo-scenario") and "scenario" not in known_names(route):
        raise BadRequest(
            "this operation works on main only: leave out the Blockrepo-Scenario header",
            code=SCENARIO_CODE,
            errors=[ErrorItem("header:Blockrepo-Scenario", SCENARIO_CODE, "not taken by this operation")],
        )
    if not request.scope["query_string"]:
        return
    known = known_names(route)
    # The names as the routes read them (Starlette's parse, each name once, in the order of the URL).
    unknown = [name for name in request.query_params if name not in known]
    if unknown:
        raise unknown_query_parameters(unknown, known)
