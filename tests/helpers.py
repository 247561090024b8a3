"""Reusable test helpers that set up metamodel and access data directly in the database (for tests of
features whose admin API lives elsewhere), and count SQL statements."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi import FastAPI
from sqlalchemy import Engine, event, insert, select, update
from sqlalchemy.orm import Session
from starlette.testclient import TestClient

from blockrepo.access.actor import Actor
from blockrepo.access.models import (
    AttributeGroupPermission,
    Role,
    RoleFunctionalPermission,
    RoleTypePermission,
    User,
    UserRole,
)
from blockrepo.elements.read.repository import load_elements
from blockrepo.elements.read.view import ElementView
from blockrepo.metamodel.models import (
    Attribute,
    AttributeGroup,
    AttributeLiteral,
    AttributeRelationActivation,
    AttributeTypeActivation,
    BlockType,
    RelationType,
)
from blockrepo.metamodel.snapshot import DEFAULT_GROUP_NAME, BlockTypeDef, Metamodel
from blockrepo.revisions.models import RepositoryState


def engine_of(app: FastAPI) -> Engine:
    return app.state.services.engine  # type: ignore[no-any-return]


@contextmanager
def session_of(app: FastAPI) -> Iterator[Session]:
    """A session on the app's database that commits when the block ends without error."""
    with Session(engine_of(app)) as db:
        yield db
        db.commit()


def _bump(db: Session, *, metamodel: bool = False, access: bool = False) -> None:
    """Caches are keyed by these revisions: bumping them makes every worker see the change."""
    values: dict[str, Any] = {}
    if metamodel:
        values["metamodel_revision"] = RepositoryState.metamodel_revision + 1
    if access:
        values["access_revision"] = RepositoryState.access_revision + 1
    db.execute(update(RepositoryState).where(RepositoryState.id == 1).values(**values))


def type_id(db: Session, name: str) -> int:
    return int(db.scalar(select(BlockType.id).where(BlockType.name == name)) or 0)


def create_group(app: FastAPI, name: str) -> int:
    with session_of(app) as db:
        group = AttributeGroup(name=name, description="", position=10)
        db.add(group)
        db.flush()
        _bump(db, metamodel=True)
        return group.id


def create_attribute(
    app: FastAPI,
    name: str,
    value_type: str,
    *,
    types: Iterable[str] = (),
    relation_types: Iterable[str] = (),
    multiple: bool = False,
    mandatory: bool = False,
    group: str | None = None,
    literals: Iterable[str] = (),
    min_value: float | None = None,
    max_value: float | None = None,
    unit: str | None = None,
) -> int:
    """A user-defined attribute activated for the given building block types and relation types."""
    with session_of(app) as db:
        group_id = db.scalar(
            select(AttributeGroup.id).where(AttributeGroup.name == (group or DEFAULT_GROUP_NAME))
        )
        assert group_id is not None, f"no attribute group {group!r}"
        attribute = Attribute(
            name=name,
            description="",
            value_type=value_type,
            multiple=multiple,
            mandatory=mandatory,
            group_id=group_id,
            unit=unit,
            min_value=min_value,
            max_value=max_value,
            position=0,
        )
        db.add(attribute)
        db.flush()
        for position, literal in enumerate(literals):
            db.add(
                AttributeLiteral(attribute_id=attribute.id, name=literal, description="", position=position)
            )
        for type_name in types:
            db.add(AttributeTypeActivation(attribute_id=attribute.id, block_type_id=type_id(db, type_name)))
        for relation_type in relation_types:
            rt_id = db.scalar(select(RelationType.id).where(RelationType.name == relation_type))
            assert rt_id is not None, f"no relation type {relation_type!r}"
            db.add(AttributeRelationActivation(attribute_id=attribute.id, relation_type_id=rt_id))
        _bump(db, metamodel=True)
        return attribute.id


def create_role(
    app: FastAPI,
    name: str,
    *,
    types: Mapping[str, Iterable[str]] = {},
    functional: Iterable[str] = (),
    groups: Mapping[str, tuple[bool, bool]] = {},
) -> int:
    """A role with type permissions (`{"BusinessProcess": ["read", "update"]}`), functional permissions and
    attribute group permissions."""
    with session_of(app) as db:
        role = Role(name=name, description="", builtin=False)
        db.add(role)
        db.flush()
        for type_name, actions in types.items():
            granted = set(actions)
            db.add(
                RoleTypePermission(
                    role_id=role.id,
                    block_type_id=type_id(db, type_name),
                    can_read="read" in granted,
                    can_create="create" in granted,
                    can_update="update" in granted,
                    can_delete="delete" in granted,
                )
            )
        for permission in functional:
            db.add(RoleFunctionalPermission(role_id=role.id, permission=permission))
        for group_name, (can_read, can_write) in groups.items():
            group_id = db.scalar(select(AttributeGroup.id).where(AttributeGroup.name == group_name))
            assert group_id is not None, f"no attribute group {group_name!r}"
            db.add(
                AttributeGroupPermission(
                    group_id=group_id, role_id=role.id, can_read=can_read, can_write=can_write
                )
            )
        _bump(db, access=True)
        return role.id


def create_user(app: FastAPI, login: str, password: str, roles: Iterable[str] = ()) -> int:
    with session_of(app) as db:
        user = User(
            login=login,
            first_name=login.title(),
            last_name="Tester",
            email=f"{login}@example.org",
            enabled=True,
            password_hash=app.state.services.passwords.hash(password),
            credentials_version=1,
        )
        db.add(user)
        db.flush()
        role_ids = list(db.scalars(select(Role.id).where(Role.name.in_(list(roles)))))
        if role_ids:
            db.execute(insert(UserRole), [{"user_id": user.id, "role_id": r} for r in role_ids])
        _bump(db, access=True)
        return user.id


def client_as(app: FastAPI, login: str, password: str) -> TestClient:
    """A client sending Basic credentials of `login` (use it as a context manager)."""
    client = TestClient(app, base_url="http://127.0.0.1")
    client.auth = (login, password)
    return client


class QueryCounter:
    """Counts SQL statements sent through an engine while active."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    @property
    def count(self) -> int:
        return len(self.statements)


@contextmanager
def count_queries(engine: Engine) -> Iterator[QueryCounter]:
    counter = QueryCounter()

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        counter.statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield counter
    finally:
        event.remove(engine, "before_cursor_execute", record)


def read_elements(
    db: Session,
    metamodel: Metamodel,
    actor: Actor | None,
    type_def: BlockTypeDef,
    ids: Sequence[int],
    fields: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """The element JSON of `ids` (in that order; ids not of the type skipped) as `ElementView.render` makes
    it of the typed rows `load_elements` reads (how the write core renders its answers): what the
    column-oriented `ElementReader` must equal."""
    view = ElementView.build(metamodel, actor, type_def, fields)
    loaded = load_elements(db, type_def.id, ids, view.selection)
    return [view.render(loaded[element_id]) for element_id in dict.fromkeys(ids) if element_id in loaded]
