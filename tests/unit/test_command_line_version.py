"""`blockrepo --version` names the installed version, as the package's metadata has it."""

from __future__ import annotations

from importlib.metadata import version

from typer.testing import CliRunner

from blockrepo.cli import app


def test_version_prints_the_installed_version_and_exits() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"blockrepo {version('blockrepo')}"
