"""The table of API tokens."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base


class ApiToken(Base):
    """One API token. The secret is kept only as an HMAC under a server-side pepper (`secret_hash`, with
    the pepper's id), so neither a leaked table nor a backup holds a usable token. Times are seconds since
    the epoch: every Bearer request compares them at the driver level. A revoked token keeps its row (the
    history names it) and authenticates nobody."""

    __tablename__ = "api_token"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    public_id: Mapped[str] = mapped_column(String(16), unique=True, nullable=False)
    secret_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    pepper_id: Mapped[str] = mapped_column(String(16), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    user_id: Mapped[int] = mapped_column(
        ForeignKey("app_user.id", ondelete="CASCADE"), nullable=False, index=True
    )
    # Who minted it: the owner, or an administrator minting for a service account (by id: a login can pass
    # to another account; no foreign key, the row outlives the minter).
    created_by: Mapped[str] = mapped_column(String(255), nullable=False)
    created_by_id: Mapped[int] = mapped_column(Integer, nullable=False)
    created_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
    expires_at: Mapped[int] = mapped_column(BigInteger, nullable=False)
    revoked_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    # The restriction as JSON text ({"readOnly", "typeIds", "groupIds", "functions"}), None: none.
    restriction: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Comma-separated networks (CIDR) the token may be used from; None: any.
    allowed_networks: Mapped[str | None] = mapped_column(Text, nullable=True)
    last_used_at: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    last_used_address: Mapped[str | None] = mapped_column(String(64), nullable=True)
    # The token this one replaced by rotation, if any.
    rotated_from: Mapped[int | None] = mapped_column(Integer, nullable=True)
