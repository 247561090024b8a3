"""The tables of saved reports: the reports and the roles they are shared with."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base


class Report(Base):
    """A saved report: a list (`type_name`, `filter_text`), a query (`query_text`), both with `sort` and
    `fields`, or a diagram (`config`, an opaque configuration of the web interface's diagram)."""

    __tablename__ = "report"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    kind: Mapped[str] = mapped_column(String(16), nullable=False)  # list, query, diagram
    type_name: Mapped[str | None] = mapped_column(String(255), nullable=True)
    filter_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    query_text: Mapped[str | None] = mapped_column(Text, nullable=True)
    sort: Mapped[str | None] = mapped_column(Text, nullable=True)
    fields: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    config: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    owner_id: Mapped[int] = mapped_column(
        ForeignKey("app_user.id", ondelete="CASCADE"), nullable=False, index=True
    )
    owner_login: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    updated_by: Mapped[str] = mapped_column(String(255), nullable=False)


class ReportShare(Base):
    """A role a report is shared with: its members see and run the report (`view`), or also change it
    (`edit`); sharing and deleting stay with the owner."""

    __tablename__ = "report_share"

    report_id: Mapped[int] = mapped_column(ForeignKey("report.id", ondelete="CASCADE"), primary_key=True)
    role_id: Mapped[int] = mapped_column(
        ForeignKey("role.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    access: Mapped[str] = mapped_column(String(8), nullable=False)  # view, edit
