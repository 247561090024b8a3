"""Loading the demo landscape: only into a repository without elements, atomically, again after every
element was deleted, with a generated or configured password for the demo users."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.demo import DemoLoadFailed, DemoResult, load_demo
from blockrepo.elements.models import Element
from blockrepo.revisions.models import Revision
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine
from tests.conftest import make_settings
from tests.helpers import create_attribute

DEMO_PASSWORD = "demo-password-for-tests"


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, demo_password=DEMO_PASSWORD)


@pytest.fixture
def db(settings: Settings) -> Iterator[Session]:
    engine = build_engine(settings.database_url)
    with Session(engine) as session:
        yield session
    engine.dispose()


def load(settings: Settings) -> DemoResult:
    engine = build_engine(settings.database_url)
    try:
        return load_demo(engine, settings)
    finally:
        engine.dispose()


@pytest.fixture
def demo(settings: Settings, app: FastAPI) -> DemoResult:
    return load(settings)


def test_demo_is_not_loaded_into_a_repository_with_elements(demo: DemoResult, settings: Settings) -> None:
    again = load(settings)
    assert not again.loaded
    assert "already has elements" in again.reason


def test_demo_reloads_after_every_element_was_deleted(
    demo: DemoResult, settings: Settings, db: Session, client: TestClient
) -> None:
    db.execute(delete(Element))
    db.commit()
    again = load(settings)
    assert again.loaded
    assert again.counts == demo.counts
    assert again.users == ()  # the demo users exist and keep their password
    assert again.generated_password is None
    users = client.get("/api/administration/users").json()
    assert sorted(u["login"] for u in users) == ["anna", "bernd", "system"]


def test_failed_load_writes_nothing(app: FastAPI, settings: Settings, db: Session) -> None:
    # An attribute named like a demo attribute, but of another type, makes the element bodies invalid.
    create_attribute(app, "Criticality", "text", types=["BusinessProcess"])
    before = db.scalar(select(func.max(Revision.id)))
    with pytest.raises(DemoLoadFailed, match="Criticality"):
        load(settings)
    db.expire_all()
    assert db.scalar(select(func.count(Element.id))) == 0
    assert db.scalar(select(func.max(Revision.id))) == before


def test_generated_password_is_reported_once(database_url: str, app: FastAPI) -> None:
    result = load(make_settings(database_url))
    assert result.generated_password
    with TestClient(app, base_url="http://127.0.0.1") as anna:
        anna.auth = ("anna", result.generated_password)
        assert anna.get(result.example_path or "").status_code == 200
