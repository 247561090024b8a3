"""Tables of revisions: the repository's revision counters, one revision per write request, one change
row per touched entity."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from blockrepo.storage.base import Base


class RepositoryState(Base):
    """A single row: the metamodel and access revisions caches are keyed by, and on SQLite the last
    committed global revision (PostgreSQL takes revision numbers from a sequence, migration 0009)."""

    __tablename__ = "repository_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    metamodel_revision: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    access_revision: Mapped[int] = mapped_column(Integer, nullable=False, default=0)


class Revision(Base):
    """A committed write request. Ids are assigned from `repository_state.revision` under its row lock, so
    they become visible in commit order without gaps."""

    __tablename__ = "revision"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, index=True)
    user_login: Mapped[str] = mapped_column(String(255), nullable=False)
    request_id: Mapped[str] = mapped_column(String(128), nullable=False)
    # What authenticated the write: "basic", "session", "token:<public id>" (None: written before
    # migration 0010, or by the command line and the service itself).
    via: Mapped[str | None] = mapped_column(String(96), nullable=True)
    # The planning scenario whose merge made the revision (its key; None: written in main directly).
    scenario: Mapped[str | None] = mapped_column(String(64), nullable=True)


class Change(Base):
    """What one revision did to one entity.

    `entity` is "element" (type_name/element_id/element_name set), "metamodel" or "administration"
    (subject names the thing). `changes` is the list of
    {"property", "old", "new"} or, for relation ends, {"property", "added", "removed"} with values in
    their API JSON form. Only changed properties are stored; a "created" change lists every non-empty
    property as new, a "deleted" change lists every non-empty property as old.
    """

    __tablename__ = "change"
    __table_args__ = (
        Index("ix_change_element_revision", "element_id", "revision"),
        Index("ix_change_type_revision", "type_name", "revision"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(ForeignKey("revision.id"), nullable=False, index=True)
    entity: Mapped[str] = mapped_column(String(32), nullable=False, default="element")
    operation: Mapped[str] = mapped_column(String(16), nullable=False)
    type_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    element_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    element_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    subject: Mapped[str | None] = mapped_column(String(255), nullable=True)
    changes: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False)


class AttributeFormerName(Base):
    """A name an attribute bore until a revision: the one it was renamed away from, or the one it had when it
    was deleted (then with the group it was in).

    Change rows name attributes as they were named when written, and a name passes on: renamed or deleted,
    an attribute leaves its name to the next one that takes it. A name recorded at revision r means the
    attribute of the row with that name and the smallest `until_revision` >= r, or, without such a row, the
    attribute that bears the name today; so history is read, and its visibility decided, by the attribute's
    identity. `attribute_id` is None for an attribute deleted before these rows were kept (migration 0007):
    its group is unknown, so only a supervisor reads its past values.
    """

    __tablename__ = "attribute_former_name"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # No foreign key: the row outlives the attribute (its identity after deletion).
    attribute_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    until_revision: Mapped[int] = mapped_column(Integer, nullable=False)
    # Set on the row of a deletion: the group the attribute was in, which keeps deciding who reads it.
    group_id: Mapped[int | None] = mapped_column(Integer, nullable=True)


class CommittedState(FunctionElement[Any]):
    """In a select that joins `repository_state`: the number that moves with every write, which caches of
    what was read in one snapshot are keyed by. SQLite: the revision counter (its one writer moves it in
    the transaction that commits). PostgreSQL: the last number handed out by `revision_id_seq` (every
    write that changes something takes one before it commits); a number can be handed out before the
    write commits, so an entry read at it is valid only if every write that took a number up to it had
    ended before the read's snapshot began (`access.service.settled`)."""

    inherit_cache = True
    name = "committed_state"


@compiles(CommittedState)
def _counter(element: CommittedState, compiler: SQLCompiler, **kw: Any) -> str:
    return "repository_state.revision"


@compiles(CommittedState, "postgresql")
def _handed_out(element: CommittedState, compiler: SQLCompiler, **kw: Any) -> str:
    return "(SELECT last_value FROM revision_id_seq)"
