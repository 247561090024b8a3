"""Tables of server-side sessions, failed logins and per-user request counts (the database store; Redis
replaces all three when set)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, DateTime, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base


class AuthSession(Base):
    """A server-side session. `id` is the SHA-256 of the cookie value, so a leaked table holds no
    usable session ids."""

    __tablename__ = "auth_session"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(
        ForeignKey("app_user.id", ondelete="CASCADE"), nullable=False, index=True
    )
    credentials_version: Mapped[int] = mapped_column(Integer, nullable=False)
    csrf_token: Mapped[str] = mapped_column(String(128), nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    last_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, index=True)


class LoginFailure(Base):
    """One failed login, counted per key over a window: "pair:<hash of login and client address>" and
    "address:<hash of client address>" (hashed: fixed length, and whatever the client sent fits)."""

    __tablename__ = "login_failure"
    __table_args__ = (Index("ix_login_failure_key_at", "key", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key: Mapped[str] = mapped_column(String(320), nullable=False)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class RateWindow(Base):
    """Requests of one user in the current fixed window of the optional per-user rate limit."""

    __tablename__ = "rate_window"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    window_start: Mapped[int] = mapped_column(BigInteger, nullable=False)
    hits: Mapped[int] = mapped_column(Integer, nullable=False)


class ServerSecret(Base):
    """A secret of the service, made by its migration: `session_signing` signs the session cookies that
    are issued without a stored session (HMAC-SHA256), so every worker and host can check them."""

    __tablename__ = "server_secret"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(128), nullable=False)
