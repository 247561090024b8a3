"""Which ArchiMate 3.1 element and relationship stands for which building block type and relation type,
both ways: the default for the default metamodel, replaced or extended by a JSON file an operator names."""

from __future__ import annotations

from collections.abc import Mapping as MappingType
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from blockrepo.errors import BadRequest, ErrorItem
from blockrepo.metamodel.defaults import DEFAULT_RELATIONS
from blockrepo.metamodel.snapshot import RelationTypeDef

# The element types of ArchiMate 3.1 (the exchange format's ElementTypeEnum, junctions apart).
ELEMENT_TYPES = frozenset(
    [
        "BusinessActor",
        "BusinessRole",
        "BusinessCollaboration",
        "BusinessInterface",
        "BusinessProcess",
        "BusinessFunction",
        "BusinessInteraction",
        "BusinessEvent",
        "BusinessService",
        "BusinessObject",
        "Contract",
        "Representation",
        "Product",
        "ApplicationComponent",
        "ApplicationCollaboration",
        "ApplicationInterface",
        "ApplicationFunction",
        "ApplicationInteraction",
        "ApplicationProcess",
        "ApplicationEvent",
        "ApplicationService",
        "DataObject",
        "Node",
        "Device",
        "SystemSoftware",
        "TechnologyCollaboration",
        "TechnologyInterface",
        "Path",
        "CommunicationNetwork",
        "TechnologyFunction",
        "TechnologyProcess",
        "TechnologyInteraction",
        "TechnologyEvent",
        "TechnologyService",
        "Artifact",
        "Equipment",
        "Facility",
        "DistributionNetwork",
        "Material",
        "WorkPackage",
        "Deliverable",
        "ImplementationEvent",
        "Plateau",
        "Gap",
        "Stakeholder",
        "Driver",
        "Assessment",
        "Goal",
        "Outcome",
        "Principle",
        "Requirement",
        "Constraint",
        "Meaning",
        "Value",
        "Resource",
        "Capability",
        "ValueStream",
        "CourseOfAction",
        "Location",
        "Grouping",
    ]
)
RELATIONSHIP_TYPES = frozenset(
    [
        "Composition",
        "Aggregation",
        "Assignment",
        "Realization",
        "Serving",
        "Access",
        "Influence",
        "Triggering",
        "Flow",
        "Specialization",
        "Association",
    ]
)
# Names the 2.1 format (and Archi's CSV files) use for what 3.1 calls otherwise.
RENAMED_TYPES = {
    "UsedBy": "Serving",
    "Realisation": "Realization",
    "Specialisation": "Specialization",
    "InfrastructureService": "TechnologyService",
    "InfrastructureInterface": "TechnologyInterface",
    "InfrastructureFunction": "TechnologyFunction",
    "Network": "CommunicationNetwork",
    "CommunicationPath": "Path",
    "Group": "Grouping",
}


def archimate_type(raw: str) -> str:
    """A type name of any exchange version as ArchiMate 3.1 names it: `UsedByRelationship` -> `Serving`."""
    name = raw.rpartition(":")[2]
    if name.endswith("Relationship"):
        name = name[: -len("Relationship")]
    return RENAMED_TYPES.get(name, name)


@dataclass(frozen=True)
class RelationshipRule:
    """How one relation type is written: as `relationship` from its source element to its target, or
    (`reversed`) from target to source, as ArchiMate reads the sentence (an IS *realizes* a capability)."""

    relationship: str
    reversed: bool = False


ASSOCIATION = RelationshipRule("Association")


@dataclass(frozen=True)
class FlowRule:
    """A building block type written as a relationship between the elements its two ends name (an
    information flow as a Flow between two application components); one that lacks an end is written as
    the element `otherwise`."""

    relationship: str
    source_end: str
    target_end: str
    otherwise: str


