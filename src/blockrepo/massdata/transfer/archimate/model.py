"""An ArchiMate model as a file holds it, read into memory: what the import maps, whatever the format."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Concept:
    """An element or relationship: its identifier in the file, its ArchiMate 3.1 type, name,
    documentation (None: the file has none, so an import keeps the description) and properties (key,
    value; a key may repeat)."""

    identifier: str
    type: str
    name: str = ""
    documentation: str | None = None
    properties: list[tuple[str, str]] = field(default_factory=list)
    # A relationship's ends (identifiers of elements or of other relationships)
    source: str = ""
    target: str = ""


@dataclass
class ArchimateModel:
    identifier: str
    name: str = ""
    format: str = "3.1"  # "3.1" (3.0 and 3.1 files alike), "2.1" or "csv"
    properties: list[tuple[str, str]] = field(default_factory=list)
    elements: list[Concept] = field(default_factory=list)
    relationships: list[Concept] = field(default_factory=list)
    views: int = 0  # diagrams in the file, which an import does not take
