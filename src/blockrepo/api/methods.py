"""Method dispatch for every path: `OPTIONS` answers 204 and a method the path does not serve 405, both with
an `Allow` header listing the path's methods."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from fastapi.routing import iter_route_contexts
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from blockrepo.problem import problem_response

# The order methods are listed in `Allow`.
METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
STATIC_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True)
class PathMethods:
    """The methods served at one path template."""

    pattern: re.Pattern[str]
    # Literal segments: where templates overlap (`/api/massdata/export` and `/api/massdata/{type}`), the path
    # belongs to the most literal one, so its methods alone are allowed there.
    literal_segments: int
    methods: frozenset[str]


def _literal_segments(path: str) -> int:
    return sum(1 for segment in path.split("/") if segment and "{" not in segment)


def path_methods(routes: Iterable[BaseRoute]) -> list[PathMethods]:
    """Every path template of `routes` with the methods served there (a template served by several
    routes, one per method, appears once)."""
    by_template: dict[str, tuple[re.Pattern[str], str, set[str]]] = {}
    for context in iter_route_contexts(list(routes)):
        route = context.route
        pattern: re.Pattern[str] | None = getattr(route, "path_regex", None)
        path = context.path
        if pattern is None or path is None:
            continue
        if isinstance(route, Mount):
            if not isinstance(route.app, StaticFiles):
                continue  # a mounted application answers its own methods
            methods: Iterable[str] = STATIC_METHODS
        else:
            methods = context.methods or ()
        by_template.setdefault(pattern.pattern, (pattern, path, set()))[2].update(methods)
    return [
        PathMethods(pattern, _literal_segments(path), frozenset(methods))
        for pattern, path, methods in by_template.values()
    ]


def allowed_methods(table: Iterable[PathMethods], path: str) -> list[str] | None:
    """The methods allowed at `path` (OPTIONS included), or None when no route serves the path."""
    matches = [entry for entry in table if entry.pattern.match(path)]
    if not matches:
        return None
    most_literal = max(entry.literal_segments for entry in matches)
    methods = {"OPTIONS"}.union(
        *(entry.methods for entry in matches if entry.literal_segments == most_literal)
    )
    return sorted(methods, key=lambda method: (*METHOD_ORDER, method).index(method))


class MethodsMiddleware:
    """Answers `OPTIONS` (204) and methods a path does not serve (405 problem) before routing, each with
    `Allow`. Routing alone would tell only the methods of the first route it tried, and a literal path such
    as `/api/massdata/query` would fall through to the `{type}` template for other methods."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._table: list[PathMethods] | None = None

    def _methods_at(self, scope: Scope) -> list[str] | None:
        if self._table is None:
            # Built on the first request: by then every route of the application is registered.
            self._table = path_methods(scope["app"].router.routes)
        return allowed_methods(self._table, scope["path"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        allowed = self._methods_at(scope)
        method = scope["method"]
        if allowed is None or (method in allowed and method != "OPTIONS"):
            await self.app(scope, receive, send)
            return
        allow = ", ".join(allowed)
        if method == "OPTIONS":
            response = Response(status_code=204, headers={"Allow": allow})
        else:
            response = problem_response(
                status=405,
                title="Method Not Allowed",
                detail=f"{method} is not allowed on {scope['path']}; allowed: {allow}",
                code="method_not_allowed",
                request_id=scope.get("state", {}).get("request_id"),
                headers={"Allow": allow},
            )
        await response(scope, receive, send)
