"""A demo-like landscape for the massdata tests: attribute groups, every value type, a three-level process
hierarchy, relations with attributes, self relations and single-valued ends, written with the bulk API."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from blockrepo.app import create_app
from tests.conftest import ADMIN_PASSWORD, PG_URL, _pg_execute, _with_database, make_settings
from tests.helpers import create_attribute, create_group, create_user


def build_landscape(app: FastAPI, client: TestClient) -> None:
    create_user(app, "anna", "anna-password")
    create_user(app, "bernd", "bernd-password")
    create_group(app, "Operations")
    create_group(app, "Finance")
    create_attribute(
        app,
        "Criticality",
        "enum",
        types=["BusinessProcess", "InformationSystem"],
        group="Operations",
        literals=["low", "medium", "high"],
    )
    create_attribute(
        app,
        "Annual costs",
        "number",
        types=["InformationSystem", "TechnicalComponent"],
        group="Finance",
        unit="EUR",
    )
    create_attribute(
        app, "Responsible", "responsibility", types=["BusinessProcess", "InformationSystem", "Project"]
    )
    create_attribute(app, "Go-live", "date", types=["InformationSystem"])
    create_attribute(
        app, "Tags", "enum", types=["InformationSystem"], literals=["cloud", "core", "legacy"], multiple=True
    )
    create_attribute(app, "Certified", "boolean", types=["TechnicalComponent"])
    create_attribute(app, "Share", "number", relation_types=["BusinessProcess_InformationSystem"])
    create_attribute(
        app,
        "Mode",
        "enum",
        relation_types=["BusinessProcess_InformationSystem"],
        literals=["batch", "online"],
    )

    def bulk(type_name: str, elements: list[dict[str, Any]]) -> None:
        response = client.post(f"/api/massdata/{type_name}", json={"elements": elements})
        assert response.status_code == 200, response.text

    bulk("BusinessDomain", [{"name": ["Sales"]}, {"name": ["Finance"], "description": ["Money; mostly"]}])
    bulk(
        "InformationSystem",
        [
            {"name": ["Legacy ERP"], "status": ["INACTIVE"], "Tags": ["legacy"]},
            {
                "name": ["ERP"],
                "description": ["Enterprise resource planning\nsecond line"],
                "status": ["CURRENT"],
                "version": ["6.0"],
                "runtimePeriod": [{"start": "2015-01-01", "end": "2030-12-31"}],
                "Criticality": ["high"],
                "Annual costs": [120000],
                "Go-live": ["2015-03-01"],
                "Tags": ["core", "cloud"],
                "Responsible": ["anna"],
                "predecessors": [{"name": "Legacy ERP"}],
            },
            {"name": ["CRM"], "version": ["=SUM(A1)"], "status": ["PLANNED"], "Annual costs": [99.5]},
            {
                "name": ["Shop"],
                "parent": [{"name": "CRM"}],
                "runtimePeriod": [{"start": None, "end": "2026-06-30"}],
            },
            {"name": ["Ünïcødé; système"], "Criticality": ["low"]},
        ],
    )
    bulk(
        "BusinessProcess",
        [
            {"name": ["Sell"], "Criticality": ["medium"], "Responsible": ["bernd"]},
            {"name": ["Quote"], "parent": [{"name": "Sell"}]},
            {
                "name": ["Order"],
                "parent": [{"name": "Sell"}],
                "informationSystems": [
                    {"name": "ERP", "attributes": {"Share": [60], "Mode": ["online"]}},
                    {"name": "CRM", "attributes": {"Share": [40]}},
                ],
            },
            {
                "name": ["Order entry"],
                "parent": [{"name": "Order"}],
                "informationSystems": [{"name": "Shop"}],
            },
            {
                "name": ["Order check"],
                "parent": [{"name": "Order"}],
                "predecessors": [{"name": "Order entry"}],
            },
            {
                "name": ["Pay"],
                "businessDomains": [{"name": "Finance"}],
                "informationSystems": [{"name": "ERP"}],
            },
        ],
    )
    bulk(
        "InformationFlow",
        [{"name": ["Orders"], "sourceSystem": [{"name": "Shop"}], "targetSystem": [{"name": "ERP"}]}],
    )
    bulk(
        "TechnicalComponent",
        [
            {
                "name": ["PostgreSQL"],
                "version": ["15"],
                "status": ["CURRENT"],
                "Certified": [True],
                "Annual costs": [0],
            },
            {"name": ["Linux"], "Certified": [False], "baseComponents": [{"name": "PostgreSQL"}]},
        ],
    )
    bulk(
        "Project",
        [
            {
                "name": ["Migration"],
                "runtimePeriod": [{"start": "2025-01-01", "end": None}],
                "technicalComponents": [{"name": "PostgreSQL"}],
            }
        ],
    )
    response = client.post(
        "/api/massdata/InformationSystem",
        json={
            "match": "name",
            "elements": [{"name": ["ERP"], "technicalComponents": [{"name": "PostgreSQL"}]}],
        },
    )
    assert response.status_code == 200, response.text
    sales = client.get("/api/massdata/BusinessDomain", params={"filter": '@name = "Sales"'}).json()["items"][
        0
    ]
    client.put(
        f"/api/element/BusinessDomain/{sales['id'][0]}",
        json={
            "businessProcesses": [{"name": "Sell"}, {"name": "Pay"}],
            "informationSystems": [{"name": "CRM"}, {"name": "ERP"}],
        },
    )


@contextmanager
def empty_repository(template_database: str, tmp_path: Path) -> Iterator[tuple[FastAPI, TestClient]]:
    """A second, freshly seeded repository (its own database) with a supervisor client."""
    if PG_URL:
        name = f"br_{uuid.uuid4().hex[:16]}"
        _pg_execute(PG_URL, f'CREATE DATABASE "{name}" TEMPLATE "{make_url(template_database).database}"')
        url = _with_database(PG_URL, name)
    else:
        target = tmp_path / f"second-{uuid.uuid4().hex[:8]}.db"
        shutil.copyfile(make_url(template_database).database or "", target)
        url = f"sqlite:///{target}"
    application = create_app(make_settings(url))
    try:
        with TestClient(application, base_url="http://127.0.0.1") as client:
            client.auth = ("system", ADMIN_PASSWORD)
            yield application, client
    finally:
        application.state.services.dispose()
        if PG_URL:
            _pg_execute(PG_URL, f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')
