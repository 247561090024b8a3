"""Request and response bodies of the administration API: users, roles, attributes and attribute groups."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field
from pydantic.config import JsonValue

from blockrepo.errors import ErrorItem, ValidationFailed
from blockrepo.json_integers import integral_number_as_int
from blockrepo.metamodel.names import attribute_name_schema
from blockrepo.metamodel.schemas import DESCRIPTION_LENGTH, READ_ONLY, ApiModel, LiteralIn, ValueType
from blockrepo.name_normalization import NAME_SCHEMA, Name, name_within

TypeAction = Literal["read", "create", "update", "delete"]
FunctionalPermission = Literal[
    "ADMIN_USERS",
    "ADMIN_ROLES",
    "ADMIN_ATTRIBUTES",
    "EDIT_METAMODEL",
    "MASSDATA",
    "IMPORT",
    "EXPORT",
    "VIEW_HISTORY",
    "MINT_TOKENS",
    "MERGE_SCENARIOS",
    "APPROVE_SCENARIOS",
]
LOGIN_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@\-]{0,127}$"
PASSWORD_MIN_LENGTH = 8
PASSWORD_MAX_LENGTH = 1024
MATCHING_ID = "read-only; accepted if it matches the path, so a GET body can be sent back"
# History records a change to a role or group under the subject `<kind> <name>` in a 255-character column,
# so the longest name leaves room for the kind (a longer one was a 500 on PostgreSQL).
HISTORY_SUBJECT_LENGTH = 255
ROLE_NAME_LENGTH = HISTORY_SUBJECT_LENGTH - len("role ")
GROUP_NAME_LENGTH = HISTORY_SUBJECT_LENGTH - len("attributeGroup ")
# Group positions are stored in a 32-bit column (PostgreSQL INTEGER).
LARGEST_POSITION = 2**31 - 1


def require_matching_id(body_id: int | None, path_id: int) -> None:
    """A body's read-only `id` may come back (a GET body sent back), but only naming the path's object."""
    if body_id is not None and body_id != path_id:
        raise ValidationFailed(
            "id does not match the path", errors=[ErrorItem("/id", "id_mismatch", "must match")]
        )


# The bounds come before the validator so that the description states them as minimum and maximum.
GroupPosition = Annotated[int, Field(ge=0, le=LARGEST_POSITION), BeforeValidator(integral_number_as_int)]

# --- users ---------------------------------------------------------------------------------------------


class UserOut(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 7,
                    "login": "anna",
                    "firstName": "Anna",
                    "lastName": "Schmidt",
                    "email": "anna@example.com",
                    "enabled": True,
                    "roles": ["Readers"],
                }
            ]
        }
    )

    id: int
    login: str
    first_name: str
    last_name: str
    email: str
    enabled: bool
    roles: list[str]


class UserCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "login": "anna",
                    "firstName": "Anna",
                    "lastName": "Schmidt",
                    "email": "anna@example.com",
                    "enabled": True,
                    "roles": ["Supervisor"],
                    "password": "correct horse battery",
                }
            ]
        }
    )

    login: str = Field(pattern=LOGIN_PATTERN, description="letters, digits, '.', '_', '@', '-' (no ':')")
    first_name: str = Field("", max_length=255)
    last_name: str = Field("", max_length=255)
    email: str = Field("", max_length=255)
    enabled: bool = True
    roles: list[Name] = Field(default_factory=list)
    password: str = Field(
        min_length=PASSWORD_MIN_LENGTH,
        max_length=PASSWORD_MAX_LENGTH,
        description="write-only; stored as an Argon2id hash",
    )
    id: int | None = Field(None, description="ignored")


class UserUpdate(ApiModel):
    """Absent keys stay. `password` sets a new one; a new password, a new login or disabling ends the
    user's sessions and cached credentials."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"enabled": False}, {"password": "a new secret!"}]}
    )

    login: str | None = Field(None, pattern=LOGIN_PATTERN)
    first_name: str | None = Field(None, max_length=255)
    last_name: str | None = Field(None, max_length=255)
    email: str | None = Field(None, max_length=255)
    enabled: bool | None = None
    roles: list[Name] | None = None
    password: str | None = Field(None, min_length=PASSWORD_MIN_LENGTH, max_length=PASSWORD_MAX_LENGTH)
    id: int | None = Field(None, description=MATCHING_ID, json_schema_extra=READ_ONLY)


class GroupAccess(ApiModel):
    name: str
    read: bool
    write: bool


