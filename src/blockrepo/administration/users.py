"""User administration: accounts, their roles and passwords, and the caller's effective rights."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError as PydanticValidationError
from sqlalchemy.orm import Session

from blockrepo.access.actor import FUNCTIONAL_PERMISSIONS, TYPE_ACTIONS, Actor
from blockrepo.administration import repository, supervision
from blockrepo.administration.schemas import (
    CurrentUserOut,
    GroupAccess,
    UserCreate,
    UserOut,
    UserUpdate,
    require_matching_id,
)
from blockrepo.auth.password_policy import refuse_weak_password
from blockrepo.auth.passwords import generate_password
from blockrepo.errors import Conflict, ErrorItem, Forbidden, NameConflict, NotFound, ValidationFailed
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog

ADMIN_USERS = "ADMIN_USERS"
HIDDEN = "(hidden)"


@dataclass(frozen=True)
class UserWriteOutcome:
    user_id: int
    credentials_changed: bool  # sessions and cached credentials of the user are no longer valid


def _require_admin(actor: Actor) -> None:
    if not actor.can(ADMIN_USERS):
        raise Forbidden("user administration needs the ADMIN_USERS permission")


def user_out(record: repository.UserRecord) -> UserOut:
    return UserOut(
        id=record.id,
        login=record.login,
        first_name=record.first_name,
        last_name=record.last_name,
        email=record.email,
        enabled=record.enabled,
        roles=record.roles,
    )


def list_users(db: Session, actor: Actor) -> list[UserOut]:
    _require_admin(actor)
    return [user_out(r) for r in repository.list_users(db)]


def get_user(db: Session, actor: Actor, user_id: int) -> UserOut:
    _require_admin(actor)
    return read_user(db, user_id)


def read_user(db: Session, user_id: int) -> UserOut:
    """A user without a permission check: the answer to a write that was already authorised."""
    return user_out(_existing(db, user_id))


def _existing(db: Session, user_id: int) -> repository.UserRecord:
    record = repository.get_user(db, user_id)
    if record is None:
        raise NotFound(f"no user with id {user_id}")
    return record


def _role_ids(db: Session, names: list[str]) -> dict[str, int]:
    found = repository.role_ids_by_name(db, names)
    errors = [
        ErrorItem(f"/roles/{i}", "unknown_role", f"unknown role '{name}'")
        for i, name in enumerate(names)
        if name not in found
    ]
    if errors:
        raise ValidationFailed("unknown roles", errors=errors)
    return found


def _ensure_a_supervisor_remains(db: Session) -> None:
    if repository.count_enabled_supervisors(db) == 0:
        raise Conflict(
            "the last enabled supervisor cannot be removed, disabled or demoted", code="last_supervisor"
        )


def create_user(
    db: Session, actor: Actor, changes: ChangeLog, body: UserCreate, hash_password: Callable[[str], str]
) -> int:
    _require_admin(actor)
    refuse_weak_password(body.password, body.login)
    role_ids = _role_ids(db, body.roles)
    supervision.refuse_granting(db, actor, body.roles, "/roles", "grant")
    if repository.login_taken(db, body.login):
        raise NameConflict(f"the login '{body.login}' is taken")
    user_id = repository.insert_user(
        db,
        {
            "login": body.login,
            "first_name": body.first_name,
            "last_name": body.last_name,
            "email": body.email,
            "enabled": body.enabled,
            "password_hash": hash_password(body.password),
            "credentials_version": 1,
        },
    )
    repository.set_user_roles(db, user_id, role_ids.values())
    record: list[dict[str, Any]] = [
        {"property": p, "old": [], "new": [v]}
        for p, v in (
            ("login", body.login),
            ("firstName", body.first_name),
            ("lastName", body.last_name),
            ("email", body.email),
            ("enabled", body.enabled),
        )
        if v != ""
    ]
    record.append({"property": "roles", "old": [], "new": sorted(role_ids)})
    record.append({"property": "password", "old": [], "new": [HIDDEN]})
    changes.administration("created", f"user {body.login}", record)
    return user_id


def create_missing_users(
    db: Session, actor: Actor, changes: ChangeLog, users: Sequence[Any], hash_password: Callable[[str], str]
) -> None:
    """Accounts that an import's responsibility values name (`users`: its `{"login", "firstName",
    "lastName"}` objects) and the repository lacks: created disabled, with a random password and no
    role, so that the values keep their meaning (needs ADMIN_USERS when there is one to create)."""
    wanted: dict[str, Mapping[str, Any]] = {
        u["login"]: u for u in users if isinstance(u, Mapping) and isinstance(u.get("login"), str)
    }
    errors: list[ErrorItem] = []
    for login in sorted(wanted):
        if repository.user_id_by_login(db, login) is not None:
            continue
        user = wanted[login]
        try:
            body = UserCreate.model_validate(
                {
                    "login": login,
                    "firstName": str(user.get("firstName") or ""),
                    "lastName": str(user.get("lastName") or ""),
                    "enabled": False,
                    "password": generate_password(),
                }
            )
        except PydanticValidationError as exc:
            errors.append(ErrorItem("/users", "invalid_user", f"{login!r}: {exc.errors()[0]['msg']}"))
            continue
        create_user(db, actor, changes, body, hash_password)
    if errors:
        raise ValidationFailed("the file names users that cannot be created", errors=errors)


def update_user(
    db: Session,
    actor: Actor,
    changes: ChangeLog,
    user_id: int,
    body: UserUpdate,
    hash_password: Callable[[str], str],
) -> UserWriteOutcome:
    _require_admin(actor)
    require_matching_id(body.id, user_id)
    current = _existing(db, user_id)
    supervision.refuse_touching_user(db, actor, current.login, current.roles, "change")
    if body.password is not None:
        refuse_weak_password(body.password, body.login or current.login)
    values: dict[str, Any] = {}
    record: list[dict[str, Any]] = []
    for attr, prop in (
        ("login", "login"),
        ("first_name", "firstName"),
        ("last_name", "lastName"),
        ("email", "email"),
        ("enabled", "enabled"),
    ):
        new = getattr(body, attr)
        old = getattr(current, attr)
        if new is not None and new != old:
            values[attr] = new
            record.append({"property": prop, "old": [old], "new": [new]})
    if "login" in values and repository.login_taken(db, values["login"], except_id=user_id):
        raise NameConflict(f"the login '{values['login']}' is taken")
    credentials_changed = "login" in values or values.get("enabled") is False
    if body.password is not None:
        values["password_hash"] = hash_password(body.password)
        record.append({"property": "password", "old": [HIDDEN], "new": [HIDDEN]})
        credentials_changed = True
    if credentials_changed:
        values["credentials_version"] = current.credentials_version + 1
    roles_changed = False
    if body.roles is not None:
        role_ids = _role_ids(db, body.roles)
        supervision.refuse_granting(db, actor, body.roles, "/roles", "grant")
        if sorted(role_ids) != sorted(current.roles):
            repository.set_user_roles(db, user_id, role_ids.values())
            record.append({"property": "roles", "old": sorted(current.roles), "new": sorted(role_ids)})
            roles_changed = True
    if values:
        repository.update_user(db, user_id, values)
    if roles_changed or values.get("enabled") is False:
        _ensure_a_supervisor_remains(db)
    if record:
        changes.administration("updated", f"user {values.get('login', current.login)}", record)
    return UserWriteOutcome(user_id, credentials_changed)


def delete_user(db: Session, actor: Actor, changes: ChangeLog, user_id: int) -> None:
    _require_admin(actor)
    current = _existing(db, user_id)
    if user_id == actor.user_id:
        raise Conflict("nobody can delete themself", code="self_deletion")
    supervision.refuse_touching_user(db, actor, current.login, current.roles, "delete")
    repository.delete_user(db, user_id)
    _ensure_a_supervisor_remains(db)
    changes.administration(
        "deleted",
        f"user {current.login}",
        [
            {"property": "login", "old": [current.login], "new": []},
            {"property": "roles", "old": current.roles, "new": []},
        ],
    )


def current_user(
    db: Session, actor: Actor, metamodel: Metamodel, session_idle_timeout: int | None = None
) -> CurrentUserOut:
    """The caller and what they may do; needs no permission. Groups the caller may not read are left out,
    as everywhere else. `session_idle_timeout` is given where a session cookie authenticated the request
    (a client that keeps an edit form open learns from it how often to show activity)."""
    record = _existing(db, actor.user_id)
    # Through the actor's checks, so that a narrower credential (an API token) shows what it may do.
    type_permissions = {
        t.name: actions
        for t in metamodel.types
        if (actions := [a for a in TYPE_ACTIONS if actor.can_type(t.id, a)])
    }
    functional = [p for p in FUNCTIONAL_PERMISSIONS if actor.can(p)]
    return CurrentUserOut(
        **user_out(record).model_dump(),
        supervisor=actor.supervisor,
        effective_roles=sorted(actor.role_names),
        type_permissions=type_permissions,  # type: ignore[arg-type]
        functional_permissions=functional,  # type: ignore[arg-type]
        attribute_groups=[
            GroupAccess(name=g.name, read=True, write=actor.can_write_group(g.id))
            for g in metamodel.groups
            if actor.can_read_group(g.id)
        ],
        session_idle_timeout=session_idle_timeout,
    )
