"""Serving needs only the package's own dependencies: every third-party module that `src/blockrepo` imports
belongs to a distribution that `[project.dependencies]` names or pulls in, never one that only the `test`
extra brings (`make run` installs the package without it; a plain `pip install blockrepo` must serve).

Imports are read with `ast` (module level and inside functions alike); each failure names the file and
line. The installed distributions' metadata tells which distribution provides a module and what each one
requires, so the check follows the dependencies as pip resolved them here.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "blockrepo"


def imported_modules() -> Iterator[tuple[str, Path, int]]:
    """Each absolute import's top-level module, with its file and line."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name.partition(".")[0], path, node.lineno
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield node.module.partition(".")[0], path, node.lineno


def requirements(section: str) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entries = project["dependencies"] if section == "" else project["optional-dependencies"][section]
    return [Requirement(entry) for entry in entries]


def resolved(roots: list[Requirement]) -> set[str]:
    """The distributions the requirements pull in, transitively, with the extras they name."""
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = list(roots)
    while todo:
        requirement = todo.pop()
        key = (canonicalize_name(requirement.name), frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        for text in importlib.metadata.requires(requirement.name) or []:
            needed = Requirement(text)
            extras = {"", *requirement.extras}
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                todo.append(needed)
    return {name for name, _ in seen}


def test_serving_imports_only_the_package_dependencies() -> None:
    serving = resolved(requirements(""))
    providers = importlib.metadata.packages_distributions()
    test_only = resolved(requirements("test")) - serving
    problems = []
    for module, path, line in imported_modules():
        if module == "blockrepo" or module in sys.stdlib_module_names:
            continue
        distributions = {canonicalize_name(name) for name in providers.get(module, [])}
        if not distributions & serving:
            where = f"{path.relative_to(ROOT)}:{line}"
            extra = " (only in the test extra)" if distributions & test_only else ""
            problems.append(f"{where}: {module} from {sorted(distributions) or 'nothing installed'}{extra}")
    assert not problems, "\n".join(problems)


def test_the_check_sees_the_test_extra() -> None:
    """The rule has teeth: the test extra brings distributions that serving does not."""
    test_only = resolved(requirements("test")) - resolved(requirements(""))
    assert {"pytest", "hypothesis", "playwright", "schemathesis", "mypy"} <= test_only