class CurrentUserOut(UserOut):
    """The caller with effective rights (own roles plus inherited sub-roles)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 7,
                    "login": "anna",
                    "firstName": "Anna",
                    "lastName": "Schmidt",
                    "email": "",
                    "enabled": True,
                    "roles": ["Readers"],
                    "supervisor": False,
                    "effectiveRoles": ["Readers", "Guests"],
                    "typePermissions": {"BusinessProcess": ["read"]},
                    "functionalPermissions": ["VIEW_HISTORY"],
                    "attributeGroups": [{"name": "[Default Attribute Group]", "read": True, "write": True}],
                    "sessionIdleTimeout": 300,
                }
            ]
        }
    )

    supervisor: bool
    effective_roles: list[str]
    type_permissions: dict[str, list[TypeAction]]
    functional_permissions: list[FunctionalPermission]
    attribute_groups: list[GroupAccess] = Field(description="the attribute groups the caller may read")
    session_idle_timeout: int | None = Field(
        description="seconds the caller's session may stay idle before it ends (each request renews it), "
        "when the request was authenticated by a session cookie; null for Basic credentials and tokens",
        examples=[300],
    )


# --- roles ---------------------------------------------------------------------------------------------


class RoleOut(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 3,
                    "name": "Editors",
                    "description": "Maintain the business architecture",
                    "builtin": False,
                    "subRoles": ["Readers"],
                    "typePermissions": {"BusinessProcess": ["read", "create", "update", "delete"]},
                    "functionalPermissions": ["VIEW_HISTORY", "MASSDATA"],
                }
            ]
        }
    )

    id: int
    name: str
    description: str
    builtin: bool = Field(description="the built-in Supervisor: every right, immutable")
    sub_roles: list[str]
    type_permissions: dict[str, list[TypeAction]]
    functional_permissions: list[FunctionalPermission]


class RoleCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Editors",
                    "description": "Maintain the business architecture",
                    "subRoles": [],
                    "typePermissions": {"BusinessProcess": ["read", "create", "update", "delete"]},
                    "functionalPermissions": ["VIEW_HISTORY"],
                }
            ]
        }
    )

    name: Annotated[str, name_within(ROLE_NAME_LENGTH)] = Field(
        min_length=1, max_length=ROLE_NAME_LENGTH, json_schema_extra=NAME_SCHEMA
    )
    description: str = Field("", max_length=DESCRIPTION_LENGTH)
    sub_roles: list[Name] = Field(default_factory=list, description="roles whose rights this role inherits")
    type_permissions: dict[str, list[TypeAction]] = Field(default_factory=dict)
    functional_permissions: list[FunctionalPermission] = Field(default_factory=list)
    id: int | None = Field(None, description="ignored")
    builtin: bool | None = Field(None, description="ignored")


class RoleUpdate(ApiModel):
    """Absent keys stay; a sent list or map replaces the whole value."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"typePermissions": {"InformationSystem": ["read", "update"]}}]}
    )

    name: Annotated[str, name_within(ROLE_NAME_LENGTH)] | None = Field(
        None, min_length=1, max_length=ROLE_NAME_LENGTH, json_schema_extra=NAME_SCHEMA
    )
    description: str | None = Field(None, max_length=DESCRIPTION_LENGTH)
    sub_roles: list[Name] | None = None
    type_permissions: dict[str, list[TypeAction]] | None = None
    functional_permissions: list[FunctionalPermission] | None = None
    id: int | None = Field(None, description=MATCHING_ID, json_schema_extra=READ_ONLY)
    builtin: bool | None = Field(None, description="ignored")


# --- attributes and groups -----------------------------------------------------------------------------


# Literals only for enums; unit, min and max only for numbers (min <= max is checked by the service).
VALUE_TYPE_RULES: list[JsonValue] = [
    {
        "if": {"properties": {"valueType": {"not": {"const": "enum"}}}},
        "then": {"properties": {"literals": {"maxItems": 0}}},
    },
    {
        "if": {"properties": {"valueType": {"not": {"const": "number"}}}},
        "then": {"properties": {"unit": {"type": "null"}, "min": {"type": "null"}, "max": {"type": "null"}}},
    },
]


class AttributeCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": VALUE_TYPE_RULES,
            "examples": [
                {
                    "name": "Criticality",
                    "description": "How bad an outage is",
                    "valueType": "enum",
                    "multiple": False,
                    "mandatory": False,
                    "group": "[Default Attribute Group]",
                    "types": ["BusinessProcess", "InformationSystem"],
                    "relationTypes": [],
                    "literals": [{"name": "low", "color": "#2e7d32"}, {"name": "high", "color": "#c62828"}],
                },
                {
                    "name": "Annual costs",
                    "valueType": "number",
                    "unit": "EUR",
                    "min": 0,
                    "types": ["InformationSystem"],
                },
            ],
        }
    )

    name: Annotated[str, name_within(128)] = Field(
        min_length=1, max_length=128, json_schema_extra=attribute_name_schema()
    )
    description: str = Field("", max_length=DESCRIPTION_LENGTH)
    value_type: ValueType
    multiple: bool = False
    mandatory: bool = False
    group: Name | None = Field(None, description="defaults to [Default Attribute Group]")
    types: list[str] = Field(default_factory=list, description="types the attribute is activated for")
    relation_types: list[str] = Field(
        default_factory=list, description="relation types whose entries carry the attribute"
    )
    literals: list[LiteralIn] = Field(default_factory=list, description="enum only")
    unit: str | None = Field(None, max_length=64, description="number only")
    min: float | None = Field(None, description="number only")
    max: float | None = Field(None, description="number only")
    id: int | None = Field(None, description="ignored")


class AttributeUpdate(ApiModel):
    """Absent keys stay; a sent list replaces the whole list. Literals are matched by `id` (rename) or
    by name; literals left out are deleted with their values. Changing `valueType` while values exist is
    refused (409), as is `multiple: false` while an element holds several values."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"types": ["BusinessProcess"], "mandatory": True}]}
    )

    name: Annotated[str, name_within(128)] | None = Field(
        None, min_length=1, max_length=128, json_schema_extra=attribute_name_schema()
    )
    description: str | None = Field(None, max_length=DESCRIPTION_LENGTH)
    value_type: ValueType | None = None
    multiple: bool | None = None
    mandatory: bool | None = None
    group: Name | None = None
    types: list[str] | None = None
    relation_types: list[str] | None = None
    literals: list[LiteralIn] | None = None
    unit: str | None = Field(None, max_length=64)
    min: float | None = None
    max: float | None = None
    id: int | None = Field(None, description=MATCHING_ID, json_schema_extra=READ_ONLY)


class GroupPermission(ApiModel):
    role: Name
    read: bool = False
    write: bool = False


class AttributeGroupOut(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 2,
                    "name": "Finance",
                    "description": "Costs and budgets",
                    "position": 2,
                    "attributes": ["Annual costs"],
                    "permissions": [{"role": "Controllers", "read": True, "write": True}],
                }
            ]
        }
    )

    id: int
    name: str
    description: str
    position: int
    attributes: list[str]
    permissions: list[GroupPermission]


class AttributeGroupCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "Finance",
                    "description": "Costs and budgets",
                    "attributes": [],
                    "permissions": [{"role": "Supervisor", "read": True, "write": True}],
                }
            ]
        }
    )

    name: Annotated[str, name_within(GROUP_NAME_LENGTH)] = Field(
        min_length=1, max_length=GROUP_NAME_LENGTH, json_schema_extra=NAME_SCHEMA
    )
    description: str = Field("", max_length=DESCRIPTION_LENGTH)
    position: GroupPosition | None = Field(None, description="defaults to after the last group")
    attributes: list[Name] = Field(default_factory=list, description="attributes moved into this group")
    permissions: list[GroupPermission] = Field(
        default_factory=list,
        description="if no role has read, everyone may read; write needs read; if no role has write, only "
        "an unrestricted group is writable",
    )
    id: int | None = Field(None, description="ignored")


class AttributeGroupUpdate(ApiModel):
    """Absent keys stay. Attributes left out of a sent `attributes` list move to the default group."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"permissions": [{"role": "Supervisor", "read": True, "write": False}]}]
        }
    )

    name: Annotated[str, name_within(GROUP_NAME_LENGTH)] | None = Field(
        None, min_length=1, max_length=GROUP_NAME_LENGTH, json_schema_extra=NAME_SCHEMA
    )
    description: str | None = Field(None, max_length=DESCRIPTION_LENGTH)
    position: GroupPosition | None = None
    attributes: list[Name] | None = None
    permissions: list[GroupPermission] | None = None
    id: int | None = Field(None, description=MATCHING_ID, json_schema_extra=READ_ONLY)
