"""The published description serves real tooling: openapi-python-client generates a client with every
operation, without a warning, under readable camelCase operation ids."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

OPENAPI_PATH = "/api/7_4/openapi.json"
HTTP_METHODS = ("get", "put", "post", "patch", "delete", "head", "options")
PACKAGE = "blockrepo_client"
# The generator writes JSON, form and octet-stream bodies; the workbook upload of an import, an ArchiMate
# file and the plain-text iteraQL query are bytes to it. No hooks: formatting the output needs no ruff on
# PATH.
GENERATOR_CONFIG = """\
content_type_overrides:
  application/vnd.openxmlformats-officedocument.spreadsheetml.sheet: application/octet-stream
  application/gzip: application/octet-stream
  application/xml: application/octet-stream
  application/zip: application/octet-stream
  text/plain: application/octet-stream
post_hooks: []
"""
CAMEL_CASE = re.compile(r"^[a-z]+(?:[A-Z][a-z]*)*$")


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, item[method])
        for path, item in document["paths"].items()
        for method in HTTP_METHODS
        if method in item
    ]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@pytest.fixture
def document(anon: TestClient) -> dict[str, Any]:
    response = anon.get(OPENAPI_PATH)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def test_operation_ids_are_unique_and_camel_case(document: dict[str, Any]) -> None:
    ids = [operation["operationId"] for _, _, operation in _operations(document)]
    assert len(ids) == len(set(ids))
    assert [name for name in ids if not CAMEL_CASE.match(name)] == []
    for expected in (
        "getElement",
        "updateElement",
        "patchElement",
        "createElement",
        "deleteElement",
        "listElements",
        "queryElements",
        "bulkWriteElements",
        "bulkDeleteElements",
    ):
        assert expected in ids


def test_openapi_python_client_generates_every_operation(document: dict[str, Any], tmp_path: Path) -> None:
    source = tmp_path / "openapi.json"
    source.write_text(json.dumps(document))
    config = tmp_path / "generator.yaml"
    config.write_text(GENERATOR_CONFIG)
    generator = Path(sys.executable).with_name("openapi-python-client")
    result = subprocess.run(
        [
            str(generator),
            "generate",
            "--path",
            str(source),
            "--config",
            str(config),
            "--meta",
            "none",
            "--output-path",
            str(tmp_path / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "warning" not in output.lower(), output

    sys.path.insert(0, str(tmp_path))
    try:
        for _, path, operation in _operations(document):
            tag = _snake(operation["tags"][0])
            module = importlib.import_module(f"{PACKAGE}.api.{tag}.{_snake(operation['operationId'])}")
            assert callable(module.sync_detailed), (path, operation["operationId"])
        client_module = importlib.import_module(PACKAGE)
        assert client_module.AuthenticatedClient is not None
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]
