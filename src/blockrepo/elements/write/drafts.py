"""A normalized element write (`ElementDraft`) and its references, with the JSON pointers its problems
name."""

from __future__ import annotations

from dataclasses import dataclass, field

from blockrepo.elements.values import TypedValue
from blockrepo.errors import ErrorItem
from blockrepo.metamodel.snapshot import BlockTypeDef

LARGEST_ID = 2**31 - 1


def pointer(*parts: str | int) -> str:
    """A JSON pointer (RFC 6901) from its unescaped parts."""
    out = ""
    for part in parts:
        text = str(part)
        # Escaping is rare (names hold no "/"), and a bulk write builds several pointers per element.
        if "~" in text or "/" in text:
            text = text.replace("~", "~0").replace("/", "~1")
        out += "/" + text
    return out


@dataclass(slots=True)
class Reference:
    """An element named by id or by name in an expected type, resolved by `resolve_references`."""

    pointer: str
    type_id: int
    id: int | None = None
    name: str | None = None
    resolved_id: int | None = None
    resolved_name: str | None = None


@dataclass(slots=True)
class EndEntry:
    """One value of a relation end: the other element and, if given, new relation attribute values
    (each attribute present replaces its list; None: keep what an existing relation has)."""

    reference: Reference
    attributes: dict[int, list[TypedValue]] | None = None


@dataclass(slots=True)
class ElementDraft:
    """A write of one element, normalized: only keys present in the body are set."""

    type_def: BlockTypeDef
    element_id: int | None  # None: the element is created
    name: str | None = None
    description: str | None = None
    parent_given: bool = False
    parent: Reference | None = None
    values: dict[int, list[TypedValue]] = field(default_factory=dict)
    ends: dict[str, list[EndEntry]] = field(default_factory=dict)
    errors: list[ErrorItem] = field(default_factory=list)
    forbidden: list[ErrorItem] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)  # (pointer, login) to verify

    @property
    def creating(self) -> bool:
        return self.element_id is None

    def references(self) -> list[Reference]:
        refs = [entry.reference for entries in self.ends.values() for entry in entries]
        if self.parent is not None:
            refs.insert(0, self.parent)
        return refs

    def error(self, where: str, code: str, message: str) -> None:
        self.errors.append(ErrorItem(where, code, message))
