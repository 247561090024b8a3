"""Architecture rules read from the source with `ast`: one-way imports, docstrings, no junk drawers.

Imports flow one way: routes (api/v7_4/*) -> services -> repositories -> models -> storage. A module is
classified by where it lives and what it does:

- storage: `blockrepo.storage.*`;
- models: any `*/models.py`;
- repository: any `*/repository.py` (all SQL of a feature);
- service: any `*/service.py`, and any other feature module that imports a repository (it orchestrates SQL,
  so it sits above the repositories whatever its name);
- route: `blockrepo.api.v<major>_<minor>.*`; the rest of `blockrepo.api` is the HTTP layer they share, which
  like the routes reaches repositories and storage only through services (and `blockrepo.databases`).

Beyond the layers: no package imports another that imports it back (no cycles between packages), no
private name crosses a module boundary (imported, or exported under a public alias), and SQL is built and
run only in repositories, models and storage.

Every rule names the offending import with its file and line, so a failure says what to move.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE_ROOT = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "blockrepo"
FEATURE_PACKAGES = (
    "access",
    "administration",
    "auth",
    "backup",
    "elements",
    "history",
    "massdata",
    "metamodel",
    "reports",
    "revisions",
    "scenarios",
    "tokens",
    "webhooks",
)
ROUTE_MODULE = re.compile(r"^blockrepo\.api\.v\d+_\d+(\.|$)")
JUNK_DRAWER_NAMES = frozenset({"utils", "util", "helpers", "helper", "misc", "common"})

# Deliberate exceptions, each (importing module or package prefix, imported module) with the reason.
ALLOWED = {
    # Alembic's entry script, not library code (nothing imports it): autogenerate must see every feature's
    # tables on Base.metadata, so it imports each models module once.
    ("blockrepo.storage.migrations.env", "blockrepo.access.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.auth.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.elements.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.massdata.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.reports.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.revisions.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.scenarios.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.metamodel.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.tokens.models"),
    ("blockrepo.storage.migrations.env", "blockrepo.webhooks.models"),
}


# Modules outside repositories and storage that still build SQL, each with the reason; nothing else may.
SQL_OUTSIDE_REPOSITORIES = {
    # Initialisation: creates the schema and seeds a fresh database before any feature can run.
    "blockrepo.bootstrap",
    # The authentication layer keeps its own session, credential and throttle tables next to the middleware
    # that reads them on every request.
    "blockrepo.auth.authenticator",
    "blockrepo.auth.ratelimit",
    "blockrepo.auth.sessions",
    "blockrepo.auth.throttle",
    # The read engines: the query language and filters compile to SQL, and the column-oriented element
    # reader builds its statements once per dialect; SQL is what they produce.
    "blockrepo.elements.read.reader",
    "blockrepo.massdata.listing",
    "blockrepo.massdata.query.compiler",
}
# What any module may take from SQLAlchemy: the session and engine types it is handed, and its errors.
SQLALCHEMY_TYPES = frozenset(
    {
        ("sqlalchemy", "Engine"),
        ("sqlalchemy", "Connection"),
        ("sqlalchemy.orm", "Session"),
        ("sqlalchemy.orm", "sessionmaker"),
    }
)
SQL_METHODS = frozenset({"execute", "scalar", "scalars"})


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: Path
    line: int

    def __str__(self) -> str:
        where = f"{self.path.relative_to(SOURCE_ROOT.parent)}:{self.line}"
        return f"{where}: {self.importer} imports {self.imported}"


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE_ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULE_PATHS = {module_name(path): path for path in sorted((SOURCE_ROOT / PACKAGE).rglob("*.py"))}


def parse(module: str) -> ast.Module:
    return ast.parse(MODULE_PATHS[module].read_text(encoding="utf-8"), filename=str(MODULE_PATHS[module]))


def resolve_from(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if MODULE_PATHS[module].name == "__init__.py" else module.rpartition(".")[0]
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str) -> Iterator[Import]:
    """Every blockrepo module `module` imports, anywhere in it (functions and TYPE_CHECKING blocks too)."""
    path = MODULE_PATHS[module]
    for node in ast.walk(parse(module)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield Import(module, alias.name, path, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            source = resolve_from(module, node)
            if source.split(".")[0] != PACKAGE:
                continue
            for alias in node.names:
                # `from blockrepo.elements import repository` imports the submodule, not the package.
                submodule = f"{source}.{alias.name}"
                yield Import(module, submodule if submodule in MODULE_PATHS else source, path, node.lineno)


ALL_IMPORTS = [found for module in MODULE_PATHS for found in imports_of(module)]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def is_storage(module: str) -> bool:
    return within(module, "blockrepo.storage")


def is_models(module: str) -> bool:
    return is_feature(module) and module.rpartition(".")[2] == "models"


def is_repository(module: str) -> bool:
    # Only a feature's SQL module: `blockrepo.cli.repository` is the `init` command, not a data layer.
    return is_feature(module) and module.rpartition(".")[2] == "repository"


def is_route(module: str) -> bool:
    return ROUTE_MODULE.match(module) is not None


def is_api(module: str) -> bool:
    return within(module, "blockrepo.api")


def is_feature(module: str) -> bool:
    return any(within(module, f"blockrepo.{feature}") for feature in FEATURE_PACKAGES)


SERVICES = frozenset(
    module
    for module in MODULE_PATHS
    if is_feature(module)
    and not is_repository(module)
    and (
        module.rpartition(".")[2] == "service"
        or any(is_repository(found.imported) for found in ALL_IMPORTS if found.importer == module)
    )
)


def allowed(found: Import) -> bool:
    return any(
        within(found.importer, importer) and found.imported == imported for importer, imported in ALLOWED
    )


def violations(
    importers: Iterable[str], forbidden: Callable[[str], bool], imports: Iterable[Import] = ALL_IMPORTS
) -> list[str]:
    """The imports of `importers` for which `forbidden(imported)` holds, minus the allowlist."""
    chosen = set(importers)
    return [
        str(found)
        for found in imports
        if found.importer in chosen and forbidden(found.imported) and not allowed(found)
    ]


def test_the_source_tree_is_found() -> None:
    # Guards every rule below against passing vacuously on an empty or misplaced tree.
    assert "blockrepo.elements.service" in MODULE_PATHS
    assert "blockrepo.storage.engine" in MODULE_PATHS
    assert {"blockrepo.elements.service", "blockrepo.metamodel.service"} <= SERVICES
    assert any(is_route(module) for module in MODULE_PATHS)


def test_storage_imports_no_feature_or_higher_layer() -> None:
    # Storage may lean on the shared foundation (settings, errors, the interpreter switches) and nothing
    # else of the project.
    def forbidden(imported: str) -> bool:
        return not (
            is_storage(imported)
            or imported in {"blockrepo.settings", "blockrepo.errors", "blockrepo.interpreter"}
        )

    assert violations(filter(is_storage, MODULE_PATHS), forbidden) == []


def test_models_import_only_storage_and_other_models() -> None:
    def forbidden(imported: str) -> bool:
        return not (is_storage(imported) or is_models(imported))

    assert violations(filter(is_models, MODULE_PATHS), forbidden) == []


def test_repositories_import_no_service_route_or_api() -> None:
    def forbidden(imported: str) -> bool:
        return imported in SERVICES or is_api(imported) or within(imported, "blockrepo.cli")

    assert violations(filter(is_repository, MODULE_PATHS), forbidden) == []


def test_only_the_http_layer_imports_the_api_package() -> None:
    def importer_may_use_api(module: str) -> bool:
        return (
            is_api(module)
            or within(module, "blockrepo.cli")
            or module in {"blockrepo.app", "blockrepo.__main__"}
        )

    importers = [module for module in MODULE_PATHS if not importer_may_use_api(module)]
    assert violations(importers, is_api) == []


def test_routes_go_through_services() -> None:
    # A route parses HTTP and calls a service; SQL and tables stay behind the service layer.
    def forbidden(imported: str) -> bool:
        return is_repository(imported) or is_models(imported) or is_storage(imported)

    assert violations(filter(is_route, MODULE_PATHS), forbidden) == []


def test_the_http_layer_goes_through_services_too() -> None:
    # The non-route modules of api/ (middleware, the lanes, the request context) are HTTP code as much as
    # the routes: what they read goes through a service, and storage through `blockrepo.databases`.
    def forbidden(imported: str) -> bool:
        return is_repository(imported) or is_models(imported) or is_storage(imported)

    http_layer = [module for module in MODULE_PATHS if is_api(module) and not is_route(module)]
    assert "blockrepo.api.lanes.read" in http_layer
    assert violations(http_layer, forbidden) == []


def test_only_the_command_line_imports_cli_and_app() -> None:
    importers = [
        module
        for module in MODULE_PATHS
        if not within(module, "blockrepo.cli") and module != "blockrepo.__main__"
    ]
    assert violations(importers, lambda imported: within(imported, "blockrepo.cli")) == []
    assert violations(importers, lambda imported: imported == "blockrepo.app") == []


def test_features_never_commit() -> None:
    # The request (or the command) owns the transaction: a feature module that commits would make a failed
    # request half-applied.
    offenders = [
        f"{MODULE_PATHS[module].relative_to(SOURCE_ROOT.parent)}:{node.lineno}: {module} calls .commit()"
        for module in filter(is_feature, MODULE_PATHS)
        for node in ast.walk(parse(module))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "commit"
    ]
    assert offenders == []


def test_no_junk_drawer_modules() -> None:
    offenders = [module for module in MODULE_PATHS if set(module.split(".")[1:]) & JUNK_DRAWER_NAMES]
    assert offenders == []


@pytest.mark.parametrize("module", sorted(MODULE_PATHS))
def test_module_opens_with_a_docstring(module: str) -> None:
    # Every module says in its first line what it is; details, if any, follow.
    docstring = ast.get_docstring(parse(module))
    assert docstring, f"{MODULE_PATHS[module]} has no module docstring"
    assert docstring.splitlines()[0].strip(), (
        f"{MODULE_PATHS[module]}: the docstring must open with a summary"
    )


def test_the_checker_reports_a_forbidden_import_by_name() -> None:
    # The rules must be able to fail: a repository importing a service, written with a relative import.
    module = "blockrepo.elements.repository"
    tree = ast.parse("from . import service\nfrom ..api.problem import problem_response\n")
    nodes = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert [resolve_from(module, node) for node in nodes] == ["blockrepo.elements", "blockrepo.api.problem"]
    planted = [Import(module, "blockrepo.elements.service", MODULE_PATHS[module], 7)]
    assert violations([module], lambda imported: imported in SERVICES, planted) == [
        "src/blockrepo/elements/repository.py:7: "
        "blockrepo.elements.repository imports blockrepo.elements.service"
    ]
    # The allowlist is narrow: Alembic's entry script may import the models, nothing else may lean on it.
    models = "blockrepo.auth.models"
    assert allowed(Import("blockrepo.storage.migrations.env", models, MODULE_PATHS[module], 1))
    assert not allowed(Import("blockrepo.storage.engine", models, MODULE_PATHS[module], 1))
    # No package cycle is allow-listed: auth renders problems with `blockrepo.problem`, below api.
    assert not any(within(importer, "blockrepo.auth") for importer, _ in ALLOWED)


def package_of(module: str) -> str:
    """`blockrepo.elements.writer` -> `blockrepo.elements`; a top-level module is its own package."""
    return ".".join(module.split(".")[:2])


def package_cycles(imports: Iterable[Import]) -> list[list[str]]:
    """The groups of packages that import each other, directly or around a loop (strongly connected
    components of more than one package), each sorted; the allowlisted imports do not count."""
    graph: dict[str, set[str]] = {}
    for found in imports:
        source, target = package_of(found.importer), package_of(found.imported)
        if source != target and not allowed(found):
            graph.setdefault(source, set()).add(target)
            graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_no_import_cycles_between_packages() -> None:
    # A package that imports one which imports it back cannot be understood, tested or moved on its own:
    # elements and metamodel record through `revisions`, and metamodel edits reach the elements through
    # the StoredElements protocol the elements package provides.
    cycles = package_cycles(ALL_IMPORTS)
    detail = [
        str(found)
        for found in ALL_IMPORTS
        if not allowed(found)
        and any(
            package_of(found.importer) in group and package_of(found.imported) in group for group in cycles
        )
        and package_of(found.importer) != package_of(found.imported)
    ]
    assert cycles == [], detail


def private_name_leaks(module: str, tree: ast.Module | None = None) -> list[str]:
    """Imports of another module's `_private` names, and module-level public aliases of private names
    (`plan_update = _plan_update`), in `module` (or in `tree`, read as that module)."""
    where = MODULE_PATHS[module].relative_to(SOURCE_ROOT.parent)
    leaks = []
    tree = tree or parse(module)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and resolve_from(module, node).split(".")[0] == PACKAGE:
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    leaks.append(
                        f"{where}:{node.lineno}: imports {alias.name} from {resolve_from(module, node)}"
                    )
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id.startswith("_")
        ):
            for target in node.targets:
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    leaks.append(f"{where}:{node.lineno}: exports {node.value.id} as {target.id}")
    return leaks


def test_no_private_name_crosses_a_module_boundary() -> None:
    # A private name is free to change; one imported elsewhere, or exported under a public alias, is a
    # public name in disguise: make it public where it is defined instead.
    assert [leak for module in MODULE_PATHS for leak in private_name_leaks(module)] == []


def sql_in(module: str) -> list[str]:
    """SQLAlchemy constructs imported and statements run by `module`, beyond the session types."""
    where = MODULE_PATHS[module].relative_to(SOURCE_ROOT.parent)
    found = []
    for node in ast.walk(parse(module)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlalchemy":
            if (node.module or "").startswith("sqlalchemy.exc"):
                continue
            for alias in node.names:
                if (node.module, alias.name) not in SQLALCHEMY_TYPES:
                    found.append(f"{where}:{node.lineno}: imports {node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            found += [
                f"{where}:{node.lineno}: imports {alias.name}"
                for alias in node.names
                if alias.name.split(".")[0] == "sqlalchemy"
            ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_METHODS
        ):
            found.append(f"{where}:{node.lineno}: runs .{node.func.attr}()")
    return found


def test_sql_only_in_repositories_models_and_storage() -> None:
    # Services, routes and commands say what to read or write; the statements live in one place per feature.
    checked = [
        module
        for module in MODULE_PATHS
        if not (is_repository(module) or is_models(module) or is_storage(module))
        and module not in SQL_OUTSIDE_REPOSITORIES
    ]
    assert [found for module in checked for found in sql_in(module)] == []


def test_the_new_rules_can_fail() -> None:
    # Planted offenders: a loop between two packages, a private alias, a statement run by a service.
    path = MODULE_PATHS["blockrepo.elements.service"]
    loop = [
        Import("blockrepo.elements.writer", "blockrepo.revisions.recorder", path, 1),
        Import("blockrepo.revisions.recorder", "blockrepo.elements.view", path, 2),
    ]
    assert package_cycles(loop) == [["blockrepo.elements", "blockrepo.revisions"]]
    assert package_cycles(loop[:1]) == []
    planted = ast.parse("from blockrepo.elements.writer import _parse\nplan_update = _plan_update\n")
    assert private_name_leaks("blockrepo.massdata.bulk", planted) == [
        "src/blockrepo/massdata/bulk.py:1: imports _parse from blockrepo.elements.writer",
        "src/blockrepo/massdata/bulk.py:2: exports _plan_update as plan_update",
    ]
    assert "blockrepo.elements.service" not in SQL_OUTSIDE_REPOSITORIES
    assert sql_in("blockrepo.elements.repository") != []  # the detector sees SQL where it is
