"""Property-based contract tests generated from the published OpenAPI description (schemathesis).

For every operation, hypothesis generates valid and invalid requests; the service must never answer 5xx and
every response must match the schema and content type the description promises. Each operation runs
against its own freshly seeded repository."""

from __future__ import annotations

import base64
import os

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
)
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.settings import Settings
from tests.conftest import ADMIN_PASSWORD

EXAMPLES = int(os.environ.get("BLOCKREPO_CONTRACT_EXAMPLES", "25"))
AUTHORIZATION = "Basic " + base64.b64encode(f"system:{ADMIN_PASSWORD}".encode()).decode()
OPENAPI_PATH = "/api/7_4/openapi.json"
HTTP_METHODS = ("get", "put", "post", "patch", "delete", "head")


def _operations() -> list[tuple[str, str]]:
    # Building the description connects to nothing, so collection needs no database.
    document = create_app(Settings(database_url="sqlite:///:memory:")).openapi()
    return [
        (method, path)
        for path, item in sorted(document["paths"].items())
        for method in HTTP_METHODS
        if method in item
    ]


def check_operation(app: FastAPI, method: str, path: str, openapi_path: str = OPENAPI_PATH) -> None:
    operation = schemathesis.openapi.from_asgi(openapi_path, app)[path][method.upper()]

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    def honours_contract(case: schemathesis.Case) -> None:
        case.call_and_validate(
            headers={"Authorization": AUTHORIZATION},
            checks=[not_a_server_error, response_schema_conformance, content_type_conformance],
        )

    honours_contract()


@pytest.mark.parametrize(("method", "path"), _operations())
def test_operation_honours_its_contract(app: FastAPI, method: str, path: str) -> None:
    check_operation(app, method, path)


def test_contract_check_catches_a_server_error() -> None:
    """The harness itself must be able to fail."""
    broken = FastAPI()

    @broken.get("/items/{item_id}")
    def read_item(item_id: int) -> dict[str, int]:
        if item_id > 10:
            raise RuntimeError("boom")
        return {"id": item_id}

    with pytest.raises(Exception, match="boom"):
        check_operation(broken, "get", "/items/{item_id}", "/openapi.json")


def test_published_description_is_openapi_3_1_of_version_7_4(anon: TestClient) -> None:
    document = anon.get(OPENAPI_PATH).json()
    assert document["openapi"].startswith("3.1")
    assert document["info"]["version"] == "7.4"
