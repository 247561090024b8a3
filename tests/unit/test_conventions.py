"""Written rules checked by code: every module says what it is, and every setting is documented where an
operator looks for it (`blockrepo serve --help` and the README)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from blockrepo.cli import app
from blockrepo.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
# The source tree is checked by test_layering.py; this covers what ships beside it.
CHECKED_TREES = ("tests", "bench")
# Variables of the test harness, not of the service.
TEST_VARIABLES = {"BLOCKREPO_TEST_DATABASE_URL", "BLOCKREPO_TEST_REDIS_URL", "BLOCKREPO_CONTRACT_EXAMPLES"}


def python_modules() -> list[Path]:
    modules = [path for tree in CHECKED_TREES for path in sorted((ROOT / tree).rglob("*.py"))]
    assert len(modules) > 30, "the module walk found too little; did the layout move?"
    return modules


def missing_docstring(path: Path) -> bool:
    source = path.read_text(encoding="utf-8")
    if not source.strip():
        return False  # an empty package marker says nothing and needs nothing
    docstring = ast.get_docstring(ast.parse(source), clean=False)
    return not docstring or not docstring.strip() or docstring.startswith(("\n", " "))


def test_every_module_starts_with_a_docstring() -> None:
    offenders = [str(path.relative_to(ROOT)) for path in python_modules() if missing_docstring(path)]
    assert offenders == [], "modules without a one-line docstring on their first line"


def test_docstring_check_can_fail(tmp_path: Path) -> None:
    without = tmp_path / "without.py"
    without.write_text("import os\n")
    blank_first_line = tmp_path / "blank.py"
    blank_first_line.write_text('"""\nText on the second line."""\n')
    fine = tmp_path / "fine.py"
    fine.write_text('"""Says what it is."""\n')
    empty = tmp_path / "empty.py"
    empty.write_text("")
    assert missing_docstring(without)
    assert missing_docstring(blank_first_line)
    assert not missing_docstring(fine)
    assert not missing_docstring(empty)


def setting_variables() -> list[str]:
    return [f"BLOCKREPO_{name.upper()}" for name in Settings.model_fields]


@pytest.fixture(scope="module")
def serve_help() -> str:
    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "250", "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("variable", setting_variables())
def test_serve_help_lists_every_setting(serve_help: str, variable: str) -> None:
    assert variable in serve_help


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_every_setting_has_a_description(name: str) -> None:
    description = Settings.model_fields[name].description
    assert description and description.strip()


@pytest.mark.parametrize("variable", setting_variables())
def test_readme_lists_every_setting(variable: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"`{variable}`" in readme


def test_documentation_names_no_setting_that_does_not_exist(serve_help: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    mentioned = set(re.findall(r"BLOCKREPO_[A-Z0-9_]+", readme + serve_help))
    assert mentioned - set(setting_variables()) - TEST_VARIABLES == set()
