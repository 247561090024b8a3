"""`blockrepo export FILE` and `blockrepo import FILE` against the database directly."""

from __future__ import annotations

from pathlib import Path

import orjson
from fastapi import FastAPI
from starlette.testclient import TestClient
from typer.testing import CliRunner

from blockrepo.cli import app as cli
from tests.api.massdata_landscape import build_landscape, empty_repository


def test_cli_export_then_import_into_an_empty_repository(
    app: FastAPI, client: TestClient, database_url: str, template_database: str, tmp_path: Path
) -> None:
    build_landscape(app, client)
    runner = CliRunner()
    for suffix in ("json", "xlsx"):
        exported = tmp_path / f"export.{suffix}"
        result = runner.invoke(cli, ["export", str(exported), "--database", database_url])
        assert result.exit_code == 0, result.output
        with empty_repository(template_database, tmp_path) as (other_app, other):
            url = str(other_app.state.settings.database_url)
            dry = runner.invoke(cli, ["import", str(exported), "--database", url, "--dry-run"])
            assert dry.exit_code == 0, dry.output
            assert other.get("/api/massdata/InformationSystem").json()["items"] == []
            result = runner.invoke(cli, ["import", str(exported), "--database", url])
            assert result.exit_code == 0, result.output
            assert "imported" in result.output
            again = tmp_path / f"again.{suffix}"
            assert runner.invoke(cli, ["export", str(again), "--database", url]).exit_code == 0
            if suffix == "json":
                first, second = orjson.loads(exported.read_bytes()), orjson.loads(again.read_bytes())
                for document in (first, second):
                    document.pop("revision")
                    for records in document["elements"].values():
                        for record in records:
                            record.pop("id")
                assert first == second


def test_cli_import_reports_problems_and_fails(app: FastAPI, database_url: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_bytes(
        orjson.dumps(
            {"format": "blockrepo-export", "elements": {"InformationSystem": [{"name": "X", "Nope": [1]}]}}
        )
    )
    result = CliRunner().invoke(cli, ["import", str(broken), "--database", database_url])
    assert result.exit_code == 1
    assert "/elements/InformationSystem/0/Nope" in result.output
