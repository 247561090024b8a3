"""ArchiMate exchange: the export validates against The Open Group's 3.1 schema, goes back in unchanged
(and into another repository with the same elements, relations and properties), a rename in Archi stays a
rename, models written by Archi and in the 2.1 format import with their counts by type as mapped (and
everything unmapped reported), Archi's CSV files go both ways, and the parser refuses what would hurt."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as settings_of_hypothesis
from hypothesis import strategies as st
from lxml import etree
from starlette.testclient import TestClient
from typer.testing import CliRunner

from blockrepo.app import create_app
from blockrepo.cli import app as cli
from blockrepo.errors import BadRequest
from blockrepo.massdata.transfer.archimate.csv_files import read_archi_csv_zip
from blockrepo.massdata.transfer.archimate.reader import read_exchange
from tests.api.demo_repository import (
    database_url,
    demo_repository,
    element_named,
    newest_revision,
    settings,
)
from tests.api.massdata_landscape import empty_repository
from tests.conftest import make_settings

__all__ = ["database_url", "demo_repository", "settings"]  # fixtures of the demo landscape

DATA = Path(__file__).resolve().parents[1] / "data" / "archimate"
XML = {"Content-Type": "application/xml"}


@pytest.fixture(scope="module")
def schema(tmp_path_factory: pytest.TempPathFactory) -> etree.XMLSchema:
    """The Open Group's schema from the copies the tests keep; its import of xml.xsd from w3.org is pointed
    at the copy beside it (in a scratch folder: the kept files stay as published), so nothing is fetched."""
    folder = tmp_path_factory.mktemp("xsd")
    for source in (DATA / "xsd").glob("*.xsd"):
        text = source.read_text().replace(
            'schemaLocation="http://www.w3.org/2001/xml.xsd"', 'schemaLocation="xml.xsd"'
        )
        (folder / source.name).write_text(text)
    parser = etree.XMLParser(no_network=True)
    return etree.XMLSchema(etree.parse(str(folder / "archimate3_Diagram.xsd"), parser))


def _export(client: TestClient, **params: Any) -> bytes:
    response = client.get("/api/exchange/archimate", params=params)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/xml")
    return response.content


def _import(client: TestClient, content: bytes, media_type: str = "application/xml", **params: Any) -> Any:
    response = client.post(
        "/api/exchange/archimate", content=content, headers={"Content-Type": media_type}, params=params
    )
    assert response.status_code == 200, response.text
    return response.json()


def _valid(schema: etree.XMLSchema, content: bytes) -> None:
    document = etree.fromstring(content)
    assert schema.validate(etree.ElementTree(document)), schema.error_log


def _types_of(content: bytes) -> dict[str, int]:
    counts: dict[str, int] = {}
    for kind in re.findall(rb'xsi:type="([A-Za-z]+)"', content):
        counts[kind.decode()] = counts.get(kind.decode(), 0) + 1
    return counts


def test_the_export_validates_against_the_open_group_schema(client: TestClient, schema: Any) -> None:
    content = _export(client)
    _valid(schema, content)
    kinds = _types_of(content)
    # Systems are application components, flows flow relationships, projects work packages, the three
    # kinds of domain groupings; hierarchies are compositions; two views are drawn.
    assert kinds["ApplicationComponent"] == 31 and kinds["Flow"] >= 1 and kinds["WorkPackage"] == 2
    assert kinds["Grouping"] == 16 and kinds["Composition"] >= 1 and kinds["Diagram"] == 2
    tree = etree.fromstring(content)
    ns = {"a": "http://www.opengroup.org/xsd/archimate/3.0/"}
    erp = element_named(client, "InformationSystem", "ERP")["id"][0]
    element = tree.find(f".//a:element[@identifier='br-InformationSystem-{erp}']", ns)
    assert element is not None and element.findtext("a:name", namespaces=ns) == "ERP"
    definitions = {
        d.get("identifier"): d.findtext("a:name", namespaces=ns)
        for d in tree.iterfind(".//a:propertyDefinition", ns)
    }
    properties = {
        definitions[p.get("propertyDefinitionRef")]: p.findtext("a:value", namespaces=ns)
        for p in element.iterfind("a:properties/a:property", ns)
    }
    assert properties["status"] == "CURRENT" and properties["Criticality"] == "high"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d/(\d{4}-\d\d-\d\d|\.\.)", properties["runtimePeriod"] or "")
    kinds_of_definitions = {
        d.findtext("a:name", namespaces=ns): d.get("type")
        for d in tree.iterfind(".//a:propertyDefinition", ns)
    }
    assert kinds_of_definitions["Annual costs"] == "number" and kinds_of_definitions["Go-live"] == "date"
    # The hierarchy is also the model tree: a folder per type, each parent a folder of its children.
    labels = [label.text for label in tree.iterfind("a:organizations/a:item/a:label", ns)]
    assert "Information System" in labels and "Business Process" in labels


def test_a_selection_and_a_past_state_validate_too(client: TestClient, schema: Any) -> None:
    before = newest_revision(client)
    erp = element_named(client, "InformationSystem", "ERP")
    response = client.put(f"/api/element/InformationSystem/{erp['id'][0]}", json={"name": ["ERP renamed"]})
    assert response.status_code == 200, response.text
    selected = _export(client, types="InformationSystem,InformationFlow")
    _valid(schema, selected)
    assert set(_types_of(selected)) <= {
        "ApplicationComponent",
        "Flow",
        "Diagram",
        "Element",
        "Relationship",
        "Serving",
        "Association",
        "ApplicationInteraction",
    }
    past = _export(client, asOf=before)
    _valid(schema, past)
    assert b">ERP</name>" in past and b"ERP renamed" not in past
    assert b"ERP renamed" in _export(client)


def test_an_unchanged_export_imports_back_as_nothing(client: TestClient) -> None:
    content = _export(client)
    revision = newest_revision(client)
    dry = _import(client, content, dryRun="true")
    assert dry["rows"] == [] and dry["created"] == 0 and dry["updated"] == 0
    assert dry["mapping"]["notMapped"] == [] and dry["mapping"]["propertiesNotMapped"] == []
    report = _import(client, content)
    assert (report["created"], report["updated"]) == (0, 0)
    assert newest_revision(client) == revision  # nothing written, no revision


def test_a_relationship_removed_in_archi_is_removed_even_the_last_of_its_kind(client: TestClient) -> None:
    """An element's only relation of a kind, removed from the export in Archi: the re-import empties that
    end (and keeps the element's other ends); the same file again changes nothing."""
    systems = client.get("/api/massdata/InformationSystem", params={"limit": 1000}).json()["items"]
    system, end = next(
        (item, key)
        for item in systems
        for key in ("technicalComponents", "itServices", "businessProcesses")
        if len(item.get(key, [])) == 1
    )
    own, other = system["id"][0], system[end][0]["id"]
    content = _export(client)
    ends = f"({own}-{other}|{other}-{own})"
    relationship = re.compile(
        rf'<relationship identifier="br-[A-Za-z_]+-{ends}".*?</relationship>\n'.encode(), re.DOTALL
    )
    edited, removed = relationship.subn(b"", content)
    assert removed == 1
    # Both ends of the relation change: the element that holds it and the other.
    dry = _import(client, edited, dryRun="true")
    assert {(row["action"], row["name"]) for row in dry["rows"]} == {
        ("update", system["name"][0]),
        ("update", system[end][0]["name"]),
    }
    report = _import(client, edited)
    assert (report["created"], report["updated"]) == (0, 2)
    after = element_named(client, "InformationSystem", system["name"][0])
    assert after[end] == []
    for key in ("technicalComponents", "itServices", "businessProcesses", "parent"):
        if key != end:
            assert after.get(key) == system.get(key), key
    revision = newest_revision(client)
    again = _import(client, edited)
    assert (again["created"], again["updated"]) == (0, 0) and newest_revision(client) == revision


def test_a_relationship_removed_from_another_tools_model_is_removed(client: TestClient) -> None:
    """A model Archi wrote, imported, then imported again without the only relationship of one of its
    systems to a component: that relation goes, what the mapping does not map or the file has no element
    of stays (the flow's systems, the processes), and the same model again changes nothing."""
    model = (DATA / "model-2.1.xml").read_bytes()
    _import(client, model)
    crm = element_named(client, "InformationSystem", "CRM 2")
    assert [e["name"] for e in crm["technicalComponents"]] == ["PostgreSQL 9"]
    without = re.sub(rb'<relationship identifier="id-r2"[^>]*/>', b"", model)
    assert without != model
    dry = _import(client, without, dryRun="true")
    assert {row["name"] for row in dry["rows"]} == {"CRM 2", "PostgreSQL 9"}
    report = _import(client, without)
    assert (report["created"], report["updated"]) == (0, 2)
    after = element_named(client, "InformationSystem", "CRM 2")
    assert after["technicalComponents"] == []
    for key in ("itServices", "businessProcesses", "Criticality", "status", "description"):
        assert after.get(key) == crm.get(key), key
    flow = element_named(client, "InformationFlow", "Invoices 2")
    assert flow["sourceSystem"][0]["name"] == "CRM 2" and flow["targetSystem"][0]["name"] == "Billing 2"
    revision = newest_revision(client)
    for content in (without, without):
        again = _import(client, content)
        assert (again["created"], again["updated"]) == (0, 0)
    assert newest_revision(client) == revision
    # The relationship back in Archi: the relation comes back.
    assert _import(client, model)["updated"] == 2
    assert [
        e["name"] for e in element_named(client, "InformationSystem", "CRM 2")["technicalComponents"]
    ] == ["PostgreSQL 9"]


def test_a_rename_in_archi_is_a_rename(client: TestClient) -> None:
    erp = element_named(client, "InformationSystem", "ERP")
    content = _export(client).replace(
        b'<name xml:lang="en">ERP</name>', b'<name xml:lang="en">Core ERP</name>', 1
    )
    report = _import(client, content)
    assert report["updated"] == 1 and report["created"] == 0
    renamed = element_named(client, "InformationSystem", "Core ERP")
    assert renamed["id"] == erp["id"]
    assert sorted(e["name"] for e in renamed["businessProcesses"]) == sorted(
        e["name"] for e in erp["businessProcesses"]
    )
    history = client.get(f"/api/history/InformationSystem/{erp['id'][0]}")
    assert history.status_code == 200, history.text
    assert '"ERP"' in history.text and '"Core ERP"' in history.text  # its history goes on


def _comparable(client: TestClient) -> dict[str, Any]:
    """Every element by type and name: its description, parent, attributes and relation ends by name."""
    result: dict[str, Any] = {}
    for type_name in client.get("/api/metamodel").json()["types"]:
        name = type_name["name"] if isinstance(type_name, dict) else type_name
        page = client.get(f"/api/massdata/{name}", params={"limit": 1000}).json()
        for item in page["items"]:
            result[f"{name}:{item['name'][0]}"] = {
                key: sorted(v["name"] for v in values)
                if values and isinstance(values[0], dict) and "name" in values[0]
                else values
                for key, values in item.items()
                if key not in ("id", "revision", "lastModificationTime", "lastModificationUser", "children")
            }
    return result


def test_round_trip_into_another_repository_gives_the_same_landscape(
    client: TestClient, template_database: str, tmp_path: Path
) -> None:
    metamodel = client.get("/api/massdata/export").json()
    content = _export(client)
    with empty_repository(template_database, tmp_path) as (_application, other):
        # The attributes first (the JSON export's metamodel section), then the model.
        metamodel["elements"] = {}
        response = other.post("/api/massdata/import", json=metamodel)
        assert response.status_code == 200, response.text
        report = _import(other, content)
        assert report["mapping"]["notMapped"] == [] and report["mapping"]["propertiesNotMapped"] == []
        assert report["created"] == sum(report["mapping"]["mapped"].values()) == 178  # 21 of them flows
        assert _comparable(other) == _comparable(client)


def test_models_written_by_archi_import_as_mapped(client: TestClient) -> None:
    revision = newest_revision(client)
    sample = (DATA / "archi-sample1.xml").read_bytes()
    report = _import(client, sample)
    mapping = report["mapping"]
    # A business role has no building block type by default; its assignment goes with it, reported.
    assert mapping["mapped"] == {"BusinessProcess": 1} and report["created"] == 1
    assert [(n["identifier"], n["type"]) for n in mapping["notMapped"]] == [
        ("id-37d5bc4b", "BusinessRole"),
        ("id-52b86b7b", "Assignment"),
    ]
    assert element_named(client, "BusinessProcess", "Sell Product")["description"] == [
        "A description of the sell product process"
    ]
    bendpoint = (DATA / "archi-bendpoint.xml").read_bytes()
    report = _import(client, bendpoint)
    assert report["mapping"]["mapped"] == {"BusinessFunction": 1}
    assert report["mapping"]["viewsIgnored"] == 1 and report["mapping"]["notMappedCount"] == 3
    after = newest_revision(client)
    assert after > revision
    # Imported again: nothing changes.
    for content in (sample, bendpoint):
        again = _import(client, content)
        assert (again["created"], again["updated"]) == (0, 0)
    assert newest_revision(client) == after


def test_a_2_1_model_imports_with_its_flows_parents_and_properties(client: TestClient) -> None:
    report = _import(client, (DATA / "model-2.1.xml").read_bytes())
    mapping = report["mapping"]
    assert mapping["format"] == "2.1"
    assert mapping["mapped"] == {
        "BusinessProcess": 2,
        "InformationFlow": 1,
        "InformationSystem": 2,
        "ItService": 1,
        "TechnicalComponent": 1,
    }
    assert mapping["relations"] == {
        "BusinessProcess_InformationSystem": 1,
        "InformationSystem_ItService": 1,
        "InformationSystem_TechnicalComponent": 1,
        "parent": 1,
    }
    assert {(n["identifier"], n["type"]) for n in mapping["notMapped"]} == {
        ("id-where", "Location"),
        ("id-r5", "Association"),
    }
    assert mapping["propertiesNotMapped"] == [
        {"identifier": "id-crm", "key": "Owner", "reason": "no attribute of this name applies"}
    ]
    crm = element_named(client, "InformationSystem", "CRM 2")
    assert crm["status"] == ["CURRENT"] and crm["version"] == ["7.1"]
    assert [e["name"] for e in crm["technicalComponents"]] == ["PostgreSQL 9"]
    assert [e["name"] for e in crm["itServices"]] == ["Hosting 2"]
    flow = element_named(client, "InformationFlow", "Invoices 2")
    assert flow["sourceSystem"][0]["name"] == "CRM 2" and flow["targetSystem"][0]["name"] == "Billing 2"
    assert element_named(client, "BusinessProcess", "Quoting 2")["parent"][0]["name"] == "Selling 2"


def test_an_import_keeps_what_the_file_does_not_know(client: TestClient) -> None:
    erp = element_named(client, "InformationSystem", "ERP")
    model = (
        b'<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/" '
        b'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" identifier="m"><name>m</name><elements>'
        b'<element identifier="x-1" xsi:type="ApplicationComponent"><name>ERP</name>'
        b"<documentation>From Archi</documentation></element></elements></model>"
    )
    assert _import(client, model)["updated"] == 1
    after = element_named(client, "InformationSystem", "ERP")
    assert after["description"] == ["From Archi"]
    for key in ("Criticality", "Annual costs", "status", "parent", "businessProcesses"):
        assert after[key] == erp[key], key


def test_archi_csv_files_go_both_ways(client: TestClient) -> None:
    response = client.get("/api/exchange/archimate", params={"format": "csv"})
    assert response.status_code == 200 and response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        assert sorted(archive.namelist()) == ["elements.csv", "properties.csv", "relations.csv"]
        elements = archive.read("elements.csv").decode()
        assert elements.startswith('"ID","Type","Name","Documentation","Specialization"')
        assert '"ApplicationComponent","ERP"' in elements
        assert '"FlowRelationship"' in archive.read("relations.csv").decode()
    again = _import(client, response.content, "application/zip", dryRun="true")
    assert again["rows"] == [] and again["mapping"]["format"] == "csv" and again["mapping"]["notMapped"] == []
    # Archi's own CSV files, zipped with the prefix Archi gives them.
    archive_bytes = io.BytesIO()
    with zipfile.ZipFile(archive_bytes, "w") as archive:
        for part in ("elements", "relations", "properties"):
            archive.writestr(f"test1-{part}.csv", (DATA / f"archi-test1-{part}.csv").read_bytes())
    report = _import(client, archive_bytes.getvalue(), "application/zip")
    mapping = report["mapping"]
    assert mapping["format"] == "csv" and (mapping["elementsRead"], mapping["relationshipsRead"]) == (3, 2)
    assert mapping["mapped"] == {"BusinessUnit": 1} and report["created"] == 1
    assert sorted(n["type"] for n in mapping["notMapped"]) == [
        "Assignment",
        "BusinessInterface",
        "BusinessRole",
        "Composition",
    ]
    assert {p["key"] for p in mapping["propertiesNotMapped"]} >= {"Property 1", "Property 2", "Property 3"}
    actor = element_named(client, "BusinessUnit", "Business Actor")
    assert actor["description"] == ['This is the Business Actor\nDocumentation\nHere ""\n']


def test_archi_csv_files_hold_what_the_exchange_file_does(client: TestClient) -> None:
    """The CSV files are written from the export's batches, not from its exchange file: read back, both
    give the same concepts, properties and ends, in the same order (odd text included)."""
    for name, text in (('  Odd "quoted", name\t', " a\r\nb\x01 c \u2028 "), ("Café ☕", "\x1fx\ny\r")):
        created = client.post(
            "/api/element/InformationSystem",
            json={"name": [name], "description": [text], "version": [" 1\x02"]},
        )
        assert created.status_code == 201, created.text

    def _lines(text: str | None) -> str:
        return (text or "").replace("\r\n", "\n")

    def concepts(model: Any) -> list[Any]:
        return [
            # (the CSV reader reads Windows' line ends as Archi writes them there)
            (c.identifier, c.type, c.name, _lines(c.documentation), c.properties, c.source, c.target)
            for c in (*model.elements, *model.relationships)
        ]

    for params in ({}, {"types": "InformationSystem,InformationFlow"}, {"asOf": "1"}):
        xml = read_exchange(_export(client, **params), 1 << 30)
        response = client.get("/api/exchange/archimate", params={**params, "format": "csv"})
        assert response.status_code == 200, response.text
        csv = read_archi_csv_zip(response.content, 1 << 30)
        assert (csv.identifier, csv.name, csv.properties) == (xml.identifier, xml.name, xml.properties)
        assert concepts(csv) == concepts(xml) and (len(xml.elements) > 0 or "asOf" in params)


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE model [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/" identifier="m"><name>&c;</name></model>"""
EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE model [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/" identifier="m"><name>&secret;</name></model>"""


@pytest.mark.parametrize(
    "content",
    [
        BILLION_LAUGHS,
        EXTERNAL,
        b"<model",
        b"",
        b"\xff\xfe<",
        b'<model xmlns="urn:other"/>',
        b'<html xmlns="http://www.opengroup.org/xsd/archimate/3.0/"/>',
    ],
    ids=["entities", "external entity", "cut", "empty", "bytes", "other namespace", "other root"],
)
def test_a_file_that_is_not_a_safe_exchange_file_is_refused(client: TestClient, content: bytes) -> None:
    revision = newest_revision(client)
    response = client.post("/api/exchange/archimate", content=content, headers=XML)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert b"root:" not in response.content  # nothing of /etc/passwd
    assert newest_revision(client) == revision


def test_the_import_is_bounded_and_typed(client: TestClient, app: Any) -> None:
    app.state.services.settings.import_archimate_max_concepts = 2
    response = client.post(
        "/api/exchange/archimate", content=(DATA / "model-2.1.xml").read_bytes(), headers=XML
    )
    assert response.status_code == 413 and response.json()["limit"]["name"] == "import_archimate_max_concepts"
    response = client.post(
        "/api/exchange/archimate", content=b"<model/>", headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415


def test_problems_name_the_file_identifiers_and_nothing_is_written(client: TestClient) -> None:
    revision = newest_revision(client)
    # Each process composes the other: each the other's parent, a cycle the core refuses.
    model = (
        b'<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/" '
        b'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" identifier="m"><name>m</name><elements>'
        b'<element identifier="p-1" xsi:type="BusinessProcess"><name>Hen</name></element>'
        b'<element identifier="p-2" xsi:type="BusinessProcess"><name>Egg</name></element>'
        b"</elements><relationships>"
        b'<relationship identifier="r-1" source="p-1" target="p-2" xsi:type="Composition"/>'
        b'<relationship identifier="r-2" source="p-2" target="p-1" xsi:type="Composition"/>'
        b"</relationships></model>"
    )
    response = client.post("/api/exchange/archimate", content=model, headers=XML)
    assert response.status_code == 400, response.text
    pointers = {e["pointer"].split("/")[0] for e in response.json()["errors"]}
    assert pointers and pointers <= {"identifier:p-1", "identifier:p-2"}, response.text
    assert newest_revision(client) == revision
    assert (
        client.get("/api/massdata/BusinessProcess", params={"filter": '@name = "Hen"'}).json()["items"] == []
    )


def test_an_operator_mapping_changes_what_goes_where(client: TestClient, app: Any, tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.json"
    mapping.write_text(
        json.dumps({"elementSources": {"BusinessRole": "BusinessUnit"}, "elements": {"Project": "Plateau"}})
    )
    app.state.services.settings.archimate_mapping = str(mapping)
    report = _import(client, (DATA / "archi-sample1.xml").read_bytes())
    assert report["mapping"]["mapped"] == {"BusinessProcess": 1, "BusinessUnit": 1}
    # No relation type joins a business unit and a process: the assignment is reported, not dropped.
    assert [n["identifier"] for n in report["mapping"]["notMapped"]] == ["id-52b86b7b"]
    assert b'xsi:type="Plateau"' in _export(client, types="Project")
    mapping.write_text(json.dumps({"elements": {"Project": "NoSuchThing"}}))
    with pytest.raises(BadRequest, match=r"not an ArchiMate 3\.1 element type"):
        create_app(make_settings("sqlite:///unused.db", archimate_mapping=str(mapping)))


@settings_of_hypothesis(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300).map(str.encode),
        st.recursive(
            st.text(alphabet="abc<>&;\"'=/ ", max_size=20),
            lambda inner: st.builds(
                lambda tag, body: f"<{tag}>{body}</{tag}>",
                st.sampled_from(["model", "elements", "element", "relationship", "name", "properties"]),
                inner,
            ),
            max_leaves=10,
        ).map(
            lambda body: f'<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/">{body}</model>'.encode()
        ),
    )
)
def test_no_body_makes_a_server_error(client: TestClient, body: bytes) -> None:
    for media_type in ("application/xml", "application/zip"):
        response = client.post(
            "/api/exchange/archimate",
            content=body,
            headers={"Content-Type": media_type},
            params={"dryRun": "true"},
        )
        assert response.status_code in (200, 400, 413), response.text


def test_an_administrators_own_types_are_named_and_their_relations_go_both_ways(
    client: TestClient, schema: Any
) -> None:
    assert client.post("/api/metamodel/types", json={"name": "DataCenter"}).status_code == 201
    relation = {
        "source": "InformationSystem",
        "sourceEnd": "replicas",
        "target": "InformationSystem",
        "targetEnd": "originals",
    }
    assert client.post("/api/metamodel/relationtypes", json=relation).status_code == 201
    assert client.post("/api/element/DataCenter", json={"name": ["Frankfurt"]}).status_code == 201
    erp = element_named(client, "InformationSystem", "ERP")
    crm = element_named(client, "InformationSystem", "CRM")
    response = client.patch(
        f"/api/element/InformationSystem/{erp['id'][0]}", json={"replicas": [{"name": "CRM"}]}
    )
    assert response.status_code == 200, response.text
    content = _export(client)
    _valid(schema, content)
    # A type the mapping gives no element is named in the model's documentation, not silently missing.
    assert b"Not in this model (no ArchiMate element in the mapping): DataCenter" in content
    # A relation type without a rule is an association from its source to its target.
    association = (
        f'source="br-InformationSystem-{erp["id"][0]}" target="br-InformationSystem-{crm["id"][0]}" '
        'xsi:type="Association"'
    )
    assert association.encode() in content
    response = client.patch(f"/api/element/InformationSystem/{erp['id'][0]}", json={"replicas": []})
    assert response.status_code == 200, response.text
    report = _import(client, content)
    assert report["mapping"]["notMapped"] == []
    assert [e["name"] for e in element_named(client, "InformationSystem", "ERP")["replicas"]] == ["CRM"]


def test_the_command_line_exports_and_imports_archimate(
    client: TestClient, database_url: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    model, csv_files = tmp_path / "landscape.xml", tmp_path / "landscape.zip"
    revision = newest_revision(client)
    for target, extra in ((model, []), (csv_files, ["--types", "InformationSystem"])):
        result = runner.invoke(cli, ["export", str(target), *extra, "--database", database_url])
        assert result.exit_code == 0, result.output
    assert model.read_bytes() == _export(client)  # the same file as the API's
    with zipfile.ZipFile(csv_files) as archive:
        assert "elements.csv" in archive.namelist()
    past = tmp_path / "past.xml"
    result = runner.invoke(cli, ["export", str(past), "--as-of", "1", "--database", database_url])
    assert result.exit_code == 0, result.output
    for source in (model, csv_files):
        result = runner.invoke(cli, ["import", str(source), "--database", database_url])
        assert result.exit_code == 0, result.output
        assert "ArchiMate" in result.output
    assert newest_revision(client) == revision  # an unchanged model writes nothing
    broken = tmp_path / "broken.xml"
    broken.write_bytes(BILLION_LAUGHS)
    result = runner.invoke(cli, ["import", str(broken), "--database", database_url])
    assert result.exit_code == 1 and "DOCTYPE" in result.output


def _archi_model(systems: dict[str, str]) -> bytes:
    """An exchange file of another tool's model `id-model-1` with application components (id -> name)."""
    elements = "".join(
        f'<element identifier="{identifier}" xsi:type="ApplicationComponent"><name>{name}</name></element>'
        for identifier, name in systems.items()
    )
    return (
        '<model xmlns="http://www.opengroup.org/xsd/archimate/3.0/" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" identifier="id-model-1"><name>m</name>'
        f"<elements>{elements}</elements></model>"
    ).encode()


def test_another_tools_identifiers_are_remembered(client: TestClient) -> None:
    """Imported once, a model's elements are known by its identifiers: renamed in Archi, an element stays
    the same element; deleted here, its identifier names nothing again."""
    assert _import(client, _archi_model({"id-a": "Ticketing", "id-b": "Chat"}), dryRun="true")["created"] == 2
    assert _import(client, _archi_model({"id-a": "Ticketing", "id-b": "Chat"}))["created"] == 2
    ticketing = element_named(client, "InformationSystem", "Ticketing")
    report = _import(client, _archi_model({"id-a": "Service Desk Tickets", "id-b": "Chat"}))
    assert (report["created"], report["updated"]) == (0, 1)
    assert element_named(client, "InformationSystem", "Service Desk Tickets")["id"] == ticketing["id"]
    chat = element_named(client, "InformationSystem", "Chat")["id"][0]
    assert client.delete(f"/api/element/InformationSystem/{chat}").status_code in (200, 204)
    report = _import(client, _archi_model({"id-a": "Service Desk Tickets", "id-b": "Chat"}))
    assert (report["created"], report["updated"]) == (1, 0)
    # A dry run remembers nothing: the identifier of a model never imported names no element.
    _import(client, _archi_model({"id-c": "Ticketing"}).replace(b"id-model-1", b"id-model-2"), dryRun="true")
    report = _import(client, _archi_model({"id-c": "Pager"}).replace(b"id-model-1", b"id-model-2"))
    assert report["created"] == 1


def test_a_model_can_land_in_a_new_scenario_for_review(client: TestClient) -> None:
    feed = client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"]
    landed = client.post(
        "/api/exchange/archimate",
        content=(DATA / "model-2.1.xml").read_bytes(),
        headers=XML,
        params={"newScenario": "The model from Archi"},
    )
    assert landed.status_code == 200, landed.text
    key = landed.json()["scenario"]["key"]
    # Main is as it was; the scenario holds what the import would have written.
    assert client.get("/api/history", params={"sinceRevision": 0, "limit": 1000}).json()["items"] == feed
    summary = client.get(f"/api/scenarios/{key}/diff").json()["summary"]
    created = sum(counts.get("created", 0) for counts in summary.values())
    assert created == landed.json()["created"] > 0
