"""What a write is made of: who writes where (`Writer`), the items to write and their grouping by type."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements.write.drafts import ElementDraft, EndEntry, Reference
from blockrepo.errors import BlockrepoError, ErrorItem, Forbidden, ValidationFailed
from blockrepo.metamodel.snapshot import BlockTypeDef, Metamodel
from blockrepo.revisions.recorder import ChangeLog

NewKey = tuple[str, int]  # ("new", index of the item that creates the element)


@dataclass
class Writer:
    """Who writes where: the request's session, metamodel snapshot, actor and change log."""

    db: Session
    metamodel: Metamodel
    actor: Actor
    changes: ChangeLog
    # (type id, name) -> id of elements an earlier part of the request wrote, which a later part names
    # (an import's chunks name the elements of the chunks before them): resolved without a query.
    known_names: dict[tuple[int, str], int] = field(default_factory=dict)


@dataclass(slots=True)
class WriteItem:
    """One element to write: its body, the element it updates (None: created) and, once validated, its
    draft or why it failed: the error a write of this item alone raises, and the item's problems (what a
    bulk write or an import reports per item)."""

    index: int
    body: dict[str, Any] | None
    element_id: int | None = None
    draft: ElementDraft | None = None
    error: BlockrepoError | None = None  # set once the item failed
    errors: list[ErrorItem] = field(default_factory=list)
    # References to elements that other items of the write create, with the item that creates each.
    pending: list[tuple[Reference, WriteItem]] = field(default_factory=list)
    aside_ends: dict[str, list[EndEntry]] = field(default_factory=dict)
    aside_parent: Reference | None = None
    new_id: int | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def creating(self) -> bool:
        return self.element_id is None

    @property
    def written_id(self) -> int | None:
        return self.element_id if self.element_id is not None else self.new_id

    def fail(self, error: BlockrepoError, errors: Iterable[ErrorItem] | None = None) -> None:
        """Fail with `error` and `errors` (by default the error's own); the first failure counts."""
        if self.error is None:
            self.error = error
            self.errors = error.errors if errors is None else list(errors)


def forbidden(errors: list[ErrorItem]) -> Forbidden:
    """An item writes what the actor may not write: 403 with every such problem."""
    return Forbidden("; ".join(f"{e.pointer}: {e.message}" for e in errors), errors=errors)


def invalid(errors: list[ErrorItem]) -> ValidationFailed:
    """An item's body is invalid: 400 with every problem."""
    detail = f"{len(errors)} problem(s): " + "; ".join(f"{e.pointer}: {e.message}" for e in errors[:5])
    return ValidationFailed(detail, errors=errors)


@dataclass
class TypeItems:
    """The items of one type in a write that spans several types (an import writes every type of its
    file at once)."""

    type_def: BlockTypeDef
    items: list[WriteItem]
