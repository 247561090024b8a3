"""Request and response bodies of the metamodel API (fixed shapes, so Pydantic documents them in OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from blockrepo.metamodel.names import identifier_schema
from blockrepo.name_normalization import NAME_SCHEMA, name_within

ValueType = Literal["text", "richtext", "number", "date", "dateInterval", "boolean", "enum", "responsibility"]
# Built-in element keys are described with these extra value types.
PropertyValueType = Literal[
    "text",
    "richtext",
    "number",
    "date",
    "dateInterval",
    "boolean",
    "enum",
    "responsibility",
    "reference",
    "dateTime",
]
DESCRIPTION_LENGTH = 65535
# Keys of a GET body that never change: a client may send them back unchanged, a different value is
# refused. Described read-only, so that nobody sends them expecting a change.
READ_ONLY: dict[str, Any] = {"readOnly": True}
UNCHANGED = "read-only: never changes; accepted if sent unchanged"


class ApiModel(BaseModel):
    """camelCase on the wire, strict types, unknown keys rejected."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True, frozen=False
    )


class LiteralOut(ApiModel):
    id: int
    name: str
    description: str = ""
    color: str | None = None


class PropertyOut(ApiModel):
    """One key of the element JSON of a type: a built-in or a user-defined attribute."""

    name: str
    value_type: PropertyValueType
    multiple: bool
    mandatory: bool
    group: str | None = Field(None, description="attribute group (user attributes and per-type built-ins)")
    read_only: bool = Field(description="true if the caller cannot write it (read-only key or group)")
    builtin: bool
    description: str = ""
    literals: list[LiteralOut] = Field(default_factory=list, description="allowed values of an enum")
    unit: str | None = None
    min: float | None = None
    max: float | None = None
    target: str | None = Field(None, description="the referenced type of `parent` and `children`")


class RelationEndOut(ApiModel):
    """A relation end as seen from the type that holds it."""

    name: str
    relation_type: str
    type: str = Field(description="the type at the other end")
    multiple: bool
    opposite: str = Field(description="the end's name on the other type")
    side: Literal["source", "target"] = Field(description="whether the holder is the relation's source")
    attributable: bool
    attributes: list[str] = Field(default_factory=list, description="attributes on the relation entries")


class BlockTypeOut(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 2,
                    "name": "BusinessProcess",
                    "displayName": "Business Process",
                    "abbreviation": "BP",
                    "description": "",
                    "hierarchical": True,
                    "hidden": False,
                    "position": 1,
                    "properties": [
                        {
                            "name": "name",
                            "valueType": "text",
                            "multiple": False,
                            "mandatory": True,
                            "group": None,
                            "readOnly": False,
                            "builtin": True,
                            "description": "unique per type",
                            "literals": [],
                            "unit": None,
                            "min": None,
                            "max": None,
                            "target": None,
                        }
                    ],
                    "relationEnds": [
                        {
                            "name": "informationSystems",
                            "relationType": "BusinessProcess_InformationSystem",
                            "type": "InformationSystem",
                            "multiple": True,
                            "opposite": "businessProcesses",
                            "side": "source",
                            "attributable": True,
                            "attributes": [],
                        }
                    ],
                }
            ]
        }
    )

    id: int
    name: str
    display_name: str
    abbreviation: str
    description: str
    hierarchical: bool
    hidden: bool
    position: int
    properties: list[PropertyOut]
    relation_ends: list[RelationEndOut]


class RelationTypeOut(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 31,
                    "name": "BusinessProcess_InformationSystem",
                    "description": "",
                    "source": "BusinessProcess",
                    "sourceEnd": "informationSystems",
                    "target": "InformationSystem",
                    "targetEnd": "businessProcesses",
                    "sourceMultiple": True,
                    "targetMultiple": True,
                    "attributable": True,
                    "attributes": [],
                }
            ]
        }
    )

    id: int
    name: str
    description: str
    source: str
    source_end: str
    target: str
    target_end: str
    source_multiple: bool
    target_multiple: bool
    attributable: bool
    attributes: list[str] = Field(description="attributes activated for the relation entries")


class LiteralIn(ApiModel):
    id: int | None = Field(None, description="an existing literal's id: rename it instead of replacing it")
    name: Annotated[str, name_within(255)] = Field(
        min_length=1, max_length=255, json_schema_extra=NAME_SCHEMA
    )
    description: str = Field("", max_length=DESCRIPTION_LENGTH)
    color: str | None = Field(None, pattern=r"^#[0-9A-Fa-f]{6}$")


