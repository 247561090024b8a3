"""What operators and their tools ask: liveness and readiness (`GET /health`, `GET /ready`, public and
cheap, holding no data; API.md section 11) and Prometheus metrics (`GET /metrics`, as `metrics` allows)."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterator

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import Response
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from blockrepo import metrics
from blockrepo.api.context import AppServices
from blockrepo.api.responses import JsonResponse
from blockrepo.errors import Forbidden, NotFound
from blockrepo.webhooks import service as webhooks

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


@router.get("/metrics")
async def metrics_text(request: Request) -> Response:
    """The Prometheus text format: requests by route template and status, latencies, fast lanes, writes
    waiting, pool connections, logins, sessions and the webhook backlog, over all worker processes."""
    services: AppServices = request.app.state.services
    _check_scraper(request, services)
    body = await to_thread.run_sync(metrics.exposition, WebhookBacklog(services))
    return Response(body, media_type=metrics.CONTENT_TYPE)


def _check_scraper(request: Request, services: AppServices) -> None:
    settings = services.settings
    if settings.metrics == "off":
        raise NotFound("metrics are off on this server (BLOCKREPO_METRICS)")
    token = settings.metrics_token
    authorization = request.headers.get("authorization", "")
    if token is not None and authorization[:7].lower() == "bearer ":
        if hmac.compare_digest(authorization[7:].strip().encode(), token.get_secret_value().encode()):
            return
        raise Forbidden("wrong metrics token")
    if settings.metrics == "public" or _loopback(request):
        return
    raise Forbidden(
        "metrics are served to clients on a loopback address or holding the metrics token "
        "(BLOCKREPO_METRICS, BLOCKREPO_METRICS_TOKEN)"
    )


def _loopback(request: Request) -> bool:
    if request.client is None:
        return False
    try:
        return ipaddress.ip_address(request.client.host).is_loopback
    except ValueError:  # a test client's made-up name
        return False


class WebhookBacklog(Collector):
    """Read from the database when scraped, so any instance's answer is the whole repository's."""

    def __init__(self, services: AppServices) -> None:
        self.services = services

    def collect(self) -> Iterator[Metric]:
        with self.services.databases.session(writing=False) as db:
            backlog = webhooks.backlog(db)
        figures = (
            ("blockrepo_webhooks_active", "Webhooks active and not disabled", backlog.active),
            ("blockrepo_webhooks_behind", "Active webhooks with changes still to deliver", backlog.behind),
            ("blockrepo_webhooks_failing", "Active webhooks whose last delivery failed", backlog.failing),
            (
                "blockrepo_webhook_backlog_revisions",
                "Revisions between the newest and the furthest-behind webhook's cursor",
                backlog.revisions_behind,
            ),
        )
        for name, documentation, value in figures:
            yield GaugeMetricFamily(name, documentation, value=value)
