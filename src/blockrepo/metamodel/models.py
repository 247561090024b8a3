"""Tables of the metamodel. The engine knows no type by name: every type and property lives here as rows."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base

NAME_LENGTH = 255


class BlockType(Base):
    __tablename__ = "block_type"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True, nullable=False)
    display_name: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    abbreviation: Mapped[str] = mapped_column(String(32), nullable=False, default="")
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    hierarchical: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    hidden: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class AttributeGroup(Base):
    __tablename__ = "attribute_group"
    # A deleted attribute's history stays readable by its group's id: SQLite must not reuse deleted ids.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class Attribute(Base):
    """A property definition. `builtin_type_id` set: a built-in of that one type (e.g. `status`),
    not listed by the administration API and unique per type; unset: a user-defined attribute whose
    name is unique across the repository."""

    __tablename__ = "attribute"
    # History knows an attribute by its id after a rename or deletion: SQLite must not reuse deleted ids.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False, index=True)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    value_type: Mapped[str] = mapped_column(String(32), nullable=False)
    multiple: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    mandatory: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    group_id: Mapped[int] = mapped_column(ForeignKey("attribute_group.id"), nullable=False)
    unit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    min_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    max_value: Mapped[float | None] = mapped_column(Float, nullable=True)
    builtin_type_id: Mapped[int | None] = mapped_column(
        ForeignKey("block_type.id", ondelete="CASCADE"), nullable=True, index=True
    )
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class AttributeLiteral(Base):
    __tablename__ = "attribute_literal"
    __table_args__ = (UniqueConstraint("attribute_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    attribute_id: Mapped[int] = mapped_column(
        ForeignKey("attribute.id", ondelete="CASCADE"), nullable=False, index=True
    )
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    color: Mapped[str | None] = mapped_column(String(16), nullable=True)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class AttributeTypeActivation(Base):
    """An attribute is available on a building block type."""

    __tablename__ = "attribute_type_activation"

    attribute_id: Mapped[int] = mapped_column(
        ForeignKey("attribute.id", ondelete="CASCADE"), primary_key=True
    )
    block_type_id: Mapped[int] = mapped_column(
        ForeignKey("block_type.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class AttributeRelationActivation(Base):
    """An attribute is available on the relations of a relation type."""

    __tablename__ = "attribute_relation_activation"

    attribute_id: Mapped[int] = mapped_column(
        ForeignKey("attribute.id", ondelete="CASCADE"), primary_key=True
    )
    relation_type_id: Mapped[int] = mapped_column(
        ForeignKey("relation_type.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class RelationType(Base):
    """Joins a source and a target type. `source_end` is the property name on the source element (it lists
    targets); `source_multiple` says whether that end holds several values. Likewise for the target."""

    __tablename__ = "relation_type"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(NAME_LENGTH), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    source_type_id: Mapped[int] = mapped_column(ForeignKey("block_type.id"), nullable=False, index=True)
    source_end: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    target_type_id: Mapped[int] = mapped_column(ForeignKey("block_type.id"), nullable=False, index=True)
    target_end: Mapped[str] = mapped_column(String(NAME_LENGTH), nullable=False)
    source_multiple: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    target_multiple: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    attributable: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
