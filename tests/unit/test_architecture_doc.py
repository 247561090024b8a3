"""`docs/architecture.md` names only what exists, within a word budget and without joined lines."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_ROOT = ROOT / "src" / "blockrepo"
DOC = ROOT / "docs" / "architecture.md"
# Where a path in the document may be relative to: the repository, or the package, as the layer table
# writes `api/element_lane.py` for `src/blockrepo/api/element_lane.py`.
BASES = (ROOT, PACKAGE_ROOT, ROOT / "src")
# About fifteen minutes of a newcomer's reading: a plan longer than that is skimmed, and skimmed plans rot.
WORD_BUDGET = 4800
# Long enough for a sentence and a path; a longer line is several lines joined to look shorter.
MAX_LINE = 120
FILE_SUFFIXES = (".py", ".md", ".toml", ".js", ".css", ".html", ".ini", ".mako", ".json", ".png")
# A placeholder (`<feature>/service.py`, `00NN_…`) or a URL path (`/api/7_4/`) names no file.
PLACEHOLDER = re.compile(r"[<>…{}]|00NN|^/")
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:[./][A-Za-z_]\w*)+(?:\(\))?$")


def _spans() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.DOTALL | re.MULTILINE)  # fenced blocks: diagrams
    return sorted(set(re.findall(r"`([^`\n]+)`", text)))


def _is_path(span: str) -> bool:
    return (
        bool(re.fullmatch(r"[\w./*-]+", span))
        and ("/" in span or span.endswith(FILE_SUFFIXES))
        and not (DOTTED.match(span) and not span.endswith(FILE_SUFFIXES))
    )


def paths() -> list[str]:
    return [span for span in _spans() if _is_path(span) and not PLACEHOLDER.search(span)]


def dotted_names() -> list[str]:
    return [
        span
        for span in _spans()
        if DOTTED.match(span) and "." in span and not span.endswith(FILE_SUFFIXES) and not _is_path(span)
    ]


def _project_files() -> Iterator[Path]:
    for folder in ("src", "tests", "bench", "docs", ".ci"):
        yield from (ROOT / folder).rglob("*")


def _path_exists(span: str) -> bool:
    if "/" not in span:  # a bare file name (`service.py`): some file of the project bears it
        return any(path.name == span for path in _project_files()) or (ROOT / span).exists()
    relative = span.rstrip("/")
    for base in BASES:
        if "*" in relative:
            if any(base.glob(relative)):
                return True
        elif (base / relative).exists() and ((base / relative).is_dir() or not span.endswith("/")):
            return True
    return False


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _names_in(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The names a module or class body binds: definitions, assignments, annotated fields, imports."""
    names: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.ImportFrom | ast.Import):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, ast.If | ast.Try):
            names.update(_names_in(node.body))
    return names


def _attributes_resolve(body: list[ast.stmt], attributes: list[str]) -> bool:
    """Whether `attributes` can be followed through the body: into classes by `ast`, through imports from
    the package to the module that defines the name; past a value or a third-party import the rest is not
    checked."""
    for index, attribute in enumerate(attributes):
        node = _names_in(body).get(attribute)
        if node is None:
            return False
        rest = attributes[index + 1 :]
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("blockrepo"):
            original = next(a.name for a in node.names if (a.asname or a.name) == attribute)
            return _name_exists(".".join([node.module or "", original, *rest]))
        if not isinstance(node, ast.ClassDef):
            return not rest or not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        body = node.body
    return True


def _module_file(parts: list[str]) -> Path | None:
    for base in BASES:
        candidate = base.joinpath(*parts)
        if candidate.with_suffix(".py").is_file():
            return candidate.with_suffix(".py")
        if (candidate / "__init__.py").is_file():
            return candidate / "__init__.py"
    return None


@cache
def _modules() -> dict[str, list[Path]]:
    """Every module of the package by its last name (`transactions` -> storage/transactions.py)."""
    found: dict[str, list[Path]] = {}
    for path in PACKAGE_ROOT.rglob("*.py"):
        name = path.parent.name if path.name == "__init__.py" else path.stem
        found.setdefault(name, []).append(path)
    return found


def _name_exists(span: str) -> bool:
    parts = re.split(r"[./]", span.removesuffix("()"))
    if parts[0] == "blockrepo":
        parts = parts[1:]
    # Longest module prefix first: `storage.transactions.is_retryable`, `cli/options.build_settings`.
    for split in range(len(parts), 0, -1):
        module = _module_file(parts[:split])
        if module is not None:
            return _attributes_resolve(_tree(module).body, parts[split:])
    # A module named by its last name (`transactions.is_retryable`) or a name defined at the top of some
    # module (`ChangeLog.flush`, `RequestContext.commit`).
    candidates = _modules().get(parts[0], [])
    if any(_attributes_resolve(_tree(path).body, parts[1:]) for path in candidates):
        return True
    for path in PACKAGE_ROOT.rglob("*.py"):
        if _attributes_resolve(_tree(path).body, parts):
            return True
    # The standard library or a dependency (`gc.freeze`).
    return importlib.util.find_spec(parts[0]) is not None and parts[0] not in _modules()


def test_the_document_names_paths_and_names() -> None:
    # Guards the classification: a change that made every span look like prose would pass vacuously.
    assert len(paths()) >= 20
    assert len(dotted_names()) >= 10


@pytest.mark.parametrize("span", paths())
def test_every_path_exists(span: str) -> None:
    assert _path_exists(span), f"docs/architecture.md names `{span}`, which does not exist"


@pytest.mark.parametrize("span", dotted_names())
def test_every_dotted_name_exists(span: str) -> None:
    assert _name_exists(span), f"docs/architecture.md names `{span}`, which is defined nowhere"


def test_the_resolver_refuses_what_does_not_exist() -> None:
    # The two lies this test was written against, and one of each kind.
    assert not _path_exists("massdata/reader.py")
    assert not _path_exists("history/recorder.py")
    assert not _name_exists("ChangeLog.no_such_method")
    assert not _name_exists("blockrepo.elements.view.no_such_function")
    assert _name_exists("ChangeLog.flush")
    assert _name_exists("storage.transactions.is_retryable")


def test_the_document_keeps_within_its_word_budget() -> None:
    words = len(DOC.read_text(encoding="utf-8").split())
    assert words <= WORD_BUDGET, f"docs/architecture.md has {words} words, the budget is {WORD_BUDGET}"


def test_no_line_is_several_joined() -> None:
    long = [
        f"line {number}: {len(line)} characters"
        for number, line in enumerate(DOC.read_text(encoding="utf-8").splitlines(), 1)
        if len(line) > MAX_LINE
    ]
    assert not long, "docs/architecture.md: " + "; ".join(long)
