"""Version 7.4 of the REST API: every route module of this version, in one router."""

from __future__ import annotations

from fastapi import APIRouter

from blockrepo.api.v7_4 import (
    administration,
    auth,
    backup,
    elements,
    exchange,
    history,
    massdata,
    metamodel,
    reports,
    scenarios,
    tokens,
    webhooks,
)

VERSION = "7.4"
PATH_SEGMENT = "7_4"


def build_router() -> APIRouter:
    router = APIRouter()
    modules = (
        auth,
        elements,
        massdata,
        metamodel,
        history,
        scenarios,
        reports,
        administration,
        tokens,
        webhooks,
        backup,
        exchange,
    )
    for module in modules:
        router.include_router(module.router)
    router.include_router(scenarios.rules_router)
    router.include_router(scenarios.projection_router)
    return router
