"""The table of exchange identities: which element an identifier of another tool's model stands for."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base


class ExchangeIdentity(Base):
    """An element as a model of another tool (an ArchiMate file from Archi) identifies it: the model's
    identifier and the element's. An import of that model again finds the element by it, so a rename in
    the other tool stays a rename. Goes with its element."""

    __tablename__ = "exchange_identity"

    model: Mapped[str] = mapped_column(String(255), primary_key=True)
    identifier: Mapped[str] = mapped_column(String(255), primary_key=True)
    element_id: Mapped[int] = mapped_column(
        ForeignKey("element.id", ondelete="CASCADE"), nullable=False, index=True
    )
