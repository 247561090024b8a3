"""What an export contains for one actor: the readable types, their readable properties and the relation
ends between exported types, and the metamodel section that lets an empty repository take the data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from blockrepo.access.actor import Actor
from blockrepo.elements.service import ElementView
from blockrepo.errors import Forbidden, UnknownType
from blockrepo.massdata.listing import require_massdata
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, Metamodel, RelationEnd, RelationTypeDef

FORMAT = "blockrepo-export"
FORMAT_VERSION = 1
# Keys of an element record besides its attributes and relation ends.
RECORD_KEYS = ("id", "name", "description", "parent")
# Keys of an attribute in the metamodel section that hold one plain value each (then come its literals,
# types and relation types).
ATTRIBUTE_SCALARS = (
    "name",
    "description",
    "valueType",
    "multiple",
    "mandatory",
    "group",
    "unit",
    "min",
    "max",
)


@dataclass(frozen=True)
class TypePlan:
    """One exported type: the view the records are read through and the parts records carry."""

    type_def: BlockTypeDef
    view: ElementView
    attributes: tuple[AttributeDef, ...]  # built-ins, then user attributes the actor may read
    ends: tuple[RelationEnd, ...]  # source ends towards exported types (each relation once)
    # Asked for (a workbook): the target ends towards exported types, shown read-only beside the ends
    mirrors: tuple[RelationEnd, ...] = ()

    def relation_attributes(self, end: RelationEnd) -> tuple[AttributeDef, ...] | None:
        return self.view.relation_attributes.get(end.relation_type.id)


@dataclass(frozen=True)
class ExportPlan:
    metamodel: Metamodel
    types: tuple[TypePlan, ...]

    @property
    def relation_types(self) -> list[RelationTypeDef]:
        return [end.relation_type for plan in self.types for end in plan.ends]


def plan_export(
    metamodel: Metamodel, actor: Actor, type_names: Sequence[str] | None = None, *, mirrors: bool = False
) -> ExportPlan:
    """The types the actor may read (narrowed to `type_names`), what of them the actor may read; with
    `mirrors` (a workbook) each type's target ends too, which an import does not read. Needs EXPORT,
    whoever calls (the API or `blockrepo export`)."""
    require_massdata(actor, "EXPORT")
    if type_names is not None:
        for name in type_names:
            type_def = metamodel.type_named(name)
            if type_def is None:
                raise UnknownType(f"there is no building block type {name!r}")
            if not actor.can_type(type_def.id, "read"):
                raise Forbidden(f"you may not read {name} elements")
    wanted = set(type_names) if type_names is not None else None
    types = [
        t for t in metamodel.types if actor.can_type(t.id, "read") and (wanted is None or t.name in wanted)
    ]
    included = {t.id for t in types}
    plans = []
    for type_def in types:
        ends = tuple(
            end for end in type_def.ends.values() if end.holder_is_source and end.other_type_id in included
        )
        targets = tuple(
            end
            for end in type_def.ends.values()
            if mirrors and not end.holder_is_source and end.other_type_id in included
        )
        fields = [*RECORD_KEYS, *(p.name for p in type_def.properties), *(e.name for e in (*ends, *targets))]
        view = ElementView.build(metamodel, actor, type_def, fields)
        plans.append(
            TypePlan(
                type_def,
                view,
                view.properties,
                tuple(e for e in ends if e in view.ends),
                tuple(e for e in targets if e in view.ends),
            )
        )
    return ExportPlan(metamodel, tuple(plans))


def _literal_json(attribute: AttributeDef) -> list[dict[str, Any]]:
    return [
        {"name": lit.name, "description": lit.description, "color": lit.color} for lit in attribute.literals
    ]


def metamodel_section(plan: ExportPlan) -> dict[str, Any]:
    """Groups, types (with their built-ins), relation types and attributes of the export, as far as the
    exported data needs them."""
    metamodel = plan.metamodel
    type_names = {p.type_def.id: p.type_def.name for p in plan.types}
    relation_types = {rt.id: rt for rt in plan.relation_types}
    attributes: dict[int, AttributeDef] = {}
    for type_plan in plan.types:
        for attribute in type_plan.attributes:
            if not attribute.builtin:
                attributes[attribute.id] = attribute
        for end in type_plan.ends:
            for attribute in type_plan.relation_attributes(end) or ():
                attributes[attribute.id] = attribute
    group_ids = {a.group_id for a in attributes.values()}
    return {
        "attributeGroups": [
            {"name": g.name, "description": g.description} for g in metamodel.groups if g.id in group_ids
        ],
        "types": [
            {
                "name": p.type_def.name,
                "displayName": p.type_def.display_name,
                "abbreviation": p.type_def.abbreviation,
                "description": p.type_def.description,
                "hierarchical": p.type_def.hierarchical,
                "hidden": p.type_def.hidden,
                "builtins": [
                    {"name": a.name, "valueType": a.value_type, "literals": _literal_json(a)}
                    for a in p.attributes
                    if a.builtin
                ],
            }
            for p in plan.types
        ],
        "relationTypes": [
            {
                "name": rt.name,
                "description": rt.description,
                "source": rt.source_type,
                "sourceEnd": rt.source_end,
                "target": rt.target_type,
                "targetEnd": rt.target_end,
                "sourceMultiple": rt.source_multiple,
                "targetMultiple": rt.target_multiple,
                "attributable": rt.attributable,
            }
            for rt in sorted(relation_types.values(), key=lambda r: r.id)
        ],
        "attributes": [
            {
                "name": a.name,
                "description": a.description,
                "valueType": a.value_type,
                "multiple": a.multiple,
                "mandatory": a.mandatory,
                "group": a.group_name,
                "unit": a.unit,
                "min": a.min_value,
                "max": a.max_value,
                "literals": _literal_json(a),
                "types": [type_names[t] for t in sorted(a.type_ids) if t in type_names],
                "relationTypes": [
                    relation_types[r].name for r in sorted(a.relation_type_ids) if r in relation_types
                ],
            }
            for a in sorted(attributes.values(), key=lambda a: (a.position, a.id))
        ],
    }
