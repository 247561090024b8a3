"""The tables of planning scenarios: scenarios, change rows, events, resolutions, shares and reviews."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Boolean, Date, DateTime, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base


class Scenario(Base):
    """A planned landscape: main as of `base_revision` with the scenario's own change rows on top. Open
    until merged (then `merged_revision` names main's revision that took its changes) or closed."""

    __tablename__ = "scenario"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    effective_date: Mapped[dt.date | None] = mapped_column(Date, nullable=True)
    base_revision: Mapped[int] = mapped_column(Integer, nullable=False)
    owner_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), nullable=False)
    owner_login: Mapped[str] = mapped_column(String(255), nullable=False)
    state: Mapped[str] = mapped_column(String(16), nullable=False)  # open, merged, closed
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # Moved by every write in the scenario: what its element versions and its ETag follow.
    version: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    merged_revision: Mapped[int | None] = mapped_column(Integer, nullable=True)
    merged_by: Mapped[str | None] = mapped_column(String(255), nullable=True)
    merged_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # The ids main gave the elements the scenario created, by their ids in the scenario (as text keys).
    merged_ids: Mapped[dict[str, int] | None] = mapped_column(JSON, nullable=True)
    # Proposed for review: how many reviewers' approvals of its current version a merge needs.
    required_approvals: Mapped[int | None] = mapped_column(Integer, nullable=True)
    proposed_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ScenarioChange(Base):
    """What one write in a scenario did to one element, in the shape of main's change rows
    (`revisions.models.Change`): the element's own changeset, or the one its neighbours and parent see.
    `main_revision` is main's revision when it was written (the attribute names it uses are those of
    then, as history's are)."""

    __tablename__ = "scenario_change"
    __table_args__ = (Index("ix_scenario_change_scenario_element", "scenario_id", "element_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenario.id", ondelete="CASCADE"), nullable=False)
    element_id: Mapped[int] = mapped_column(Integer, nullable=False)
    type_name: Mapped[str] = mapped_column(String(255), nullable=False)
    element_name: Mapped[str] = mapped_column(String(255), nullable=False)
    operation: Mapped[str] = mapped_column(String(16), nullable=False)
    changes: Mapped[list[dict[str, Any]]] = mapped_column(JSON, nullable=False)
    main_revision: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    user_login: Mapped[str] = mapped_column(String(255), nullable=False)
    request_id: Mapped[str] = mapped_column(String(128), nullable=False)


class ScenarioResolution(Base):
    """How a conflict of a scenario's element is settled: `take` "scenario", "main" or "value" (then
    `value`, the field's values). `field` "*" settles the element as a whole (deleted on one side,
    changed on the other)."""

    __tablename__ = "scenario_resolution"

    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenario.id", ondelete="CASCADE"), primary_key=True)
    element_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    field: Mapped[str] = mapped_column(String(255), primary_key=True)
    take: Mapped[str] = mapped_column(String(16), nullable=False)
    value: Mapped[list[Any] | None] = mapped_column(JSON, nullable=True)
    resolved_by: Mapped[str] = mapped_column(String(255), nullable=False)
    resolved_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class ScenarioReviewer(Base):
    """A user asked to review a scenario: sees it, comments on it and may approve it."""

    __tablename__ = "scenario_reviewer"

    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenario.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), primary_key=True)
    login: Mapped[str] = mapped_column(String(255), nullable=False)


class ScenarioShare(Base):
    """A role a scenario is shared with: its members see the scenario (`read`), or also write in it
    (`write`); closing, reviewing and merging stay with the owner."""

    __tablename__ = "scenario_share"

    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenario.id", ondelete="CASCADE"), primary_key=True)
    role_id: Mapped[int] = mapped_column(
        ForeignKey("role.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    access: Mapped[str] = mapped_column(String(8), nullable=False)  # read, write


class ScenarioApproval(Base):
    """A reviewer's approval of one version of a scenario: a later change (a write, a resolution) moves the
    version, and the approval no longer counts."""

    __tablename__ = "scenario_approval"

    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenario.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), primary_key=True)
    login: Mapped[str] = mapped_column(String(255), nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    approved_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class ScenarioComment(Base):
    """A comment on a scenario, on one of its elements or on one field of it."""

    __tablename__ = "scenario_comment"
    __table_args__ = (Index("ix_scenario_comment_scenario_id_id", "scenario_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenario.id", ondelete="CASCADE"), nullable=False)
    element_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    field: Mapped[str | None] = mapped_column(String(255), nullable=True)
    author: Mapped[str] = mapped_column(String(255), nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class ScenarioEvent(Base):
    """What happened to a scenario as a whole (proposed, approved, commented on, synced, merged, closed,
    reopened), written in the transaction that did it, after the scenario's row is locked, so that ids
    follow commit order within a scenario: the outbox its webhooks read."""

    __tablename__ = "scenario_event"
    __table_args__ = (Index("ix_scenario_event_scenario_id_id", "scenario_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenario.id", ondelete="CASCADE"), nullable=False)
    kind: Mapped[str] = mapped_column(String(32), nullable=False)
    login: Mapped[str] = mapped_column(String(255), nullable=False)
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class MergeRule(Base):
    """A check every scenario is held to before it merges: an iteraQL query that selects the elements
    breaking the rule ("current systems without a responsible"). A required rule that selects any
    element in a scenario stops its merge."""

    __tablename__ = "merge_rule"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False, unique=True)
    query: Mapped[str] = mapped_column(Text, nullable=False)
    required: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
