"""The registry of published API versions, oldest first; the last one is the current version.

Each version is a route package (`api/v7_4/`), a path segment for its published description
(`/api/7_4/openapi.json`, `/api/7_4/`) and the text of that description. Adding 8.0 means a new package
`api/v8_0/` whose router reuses the unchanged route modules of 7.4, and one more entry here; see
docs/architecture.md ("A new API version").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fastapi import APIRouter

from blockrepo.api import v7_4
from blockrepo.api.v7_4 import description as v7_4_description


@dataclass(frozen=True)
class ApiVersion:
    number: str  # as clients send it in the API-Version header: "7.4"
    segment: str  # as it appears in paths: "7_4"
    build_router: Callable[[], APIRouter]
    title: str
    description: str  # CommonMark, shown at the top of the interactive page
    tag_descriptions: Mapping[str, str] = field(default_factory=dict)  # lower-case tag -> text

    @property
    def base_path(self) -> str:
        """Where the interactive page lives; the description and the page's assets are below it."""
        return f"/api/{self.segment}"

    @property
    def openapi_path(self) -> str:
        return f"{self.base_path}/openapi.json"


API_VERSIONS: tuple[ApiVersion, ...] = (
    ApiVersion(
        number=v7_4.VERSION,
        segment=v7_4.PATH_SEGMENT,
        build_router=v7_4.build_router,
        title=v7_4_description.TITLE,
        description=v7_4_description.DESCRIPTION,
        tag_descriptions=MappingProxyType(v7_4_description.TAG_DESCRIPTIONS),
    ),
)
CURRENT_VERSION = API_VERSIONS[-1]
