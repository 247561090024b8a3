"""The xlsx import's bounds the description publishes are the settings, and the service answers at them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.conftest import ADMIN_PASSWORD, make_settings
from tests.xlsx_bombs import row_gap

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
LIMITS = {
    "import_xlsx_max_unzipped_bytes": 3 * 1024 * 1024,
    "import_xlsx_max_compression_ratio": 77,
    "import_xlsx_max_sheets": 33,
    "import_xlsx_max_rows": 4_321,
    "import_xlsx_max_columns": 55,
    "import_xlsx_max_cells": 99_999,
    "import_xlsx_max_shared_strings": 12_345,
}


@pytest.fixture
def configured(database_url: str) -> Iterator[TestClient]:
    app = create_app(make_settings(database_url, **LIMITS))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.auth = ("system", ADMIN_PASSWORD)
        yield client
    app.state.services.dispose()


def test_the_xlsx_bounds_in_the_description_are_the_settings(configured: TestClient) -> None:
    description = configured.get("/api/7_4/openapi.json").json()["paths"]["/api/massdata/import"]["post"]
    text = description["description"]
    assert "at most 3 MiB unzipped" in text
    for name, value in LIMITS.items():
        if not name.endswith("_bytes"):
            assert f"{value:,}" in text, name


def test_the_service_answers_at_the_published_bounds(configured: TestClient) -> None:
    def import_status(row: int, column: str) -> tuple[int, str | None]:
        response = configured.post(
            "/api/massdata/import", content=row_gap(row, column), headers={"Content-Type": XLSX}
        )
        return response.status_code, response.json().get("limit", {}).get("name")

    # A single cell at the last row and column allowed passes the bounds (an index of nothing to import).
    assert import_status(1_000, "BC") == (200, None)  # BC: column 55; 55,000 cells
    assert import_status(1_000, "BD") == (413, "import_xlsx_max_columns")
    assert import_status(4_322, "A") == (413, "import_xlsx_max_rows")
    assert import_status(1_819, "BC") == (413, "import_xlsx_max_cells")  # 100,045 cells