class AttributeOut(ApiModel):
    """A user-defined attribute (API.md §6)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 60,
                    "name": "Criticality",
                    "description": "How bad an outage is",
                    "valueType": "enum",
                    "multiple": False,
                    "mandatory": False,
                    "group": "Operations",
                    "types": ["BusinessProcess", "InformationSystem"],
                    "relationTypes": [],
                    "literals": [
                        {"id": 90, "name": "low", "description": "", "color": "#2e7d32"},
                        {"id": 91, "name": "high", "description": "", "color": "#c62828"},
                    ],
                    "unit": None,
                    "min": None,
                    "max": None,
                }
            ]
        }
    )

    id: int
    name: str
    description: str
    value_type: ValueType
    multiple: bool
    mandatory: bool
    group: str
    types: list[str]
    relation_types: list[str]
    literals: list[LiteralOut]
    unit: str | None
    min: float | None
    max: float | None


class AttributeGroupSummary(ApiModel):
    """An attribute group as the caller sees it."""

    id: int
    name: str
    description: str
    position: int
    attributes: list[str]
    readable: bool = Field(description="the caller may read the group's attributes")
    writable: bool = Field(description="the caller may write the group's attributes")


class MetamodelOut(ApiModel):
    revision: int = Field(description="the metamodel revision; it moves with every metamodel change")
    types: list[BlockTypeOut]
    relation_types: list[RelationTypeOut]
    attributes: list[AttributeOut]
    attribute_groups: list[AttributeGroupSummary]


class BlockTypeCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "DataCenter",
                    "displayName": "Data Center",
                    "abbreviation": "DC",
                    "description": "A site that runs infrastructure",
                    "hierarchical": True,
                }
            ]
        }
    )

    name: str = Field(
        min_length=1,
        max_length=128,
        description="persistent name; never changes",
        json_schema_extra=identifier_schema(),
    )
    display_name: str | None = Field(None, min_length=1, max_length=255, description="defaults to the name")
    abbreviation: str = Field("", max_length=32)
    description: str = Field("", max_length=DESCRIPTION_LENGTH)
    hierarchical: bool = True
    hidden: bool = False


class BlockTypeUpdate(ApiModel):
    """Every key is optional; absent keys stay. Read-only keys of the GET body are accepted and ignored,
    so a client may PUT back what it read; `name` must stay the same."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"displayName": "Data Centre", "abbreviation": "DC", "hidden": False}]
        }
    )

    name: str | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    display_name: str | None = Field(None, min_length=1, max_length=255)
    abbreviation: str | None = Field(None, max_length=32)
    description: str | None = Field(None, max_length=DESCRIPTION_LENGTH)
    hidden: bool | None = None
    hierarchical: bool | None = None
    id: int | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    position: Any = None
    properties: Any = None
    relation_ends: Any = None


class RelationTypeCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Project_BusinessFunction",
                    "source": "Project",
                    "sourceEnd": "businessFunctions",
                    "target": "BusinessFunction",
                    "targetEnd": "projects",
                    "sourceMultiple": True,
                    "targetMultiple": False,
                    "attributable": False,
                }
            ]
        }
    )

    name: str | None = Field(
        None,
        min_length=1,
        max_length=128,
        description="defaults to `{source}_{target}`; never changes",
        json_schema_extra=identifier_schema(),
    )
    description: str = Field("", max_length=DESCRIPTION_LENGTH)
    source: str = Field(
        min_length=1, description="an existing type's name", json_schema_extra=identifier_schema()
    )
    source_end: str = Field(
        min_length=1,
        max_length=128,
        description="property on the source listing targets",
        json_schema_extra=identifier_schema(),
    )
    target: str = Field(
        min_length=1, description="an existing type's name", json_schema_extra=identifier_schema()
    )
    target_end: str = Field(
        min_length=1,
        max_length=128,
        description="property on the target listing sources",
        json_schema_extra=identifier_schema(),
    )
    source_multiple: bool = True
    target_multiple: bool = True
    attributable: bool = False


class RelationTypeUpdate(ApiModel):
    """Changes description, cardinalities and `attributable`; the names and the joined types never change
    (they may be sent unchanged). Absent keys stay."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"description": "Where a system runs", "targetMultiple": True}]}
    )

    name: str | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    description: str | None = Field(None, max_length=DESCRIPTION_LENGTH)
    source: str | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    source_end: str | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    target: str | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    target_end: str | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    source_multiple: bool | None = None
    target_multiple: bool | None = None
    attributable: bool | None = None
    id: int | None = Field(None, description=UNCHANGED, json_schema_extra=READ_ONLY)
    attributes: Any = None