@dataclass(frozen=True)
class ArchimateMapping:
    """The mapping in force. `elements`: building block type -> ArchiMate element type (export);
    `element_sources`: ArchiMate element type -> building block type (import; every exported type maps
    back, more may map in); `relations`: relation type -> rule; `flows`: types written as relationships;
    `hierarchy`: the relationship a parent has to its children."""

    elements: MappingType[str, str]
    element_sources: MappingType[str, str]
    relations: MappingType[str, RelationshipRule]
    flows: MappingType[str, FlowRule] = field(default_factory=dict)
    hierarchy: str = "Composition"

    def rule_for(self, relation_type: RelationTypeDef) -> RelationshipRule | None:
        """The rule of a relation type; one without (an administrator's own) is an association from its
        source to its target, which ArchiMate allows between any two elements. None for the ends a type
        written as a relationship joins (an information flow's systems): the relationship is them."""
        flow = self.flows.get(relation_type.source_type)
        if flow is not None and relation_type.source_end in (flow.source_end, flow.target_end):
            return None
        return self.relations.get(relation_type.name, ASSOCIATION)

    def as_json(self) -> dict[str, Any]:
        return {
            "elements": dict(self.elements),
            "elementSources": dict(self.element_sources),
            "relations": {
                name: {"relationship": rule.relationship, "reversed": rule.reversed}
                for name, rule in self.relations.items()
            },
            "flows": {
                name: {
                    "relationship": rule.relationship,
                    "sourceEnd": rule.source_end,
                    "targetEnd": rule.target_end,
                    "otherwise": rule.otherwise,
                }
                for name, rule in self.flows.items()
            },
            "hierarchy": self.hierarchy,
        }


_DEFAULT_ELEMENTS = {
    "BusinessDomain": "Grouping",
    "BusinessProcess": "BusinessProcess",
    "BusinessUnit": "BusinessActor",
    "Product": "Product",
    "BusinessFunction": "Capability",
    "BusinessObject": "BusinessObject",
    "InformationSystemDomain": "Grouping",
    "InformationSystem": "ApplicationComponent",
    "ItService": "ApplicationService",
    "ArchitecturalDomain": "Grouping",
    "TechnicalComponent": "SystemSoftware",
    "InfrastructureElement": "Node",
    "Project": "WorkPackage",
}
# Import only: more ArchiMate types that fit a building block type. A Grouping becomes a business domain
# unless its identifier says which domain type it was exported from.
_MORE_SOURCES = {
    "Grouping": "BusinessDomain",
    "BusinessFunction": "BusinessFunction",
    "ApplicationCollaboration": "InformationSystem",
    "DataObject": "BusinessObject",
    "TechnologyService": "ItService",
    "Device": "InfrastructureElement",
    "ApplicationInteraction": "InformationFlow",
}
# How each end of a relation of a type with itself reads in ArchiMate, by its source end: a predecessor is
# associated with its successor; a base component serves those that use it; a business object
# specialises its generalisation.
_SELF_RULES = {
    "predecessors": RelationshipRule("Association", reversed=True),
    "baseComponents": RelationshipRule("Serving", reversed=True),
    "generalisation": RelationshipRule("Specialization"),
}
# The relations between two types of the default metamodel, each by name; those a domain or a project
# holds by rule (a domain groups its members: its Grouping aggregates them; a project is associated with
# what it changes), the others one by one.
_DEFAULT_RELATIONS: dict[str, RelationshipRule] = {
    **{
        spec.name: RelationshipRule("Aggregation")
        for spec in DEFAULT_RELATIONS
        if _DEFAULT_ELEMENTS.get(spec.source) == "Grouping" and spec.source != spec.target
    },
    **{spec.name: RelationshipRule("Association") for spec in DEFAULT_RELATIONS if spec.source == "Project"},
    **{
        spec.name: _SELF_RULES[spec.source_end]
        for spec in DEFAULT_RELATIONS
        if spec.source == spec.target and spec.source_end in _SELF_RULES
    },
    "BusinessFunction_BusinessObject": RelationshipRule("Association"),
    "BusinessFunction_InformationSystem": RelationshipRule("Realization", reversed=True),
    "BusinessObject_InformationSystem": RelationshipRule("Access", reversed=True),
    "InformationSystem_TechnicalComponent": RelationshipRule("Serving", reversed=True),
    "InformationSystem_InfrastructureElement": RelationshipRule("Serving", reversed=True),
    "InformationSystem_Project": RelationshipRule("Association", reversed=True),
    "InformationSystem_ItService": RelationshipRule("Realization"),
    "BusinessProcess_InformationSystem": RelationshipRule("Serving", reversed=True),
    "BusinessUnit_InformationSystem": RelationshipRule("Serving", reversed=True),
    "Product_InformationSystem": RelationshipRule("Aggregation"),
    "InformationFlow_BusinessObject": RelationshipRule("Association"),
    "InformationFlow_TechnicalComponent": RelationshipRule("Association"),
    "TechnicalComponent_ArchitecturalDomain": RelationshipRule("Aggregation", reversed=True),
    "TechnicalComponent_InfrastructureElement": RelationshipRule("Assignment", reversed=True),
}
_DEFAULT_FLOWS = {
    "InformationFlow": FlowRule("Flow", "sourceSystem", "targetSystem", otherwise="ApplicationInteraction")
}

