"""Liveness and readiness for operators and load balancers: `GET /health` and `GET /ready`, public and
cheap, holding no data (API.md section 11)."""

from __future__ import annotations

from anyio import to_thread
from fastapi import APIRouter, Request

from blockrepo.api.context import AppServices
from blockrepo.api.responses import JsonResponse

# Outside the versioned API descriptions: probes, not repository data.
router = APIRouter(include_in_schema=False)


@router.get("/health")
async def health() -> JsonResponse:
    """The process serves requests. Nothing else is asked (not the database): a restart would not help a
    slow database, so liveness must not fail with it."""
    return JsonResponse({"status": "ok"})


@router.get("/ready")
async def ready(request: Request) -> JsonResponse:
    """Whether this instance should get traffic: the database answers, its schema is at the newest
    migration, and Redis answers where it is configured. 503 otherwise; each check says only ok or
    failed (the reason goes to the log, not to an anonymous caller)."""
    services: AppServices = request.app.state.services
    checks = await to_thread.run_sync(_checks, services)
    healthy = all(checks.values())
    body = {
        "status": "ok" if healthy else "unavailable",
        "checks": {name: "ok" if passed else "failed" for name, passed in checks.items()},
    }
    return JsonResponse(body, status_code=200 if healthy else 503)


def _checks(services: AppServices) -> dict[str, bool]:
    checks = services.databases.readiness()
    redis = services.auth.redis_answers()
    if redis is not None:
        checks["redis"] = redis
    return checks
