"""Shared fixtures: every test gets its own freshly seeded repository, cloned from a template.

SQLite always; PostgreSQL instead when BLOCKREPO_TEST_DATABASE_URL is set (each test then gets its own
database, created from a template database, so test runs and xdist workers never share state).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from fastapi import FastAPI
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from blockrepo.app import create_app
from blockrepo.auth.passwords import Passwords
from blockrepo.bootstrap import initialize
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine, normalize_url

ADMIN_PASSWORD = "system-test-password"
PG_URL = os.environ.get("BLOCKREPO_TEST_DATABASE_URL")
REDIS_URL = os.environ.get("BLOCKREPO_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# Cheap hashing keeps the suite fast; production defaults are exercised by the e2e tests.
CHEAP_HASHING = {"argon2_time_cost": 1, "argon2_memory_cost": 1024, "argon2_parallelism": 1}
# A session's last-seen stamp is written when it is due (5 s by default): on a loaded machine a test that
# counts statements over a few requests could see one land in its window. At the cap (a tenth of the idle
# timeout) it does not; the tests of touching set their own interval or move a fake clock.
QUIET_SESSIONS = {"session_touch_interval": 30}


def make_settings(database_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": database_url,
        "admin_password": ADMIN_PASSWORD,
        **CHEAP_HASHING,
        **QUIET_SESSIONS,
        # The webhook delivery worker polls the database; tests of webhooks turn it on. Test traffic goes to
        # 127.0.0.1 only: a webhook may target nothing else (tests allow loopback where they deliver).
        "webhook_delivery": False,
        "webhook_public_targets": False,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def _admin_url(url: str) -> str:
    return normalize_url(make_url(normalize_url(url)).set(database="postgres").render_as_string(False))


def _pg_execute(url: str, statement: str) -> None:
    engine = create_engine(_admin_url(url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def _with_database(url: str, name: str) -> str:
    return make_url(normalize_url(url)).set(database=name).render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def template_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated, seeded repository that each test clones."""
    if PG_URL:
        name = f"br_tpl_{uuid.uuid4().hex[:12]}"
        _pg_execute(PG_URL, f'CREATE DATABASE "{name}"')
        url = _with_database(PG_URL, name)
    else:
        url = f"sqlite:///{tmp_path_factory.mktemp('template') / 'template.db'}"
    settings = make_settings(url)
    engine = build_engine(url)
    initialize(engine, settings, Passwords(settings))
    if url.startswith("sqlite"):
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    yield url
    if PG_URL:
        _pg_execute(PG_URL, f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')


@contextmanager
def cloned_database(source_url: str, directory: Path) -> Iterator[str]:
    """A private copy of a repository: a SQLite file copy, or a PostgreSQL database made from it as a
    template (the source must have no open connections). Dropped again on PostgreSQL."""
    if PG_URL:
        name = f"br_{uuid.uuid4().hex[:16]}"
        _pg_execute(PG_URL, f'CREATE DATABASE "{name}" TEMPLATE "{make_url(source_url).database}"')
        yield _with_database(PG_URL, name)
        _pg_execute(PG_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        target = directory / f"repo-{uuid.uuid4().hex[:8]}.db"
        shutil.copyfile(make_url(source_url).database or "", target)
        yield f"sqlite:///{target}"


@pytest.fixture
def database_url(template_database: str, tmp_path: Path) -> Iterator[str]:
    """A private copy of the template repository for one test."""
    with cloned_database(template_database, tmp_path) as url:
        yield url


@pytest.fixture
def empty_database_url(tmp_path: Path) -> Iterator[str]:
    """A database with nothing in it, not even the schema (a first start): an empty SQLite file, or a new
    empty PostgreSQL database (dropped again) when BLOCKREPO_TEST_DATABASE_URL is set."""
    if PG_URL:
        name = f"br_empty_{uuid.uuid4().hex[:12]}"
        _pg_execute(PG_URL, f'CREATE DATABASE "{name}"')
        yield _with_database(PG_URL, name)
        _pg_execute(PG_URL, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        path = tmp_path / f"empty-{uuid.uuid4().hex[:8]}.db"
        path.touch()
        yield f"sqlite:///{path}"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url)


@pytest.fixture
def app(settings: Settings) -> Iterator[FastAPI]:
    application = create_app(settings)
    yield application
    application.state.services.dispose()


@pytest.fixture
def anon(app: FastAPI) -> Iterator[TestClient]:
    """A client without credentials."""
    with TestClient(app, base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """A client that sends the supervisor's Basic credentials."""
    with TestClient(app, base_url="http://127.0.0.1") as client:
        client.auth = ("system", ADMIN_PASSWORD)
        yield client


@pytest.fixture
def redis_settings() -> Iterator[dict[str, str]]:
    """Settings that keep sessions, login failures and rate counts in Redis under a key prefix of this test
    alone (tests run concurrently). Skipped when Redis is unreachable, except on CI (CI=true): fails there."""
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: Redis at {REDIS_URL} is required: {exc}")
        pytest.skip(f"Redis at {REDIS_URL} is not reachable: {exc}")
    prefix = f"blockrepo-test:{uuid.uuid4().hex}:"
    yield {"redis_url": REDIS_URL, "redis_key_prefix": prefix}
    for key in client.scan_iter(match=f"{prefix}*"):
        client.delete(key)
    client.close()


@pytest.fixture(params=["database", "redis"])
def auth_store(request: pytest.FixtureRequest) -> dict[str, str]:
    """Settings for each shared store of sessions and login throttling: the database, then Redis."""
    if request.param == "redis":
        return request.getfixturevalue("redis_settings")  # type: ignore[no-any-return]
    return {}


# Left out of `make quick` (they still run in `make test`): hypothesis-driven fuzzing through HTTP, and
# tests that load the demo or round-trip whole repositories through export and import. Each took seconds
# per test in `pytest --durations`; the edit-test loop keeps the tests that pin behaviour example by example.
SLOW_FILES = frozenset(
    {
        "tests/api/test_elements_properties.py",
        "tests/api/test_elements_properties_fuzz.py",
        "tests/api/test_import_fuzz.py",
        "tests/api/test_massdata_query_fuzz.py",
        "tests/api/test_massdata_cli.py",
        "tests/api/test_massdata_transfer.py",
        "tests/api/test_massdata_unchanged_import.py",
        "tests/api/test_demo.py",
        "tests/api/test_demo_loading.py",
        "tests/api/test_asof_current_state.py",
        "tests/api/test_scenario_merge_property.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        if item.path.relative_to(root).as_posix() in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
