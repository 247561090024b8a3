"""The SQL of exchange identities: the elements a model of another tool names by its identifiers."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from blockrepo.elements.repository import chunks
from blockrepo.massdata.models import ExchangeIdentity


def identities(db: Session, model: str) -> dict[str, int]:
    """identifier -> element id of every element the model's identifiers stand for (deleted elements'
    rows went with them)."""
    rows = db.execute(
        select(ExchangeIdentity.identifier, ExchangeIdentity.element_id).where(
            ExchangeIdentity.model == model
        )
    )
    return {identifier: element_id for identifier, element_id in rows}


def remember(db: Session, model: str, pairs: Iterable[tuple[str, int]]) -> None:
    """Keep (identifier, element id) of the model, replacing what an identifier stood for before."""
    for chunk in chunks(sorted(dict(pairs).items())):
        db.execute(
            delete(ExchangeIdentity).where(
                ExchangeIdentity.model == model, ExchangeIdentity.identifier.in_([i for i, _ in chunk])
            )
        )
        db.execute(
            insert(ExchangeIdentity),
            [{"model": model, "identifier": i, "element_id": element_id} for i, element_id in chunk],
        )
