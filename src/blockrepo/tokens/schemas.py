"""Request and response bodies of the token API (API.md section 11)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, ConfigDict, Field

from blockrepo.json_integers import integral_number_as_int
from blockrepo.metamodel.schemas import ApiModel
from blockrepo.name_normalization import Name

MOST_NETWORKS = 64


class TokenCreate(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "name": "nightly CMDB sync",
                    "expiresAt": "2027-06-30T00:00:00Z",
                    "readOnly": True,
                    "types": ["InformationSystem", "InformationFlow"],
                    "allowedNetworks": ["10.20.0.0/16"],
                }
            ]
        }
    )

    name: str = Field(min_length=1, max_length=255)
    expires_at: str = Field(
        max_length=64,
        description="required: an ISO 8601 time (UTC when it names no offset) in the future, at most "
        "`token_max_days` days ahead",
    )
    read_only: bool = Field(False, description="the token only reads, whatever its owner may do")
    types: list[Name] | None = Field(
        None, max_length=1000, description="building block types it may use (default: the owner's)"
    )
    attribute_groups: list[Name] | None = Field(
        None, max_length=1000, description="attribute groups it may use (default: the owner's)"
    )
    functions: list[str] | None = Field(
        None, max_length=64, description="functional permissions it may use (default: the owner's)"
    )
    allowed_networks: list[str] | None = Field(
        None,
        max_length=MOST_NETWORKS,
        description="addresses or CIDR networks it may be used from (default: any)",
    )
    scenario: str | None = Field(
        None,
        min_length=1,
        max_length=64,
        description="a planning scenario's key: the token writes only in that scenario (as far as its owner "
        "may) and only reads main and every other scenario",
    )
    owner: Name | None = Field(
        None,
        description="mint for this account instead of the caller (a service account): needs MINT_TOKENS "
        "and ADMIN_USERS; only a supervisor mints for a supervisor",
    )


class TokenUpdate(ApiModel):
    name: str | None = Field(None, min_length=1, max_length=255)
    enabled: bool | None = None
    expires_at: str | None = Field(None, max_length=64, description="only an earlier expiry is accepted")


# The bounds come before the validator so that the description states them as minimum and maximum.
OverlapSeconds = Annotated[int, Field(ge=0, le=30 * 86400), BeforeValidator(integral_number_as_int)]


class TokenRotate(ApiModel):
    overlap_seconds: OverlapSeconds = Field(
        3600, description="how long the old token keeps working (at most until its expiry)"
    )


class TokenRevocation(ApiModel):
    token: str = Field(max_length=256, description="a token string, e.g. one a secret scanner found")


class TokenOut(ApiModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": 3,
                    "publicId": "4fQ9xT2mLp0a",
                    "name": "nightly CMDB sync",
                    "owner": "cmdb-sync",
                    "createdBy": "anna",
                    "createdAt": "2026-11-28T10:00:00Z",
                    "expiresAt": "2027-06-30T00:00:00Z",
                    "enabled": True,
                    "revoked": False,
                    "readOnly": True,
                    "types": ["InformationSystem", "InformationFlow"],
                    "attributeGroups": None,
                    "functions": None,
                    "allowedNetworks": ["10.20.0.0/16"],
                    "scenario": None,
                    "lastUsedAt": None,
                    "lastUsedAddress": None,
                    "rotatedFrom": None,
                }
            ]
        }
    )

    id: int
    public_id: str
    name: str
    owner: str
    created_by: str
    created_at: str
    expires_at: str
    enabled: bool
    revoked: bool
    read_only: bool
    types: list[str] | None
    attribute_groups: list[str] | None
    functions: list[str] | None
    allowed_networks: list[str] | None
    scenario: str | None = Field(None, description="the planning scenario it writes in only (null: none)")
    last_used_at: str | None
    last_used_address: str | None
    rotated_from: int | None


class IssuedTokenOut(TokenOut):
    token: str = Field(description="the token itself: shown this once, never again")
