"""The published description (/api/7_4/openapi.json) and the interactive page at /api/7_4/ with its
local assets."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI
from starlette.testclient import TestClient

from blockrepo import API_VERSION, SUPPORTED_API_VERSIONS
from blockrepo.api.docs import publish_description
from blockrepo.api.openapi import OPERATION_METHODS, PROBLEM_REF
from blockrepo.api.versions import API_VERSIONS, CURRENT_VERSION, ApiVersion
from blockrepo.auth.middleware import is_public
from blockrepo.settings import Settings

OPENAPI_PATH = "/api/7_4/openapi.json"


@pytest.fixture
def document(anon: TestClient) -> dict[str, Any]:
    response = anon.get(OPENAPI_PATH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    return response.json()  # type: ignore[no-any-return]


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = [
        (path, method, item[method])
        for path, item in document["paths"].items()
        for method in OPERATION_METHODS
        if method in item
    ]
    assert found, "the description lists no operation"
    return found


def test_description_is_public_openapi_3_1_of_the_current_version(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1")
    info = document["info"]
    assert info["version"] == API_VERSION == "7.4"
    assert info["title"] == "blockrepo REST API"
    assert "## Authentication" in info["description"]
    assert info["license"]["identifier"] == "Apache-2.0"


def test_description_declares_basic_and_session_security(document: dict[str, Any]) -> None:
    schemes = document["components"]["securitySchemes"]
    assert schemes["basicAuth"] == {**schemes["basicAuth"], "type": "http", "scheme": "basic"}
    assert schemes["sessionCookie"]["in"] == "cookie"
    assert schemes["sessionCookie"]["name"] == "JSESSIONID"
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}
    assert document["security"] == [{"basicAuth": []}, {"bearerAuth": []}, {"sessionCookie": []}]


def test_every_operation_documents_the_common_headers_and_errors(document: dict[str, Any]) -> None:
    for path, method, operation in operations(document):
        where = f"{method.upper()} {path}"
        refs = {p.get("$ref") for p in operation["parameters"]}
        assert "#/components/parameters/API-Version" in refs, where
        assert "#/components/parameters/X-Request-ID" in refs, where
        responses = operation["responses"]
        assert "422" not in responses, where
        assert "400" in responses, where
        assert "default" in responses, where
        if is_public(path):
            assert operation["security"] == [], where
        else:
            assert "security" not in operation, where
            assert "WWW-Authenticate" in responses["401"]["headers"], where
        for status, response in responses.items():
            assert {"X-Request-ID", "API-Version"} <= set(response["headers"]), f"{where} {status}"
            problem = response.get("content", {}).get("application/problem+json")
            if problem is not None:
                assert problem["schema"] == {"$ref": PROBLEM_REF}, f"{where} {status}"


def test_problem_schema_is_one_reusable_component(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    problem = schemas["Problem"]
    assert set(problem["required"]) >= {"type", "title", "status", "detail", "code", "requestId", "errors"}
    assert "HTTPValidationError" not in schemas
    assert "ValidationError" not in schemas
    assert document["components"]["headers"]["X-Request-ID"]["schema"] == {"type": "string"}
    version_header = document["components"]["parameters"]["API-Version"]
    assert version_header["schema"]["enum"] == list(SUPPORTED_API_VERSIONS)


def test_tags_used_by_operations_are_described(document: dict[str, Any]) -> None:
    described = {tag["name"]: tag.get("description") for tag in document["tags"]}
    for path, method, operation in operations(document):
        for tag in operation.get("tags", []):
            assert described.get(tag), f"{method.upper()} {path}: tag {tag!r} has no description"


def test_the_document_answers_the_real_errors_it_describes(anon: TestClient) -> None:
    response = anon.get("/api/element/BusinessProcess/1", headers={"API-Version": "6.1"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["code"] == "unsupported_api_version"


def test_app_openapi_is_the_published_document(app: FastAPI, document: dict[str, Any]) -> None:
    assert app.openapi() == document


def test_current_description_redirect(anon: TestClient) -> None:
    response = anon.get("/api/openapi.json", follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == OPENAPI_PATH


def test_interactive_page_is_public_and_loads_only_local_assets(anon: TestClient) -> None:
    response = anon.get("/api/7_4/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "http" not in policy
    page = response.text
    assert "<title>blockrepo REST API 7.4</title>" in page
    assert "//" not in re.sub(r"<!doctype[^>]*>", "", page, flags=re.IGNORECASE), "no absolute URL"
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert {"assets/swagger-ui-bundle.js", "assets/swagger-ui.css", "assets/swagger-initializer.js"} <= set(
        assets
    )
    for asset in assets:
        loaded = anon.get(f"/api/7_4/{asset}")
        assert loaded.status_code == 200, asset
        assert loaded.content, asset


def test_initializer_points_at_the_local_description(anon: TestClient) -> None:
    script = anon.get("/api/7_4/assets/swagger-initializer.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert '"url": "openapi.json"' in script.text
    assert "petstore" not in script.text
    assert "X-XSRF-TOKEN" in script.text


def test_bundled_swagger_ui_renders_openapi_3_1(anon: TestClient) -> None:
    # Swagger UI 4 refuses `openapi: 3.1.x` documents; version 5 carries the OAS 3.1 plugin.
    bundle = anon.get("/api/7_4/assets/swagger-ui-bundle.js")
    assert bundle.status_code == 200
    assert b"isOAS31" in bundle.content


def test_page_without_slash_redirects(anon: TestClient) -> None:
    response = anon.get("/api/7_4", follow_redirects=False)
    assert response.status_code == 308
    assert response.headers["location"] == "/api/7_4/"


def test_missing_asset_and_wrong_method_are_problems(anon: TestClient) -> None:
    missing = anon.get("/api/7_4/assets/no-such-file.js")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"
    wrong = anon.post("/api/7_4/openapi.json")
    assert wrong.status_code == 405
    assert wrong.headers["content-type"] == "application/problem+json"
    outside = anon.get("/api/7_4/assets/..%2F..%2F..%2Fdocs.py")
    assert outside.status_code == 404


def test_registry_matches_the_supported_versions() -> None:
    assert tuple(version.number for version in API_VERSIONS) == SUPPORTED_API_VERSIONS
    assert CURRENT_VERSION.number == API_VERSION
    assert CURRENT_VERSION.openapi_path == OPENAPI_PATH


def test_a_further_version_publishes_its_own_description() -> None:
    router = APIRouter()

    @router.get("/api/ping", tags=["authentication"])
    def ping() -> dict[str, str]:
        return {"pong": "yes"}

    later = ApiVersion(
        number="9.9",
        segment="9_9",
        build_router=lambda: router,
        title="blockrepo REST API",
        description="A later version",
        tag_descriptions={"authentication": "Login"},
    )
    app = FastAPI(openapi_url=None)
    app.include_router(later.build_router())
    publish_description(app, later, router.routes, Settings(database_url="sqlite:///:memory:"))
    with TestClient(app) as client:
        document = client.get("/api/9_9/openapi.json").json()
        assert client.get("/api/9_9/").status_code == 200
    assert document["info"]["version"] == "9.9"
    assert list(document["paths"]) == ["/api/ping"]
    assert document["tags"] == [{"name": "authentication", "description": "Login"}]


def test_a_type_in_a_massdata_path_is_never_the_segment_of_another_operation(
    document: dict[str, Any], client: TestClient
) -> None:
    # GET /api/massdata/export is the export, not the listing of a type "export" (no type may be called
    # so): the description says so, and a schema-driven client does not send it as a type.
    for method, operation in document["paths"]["/api/massdata/{type}"].items():
        (schema,) = [p["schema"] for p in operation["parameters"] if p.get("name") == "type"]
        assert schema["not"] == {"enum": ["export", "import", "query"]}, method
    assert "format" in client.get("/api/massdata/export").json()
