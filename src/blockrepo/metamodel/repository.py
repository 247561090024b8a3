"""SQL of metamodel edits: types and relation types, plus the checks that look at stored elements."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from blockrepo.metamodel.models import (
    Attribute,
    AttributeGroup,
    AttributeLiteral,
    AttributeRelationActivation,
    AttributeTypeActivation,
    BlockType,
    RelationType,
)
from blockrepo.metamodel.snapshot import Metamodel, MetamodelRows, compile_metamodel
from blockrepo.revisions.models import RepositoryState


def load_metamodel(db: Session, revision: int) -> Metamodel:
    """Read every metamodel table (a fixed number of queries) and compile the snapshot."""
    rows = MetamodelRows(
        groups=list(db.scalars(select(AttributeGroup).order_by(AttributeGroup.position, AttributeGroup.id))),
        literals=list(
            db.scalars(select(AttributeLiteral).order_by(AttributeLiteral.position, AttributeLiteral.id))
        ),
        type_activations=[
            (row[0], row[1])
            for row in db.execute(
                select(AttributeTypeActivation.attribute_id, AttributeTypeActivation.block_type_id)
            )
        ],
        relation_activations=[
            (row[0], row[1])
            for row in db.execute(
                select(AttributeRelationActivation.attribute_id, AttributeRelationActivation.relation_type_id)
            )
        ],
        attributes=list(db.scalars(select(Attribute).order_by(Attribute.position, Attribute.id))),
        types=list(db.scalars(select(BlockType).order_by(BlockType.position, BlockType.id))),
        relation_types=list(db.scalars(select(RelationType).order_by(RelationType.id))),
    )
    return compile_metamodel(rows, revision)


def read_repository_state(db: Session) -> RepositoryState:
    state = db.get(RepositoryState, 1)
    if state is None:
        raise LookupError("the repository is not initialised; run `blockrepo init`")
    return state


def metamodel_revision(db: Session, *, lock: bool = False) -> int | None:
    """The current metamodel revision (None before `init`); with `lock`, the repository_state row stays
    locked until the transaction ends (SQLite writers already hold the database lock)."""
    statement = select(RepositoryState.metamodel_revision).where(RepositoryState.id == 1)
    return db.scalar(statement.with_for_update() if lock else statement)


def lock_current_metamodel(db: Session, seen: Metamodel) -> Metamodel:
    """Take the repository_state row lock (serialising metamodel and access edits on PostgreSQL; SQLite
    writers already hold the database lock) and return the metamodel as it stands under that lock."""
    revision = metamodel_revision(db, lock=True)
    if revision is None or revision == seen.revision:
        return seen
    return load_metamodel(db, revision)


def insert_type(db: Session, values: dict[str, Any]) -> int:
    position = db.scalar(select(func.coalesce(func.max(BlockType.position), -1))) or 0
    return int(
        db.execute(
            insert(BlockType).values(**values, position=int(position) + 1).returning(BlockType.id)
        ).scalar_one()
    )


def update_type(db: Session, type_id: int, values: dict[str, Any]) -> None:
    db.execute(update(BlockType).where(BlockType.id == type_id).values(**values))


def delete_type(db: Session, type_id: int) -> None:
    """Delete a type without elements; its relation types go first (their foreign keys do not cascade)."""
    db.execute(
        delete(RelationType).where(
            or_(RelationType.source_type_id == type_id, RelationType.target_type_id == type_id)
        )
    )
    db.execute(delete(BlockType).where(BlockType.id == type_id))


def insert_relation_type(db: Session, values: dict[str, Any]) -> int:
    return int(db.execute(insert(RelationType).values(**values).returning(RelationType.id)).scalar_one())


def update_relation_type(db: Session, relation_type_id: int, values: dict[str, Any]) -> None:
    db.execute(update(RelationType).where(RelationType.id == relation_type_id).values(**values))


def delete_relation_type(db: Session, relation_type_id: int) -> None:
    """Delete a relation type without relations; its attribute activations cascade."""
    db.execute(delete(RelationType).where(RelationType.id == relation_type_id))
