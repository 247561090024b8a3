"""Tables of building blocks, typed attribute values and relations.

Values live in typed columns of one narrow table (one row per value), so that SQL filters and sorts on
them with ordinary B-tree indexes on both SQLite and PostgreSQL; see docs/architecture.md for the choice.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import (
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.metamodel.models import NAME_LENGTH
from blockrepo.storage.base import Base


class Element(Base):
    __tablename__ = "element"
    __table_args__ = (
        UniqueConstraint("type_id", "name"),
        Index("ix_element_parent_position", "parent_id", "position"),
        Index("ix_element_type_id_id", "type_id", "id"),
        # History and clients know an element by its id forever: SQLite must not reuse deleted ids.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    type_id: Mapped[int] = mapped_column(ForeignKey("block_type.id"), nullable=False)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("element.id"), nullable=True)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    revision: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_modified_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_modified_by: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)


class ValueColumns:
    """Typed value columns shared by element and relation values: exactly one group is set per row.

    text/richtext/responsibility -> text_value; number -> number_value; date -> date_value;
    dateInterval -> date_value (start) and date_end; boolean -> bool_value; enum -> literal_id.
    """

    attribute_id: Mapped[int] = mapped_column(ForeignKey("attribute.id", ondelete="CASCADE"), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    text_value: Mapped[str | None] = mapped_column(Text, nullable=True)
    number_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    date_value: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    date_end: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    bool_value: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    literal_id: Mapped[int | None] = mapped_column(
        ForeignKey("attribute_literal.id", ondelete="CASCADE"), nullable=True
    )


def _typed_index(name: str, column: str) -> Index:
    """An index of (attribute, typed column) over only the rows that use that column (partial): a value
    row sets one typed group, so a full index would hold a NULL entry for every row of every other type.
    Writing a value then updates two indexes, not five (bulk writes of values got much faster,
    bench/README.md). A comparison on the column implies IS NOT NULL, so SQLite and PostgreSQL
    both still use the index for iteraQL filters."""
    present = text(f"{column} IS NOT NULL")
    return Index(name, "attribute_id", column, sqlite_where=present, postgresql_where=present)


class ElementValue(ValueColumns, Base):
    __tablename__ = "element_value"
    __table_args__ = (
        Index("ix_element_value_element", "element_id", "attribute_id", "position"),
        _typed_index("ix_element_value_number", "number_value"),
        _typed_index("ix_element_value_date", "date_value"),
        _typed_index("ix_element_value_literal", "literal_id"),
        _typed_index("ix_element_value_bool", "bool_value"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    element_id: Mapped[int] = mapped_column(ForeignKey("element.id", ondelete="CASCADE"), nullable=False)


class Relation(Base):
    """One link of a relation type from a source element to a target element; the order of a source end's
    values is `position`."""

    __tablename__ = "relation"
    __table_args__ = (
        UniqueConstraint("relation_type_id", "source_id", "target_id"),
        Index("ix_relation_source", "source_id", "relation_type_id", "position"),
        Index("ix_relation_target", "target_id", "relation_type_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    relation_type_id: Mapped[int] = mapped_column(
        ForeignKey("relation_type.id", ondelete="CASCADE"), nullable=False
    )
    source_id: Mapped[int] = mapped_column(ForeignKey("element.id", ondelete="CASCADE"), nullable=False)
    target_id: Mapped[int] = mapped_column(ForeignKey("element.id", ondelete="CASCADE"), nullable=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class RelationValue(ValueColumns, Base):
    __tablename__ = "relation_value"
    __table_args__ = (Index("ix_relation_value_relation", "relation_id", "attribute_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    relation_id: Mapped[int] = mapped_column(ForeignKey("relation.id", ondelete="CASCADE"), nullable=False)
