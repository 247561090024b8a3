"""Helpers of the history tests: write history records, users, roles and attributes straight to the database.

The history API reads what the recorder wrote, so these tests record through the real `ChangeLog` (the
same code path services use) instead of depending on every writing API.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from blockrepo.access.models import (
    AttributeGroupPermission,
    Role,
    RoleFunctionalPermission,
    RoleTypePermission,
    User,
    UserRole,
)
from blockrepo.api.context import AppServices
from blockrepo.metamodel.models import Attribute, AttributeGroup, AttributeTypeActivation, BlockType
from blockrepo.revisions.recorder import ChangeLog

USER_PASSWORD = "reader-password"


@contextmanager
def write_session(app: FastAPI) -> Iterator[Session]:
    services: AppServices = app.state.services
    with services.write_sessions() as db:
        yield db


def record(
    app: FastAPI,
    entries: list[dict[str, Any]],
    *,
    user: str = "system",
    request_id: str = "test",
) -> int:
    """Write one revision holding the given element records ({"operation", "type", "id", "name",
    "changes"}) through the recorder; returns the revision."""
    with write_session(app) as db:
        log = ChangeLog(user_login=user, request_id=request_id)
        for entry in entries:
            log.element(
                entry["operation"],
                type_name=entry["type"],
                element_id=entry["id"],
                element_name=entry["name"],
                changes=entry.get("changes", []),
            )
        revision = log.flush(db)
        db.commit()
    assert revision is not None
    return revision


def record_change(app: FastAPI, operation: str, type_name: str, element_id: int, name: str, **kw: Any) -> int:
    changes = kw.pop("changes", [])
    return record(
        app,
        [{"operation": operation, "type": type_name, "id": element_id, "name": name, "changes": changes}],
        **kw,
    )


def type_id(app: FastAPI, name: str) -> int:
    with write_session(app) as db:
        return int(db.scalar(select(BlockType.id).where(BlockType.name == name)) or 0)


def add_attribute(app: FastAPI, name: str, types: list[str], group: str | None = None) -> int:
    """A text attribute on the given types, in a new attribute group `group` (or the default group)."""
    with write_session(app) as db:
        if group is None:
            group_id = int(db.scalar(select(AttributeGroup.id).order_by(AttributeGroup.id).limit(1)) or 0)
        else:
            attribute_group = AttributeGroup(name=group, description="", position=1)
            db.add(attribute_group)
            db.flush()
            group_id = attribute_group.id
        attribute = Attribute(
            name=name, description="", value_type="text", multiple=False, mandatory=False, group_id=group_id
        )
        db.add(attribute)
        db.flush()
        for type_name in types:
            block_type_id = db.scalar(select(BlockType.id).where(BlockType.name == type_name))
            db.execute(
                insert(AttributeTypeActivation).values(attribute_id=attribute.id, block_type_id=block_type_id)
            )
        log = ChangeLog(user_login="system", request_id="test-attribute")
        log.administration("created", f"attribute {name}", [{"property": "types", "old": [], "new": types}])
        log.metamodel_changed = True
        log.flush(db)
        db.commit()
        return group_id


def add_user(
    app: FastAPI,
    login: str,
    *,
    read_types: list[str] = (),  # type: ignore[assignment]
    functional: list[str] = (),  # type: ignore[assignment]
    readable_groups: list[int] = (),  # type: ignore[assignment]
) -> tuple[str, str]:
    """A user with one role of its own holding exactly these rights; returns Basic credentials."""
    services: AppServices = app.state.services
    with write_session(app) as db:
        role = Role(name=f"role-{login}", description="", builtin=False)
        db.add(role)
        db.flush()
        for type_name in read_types:
            block_type_id = db.scalar(select(BlockType.id).where(BlockType.name == type_name))
            db.add(RoleTypePermission(role_id=role.id, block_type_id=block_type_id, can_read=True))
        for permission in functional:
            db.add(RoleFunctionalPermission(role_id=role.id, permission=permission))
        for group_id in readable_groups:
            db.add(
                AttributeGroupPermission(group_id=group_id, role_id=role.id, can_read=True, can_write=False)
            )
        user = User(
            login=login,
            first_name=login,
            last_name="",
            email="",
            enabled=True,
            password_hash=services.passwords.hash(USER_PASSWORD),
            credentials_version=1,
        )
        db.add(user)
        db.flush()
        db.add(UserRole(user_id=user.id, role_id=role.id))
        log = ChangeLog(user_login="system", request_id="test-user")
        log.administration("created", f"user {login}", [{"property": "roles", "old": [], "new": [role.name]}])
        log.flush(db)
        db.commit()
    return login, USER_PASSWORD


def restrict_group(app: FastAPI, group_id: int, reader_role: str) -> None:
    """Let only `reader_role` read the group (nobody else, supervisors aside)."""
    with write_session(app) as db:
        role_id = db.scalar(select(Role.id).where(Role.name == reader_role))
        db.merge(AttributeGroupPermission(group_id=group_id, role_id=role_id, can_read=True, can_write=False))
        log = ChangeLog(user_login="system", request_id="test-group")
        log.administration(
            "updated",
            f"attribute group {group_id}",
            [{"property": "readers", "old": [], "new": [reader_role]}],
        )
        log.flush(db)
        db.commit()


def all_pages(client: Any, url: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Follow nextCursor to the end; returns every item."""
    items: list[dict[str, Any]] = []
    query = dict(params or {})
    while True:
        response = client.get(url, params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        items.extend(body["items"])
        if body["nextCursor"] is None:
            return items
        query["cursor"] = body["nextCursor"]
