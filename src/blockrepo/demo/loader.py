"""Loads the demo landscape into a repository without elements, through the administration and element
services (so every rule, invariant and history record is the same as for a client's writes).

One transaction, two revisions: first the metamodel additions, roles and users, then every element.
A repository that already holds elements is left alone; demo roles, users, groups and attributes that
already exist (say, after every element was deleted) are kept as they are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from blockrepo.access import repository as access_repository
from blockrepo.access.actor import SYSTEM_LOGIN, Actor, load_actor
from blockrepo.administration import repository as administration
from blockrepo.administration.attributes import create_attribute
from blockrepo.administration.groups import create_group
from blockrepo.administration.roles import create_role
from blockrepo.administration.schemas import AttributeCreate, AttributeGroupCreate, RoleCreate, UserCreate
from blockrepo.administration.users import create_user
from blockrepo.auth.password_policy import refuse_weak_password
from blockrepo.auth.passwords import Passwords, generate_password
from blockrepo.demo import landscape
from blockrepo.elements import repository as elements_repository
from blockrepo.elements.service import Writer, create_element
from blockrepo.errors import BlockrepoError, ValidationFailed
from blockrepo.metamodel import repository as metamodel_repository
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_session_factory

REQUEST_ID = "demo"


class DemoLoadFailed(Exception):
    """The demo could not be loaded; nothing was written."""


@dataclass(frozen=True)
class DemoResult:
    loaded: bool
    reason: str = ""  # why nothing was loaded
    counts: dict[str, int] = field(default_factory=dict)  # elements created per type
    users: tuple[str, ...] = ()  # demo users created now
    generated_password: str | None = None  # their password, if it was generated now
    example_path: str | None = None  # a demo business process, e.g. /api/element/BusinessProcess/7

    @property
    def elements(self) -> int:
        return sum(self.counts.values())


def load_demo(engine: Engine, settings: Settings) -> DemoResult:
    """Load the demo if the repository has no elements; raises DemoLoadFailed (and writes nothing)."""
    given = settings.demo_password.get_secret_value() if settings.demo_password else None
    if given:
        for user in landscape.USERS:
            try:
                refuse_weak_password(given, user["login"], pointer="BLOCKREPO_DEMO_PASSWORD")
            except ValidationFailed as refused:
                refusal = refused.errors[0].message
                raise DemoLoadFailed(f"BLOCKREPO_DEMO_PASSWORD: {refusal} (for {user['login']!r})") from None
    # BEGIN IMMEDIATE on SQLite: a running server's writers queue behind the load instead of failing.
    sessions = build_session_factory(engine.execution_options(begin_immediate=True))
    with sessions() as db:
        try:
            # The row lock serialises concurrent loads on PostgreSQL; SQLite holds the database lock.
            metamodel_repository.metamodel_revision(db, lock=True)
            if elements_repository.any_element(db):
                return DemoResult(loaded=False, reason="the repository already has elements")
            system = access_repository.user_named(db, SYSTEM_LOGIN)
            if system is None:
                raise DemoLoadFailed(f"there is no user {SYSTEM_LOGIN!r}; run `blockrepo init` first")
            actor = load_actor(db, system)
            password = given or generate_password()

            accounts = ChangeLog(user_login=SYSTEM_LOGIN, request_id=REQUEST_ID)
            users = _administration(db, actor, accounts, Passwords(settings).hash, password)
            accounts.flush(db)

            elements = ChangeLog(user_login=SYSTEM_LOGIN, request_id=REQUEST_ID)
            writer = Writer(db=db, metamodel=_current_metamodel(db), actor=actor, changes=elements)
            counts: Counter[str] = Counter()
            example_id: int | None = None
            for block in landscape.ELEMENTS:
                created = create_element(writer, block.type_name, block.body())
                counts[block.type_name] += 1
                if block.type_name == "BusinessProcess" and block.name == landscape.EXAMPLE_PROCESS:
                    example_id = int(created["id"][0])
            elements.flush(db)
            db.commit()
        except BlockrepoError as exc:
            db.rollback()
            problems = "; ".join(f"{e.pointer}: {e.message}" for e in exc.errors)
            raise DemoLoadFailed(f"{exc.detail}{' (' + problems + ')' if problems else ''}") from exc
    return DemoResult(
        loaded=True,
        counts=dict(counts),
        users=users,
        generated_password=None if given or not users else password,
        example_path=f"/api/element/BusinessProcess/{example_id}" if example_id else None,
    )


def _current_metamodel(db: Session) -> Metamodel:
    """The metamodel as this transaction sees it (each administration step builds on the one before)."""
    revision = metamodel_repository.metamodel_revision(db)
    return metamodel_repository.load_metamodel(db, int(revision or 0))


def _every_type(names: list[str], metamodel: Metamodel) -> list[str]:
    if landscape.EVERY_TYPE in names:
        return [t.name for t in metamodel.types]
    return names


def _administration(
    db: Session, actor: Actor, changes: ChangeLog, hash_password: Any, password: str
) -> tuple[str, ...]:
    """Roles, users, attribute groups and attributes of the demo; returns the logins created."""
    metamodel = _current_metamodel(db)
    existing_roles = administration.role_ids_by_name(db, [r["name"] for r in landscape.ROLES])
    for role in landscape.ROLES:
        if role["name"] in existing_roles:
            continue
        permissions = dict(role["typePermissions"])
        actions = permissions.pop(landscape.EVERY_TYPE, None)
        if actions is not None:
            permissions = {t.name: list(actions) for t in metamodel.types} | permissions
        create_role(
            db, actor, metamodel, changes, RoleCreate.model_validate({**role, "typePermissions": permissions})
        )

    created: list[str] = []
    for user in landscape.USERS:
        if administration.login_taken(db, user["login"]):
            continue
        create_user(
            db, actor, changes, UserCreate.model_validate({**user, "password": password}), hash_password
        )
        created.append(user["login"])

    for group in landscape.ATTRIBUTE_GROUPS:
        if not administration.group_name_taken(db, group["name"]):
            create_group(db, actor, metamodel, changes, AttributeGroupCreate.model_validate(group))

    for attribute in landscape.ATTRIBUTES:
        metamodel = _current_metamodel(db)
        if metamodel.attribute_named(attribute["name"]) is None:
            body = {**attribute, "types": _every_type(attribute["types"], metamodel)}
            create_attribute(db, actor, metamodel, changes, AttributeCreate.model_validate(body))
    return tuple(created)
