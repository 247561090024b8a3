"""The default EA metamodel of METAMODEL.md, as plain data that `bootstrap` stores like any admin edit."""

from __future__ import annotations

from dataclasses import dataclass

# (persistent name, display name, abbreviation)
DEFAULT_TYPES: tuple[tuple[str, str, str], ...] = (
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
)

STATUS_LITERALS = ("CURRENT", "PLANNED", "TARGET", "INACTIVE")


@dataclass(frozen=True)
class BuiltinSpec:
    name: str
    value_type: str
    literals: tuple[str, ...] = ()


# Built-ins beyond name/description/parent, per type.
DEFAULT_BUILTINS: dict[str, tuple[BuiltinSpec, ...]] = {
    "InformationSystem": (
        BuiltinSpec("version", "text"),
        BuiltinSpec("status", "enum", STATUS_LITERALS),
        BuiltinSpec("runtimePeriod", "dateInterval"),
    ),
    "TechnicalComponent": (
        BuiltinSpec("version", "text"),
        BuiltinSpec("status", "enum", (*STATUS_LITERALS, "UNDEFINED")),
        BuiltinSpec("runtimePeriod", "dateInterval"),
    ),
    "Project": (BuiltinSpec("runtimePeriod", "dateInterval"),),
}


@dataclass(frozen=True)
class RelationSpec:
    name: str
    source: str
    source_end: str
    target: str
    target_end: str
    source_multiple: bool = True
    target_multiple: bool = True
    attributable: bool = False


def _end(type_name: str) -> str:
    """camelCase plural of a type name: InformationSystem -> informationSystems."""
    plural = {
        "BusinessProcess": "businessProcesses",
        "ItService": "itServices",
    }.get(type_name)
    if plural:
        return plural
    return type_name[0].lower() + type_name[1:] + "s"


def _between(source: str, targets: tuple[str, ...], attributable: bool = False) -> list[RelationSpec]:
    return [
        RelationSpec(
            f"{source}_{target}", source, _end(target), target, _end(source), attributable=attributable
        )
        for target in targets
    ]


def _self(type_name: str, source_end: str, target_end: str, source_multiple: bool = True) -> RelationSpec:
    return RelationSpec(
        f"{type_name}_{target_end}",
        type_name,
        source_end,
        type_name,
        target_end,
        source_multiple=source_multiple,
    )


DEFAULT_RELATIONS: tuple[RelationSpec, ...] = (
    *_between(
        "BusinessDomain",
        (
            "BusinessProcess",
            "BusinessFunction",
            "BusinessObject",
            "BusinessUnit",
            "Product",
            "InformationSystem",
            "ItService",
            "InformationFlow",
        ),
    ),
    *_between("BusinessFunction", ("BusinessObject", "InformationSystem")),
    *_between("BusinessObject", ("InformationSystem",)),
    *_between(
        "InformationSystemDomain",
        (
            "InformationSystem",
            "BusinessObject",
            "InformationFlow",
            "ItService",
            "TechnicalComponent",
            "InfrastructureElement",
            "BusinessFunction",
        ),
    ),
    *_between("InformationSystem", ("TechnicalComponent", "InfrastructureElement", "Project", "ItService")),
    *_between("BusinessProcess", ("InformationSystem",), attributable=True),
    *_between("BusinessUnit", ("InformationSystem",), attributable=True),
    *_between("Product", ("InformationSystem",), attributable=True),
    # Two relation types join InformationFlow and InformationSystem, so these are named by their source end.
    RelationSpec(
        "InformationFlow_sourceSystem",
        "InformationFlow",
        "sourceSystem",
        "InformationSystem",
        "outgoingFlows",
        source_multiple=False,
    ),
    RelationSpec(
        "InformationFlow_targetSystem",
        "InformationFlow",
        "targetSystem",
        "InformationSystem",
        "incomingFlows",
        source_multiple=False,
    ),
    *_between("InformationFlow", ("BusinessObject", "TechnicalComponent")),
    *_between("TechnicalComponent", ("ArchitecturalDomain", "InfrastructureElement")),
    *_between(
        "Project",
        ("BusinessObject", "InformationFlow", "ItService", "TechnicalComponent", "InfrastructureElement"),
    ),
    *_between(
        "ArchitecturalDomain", ("InfrastructureElement", "InformationFlow", "ItService", "InformationSystem")
    ),
    *(
        _self(t, "predecessors", "successors")
        for t in (
            "InformationSystem",
            "TechnicalComponent",
            "InfrastructureElement",
            "BusinessFunction",
            "BusinessProcess",
            "ItService",
            "InformationFlow",
        )
    ),
    *(_self(t, "baseComponents", "parentComponents") for t in ("InformationSystem", "TechnicalComponent")),
    _self("BusinessObject", "generalisation", "specialisations", source_multiple=False),
)
