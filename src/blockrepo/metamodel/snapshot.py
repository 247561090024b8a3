"""An immutable, compiled view of the whole metamodel, loaded once per metamodel revision and shared.

Every feature reads types, properties and relation ends through a `Metamodel`; it is rebuilt only when
`repository_state.metamodel_revision` moves, so a change made in one worker is seen by every worker on its
next request without a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from blockrepo.metamodel.models import (
    Attribute,
    AttributeGroup,
    AttributeLiteral,
    BlockType,
    RelationType,
)

VALUE_TYPES = ("text", "richtext", "number", "date", "dateInterval", "boolean", "enum", "responsibility")
# Keys of the element JSON that are not attributes or relation ends.
READ_ONLY_KEYS = ("id", "type", "revision", "lastModificationTime", "lastModificationUser", "children")
CORE_KEYS = ("name", "description", "parent")
DEFAULT_GROUP_NAME = "[Default Attribute Group]"


@dataclass(frozen=True)
class LiteralDef:
    id: int
    name: str
    description: str
    color: str | None
    position: int


@dataclass(frozen=True)
class AttributeDef:
    id: int
    name: str
    description: str
    value_type: str
    multiple: bool
    mandatory: bool
    group_id: int
    group_name: str
    unit: str | None
    min_value: float | None
    max_value: float | None
    builtin_type_id: int | None
    position: int
    literals: tuple[LiteralDef, ...] = ()
    type_ids: frozenset[int] = frozenset()
    relation_type_ids: frozenset[int] = frozenset()

    @property
    def builtin(self) -> bool:
        return self.builtin_type_id is not None

    def literal_named(self, name: str) -> LiteralDef | None:
        return self._literals_by_name.get(name)

    def literal_by_id(self, literal_id: int) -> LiteralDef | None:
        return self._literals_by_id.get(literal_id)

    # Dicts made once per compiled metamodel: a bulk write looks a literal up for every enum value.
    @cached_property
    def _literals_by_name(self) -> dict[str, LiteralDef]:
        by_name: dict[str, LiteralDef] = {}
        for literal in self.literals:
            by_name.setdefault(literal.name, literal)  # the first, as the scan this replaced found it
        return by_name

    @cached_property
    def _literals_by_id(self) -> dict[int, LiteralDef]:
        return {literal.id: literal for literal in reversed(self.literals)}


@dataclass(frozen=True)
class RelationTypeDef:
    id: int
    name: str
    description: str
    source_type_id: int
    source_type: str
    source_end: str
    target_type_id: int
    target_type: str
    target_end: str
    source_multiple: bool
    target_multiple: bool
    attributable: bool
    attributes: tuple[AttributeDef, ...] = ()


@dataclass(frozen=True)
class RelationEnd:
    """One end of a relation type as seen from the element that holds it.

    `holder_is_source`: the holder is the relation's source (the end lists the relation's targets)."""

    name: str
    relation_type: RelationTypeDef
    holder_is_source: bool
    holder_type_id: int
    other_type_id: int
    other_type: str
    multiple: bool

    @property
    def opposite_name(self) -> str:
        rt = self.relation_type
        return rt.target_end if self.holder_is_source else rt.source_end


@dataclass(frozen=True)
class BlockTypeDef:
    id: int
    name: str
    display_name: str
    abbreviation: str
    description: str
    hierarchical: bool
    hidden: bool
    position: int
    builtins: tuple[AttributeDef, ...] = ()
    attributes: tuple[AttributeDef, ...] = ()
    ends: Mapping[str, RelationEnd] = field(default_factory=dict)

    @cached_property
    def properties(self) -> tuple[AttributeDef, ...]:
        """Built-ins then user attributes, in display order."""
        return self.builtins + self.attributes

    @cached_property
    def mandatory_properties(self) -> tuple[AttributeDef, ...]:
        """The mandatory ones among `properties` (checked for every element a bulk write parses)."""
        return tuple(prop for prop in self.properties if prop.mandatory)

    def property_named(self, name: str) -> AttributeDef | None:
        return self._properties_by_name.get(name)

    @cached_property
    def _properties_by_name(self) -> dict[str, AttributeDef]:
        # Looked up for every key of every element body a bulk write parses; a built-in wins over an
        # attribute of the same name, as the scan this replaced found it first.
        by_name: dict[str, AttributeDef] = {}
        for prop in (*self.builtins, *self.attributes):
            by_name.setdefault(prop.name, prop)
        return by_name


@dataclass(frozen=True)
class Metamodel:
    revision: int
    types: tuple[BlockTypeDef, ...]
    relation_types: tuple[RelationTypeDef, ...]
    attributes: tuple[AttributeDef, ...]  # user-defined attributes (not type built-ins)
    groups: tuple[AttributeGroupDef, ...]
    _types_by_name: Mapping[str, BlockTypeDef] = field(default_factory=dict)
    _types_by_id: Mapping[int, BlockTypeDef] = field(default_factory=dict)
    _relation_types_by_name: Mapping[str, RelationTypeDef] = field(default_factory=dict)
    _relation_types_by_id: Mapping[int, RelationTypeDef] = field(default_factory=dict)
    _attributes_by_id: Mapping[int, AttributeDef] = field(default_factory=dict)
    # What other packages compile from this snapshot, kept as long as it lives (`elements.compiled`: views
    # and body parsers per actor); never compared, and a copy made by `dataclasses.replace` starts empty.
    derived: dict[str, object] = field(default_factory=dict, init=False, compare=False, repr=False)

    def type_named(self, name: str) -> BlockTypeDef | None:
        return self._types_by_name.get(name)

    def type_by_id(self, type_id: int) -> BlockTypeDef:
        return self._types_by_id[type_id]

    def relation_type_named(self, name: str) -> RelationTypeDef | None:
        return self._relation_types_by_name.get(name)

    def relation_type_by_id(self, relation_type_id: int) -> RelationTypeDef:
        return self._relation_types_by_id[relation_type_id]

    def attribute_by_id(self, attribute_id: int) -> AttributeDef:
        """Any attribute, built-in or user-defined."""
        return self._attributes_by_id[attribute_id]

    def attribute_named(self, name: str) -> AttributeDef | None:
        """A user-defined attribute by name."""
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        return None

    @property
    def default_group(self) -> AttributeGroupDef:
        for group in self.groups:
            if group.name == DEFAULT_GROUP_NAME:
                return group
        raise LookupError(DEFAULT_GROUP_NAME)


@dataclass(frozen=True)
class AttributeGroupDef:
    id: int
    name: str
    description: str
    position: int


@dataclass(frozen=True)
class MetamodelRows:
    """The rows of every metamodel table, in the order the snapshot lists them (by position, then id)."""

    groups: list[AttributeGroup]
    literals: list[AttributeLiteral]
    type_activations: list[tuple[int, int]]  # (attribute id, block type id)
    relation_activations: list[tuple[int, int]]  # (attribute id, relation type id)
    attributes: list[Attribute]
    types: list[BlockType]
    relation_types: list[RelationType]


def compile_metamodel(rows: MetamodelRows, revision: int) -> Metamodel:
    """The snapshot of the metamodel the rows describe (`metamodel.repository.load_metamodel` reads them)."""
    groups = {g.id: AttributeGroupDef(g.id, g.name, g.description, g.position) for g in rows.groups}
    literals: dict[int, list[LiteralDef]] = {}
    for lit in rows.literals:
        literals.setdefault(lit.attribute_id, []).append(
            LiteralDef(lit.id, lit.name, lit.description, lit.color, lit.position)
        )
    type_activations: dict[int, set[int]] = {}
    for attribute_id, type_id in rows.type_activations:
        type_activations.setdefault(attribute_id, set()).add(type_id)
    relation_activations: dict[int, set[int]] = {}
    for attribute_id, relation_type_id in rows.relation_activations:
        relation_activations.setdefault(attribute_id, set()).add(relation_type_id)

    attributes: dict[int, AttributeDef] = {}
    for a in rows.attributes:
        attributes[a.id] = AttributeDef(
            id=a.id,
            name=a.name,
            description=a.description,
            value_type=a.value_type,
            multiple=a.multiple,
            mandatory=a.mandatory,
            group_id=a.group_id,
            group_name=groups[a.group_id].name,
            unit=a.unit,
            min_value=a.min_value,
            max_value=a.max_value,
            builtin_type_id=a.builtin_type_id,
            position=a.position,
            literals=tuple(literals.get(a.id, ())),
            type_ids=frozenset(type_activations.get(a.id, ())),
            relation_type_ids=frozenset(relation_activations.get(a.id, ())),
        )

    type_rows = rows.types
    type_names = {t.id: t.name for t in type_rows}
    relation_types: list[RelationTypeDef] = []
    for r in rows.relation_types:
        relation_types.append(
            RelationTypeDef(
                id=r.id,
                name=r.name,
                description=r.description,
                source_type_id=r.source_type_id,
                source_type=type_names[r.source_type_id],
                source_end=r.source_end,
                target_type_id=r.target_type_id,
                target_type=type_names[r.target_type_id],
                target_end=r.target_end,
                source_multiple=r.source_multiple,
                target_multiple=r.target_multiple,
                attributable=r.attributable,
                attributes=tuple(a for a in attributes.values() if r.id in a.relation_type_ids),
            )
        )

    ends: dict[int, dict[str, RelationEnd]] = {t.id: {} for t in type_rows}
    for rt in relation_types:
        ends[rt.source_type_id][rt.source_end] = RelationEnd(
            name=rt.source_end,
            relation_type=rt,
            holder_is_source=True,
            holder_type_id=rt.source_type_id,
            other_type_id=rt.target_type_id,
            other_type=rt.target_type,
            multiple=rt.source_multiple,
        )
        ends[rt.target_type_id][rt.target_end] = RelationEnd(
            name=rt.target_end,
            relation_type=rt,
            holder_is_source=False,
            holder_type_id=rt.target_type_id,
            other_type_id=rt.source_type_id,
            other_type=rt.source_type,
            multiple=rt.target_multiple,
        )

    types = tuple(
        BlockTypeDef(
            id=t.id,
            name=t.name,
            display_name=t.display_name,
            abbreviation=t.abbreviation,
            description=t.description,
            hierarchical=t.hierarchical,
            hidden=t.hidden,
            position=t.position,
            builtins=tuple(a for a in attributes.values() if a.builtin_type_id == t.id),
            attributes=tuple(
                a for a in attributes.values() if a.builtin_type_id is None and t.id in a.type_ids
            ),
            ends=MappingProxyType(ends[t.id]),
        )
        for t in type_rows
    )
    return Metamodel(
        revision=revision,
        types=types,
        relation_types=tuple(relation_types),
        attributes=tuple(a for a in attributes.values() if a.builtin_type_id is None),
        groups=tuple(groups.values()),
        _types_by_name=MappingProxyType({t.name: t for t in types}),
        _types_by_id=MappingProxyType({t.id: t for t in types}),
        _relation_types_by_name=MappingProxyType({r.name: r for r in relation_types}),
        _relation_types_by_id=MappingProxyType({r.id: r for r in relation_types}),
        _attributes_by_id=MappingProxyType(attributes),
    )
