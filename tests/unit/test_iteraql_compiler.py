"""iteraQL compiled to SQL and run against rows inserted directly: from a bare type to navigation with
boolean filters and count, on SQLite and (with BLOCKREPO_TEST_DATABASE_URL) PostgreSQL."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor, GroupRule, load_actor
from blockrepo.access.models import User
from blockrepo.elements.models import Element, ElementValue, Relation
from blockrepo.errors import Forbidden, QuerySyntaxError
from blockrepo.massdata.query.compiler import compile_filter, compile_query
from blockrepo.massdata.query.parser import parse_predicate, parse_query
from blockrepo.metamodel.models import (
    Attribute,
    AttributeGroup,
    AttributeLiteral,
    AttributeTypeActivation,
)
from blockrepo.metamodel.repository import load_metamodel
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.storage.engine import build_engine

NOW = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


@dataclass
class Landscape:
    db: Session
    metamodel: Metamodel
    actor: Actor
    ids: dict[str, int]

    def names(self, text: str, actor: Actor | None = None) -> list[str]:
        compiled = compile_query(parse_query(text), self.metamodel, actor or self.actor, text=text)
        return sorted(self.db.scalars(select(Element.name).where(compiled.condition)))

    def filtered(self, type_name: str, text: str) -> list[str]:
        type_def = self.metamodel.type_named(type_name)
        assert type_def is not None
        condition = compile_filter(parse_predicate(text), type_def, self.metamodel, self.actor, text=text)
        return sorted(self.db.scalars(select(Element.name).where(Element.type_id == type_def.id, condition)))


def _attribute(db: Session, name: str, value_type: str, group: int, types: list[int], **extra: Any) -> int:
    literals = extra.pop("literals", ())
    attribute_id = db.execute(
        insert(Attribute)
        .values(name=name, description="", value_type=value_type, group_id=group, position=0, **extra)
        .returning(Attribute.id)
    ).scalar_one()
    for type_id in types:
        db.execute(insert(AttributeTypeActivation).values(attribute_id=attribute_id, block_type_id=type_id))
    for position, literal in enumerate(literals):
        db.execute(
            insert(AttributeLiteral).values(
                attribute_id=attribute_id, name=literal, description="", position=position
            )
        )
    return int(attribute_id)


@pytest.fixture
def landscape(database_url: str) -> Iterator[Landscape]:
    engine = build_engine(database_url)
    with Session(engine) as db:
        base = load_metamodel(db, 0)
        bp = base.type_named("BusinessProcess")
        is_ = base.type_named("InformationSystem")
        assert bp is not None and is_ is not None
        default_group = base.default_group.id
        secret_group = db.execute(
            insert(AttributeGroup)
            .values(name="Confidential", description="", position=1)
            .returning(AttributeGroup.id)
        ).scalar_one()
        attrs = {
            "Criticality": _attribute(
                db, "Criticality", "enum", default_group, [bp.id, is_.id], literals=("low", "medium", "high")
            ),
            "Costs": _attribute(db, "Costs", "number", default_group, [is_.id]),
            "Annual costs": _attribute(db, "Annual costs", "number", default_group, [is_.id]),
            "GoLive": _attribute(db, "GoLive", "date", default_group, [is_.id]),
            "Tags": _attribute(
                db,
                "Tags",
                "enum",
                default_group,
                [is_.id],
                multiple=True,
                literals=("cloud", "legacy", "core"),
            ),
            "Active": _attribute(db, "Active", "boolean", default_group, [is_.id]),
            "Responsible": _attribute(db, "Responsible", "responsibility", default_group, [is_.id]),
            "Secret": _attribute(db, "Secret", "text", secret_group, [is_.id]),
        }
        metamodel = load_metamodel(db, 1)
        is_ = metamodel.type_named("InformationSystem")
        bp = metamodel.type_named("BusinessProcess")
        assert is_ is not None and bp is not None
        literal_ids = {
            (a.name, lit.name): lit.id for t in (is_, bp) for a in t.properties for lit in a.literals
        }
        builtin = {p.name: p.id for p in is_.builtins}

        ids: dict[str, int] = {}

        def element(type_id: int, name: str, parent: str | None = None, description: str = "") -> None:
            ids[name] = db.execute(
                insert(Element)
                .values(
                    type_id=type_id,
                    name=name,
                    description=description,
                    parent_id=ids[parent] if parent else None,
                    position=0,
                    revision=1,
                    created_at=NOW,
                    last_modified_at=NOW,
                    last_modified_by="system" if name != "Shop" else "anna",
                )
                .returning(Element.id)
            ).scalar_one()

        element(is_.id, "ERP", description="Enterprise resource planning")
        element(is_.id, "ERP Finance", parent="ERP")
        element(is_.id, "ERP Logistics", parent="ERP")
        element(is_.id, "CRM", description="Customer relations")
        element(is_.id, "Shop")
        element(is_.id, "Data%Lake_1")
        element(bp.id, "Sales")
        element(bp.id, "Order handling", parent="Sales")
        element(bp.id, "Invoicing", parent="Sales")
        element(bp.id, "Hiring")

        values: list[dict[str, Any]] = []

        def value(name: str, attribute_id: int, position: int = 0, **column: Any) -> None:
            values.append(
                {
                    "element_id": ids[name],
                    "attribute_id": attribute_id,
                    "position": position,
                    "text_value": None,
                    "number_value": None,
                    "date_value": None,
                    "date_end": None,
                    "bool_value": None,
                    "literal_id": None,
                    **column,
                }
            )

        value("ERP", attrs["Criticality"], literal_id=literal_ids[("Criticality", "high")])
        value("CRM", attrs["Criticality"], literal_id=literal_ids[("Criticality", "medium")])
        value("Sales", attrs["Criticality"], literal_id=literal_ids[("Criticality", "high")])
        value("Hiring", attrs["Criticality"], literal_id=literal_ids[("Criticality", "low")])
        value("ERP", attrs["Costs"], number_value=1000.0)
        value("CRM", attrs["Costs"], number_value=500.0)
        value("ERP Finance", attrs["Costs"], number_value=200.5)
        value("ERP", attrs["Annual costs"], number_value=12.0)
        value("ERP", attrs["GoLive"], date_value=dt.date(2020, 5, 1))
        value("CRM", attrs["GoLive"], date_value=dt.date(2024, 1, 15))
        value("ERP", attrs["Tags"], 0, literal_id=literal_ids[("Tags", "core")])
        value("ERP", attrs["Tags"], 1, literal_id=literal_ids[("Tags", "legacy")])
        value("CRM", attrs["Tags"], 0, literal_id=literal_ids[("Tags", "cloud")])
        value("ERP", attrs["Active"], bool_value=True)
        value("CRM", attrs["Active"], bool_value=False)
        value("ERP", attrs["Responsible"], text_value="anna")
        value("CRM", attrs["Secret"], text_value="classified")
        value("ERP", builtin["status"], literal_id=literal_ids[("status", "CURRENT")])
        value("ERP Finance", builtin["status"], literal_id=literal_ids[("status", "CURRENT")])
        value("CRM", builtin["status"], literal_id=literal_ids[("status", "PLANNED")])
        value("ERP Logistics", builtin["status"], literal_id=literal_ids[("status", "INACTIVE")])
        value("ERP", builtin["version"], text_value="2.1")
        value("CRM", builtin["version"], text_value="10.0-beta")
        value("ERP", builtin["runtimePeriod"], date_value=dt.date(2020, 1, 1), date_end=dt.date(2030, 12, 31))
        value("CRM", builtin["runtimePeriod"], date_value=dt.date(2024, 1, 1))
        db.execute(insert(ElementValue), values)

        business_mapping = metamodel.relation_type_named("BusinessProcess_InformationSystem")
        succession = metamodel.relation_type_named("InformationSystem_successors")
        assert business_mapping is not None and succession is not None
        links = [
            (business_mapping.id, "Order handling", "ERP", 0),
            (business_mapping.id, "Order handling", "CRM", 1),
            (business_mapping.id, "Order handling", "Shop", 2),
            (business_mapping.id, "Invoicing", "ERP Finance", 0),
            (business_mapping.id, "Invoicing", "ERP", 1),
            (business_mapping.id, "Sales", "CRM", 0),
            (succession.id, "ERP", "Shop", 0),  # ERP's predecessors: Shop
            (succession.id, "CRM", "ERP", 0),  # CRM's predecessors: ERP
        ]
        db.execute(
            insert(Relation),
            [
                {"relation_type_id": rt, "source_id": ids[s], "target_id": ids[t], "position": p}
                for rt, s, t, p in links
            ],
        )
        db.flush()
        system = db.scalars(select(User).where(User.login == "system")).one()
        actor = load_actor(db, system)
        yield Landscape(db, metamodel, actor, ids)
        db.rollback()
    engine.dispose()


# --- selecting a type --------------------------------------------------------------------------------


def test_bare_type_selects_every_element_of_it(landscape: Landscape) -> None:
    assert landscape.names("BusinessProcess;") == ["Hiring", "Invoicing", "Order handling", "Sales"]


def test_unknown_type_is_invalid_with_position(landscape: Landscape) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        landscape.names("  Nothing;")
    assert caught.value.instance_code == "query_invalid"
    assert caught.value.extra["position"]["column"] == 3


# --- comparisons -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        ('@name = "CRM"', ["CRM"]),
        ('@name != "CRM"', ["Data%Lake_1", "ERP", "ERP Finance", "ERP Logistics", "Shop"]),
        ('@name < "CRM"', []),
        ('@name >= "ERP"', ["ERP", "ERP Finance", "ERP Logistics", "Shop"]),
        ('@name.contains("Lake_")', ["Data%Lake_1"]),
        ('@name.contains("%")', ["Data%Lake_1"]),
        ('@name.contains("erp")', []),
        ('@name.containsIgnoreCase("erp l")', ["ERP Logistics"]),
        ('@name.containsIgnoreCase("LAKE_")', ["Data%Lake_1"]),
        ('@Tags.containsIgnoreCase("LEG")', ["ERP"]),
        ('@description.containsIgnoreCase("PLANNING")', ["ERP"]),
        ('@name.startsWith("ERP ")', ["ERP Finance", "ERP Logistics"]),
        ('@name.endsWith("ics")', ["ERP Logistics"]),
        ('@name.endsWith("A very long suffix than any name")', []),
        ('@description.contains("planning")', ["ERP"]),
        ("@description = null", ["Data%Lake_1", "ERP Finance", "ERP Logistics", "Shop"]),
        ("@description != null", ["CRM", "ERP"]),
        ("@Costs > 300", ["CRM", "ERP"]),
        ("@Costs <= 500", ["CRM", "ERP Finance"]),
        ("@Costs = 200.5", ["ERP Finance"]),
        ("@Costs != 1000", ["CRM", "Data%Lake_1", "ERP Finance", "ERP Logistics", "Shop"]),
        ("@Costs = null", ["Data%Lake_1", "ERP Logistics", "Shop"]),
        ('@"Annual costs" >= 12', ["ERP"]),
        ("@GoLive < 2021-01-01", ["ERP"]),
        ('@GoLive >= "2021-01-01"', ["CRM"]),
        ('@Criticality = "high"', ["ERP"]),
        ('@Criticality >= "medium"', ["CRM", "ERP"]),
        ('@Criticality < "high"', ["CRM"]),
        ('@Criticality != "high"', ["CRM", "Data%Lake_1", "ERP Finance", "ERP Logistics", "Shop"]),
        ('@Tags = "legacy"', ["ERP"]),
        ('@Tags.startsWith("c")', ["CRM", "ERP"]),
        ("@Active = true", ["ERP"]),
        ("@Active = false", ["CRM"]),
        ("@Active != true", ["CRM", "Data%Lake_1", "ERP Finance", "ERP Logistics", "Shop"]),
        ('@Responsible = "anna"', ["ERP"]),
        ('@status = "CURRENT"', ["ERP", "ERP Finance"]),
        ('@version.contains("beta")', ["CRM"]),
        ("@runtimePeriod.start <= 2020-06-01", ["ERP"]),
        ("@runtimePeriod.end = null", ["CRM", "Data%Lake_1", "ERP Finance", "ERP Logistics", "Shop"]),
        ("@runtimePeriod != null", ["CRM", "ERP"]),
        ('@lastModificationUser = "anna"', ["Shop"]),
        (
            "@lastModificationTime = 2025-03-01",
            ["CRM", "Data%Lake_1", "ERP", "ERP Finance", "ERP Logistics", "Shop"],
        ),
        ("@lastModificationTime > 2025-03-01", []),
        (
            "@lastModificationTime < 2025-03-01T12:00:01Z",
            ["CRM", "Data%Lake_1", "ERP", "ERP Finance", "ERP Logistics", "Shop"],
        ),
        ("@lastModificationTime < 2025-03-01T13:00:00+02:00", []),
        ("@revision = 1", ["CRM", "Data%Lake_1", "ERP", "ERP Finance", "ERP Logistics", "Shop"]),
    ],
)
def test_comparisons(landscape: Landscape, predicate: str, expected: list[str]) -> None:
    assert landscape.names(f"InformationSystem[{predicate}]") == expected


def test_id_comparison(landscape: Landscape) -> None:
    assert landscape.names(f"InformationSystem[@id = {landscape.ids['CRM']}]") == ["CRM"]


def test_references_compare_by_name_or_id(landscape: Landscape) -> None:
    assert landscape.names('InformationSystem[@parent = "ERP"]') == ["ERP Finance", "ERP Logistics"]
    assert landscape.names(f"InformationSystem[@parent = {landscape.ids['ERP']}]") == [
        "ERP Finance",
        "ERP Logistics",
    ]
    assert landscape.names("InformationSystem[@parent = null & @children != null]") == ["ERP"]
    assert landscape.names('InformationSystem[@children.endsWith("Finance")]') == ["ERP"]
    assert landscape.names('InformationSystem[@businessProcesses = "Sales"]') == ["CRM"]
    assert landscape.names('InformationSystem[@businessProcesses != "Order handling"]') == [
        "Data%Lake_1",
        "ERP Finance",
        "ERP Logistics",
    ]
    assert landscape.names("InformationSystem[@businessProcesses = null]") == ["Data%Lake_1", "ERP Logistics"]
    assert landscape.names('BusinessProcess[@informationSystems.startsWith("ERP ")]') == ["Invoicing"]


# --- boolean combinations ----------------------------------------------------------------------------


def test_and_or_not_and_parentheses(landscape: Landscape) -> None:
    assert landscape.names('InformationSystem[@Costs > 100 & @status = "CURRENT"]') == ["ERP", "ERP Finance"]
    assert landscape.names('InformationSystem[@Costs > 600 | @status = "INACTIVE"]') == [
        "ERP",
        "ERP Logistics",
    ]
    assert landscape.names("InformationSystem[!(@Costs > 100)]") == ["Data%Lake_1", "ERP Logistics", "Shop"]
    assert landscape.names('InformationSystem[(@Costs > 600 | @status = "PLANNED") & !@Tags = "legacy"]') == [
        "CRM"
    ]


def test_negation_is_two_valued_on_nullable_references(landscape: Landscape) -> None:
    # Top-level elements have no parent: `!(@parent = "ERP")` must still select them.
    assert landscape.names('InformationSystem[!(@parent = "ERP")]') == ["CRM", "Data%Lake_1", "ERP", "Shop"]


def test_not_and_complement_partition_the_type(landscape: Landscape) -> None:
    every = landscape.names("InformationSystem;")
    for predicate in (
        '@Criticality >= "medium"',
        "@GoLive < 2022-01-01",
        '@parent = "ERP"',
        "count(predecessors) > 0",
    ):
        chosen = landscape.names(f"InformationSystem[{predicate}]")
        rest = landscape.names(f"InformationSystem[!({predicate})]")
        assert sorted(chosen + rest) == every


# --- count ---------------------------------------------------------------------------------------------


def test_count_of_relations(landscape: Landscape) -> None:
    assert landscape.names("BusinessProcess[count(informationSystems) > 2]") == ["Order handling"]
    assert landscape.names("BusinessProcess[count(informationSystems) = 2]") == ["Invoicing"]
    assert landscape.names("BusinessProcess[count(informationSystems) >= 1]") == [
        "Invoicing",
        "Order handling",
        "Sales",
    ]
    assert landscape.names("BusinessProcess[count(informationSystems) = 0]") == ["Hiring"]
    assert landscape.names("BusinessProcess[count(informationSystems) < 2]") == ["Hiring", "Sales"]


def test_count_with_a_filter_on_the_related_elements(landscape: Landscape) -> None:
    assert landscape.names('BusinessProcess[count(informationSystems[@status = "CURRENT"]) >= 2]') == [
        "Invoicing"
    ]
    assert landscape.names('BusinessProcess[count(informationSystems[@status = "CURRENT"]) = 1]') == [
        "Order handling"
    ]


def test_count_of_children_and_values(landscape: Landscape) -> None:
    assert landscape.names("InformationSystem[count(children) = 2]") == ["ERP"]
    assert landscape.names("InformationSystem[count(@Tags) = 2]") == ["ERP"]
    assert landscape.names("InformationSystem[count(@Tags) = 0]") == [
        "Data%Lake_1",
        "ERP Finance",
        "ERP Logistics",
        "Shop",
    ]


# --- navigation ----------------------------------------------------------------------------------------


def test_navigation_along_a_relation_end(landscape: Landscape) -> None:
    assert landscape.names('BusinessProcess[@name = "Invoicing"]/informationSystems;') == [
        "ERP",
        "ERP Finance",
    ]


def test_navigation_in_the_reverse_direction(landscape: Landscape) -> None:
    assert landscape.names('InformationSystem[@name = "ERP"]/businessProcesses;') == [
        "Invoicing",
        "Order handling",
    ]


def test_navigation_with_filters_at_each_step(landscape: Landscape) -> None:
    text = (
        'BusinessProcess[@parent = "Sales" & !@name = "Invoicing"]'
        '/informationSystems[@Costs > 0 | @Tags = "cloud"]'
    )
    assert landscape.names(text) == ["CRM", "ERP"]


def test_chained_navigation_over_a_self_relation_and_the_hierarchy(landscape: Landscape) -> None:
    assert landscape.names('InformationSystem[@name = "CRM"]/predecessors;') == ["ERP"]
    assert landscape.names('InformationSystem[@name = "CRM"]/predecessors/predecessors;') == ["Shop"]
    assert landscape.names('InformationSystem[@name = "Shop"]/successors/children;') == [
        "ERP Finance",
        "ERP Logistics",
    ]
    assert landscape.names(
        'BusinessProcess[@name = "Invoicing"]/parent/children/informationSystems/parent;'
    ) == ["ERP"]


def test_navigation_result_can_be_counted_and_filtered(landscape: Landscape) -> None:
    text = 'InformationSystem[@status = "CURRENT"]/businessProcesses[count(informationSystems) > 2]'
    assert landscape.names(text) == ["Order handling"]


def test_unknown_relation_end_names_the_navigable_ones(landscape: Landscape) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        landscape.names("BusinessProcess/systems")
    assert "informationSystems" in caught.value.detail
    assert caught.value.extra["position"]["column"] == 17


# --- the filter parameter ----------------------------------------------------------------------------


def test_filter_parameter_applies_to_one_type(landscape: Landscape) -> None:
    assert landscape.filtered("InformationSystem", '@Costs >= 500 & @Criticality = "high"') == ["ERP"]


# --- meaning errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("predicate", "fragment"),
    [
        ("@nothing = 1", "no property 'nothing'"),
        ('@Costs = "high"', "compare it with a number"),
        ('@Costs.contains("1")', "applies to text"),
        ("@name = 1", "compare it with a string"),
        ('@Criticality = "extreme"', "not a literal of Criticality"),
        ("@Active > true", "boolean"),
        ("@GoLive = 5", "is a date"),
        ('@GoLive = "soon"', "is a date"),
        ("@runtimePeriod < 2020-01-01", "'@runtimePeriod.start'"),
        ("@Costs.start = 1", "only a dateInterval"),
        ("@parent > 3", "compare it with = or !="),
        ("@Costs < null", "null can only be compared"),
        ("count(informationSystems) > 1.5", "whole number"),
        ("count(nothing) > 1", "no relation end 'nothing'"),
        ("count(@nothing) > 1", "no property 'nothing'"),
    ],
)
def test_meaning_errors_are_400_with_position(landscape: Landscape, predicate: str, fragment: str) -> None:
    type_name = "BusinessProcess" if "informationSystems" in predicate else "InformationSystem"
    with pytest.raises(QuerySyntaxError) as caught:
        landscape.names(f"{type_name}[{predicate}]")
    assert caught.value.status == 400
    assert fragment in caught.value.detail
    assert caught.value.extra["position"]["column"] > len(type_name)


# --- permissions ---------------------------------------------------------------------------------------


def _reader(landscape: Landscape, *type_names: str) -> Actor:
    type_ids = [t.id for t in landscape.metamodel.types if t.name in type_names]
    secret = next(g for g in landscape.metamodel.groups if g.name == "Confidential")
    return Actor(
        user_id=999,
        login="reader",
        supervisor=False,
        role_ids=frozenset({1000}),
        type_permissions={type_id: frozenset({"read"}) for type_id in type_ids},
        group_rules={secret.id: GroupRule(readers=frozenset({1001}))},
    )


def test_hidden_properties_cannot_be_queried(landscape: Landscape) -> None:
    reader = _reader(landscape, "InformationSystem", "BusinessProcess")
    assert landscape.names('InformationSystem[@Secret = "classified"]') == ["CRM"]
    with pytest.raises(QuerySyntaxError) as caught:
        landscape.names('InformationSystem[@Secret = "classified"]', actor=reader)
    assert "no property 'Secret'" in caught.value.detail


def test_ends_to_unreadable_types_are_hidden(landscape: Landscape) -> None:
    reader = _reader(landscape, "InformationSystem")
    for text in ("InformationSystem/businessProcesses", "InformationSystem[@businessProcesses = null]"):
        with pytest.raises(QuerySyntaxError):
            landscape.names(text, actor=reader)
    assert landscape.names("InformationSystem[count(predecessors) > 0]", actor=reader) == ["CRM", "ERP"]


def test_unreadable_start_type_is_forbidden(landscape: Landscape) -> None:
    reader = _reader(landscape, "InformationSystem")
    with pytest.raises(Forbidden):
        landscape.names("BusinessProcess", actor=reader)


def test_builtins_ignore_group_rules(landscape: Landscape) -> None:
    reader = replace(
        _reader(landscape, "InformationSystem"),
        group_rules={landscape.metamodel.default_group.id: GroupRule(readers=frozenset({1001}))},
    )
    assert landscape.names('InformationSystem[@status = "PLANNED"]', actor=reader) == ["CRM"]
    with pytest.raises(QuerySyntaxError):
        landscape.names("InformationSystem[@Costs > 1]", actor=reader)
