"""The demo landscape (`serve --demo`) as clients see it: hierarchy, relations, built-ins, attributes, roles
and users, read through the API. The demo is loaded once per module and each test gets its own copy."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.demo import DemoResult, landscape, load_demo
from blockrepo.elements.models import Element
from blockrepo.metamodel.models import BlockType
from blockrepo.revisions.models import Revision
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine
from tests.conftest import cloned_database, make_settings

DEMO_PASSWORD = "demo-password-for-tests"


@pytest.fixture(scope="module")
def demo_repository(
    template_database: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, DemoResult]]:
    """A seeded repository with the demo loaded, that each test of this module clones."""
    with cloned_database(template_database, tmp_path_factory.mktemp("demo")) as url:
        engine = build_engine(url)
        try:
            result = load_demo(engine, make_settings(url, demo_password=DEMO_PASSWORD))
            if url.startswith("sqlite"):
                with engine.connect() as connection:
                    connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            engine.dispose()
        yield url, result


@pytest.fixture
def database_url(demo_repository: tuple[str, DemoResult], tmp_path: Path) -> Iterator[str]:
    with cloned_database(demo_repository[0], tmp_path) as url:
        yield url


@pytest.fixture
def demo(demo_repository: tuple[str, DemoResult]) -> DemoResult:
    return demo_repository[1]


@pytest.fixture
def settings(database_url: str) -> Settings:
    return make_settings(database_url, demo_password=DEMO_PASSWORD)


@pytest.fixture
def db(settings: Settings) -> Iterator[Session]:
    engine = build_engine(settings.database_url)
    with Session(engine) as session:
        yield session
    engine.dispose()


def element_id(db: Session, type_name: str, name: str) -> int:
    found = db.scalar(
        select(Element.id)
        .join(BlockType, BlockType.id == Element.type_id)
        .where(BlockType.name == type_name, Element.name == name)
    )
    assert found is not None, f"{type_name} {name!r} is missing"
    return int(found)


def get(client: TestClient, db: Session, type_name: str, name: str) -> dict[str, Any]:
    response = client.get(f"/api/element/{type_name}/{element_id(db, type_name, name)}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def names(entries: list[dict[str, Any]]) -> set[str]:
    return {entry["name"] for entry in entries}


def client_for(app: FastAPI, login: str) -> TestClient:
    client = TestClient(app, base_url="http://127.0.0.1")
    client.auth = (login, DEMO_PASSWORD)
    return client


def test_demo_is_a_realistic_company(demo: DemoResult, db: Session) -> None:
    assert demo.loaded
    expected = Counter(block.type_name for block in landscape.ELEMENTS)
    stored = dict(
        db.execute(
            select(BlockType.name, func.count(Element.id))
            .join(Element, Element.type_id == BlockType.id)
            .group_by(BlockType.name)
        ).all()
    )
    assert stored == dict(expected) == demo.counts
    assert len(stored) == 14, "every building block type has demo elements"
    assert 20 <= stored["InformationSystem"] <= 40
    assert stored["Project"] == 2
    assert demo.users == ("anna", "bernd")
    assert demo.generated_password is None  # it came from the setting
    assert (
        demo.example_path
        == f"/api/element/BusinessProcess/{element_id(db, 'BusinessProcess', 'Order handling')}"
    )


def test_process_hierarchy_is_three_levels_deep(demo: DemoResult, client: TestClient, db: Session) -> None:
    entry = get(client, db, "BusinessProcess", "Order entry")
    assert names(entry["parent"]) == {"Order handling"}
    handling = get(client, db, "BusinessProcess", "Order handling")
    assert names(handling["parent"]) == {"Order to cash"}
    assert [c["name"] for c in handling["children"]] == ["Order entry", "Credit check", "Order confirmation"]
    assert handling["Criticality"] == ["high"]
    assert names(handling["informationSystems"]) == {"ERP"}
    root = get(client, db, "BusinessProcess", "Order to cash")
    assert root["parent"] == []
    assert names(root["businessDomains"]) == {"Sales and service"}
    assert names(get(client, db, "BusinessProcess", "Credit check")["predecessors"]) == {"Order entry"}


def test_information_systems_carry_built_ins_attributes_and_relations(
    demo: DemoResult, client: TestClient, db: Session
) -> None:
    erp = get(client, db, "InformationSystem", "ERP")
    assert erp["version"] == ["S/4HANA 2023"]
    assert erp["status"] == ["CURRENT"]
    assert erp["runtimePeriod"] == [{"start": "2025-07-01", "end": None}]
    assert erp["Criticality"] == ["high"]
    assert erp["Annual costs"] == [850000]
    assert erp["Go-live"] == ["2025-07-01"]
    assert erp["Responsible"] == ["bernd"]
    assert set(erp["Tags"]) == {"strategic", "regulated"}
    assert names(erp["predecessors"]) == {"Legacy ERP"}
    assert names(erp["technicalComponents"]) == {"SAP HANA"}
    assert names(erp["informationSystemDomains"]) == {"Finance and HR systems"}
    assert {"Order entry", "Invoicing"} <= names(erp["businessProcesses"])
    assert {"Shop orders", "Dealer orders"} <= names(erp["incomingFlows"])
    assert {"Production orders", "Payment runs"} <= names(erp["outgoingFlows"])
    statuses = {get(client, db, "InformationSystem", s.name)["status"][0] for s in landscape._SYSTEMS}
    assert statuses == {"CURRENT", "PLANNED", "TARGET", "INACTIVE"}


def test_flows_join_two_systems(demo: DemoResult, client: TestClient, db: Session) -> None:
    flow = get(client, db, "InformationFlow", "Shop orders")
    assert names(flow["sourceSystem"]) == {"Online Shop"}
    assert names(flow["targetSystem"]) == {"ERP"}
    assert names(flow["businessObjects"]) == {"Sales order"}
    assert names(flow["technicalComponents"]) == {"Apache Kafka"}


def test_components_infrastructure_and_projects(demo: DemoResult, client: TestClient, db: Session) -> None:
    tomcat = get(client, db, "TechnicalComponent", "Apache Tomcat")
    assert names(tomcat["baseComponents"]) == {"Java runtime"}
    assert tomcat["Annual costs"] == [0]
    assert names(get(client, db, "InfrastructureElement", "AKS cluster production")["parent"]) == {
        "Azure West Europe"
    }
    migration = get(client, db, "Project", "S/4HANA migration")
    assert migration["runtimePeriod"] == [{"start": "2024-01-01", "end": "2026-12-31"}]
    assert names(migration["informationSystems"]) == {"ERP", "Legacy ERP"}
    assert names(get(client, db, "BusinessObject", "Customer")["generalisation"]) == {"Business partner"}


def test_reader_reads_but_cannot_write_or_see_costs(demo: DemoResult, app: FastAPI, db: Session) -> None:
    erp_path = f"/api/element/InformationSystem/{element_id(db, 'InformationSystem', 'ERP')}"
    with client_for(app, "anna") as anna:
        erp = anna.get(erp_path)
        assert erp.status_code == 200
        assert "Annual costs" not in erp.json(), "the Finance group is readable by editors only"
        assert erp.json()["Criticality"] == ["high"]
        assert anna.put(erp_path, json={"description": ["x"]}).status_code == 403
        process = f"/api/element/BusinessProcess/{element_id(db, 'BusinessProcess', 'Order entry')}"
        assert anna.put(process, json={"description": ["x"]}).status_code == 403
        listed = anna.get("/api/massdata/InformationSystem", params={"filter": '@name = "ERP"'})
        assert listed.status_code == 200, "a reader may list and search what it may read"
        assert [item["name"] for item in listed.json()["items"]] == [["ERP"]]
        assert "Annual costs" not in listed.json()["items"][0]
        bulk = anna.post("/api/massdata/InformationSystem", json={"elements": [{"name": ["New system"]}]})
        assert bulk.status_code == 403, "listing does not make a reader a writer"


def test_editor_changes_business_types_only(demo: DemoResult, app: FastAPI, db: Session) -> None:
    process = f"/api/element/BusinessProcess/{element_id(db, 'BusinessProcess', 'Order entry')}"
    erp_path = f"/api/element/InformationSystem/{element_id(db, 'InformationSystem', 'ERP')}"
    with client_for(app, "bernd") as bernd:
        renamed = bernd.put(process, json={"name": ["Order intake"]})
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["lastModificationUser"] == ["bernd"]
        erp = bernd.get(erp_path)
        assert erp.json()["Annual costs"] == [850000]
        assert bernd.put(erp_path, json={"description": ["x"]}).status_code == 403


def test_demo_is_recorded_as_two_revisions(demo: DemoResult, db: Session) -> None:
    revisions = db.scalars(select(Revision).where(Revision.request_id == "demo").order_by(Revision.id)).all()
    assert [r.user_login for r in revisions] == ["system", "system"]
    assert revisions[1].id == revisions[0].id + 1