DEFAULT_MAPPING = ArchimateMapping(
    elements=_DEFAULT_ELEMENTS,
    element_sources={**{v: k for k, v in _DEFAULT_ELEMENTS.items() if v != "Grouping"}, **_MORE_SOURCES},
    relations=_DEFAULT_RELATIONS,
    flows=_DEFAULT_FLOWS,
)


def _problem(pointer: str, message: str) -> BadRequest:
    return BadRequest(
        f"the ArchiMate mapping: {message}",
        code="invalid_mapping",
        errors=[ErrorItem(pointer, "invalid_mapping", message)],
    )


def mapping_from_json(raw: Any, base: ArchimateMapping = DEFAULT_MAPPING) -> ArchimateMapping:
    """`base` with the entries of a mapping document (the shape `ArchimateMapping.as_json` writes; each
    section optional, its entries replacing the base's of the same name, `null` removing one)."""
    if not isinstance(raw, dict):
        raise _problem("", "a mapping is a JSON object")
    unknown = set(raw) - {"elements", "elementSources", "relations", "flows", "hierarchy"}
    if unknown:
        raise _problem(f"/{sorted(unknown)[0]}", "unknown section")

    def section(key: str) -> dict[str, Any]:
        value = raw.get(key, {})
        if not isinstance(value, dict):
            raise _problem(f"/{key}", "a section is an object")
        return value

    def merged(key: str, base_entries: MappingType[str, Any], read: Any) -> dict[str, Any]:
        entries = dict(base_entries)
        for name, value in section(key).items():
            if value is None:
                entries.pop(name, None)
            else:
                entries[name] = read(f"/{key}/{name}", value)
        return entries

    def element(pointer: str, value: Any) -> str:
        if value not in ELEMENT_TYPES:
            raise _problem(pointer, f"{value!r} is not an ArchiMate 3.1 element type")
        return str(value)

    def source(pointer: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise _problem(pointer, "a building block type name")
        return value

    def relationship(pointer: str, value: Any) -> str:
        if value not in RELATIONSHIP_TYPES:
            raise _problem(pointer, f"{value!r} is not an ArchiMate 3.1 relationship type")
        return str(value)

    def relation(pointer: str, value: Any) -> RelationshipRule:
        if not isinstance(value, dict):
            raise _problem(pointer, '{"relationship": …, "reversed": false}')
        return RelationshipRule(
            relationship(pointer + "/relationship", value.get("relationship")),
            bool(value.get("reversed", False)),
        )

    def flow(pointer: str, value: Any) -> FlowRule:
        if not isinstance(value, dict) or not all(
            isinstance(value.get(key), str) for key in ("sourceEnd", "targetEnd")
        ):
            raise _problem(pointer, '{"relationship", "sourceEnd", "targetEnd", "otherwise"}')
        return FlowRule(
            relationship(pointer + "/relationship", value.get("relationship", "Flow")),
            value["sourceEnd"],
            value["targetEnd"],
            element(pointer + "/otherwise", value.get("otherwise", "ApplicationInteraction")),
        )

    hierarchy = raw.get("hierarchy", base.hierarchy)
    return ArchimateMapping(
        elements=merged("elements", base.elements, element),
        element_sources=merged("elementSources", base.element_sources, source),
        relations=merged("relations", base.relations, relation),
        flows=merged("flows", base.flows, flow),
        hierarchy=relationship("/hierarchy", hierarchy),
    )


def load_mapping(path: str | None) -> ArchimateMapping:
    """The mapping in force: the default, with the entries of the JSON file at `path` (the setting
    `archimate_mapping`) if one is named."""
    if not path:
        return DEFAULT_MAPPING
    try:
        raw = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise _problem("", f"cannot read {path}: {exc}") from exc
    return mapping_from_json(raw)
