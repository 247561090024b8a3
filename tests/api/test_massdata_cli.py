"""`blockrepo export FILE` and `blockrepo import FILE` against the database directly."""

from __future__ import annotations

from pathlib import Path

import orjson
from fastapi import FastAPI
from starlette.testclient import TestClient
from typer.testing import CliRunner

from blockrepo.cli import app as cli
from tests.api.massdata_landscape import build_landscape, empty_repository
from tests.helpers import create_role, create_user


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
                    document.pop("revisionMark")
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


def test_cli_export_and_import_refuse_a_user_without_the_permission(
    app: FastAPI, client: TestClient, database_url: str, tmp_path: Path
) -> None:
    """`--user` acts as that user: their functional permissions apply as they do over HTTP."""
    create_role(app, "Readers", types={"InformationSystem": ["read", "create", "update"]})
    create_user(app, "reader", "reader-password", roles=["Readers"])
    assert client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).status_code == 201
    runner = CliRunner()
    exported = tmp_path / "export.json"
    assert runner.invoke(cli, ["export", str(exported), "--database", database_url]).exit_code == 0

    refused_export = runner.invoke(
        cli, ["export", str(tmp_path / "mine.json"), "--user", "reader", "--database", database_url]
    )
    assert refused_export.exit_code == 1, refused_export.output
    assert "EXPORT" in refused_export.output
    assert not (tmp_path / "mine.json").exists()

    document = orjson.loads(exported.read_bytes())
    document["elements"]["InformationSystem"][0]["description"] = "changed by the file"
    exported.write_bytes(orjson.dumps(document))
    refused_import = runner.invoke(
        cli, ["import", str(exported), "--user", "reader", "--database", database_url]
    )
    assert refused_import.exit_code == 1, refused_import.output
    assert "IMPORT" in refused_import.output
    erp = client.post("/api/massdata/query", json={"query": 'InformationSystem[@name = "ERP"];'}).json()
    assert erp["result"][0]["description"] == [], "the refused import changed the element"


def test_cli_export_and_import_work_for_a_user_with_the_permissions(
    app: FastAPI, client: TestClient, database_url: str, tmp_path: Path
) -> None:
    create_role(
        app,
        "Transfer",
        types={"InformationSystem": ["read", "create", "update"]},
        functional=["IMPORT", "EXPORT"],
    )
    create_user(app, "mover", "mover-password", roles=["Transfer"])
    assert client.post("/api/element/InformationSystem", json={"name": ["ERP"]}).status_code == 201
    runner = CliRunner()
    exported = tmp_path / "export.json"
    result = runner.invoke(cli, ["export", str(exported), "--user", "mover", "--database", database_url])
    assert result.exit_code == 0, result.output
    assert [r["name"] for r in orjson.loads(exported.read_bytes())["elements"]["InformationSystem"]] == [
        "ERP"
    ]
    result = runner.invoke(cli, ["import", str(exported), "--user", "mover", "--database", database_url])
    assert result.exit_code == 0, result.output
