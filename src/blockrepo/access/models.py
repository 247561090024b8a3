"""Tables of users, roles and permissions."""

from __future__ import annotations

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from blockrepo.storage.base import Base

# The seeded role that holds every right; its name is what marks it (it is never deleted or renamed).
SUPERVISOR_ROLE = "Supervisor"


class User(Base):
    __tablename__ = "app_user"
    # Session cookies and cached credentials name a user by id: SQLite must never give a deleted user's id
    # to a new account, or the old cookie would act as the new one (PostgreSQL's sequence never does).
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    login: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
    first_name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    last_name: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    email: Mapped[str] = mapped_column(String(255), nullable=False, default="")
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    password_hash: Mapped[str] = mapped_column(String(255), nullable=False)
    # Bumped on every password change or disabling; sessions and cached credentials carry it.
    credentials_version: Mapped[int] = mapped_column(Integer, nullable=False, default=1)


class Role(Base):
    __tablename__ = "role"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True, nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    builtin: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class UserRole(Base):
    __tablename__ = "user_role"

    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id", ondelete="CASCADE"), primary_key=True)
    role_id: Mapped[int] = mapped_column(
        ForeignKey("role.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class RoleSubRole(Base):
    __tablename__ = "role_sub_role"

    role_id: Mapped[int] = mapped_column(ForeignKey("role.id", ondelete="CASCADE"), primary_key=True)
    sub_role_id: Mapped[int] = mapped_column(
        ForeignKey("role.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class RoleTypePermission(Base):
    __tablename__ = "role_type_permission"

    role_id: Mapped[int] = mapped_column(ForeignKey("role.id", ondelete="CASCADE"), primary_key=True)
    block_type_id: Mapped[int] = mapped_column(
        ForeignKey("block_type.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    can_read: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    can_create: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    can_update: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    can_delete: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class RoleFunctionalPermission(Base):
    __tablename__ = "role_functional_permission"

    role_id: Mapped[int] = mapped_column(ForeignKey("role.id", ondelete="CASCADE"), primary_key=True)
    permission: Mapped[str] = mapped_column(String(64), primary_key=True)


class AttributeGroupPermission(Base):
    __tablename__ = "attribute_group_permission"

    group_id: Mapped[int] = mapped_column(
        ForeignKey("attribute_group.id", ondelete="CASCADE"), primary_key=True
    )
    role_id: Mapped[int] = mapped_column(
        ForeignKey("role.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    can_read: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    can_write: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
