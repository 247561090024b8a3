"""The default metamodel, transcribed row by row from METAMODEL.md (the contract) and compared through the
metamodel API exactly: every type, every built-in, every relation type, no more and no less.

The tables below are written out from the document, not derived from `metamodel/defaults.py`, so that a
slip in the product's helpers (an end name, a cardinality, a missing row) shows here."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

# | persistent name | display name | abbr. |   (every type is hierarchical)
TYPES: list[tuple[str, str, str]] = [
    ("BusinessDomain", "Business Domain", "BD"),
    ("BusinessProcess", "Business Process", "BP"),
    ("BusinessUnit", "Business Unit", "BU"),
    ("Product", "Product", "PRD"),
    ("BusinessFunction", "Capability", "CAP"),
    ("BusinessObject", "Business Object", "BO"),
    ("InformationSystemDomain", "Information System Domain", "ISD"),
    ("InformationSystem", "Information System", "IS"),
    ("InformationFlow", "Information Flow", "IF"),
    ("ItService", "IT Service", "ITS"),
    ("ArchitecturalDomain", "Architectural Domain", "AD"),
    ("TechnicalComponent", "Technical Component", "TC"),
    ("InfrastructureElement", "Infrastructure Element", "IE"),
    ("Project", "Project", "PRJ"),
]
TYPE_NAMES = [name for name, _, _ in TYPES]

STATUS = ["CURRENT", "PLANNED", "TARGET", "INACTIVE"]
# Extra built-ins: name -> (value type, literals)
EXTRA_BUILTINS: dict[str, dict[str, tuple[str, list[str]]]] = {
    "InformationSystem": {
        "version": ("text", []),
        "status": ("enum", STATUS),
        "runtimePeriod": ("dateInterval", []),
    },
    "TechnicalComponent": {
        "version": ("text", []),
        "status": ("enum", [*STATUS, "UNDEFINED"]),
        "runtimePeriod": ("dateInterval", []),
    },
    "Project": {"runtimePeriod": ("dateInterval", [])},
}
# Every type: name (text, mandatory, unique), description (richtext), parent 0..1, children (ordered),
# lastModificationTime/User read-only; plus the element keys id, type and revision (read-only).
COMMON_BUILTINS = {
    "id",
    "type",
    "revision",
    "name",
    "description",
    "parent",
    "children",
    "lastModificationTime",
    "lastModificationUser",
}

ONE = False  # a (0..1) end
MANY = True
# (name, source, sourceEnd, target, targetEnd, sourceMultiple, targetMultiple, attributable)
Row = tuple[str, str, str, str, str, bool, bool, bool]
RELATIONS: list[Row] = [
    # BusinessDomain: businessProcesses / … / informationFlows  <->  businessDomains
    ("BusinessDomain_BusinessProcess", "BusinessDomain", "businessProcesses", "BusinessProcess", "businessDomains", MANY, MANY, False),
    ("BusinessDomain_BusinessFunction", "BusinessDomain", "businessFunctions", "BusinessFunction", "businessDomains", MANY, MANY, False),
    ("BusinessDomain_BusinessObject", "BusinessDomain", "businessObjects", "BusinessObject", "businessDomains", MANY, MANY, False),
    ("BusinessDomain_BusinessUnit", "BusinessDomain", "businessUnits", "BusinessUnit", "businessDomains", MANY, MANY, False),
    ("BusinessDomain_Product", "BusinessDomain", "products", "Product", "businessDomains", MANY, MANY, False),
    ("BusinessDomain_InformationSystem", "BusinessDomain", "informationSystems", "InformationSystem", "businessDomains", MANY, MANY, False),
    ("BusinessDomain_ItService", "BusinessDomain", "itServices", "ItService", "businessDomains", MANY, MANY, False),
    ("BusinessDomain_InformationFlow", "BusinessDomain", "informationFlows", "InformationFlow", "businessDomains", MANY, MANY, False),
    # BusinessFunction: businessObjects / informationSystems  <->  businessFunctions
    ("BusinessFunction_BusinessObject", "BusinessFunction", "businessObjects", "BusinessObject", "businessFunctions", MANY, MANY, False),
    ("BusinessFunction_InformationSystem", "BusinessFunction", "informationSystems", "InformationSystem", "businessFunctions", MANY, MANY, False),
    # BusinessObject: informationSystems  <->  businessObjects
    ("BusinessObject_InformationSystem", "BusinessObject", "informationSystems", "InformationSystem", "businessObjects", MANY, MANY, False),
    # InformationSystemDomain: informationSystems / … / businessFunctions  <->  informationSystemDomains
    ("InformationSystemDomain_InformationSystem", "InformationSystemDomain", "informationSystems", "InformationSystem", "informationSystemDomains", MANY, MANY, False),
    ("InformationSystemDomain_BusinessObject", "InformationSystemDomain", "businessObjects", "BusinessObject", "informationSystemDomains", MANY, MANY, False),
    ("InformationSystemDomain_InformationFlow", "InformationSystemDomain", "informationFlows", "InformationFlow", "informationSystemDomains", MANY, MANY, False),
    ("InformationSystemDomain_ItService", "InformationSystemDomain", "itServices", "ItService", "informationSystemDomains", MANY, MANY, False),
    ("InformationSystemDomain_TechnicalComponent", "InformationSystemDomain", "technicalComponents", "TechnicalComponent", "informationSystemDomains", MANY, MANY, False),
    ("InformationSystemDomain_InfrastructureElement", "InformationSystemDomain", "infrastructureElements", "InfrastructureElement", "informationSystemDomains", MANY, MANY, False),
    ("InformationSystemDomain_BusinessFunction", "InformationSystemDomain", "businessFunctions", "BusinessFunction", "informationSystemDomains", MANY, MANY, False),
    # InformationSystem: technicalComponents / infrastructureElements / projects / itServices  <->  informationSystems
    ("InformationSystem_TechnicalComponent", "InformationSystem", "technicalComponents", "TechnicalComponent", "informationSystems", MANY, MANY, False),
    ("InformationSystem_InfrastructureElement", "InformationSystem", "infrastructureElements", "InfrastructureElement", "informationSystems", MANY, MANY, False),
    ("InformationSystem_Project", "InformationSystem", "projects", "Project", "informationSystems", MANY, MANY, False),
    ("InformationSystem_ItService", "InformationSystem", "itServices", "ItService", "informationSystems", MANY, MANY, False),
    # The business mapping: attributable.
    ("BusinessProcess_InformationSystem", "BusinessProcess", "informationSystems", "InformationSystem", "businessProcesses", MANY, MANY, True),
    ("BusinessUnit_InformationSystem", "BusinessUnit", "informationSystems", "InformationSystem", "businessUnits", MANY, MANY, True),
    ("Product_InformationSystem", "Product", "informationSystems", "InformationSystem", "products", MANY, MANY, True),
    # InformationFlow -> InformationSystem twice; `{Source}_{Target}` would name both alike, so these two
    # are named by their source end (the one deviation from the naming rule, which cannot hold here).
    ("InformationFlow_sourceSystem", "InformationFlow", "sourceSystem", "InformationSystem", "outgoingFlows", ONE, MANY, False),
    ("InformationFlow_targetSystem", "InformationFlow", "targetSystem", "InformationSystem", "incomingFlows", ONE, MANY, False),
    # InformationFlow: businessObjects / technicalComponents  <->  informationFlows
    ("InformationFlow_BusinessObject", "InformationFlow", "businessObjects", "BusinessObject", "informationFlows", MANY, MANY, False),
    ("InformationFlow_TechnicalComponent", "InformationFlow", "technicalComponents", "TechnicalComponent", "informationFlows", MANY, MANY, False),
    # TechnicalComponent: architecturalDomains / infrastructureElements  <->  technicalComponents
    ("TechnicalComponent_ArchitecturalDomain", "TechnicalComponent", "architecturalDomains", "ArchitecturalDomain", "technicalComponents", MANY, MANY, False),
    ("TechnicalComponent_InfrastructureElement", "TechnicalComponent", "infrastructureElements", "InfrastructureElement", "technicalComponents", MANY, MANY, False),
    # Project: businessObjects / informationFlows / itServices / technicalComponents / infrastructureElements  <->  projects
    ("Project_BusinessObject", "Project", "businessObjects", "BusinessObject", "projects", MANY, MANY, False),
    ("Project_InformationFlow", "Project", "informationFlows", "InformationFlow", "projects", MANY, MANY, False),
    ("Project_ItService", "Project", "itServices", "ItService", "projects", MANY, MANY, False),
    ("Project_TechnicalComponent", "Project", "technicalComponents", "TechnicalComponent", "projects", MANY, MANY, False),
    ("Project_InfrastructureElement", "Project", "infrastructureElements", "InfrastructureElement", "projects", MANY, MANY, False),
    # ArchitecturalDomain: infrastructureElements / informationFlows / itServices / informationSystems  <->  architecturalDomains
    ("ArchitecturalDomain_InfrastructureElement", "ArchitecturalDomain", "infrastructureElements", "InfrastructureElement", "architecturalDomains", MANY, MANY, False),
    ("ArchitecturalDomain_InformationFlow", "ArchitecturalDomain", "informationFlows", "InformationFlow", "architecturalDomains", MANY, MANY, False),
    ("ArchitecturalDomain_ItService", "ArchitecturalDomain", "itServices", "ItService", "architecturalDomains", MANY, MANY, False),
    ("ArchitecturalDomain_InformationSystem", "ArchitecturalDomain", "informationSystems", "InformationSystem", "architecturalDomains", MANY, MANY, False),
    # Self relations, named {Type}_{targetEnd}: predecessors / successors
    ("InformationSystem_successors", "InformationSystem", "predecessors", "InformationSystem", "successors", MANY, MANY, False),
    ("TechnicalComponent_successors", "TechnicalComponent", "predecessors", "TechnicalComponent", "successors", MANY, MANY, False),
    ("InfrastructureElement_successors", "InfrastructureElement", "predecessors", "InfrastructureElement", "successors", MANY, MANY, False),
    ("BusinessFunction_successors", "BusinessFunction", "predecessors", "BusinessFunction", "successors", MANY, MANY, False),
    ("BusinessProcess_successors", "BusinessProcess", "predecessors", "BusinessProcess", "successors", MANY, MANY, False),
    ("ItService_successors", "ItService", "predecessors", "ItService", "successors", MANY, MANY, False),
    ("InformationFlow_successors", "InformationFlow", "predecessors", "InformationFlow", "successors", MANY, MANY, False),
    # baseComponents / parentComponents (uses)
    ("InformationSystem_parentComponents", "InformationSystem", "baseComponents", "InformationSystem", "parentComponents", MANY, MANY, False),
    ("TechnicalComponent_parentComponents", "TechnicalComponent", "baseComponents", "TechnicalComponent", "parentComponents", MANY, MANY, False),
    # generalisation (0..1) / specialisations
    ("BusinessObject_specialisations", "BusinessObject", "generalisation", "BusinessObject", "specialisations", ONE, MANY, False),
]  # fmt: skip
KEYS = (
    "name",
    "source",
    "sourceEnd",
    "target",
    "targetEnd",
    "sourceMultiple",
    "targetMultiple",
    "attributable",
)
EXPECTED_RELATIONS = {row[0]: dict(zip(KEYS, row, strict=True)) for row in RELATIONS}


def test_the_transcription_is_complete() -> None:
    """Guards the tables themselves: 14 types, 40 rows of the relation table plus 10 self relations."""
    assert len(TYPES) == len(set(TYPE_NAMES)) == 14
    assert len(RELATIONS) == len(EXPECTED_RELATIONS) == 50
    assert sum(1 for r in RELATIONS if r[1] == r[3]) == 10
    assert [r[0] for r in RELATIONS if r[7]] == [
        "BusinessProcess_InformationSystem",
        "BusinessUnit_InformationSystem",
        "Product_InformationSystem",
    ]
    for name, source, _, target, target_end, *_ in RELATIONS:
        assert {source, target} <= set(TYPE_NAMES)
        if source == target:
            assert name == f"{source}_{target_end}"
        elif source != "InformationFlow" or target != "InformationSystem":
            assert name == f"{source}_{target}"


def test_types_are_exactly_the_fourteen_of_the_contract(client: TestClient) -> None:
    types = client.get("/api/metamodel/types").json()
    assert sorted(t["name"] for t in types) == sorted(TYPE_NAMES)
    got = {t["name"]: (t["displayName"], t["abbreviation"], t["hierarchical"], t["hidden"]) for t in types}
    assert got == {name: (display, abbreviation, True, False) for name, display, abbreviation in TYPES}


@pytest.mark.parametrize("type_name", TYPE_NAMES)
def test_builtins_of_each_type(client: TestClient, type_name: str) -> None:
    response = client.get(f"/api/metamodel/types/{type_name}")
    assert response.status_code == 200, response.text
    properties = {p["name"]: p for p in response.json()["properties"]}
    extras = EXTRA_BUILTINS.get(type_name, {})
    assert set(properties) == COMMON_BUILTINS | set(extras)  # no user attributes in a new repository
    assert all(p["builtin"] for p in properties.values())

    def shape(name: str) -> tuple[Any, ...]:
        p = properties[name]
        return (p["valueType"], p["multiple"], p["mandatory"], p["readOnly"], p["target"])

    assert shape("name") == ("text", False, True, False, None)
    assert shape("description") == ("richtext", False, False, False, None)
    assert shape("parent") == ("reference", False, False, False, type_name)
    assert shape("children") == ("reference", True, False, True, type_name)
    for read_only in ("id", "type", "revision", "lastModificationTime", "lastModificationUser"):
        assert properties[read_only]["readOnly"] is True, read_only
    for name, (value_type, literals) in extras.items():
        assert shape(name) == (value_type, False, False, False, None), name
        assert [lit["name"] for lit in properties[name]["literals"]] == literals, name


def test_relation_types_are_exactly_those_of_the_contract(client: TestClient) -> None:
    response = client.get("/api/metamodel/relationtypes")
    assert response.status_code == 200
    got = {r["name"]: {key: r[key] for key in KEYS} for r in response.json()}
    assert len(got) == len(response.json())
    assert sorted(set(got) - set(EXPECTED_RELATIONS)) == []  # nothing extra
    assert sorted(set(EXPECTED_RELATIONS) - set(got)) == []  # nothing missing
    for name, expected in EXPECTED_RELATIONS.items():
        assert got[name] == expected, name
    assert all(r["attributes"] == [] for r in response.json())


def test_each_relation_type_reads_alone(client: TestClient) -> None:
    for name, expected in EXPECTED_RELATIONS.items():
        response = client.get(f"/api/metamodel/relationtypes/{name}")
        assert response.status_code == 200, response.text
        assert {key: response.json()[key] for key in KEYS} == expected, name


def test_relation_ends_of_each_type_follow_from_the_relation_types(client: TestClient) -> None:
    """Each relation type puts its source end on the source type and its target end on the target type,
    with the cardinality of that end: (0..1) ends such as `sourceSystem` and `generalisation` are single."""
    expected: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in TYPE_NAMES}
    for (
        name,
        source,
        source_end,
        target,
        target_end,
        source_multiple,
        target_multiple,
        attributable,
    ) in RELATIONS:
        expected[source][source_end] = {
            "relationType": name,
            "type": target,
            "multiple": source_multiple,
            "opposite": target_end,
            "side": "source",
            "attributable": attributable,
        }
        expected[target][target_end] = {
            "relationType": name,
            "type": source,
            "multiple": target_multiple,
            "opposite": source_end,
            "side": "target",
            "attributable": attributable,
        }
    for type_name in TYPE_NAMES:
        ends = client.get(f"/api/metamodel/types/{type_name}").json()["relationEnds"]
        got = {e["name"]: {key: e[key] for key in expected[type_name].get(e["name"], {})} for e in ends}
        assert len(got) == len(ends), type_name  # end names are unique on a type
        assert got == expected[type_name], type_name
    assert expected["InformationFlow"]["sourceSystem"]["multiple"] is False
    assert expected["InformationSystem"]["outgoingFlows"]["multiple"] is True
    assert expected["BusinessObject"]["generalisation"]["multiple"] is False
    assert expected["BusinessObject"]["specialisations"]["multiple"] is True
