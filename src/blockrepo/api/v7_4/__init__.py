"""Version 7.4 of the REST API: every route module of this version, in one router."""

from __future__ import annotations

from fastapi import APIRouter

from blockrepo.api.v7_4 import (
    administration,
    auth,
    backup,
    elements,
    history,
    massdata,
    metamodel,
    tokens,
    webhooks,
)

VERSION = "7.4"
PATH_SEGMENT = "7_4"


def build_router() -> APIRouter:
    router = APIRouter()
    for module in (auth, elements, massdata, metamodel, history, administration, tokens, webhooks, backup):
        router.include_router(module.router)
    return router
