"""First start: migrate the schema, then seed an empty repository (default metamodel, Supervisor, `system`).

Safe to run from several processes at once."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, Engine, insert, select, text
from sqlalchemy.orm import Session

from blockrepo.access.actor import FUNCTIONAL_PERMISSIONS, SYSTEM_LOGIN
from blockrepo.access.models import SUPERVISOR_ROLE, Role, RoleFunctionalPermission, User, UserRole
from blockrepo.auth.password_policy import refuse_weak_password
from blockrepo.auth.passwords import Passwords, generate_password
from blockrepo.metamodel.defaults import DEFAULT_BUILTINS, DEFAULT_RELATIONS, DEFAULT_TYPES
from blockrepo.metamodel.models import (
    Attribute,
    AttributeGroup,
    AttributeLiteral,
    BlockType,
    RelationType,
)
from blockrepo.metamodel.snapshot import DEFAULT_GROUP_NAME
from blockrepo.revisions.models import RepositoryState
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.settings import Settings
from blockrepo.storage import migrate

_SEED_LOCK_KEY = 74_0002


@dataclass(frozen=True)
class InitResult:
    created: bool  # the repository was empty and has been seeded
    generated_password: str | None  # the `system` password, if it was generated now


def initialize(engine: Engine, settings: Settings, passwords: Passwords) -> InitResult:
    migrate.upgrade(engine)
    with engine.connect() as connection:
        _lock(connection)
        try:
            with Session(bind=connection) as db:
                if db.get(RepositoryState, 1) is not None:
                    return InitResult(created=False, generated_password=None)
                password = settings.admin_password.get_secret_value() if settings.admin_password else None
                if password is not None:
                    # Raised before anything is written: the next start with a better one seeds as usual.
                    setting = "BLOCKREPO_ADMIN_PASSWORD"
                    refuse_weak_password(password, SYSTEM_LOGIN, pointer=setting, label=setting)
                generated = None if password else generate_password()
                seed(db, passwords.hash(password or generated or ""))
                db.commit()
                return InitResult(created=True, generated_password=generated)
        finally:
            _unlock(connection)


def _lock(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _SEED_LOCK_KEY})
        connection.commit()


def _unlock(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _SEED_LOCK_KEY})
        connection.commit()


def seed(db: Session, system_password_hash: str) -> None:
    """Store the default metamodel, the Supervisor role and `system` as revision 1."""
    db.add(RepositoryState(id=1, revision=0, metamodel_revision=0, access_revision=0))
    group = AttributeGroup(name=DEFAULT_GROUP_NAME, description="Attributes without a group", position=0)
    db.add(group)
    db.flush()
    type_ids: dict[str, int] = {}
    for position, (name, display_name, abbreviation) in enumerate(DEFAULT_TYPES):
        block_type = BlockType(
            name=name,
            display_name=display_name,
            abbreviation=abbreviation,
            description="",
            hierarchical=True,
            hidden=False,
            position=position,
        )
        db.add(block_type)
        db.flush()
        type_ids[name] = block_type.id
        for builtin_position, spec in enumerate(DEFAULT_BUILTINS.get(name, ())):
            attribute = Attribute(
                name=spec.name,
                description="",
                value_type=spec.value_type,
                multiple=False,
                mandatory=False,
                group_id=group.id,
                builtin_type_id=block_type.id,
                position=builtin_position,
            )
            db.add(attribute)
            db.flush()
            if spec.literals:
                db.execute(
                    insert(AttributeLiteral),
                    [
                        {"attribute_id": attribute.id, "name": lit, "description": "", "position": i}
                        for i, lit in enumerate(spec.literals)
                    ],
                )
    db.execute(
        insert(RelationType),
        [
            {
                "name": spec.name,
                "description": "",
                "source_type_id": type_ids[spec.source],
                "source_end": spec.source_end,
                "target_type_id": type_ids[spec.target],
                "target_end": spec.target_end,
                "source_multiple": spec.source_multiple,
                "target_multiple": spec.target_multiple,
                "attributable": spec.attributable,
            }
            for spec in DEFAULT_RELATIONS
        ],
    )
    supervisor = Role(name=SUPERVISOR_ROLE, description="Every right; cannot be changed", builtin=True)
    db.add(supervisor)
    db.flush()
    db.execute(
        insert(RoleFunctionalPermission),
        [{"role_id": supervisor.id, "permission": p} for p in FUNCTIONAL_PERMISSIONS],
    )
    system = User(
        login=SYSTEM_LOGIN,
        first_name="System",
        last_name="Supervisor",
        email="",
        enabled=True,
        password_hash=system_password_hash,
        credentials_version=1,
    )
    db.add(system)
    db.flush()
    db.execute(insert(UserRole).values(user_id=system.id, role_id=supervisor.id))
    log = ChangeLog(user_login=SYSTEM_LOGIN, request_id="bootstrap")
    log.metamodel(
        "created",
        "default metamodel",
        [{"property": "types", "old": [], "new": [name for name, _, _ in DEFAULT_TYPES]}],
    )
    log.administration(
        "created", f"user {SYSTEM_LOGIN}", [{"property": "roles", "old": [], "new": [SUPERVISOR_ROLE]}]
    )
    log.flush(db)


def system_user_id(db: Session) -> int:
    return int(db.scalar(select(User.id).where(User.login == SYSTEM_LOGIN)) or 0)
