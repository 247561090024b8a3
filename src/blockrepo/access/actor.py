"""The acting user of a request and the one place that answers "may this actor do that?"."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from sqlalchemy.orm import Session

from blockrepo.access import repository
from blockrepo.access.models import SUPERVISOR_ROLE, User

SYSTEM_LOGIN = "system"
TYPE_ACTIONS = ("read", "create", "update", "delete")
FUNCTIONAL_PERMISSIONS = (
    "ADMIN_USERS",
    "ADMIN_ROLES",
    "ADMIN_ATTRIBUTES",
    "EDIT_METAMODEL",
    "MASSDATA",
    "IMPORT",
    "EXPORT",
    "VIEW_HISTORY",
    "MINT_TOKENS",
    "MERGE_SCENARIOS",
    "APPROVE_SCENARIOS",
)
# The functional permissions that only read: all a read-only credential keeps of its owner's.
READING_FUNCTIONS = frozenset({"VIEW_HISTORY", "EXPORT", "MASSDATA"})


@dataclass(frozen=True)
class GroupRule:
    """Which roles may read and write one attribute group; empty sets mean the group is unrestricted."""

    readers: frozenset[int] = frozenset()
    writers: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Restriction:
    """How a credential narrower than its owner (an API token) bounds the owner's rights: each part None
    keeps the owner's whole right of that kind, else only what it names. It never adds a right."""

    read_only: bool = False
    type_ids: frozenset[int] | None = None
    group_ids: frozenset[int] | None = None
    functions: frozenset[str] | None = None
    # A planning scenario's key: the credential writes only there (`Actor.in_scenario`) and only reads
    # main and every other scenario, so an integration or an agent can propose changes but never make them.
    scenario: str | None = None

    def allows_function(self, permission: str) -> bool:
        if (self.read_only or self.scenario is not None) and permission not in READING_FUNCTIONS:
            return False
        return self.functions is None or permission in self.functions

    def allows_type(self, type_id: int, action: str) -> bool:
        if (self.read_only or self.scenario is not None) and action != "read":
            return False
        return self.type_ids is None or type_id in self.type_ids

    def allows_group(self, group_id: int, *, writing: bool) -> bool:
        if writing and (self.read_only or self.scenario is not None):
            return False
        return self.group_ids is None or group_id in self.group_ids


@dataclass(frozen=True)
class Actor:
    """Who acts, with effective rights (own roles plus every inherited sub-role)."""

    user_id: int
    login: str
    supervisor: bool
    role_ids: frozenset[int] = frozenset()
    role_names: frozenset[str] = frozenset()
    type_permissions: Mapping[int, frozenset[str]] = field(default_factory=dict)
    functional_permissions: frozenset[str] = frozenset()
    group_rules: Mapping[int, GroupRule] = field(default_factory=dict)
    # A credential narrower than the user (an API token): then `supervisor` is False, so that nothing takes
    # the shortcuts of an actor who sees everything, and `unbounded` says the owner is one (only the
    # restriction bounds this actor).
    restriction: Restriction | None = None
    unbounded: bool = False

    def in_scenario(self, key: str) -> Actor:
        """The actor as it writes in planning scenario `key`: a credential bound to that scenario gets
        there the rights its binding withholds elsewhere (its other bounds stay); anyone else is as is."""
        restriction = self.restriction
        if restriction is None or restriction.scenario != key:
            return self
        lifted = replace(restriction, scenario=None)
        return replace(self, restriction=None if lifted == Restriction() else lifted)

    def can(self, permission: str) -> bool:
        """A functional permission such as EDIT_METAMODEL."""
        if self.restriction is not None and not self.restriction.allows_function(permission):
            return False
        return self.supervisor or self.unbounded or permission in self.functional_permissions

    def can_type(self, type_id: int, action: str) -> bool:
        """read, create, update or delete on the elements of a building block type."""
        if self.restriction is not None and not self.restriction.allows_type(type_id, action):
            return False
        return self.supervisor or self.unbounded or action in self.type_permissions.get(type_id, frozenset())

    def can_read_group(self, group_id: int) -> bool:
        if self.restriction is not None and not self.restriction.allows_group(group_id, writing=False):
            return False
        if self.supervisor or self.unbounded:
            return True
        rule = self.group_rules.get(group_id)
        if rule is None or not rule.readers:
            return True
        return bool(rule.readers & self.role_ids)

    def can_write_group(self, group_id: int) -> bool:
        if self.restriction is not None and not self.restriction.allows_group(group_id, writing=True):
            return False
        if self.supervisor or self.unbounded:
            return True
        if not self.can_read_group(group_id):
            return False
        rule = self.group_rules.get(group_id)
        if rule is None or not rule.writers:
            # No role has write: only a group that nobody restricted at all is writable.
            return rule is None or not rule.readers
        return bool(rule.writers & self.role_ids)


def _effective_roles(direct: set[int], sub_roles: Mapping[int, set[int]]) -> set[int]:
    seen: set[int] = set()
    stack = list(direct)
    while stack:
        role_id = stack.pop()
        if role_id in seen:
            continue
        seen.add(role_id)
        stack.extend(sub_roles.get(role_id, ()))
    return seen


def load_actor(db: Session, user: User) -> Actor:
    """Compute the effective rights of a user (a fixed number of queries)."""
    return load_actor_of(db, user.id, user.login)


def load_actor_of(db: Session, user_id: int, login: str) -> Actor:
    """The effective rights of the user with this id and login (a fixed number of queries)."""
    direct = repository.direct_role_ids(db, user_id)
    sub_roles: dict[int, set[int]] = {}
    for role_id, sub_role_id in repository.sub_role_pairs(db):
        sub_roles.setdefault(role_id, set()).add(sub_role_id)
    role_ids = _effective_roles(direct, sub_roles)
    role_names = repository.role_names(db, role_ids)
    supervisor = SUPERVISOR_ROLE in role_names
    type_permissions: dict[int, set[str]] = {}
    functional: set[str] = set()
    if role_ids:
        for p in repository.type_permissions(db, role_ids):
            granted = type_permissions.setdefault(p.block_type_id, set())
            for action, flag in (
                ("read", p.can_read),
                ("create", p.can_create),
                ("update", p.can_update),
                ("delete", p.can_delete),
            ):
                if flag:
                    granted.add(action)
        functional = repository.functional_permissions(db, role_ids)
    readers: dict[int, set[int]] = {}
    writers: dict[int, set[int]] = {}
    for gp in repository.group_permissions(db):
        if gp.can_read:
            readers.setdefault(gp.group_id, set()).add(gp.role_id)
        if gp.can_write:
            writers.setdefault(gp.group_id, set()).add(gp.role_id)
    group_rules = {
        group_id: GroupRule(frozenset(readers.get(group_id, ())), frozenset(writers.get(group_id, ())))
        for group_id in set(readers) | set(writers)
    }
    return Actor(
        user_id=user_id,
        login=login,
        supervisor=supervisor,
        role_ids=frozenset(role_ids),
        role_names=role_names,
        type_permissions={k: frozenset(v) for k, v in type_permissions.items()},
        functional_permissions=frozenset(functional),
        group_rules=group_rules,
    )


def restricted(actor: Actor, restriction: Restriction | None) -> Actor:
    """`actor` as a credential with `restriction` acts: never more than `actor` may."""
    if restriction is None:
        return actor
    return replace(actor, supervisor=False, unbounded=actor.supervisor, restriction=restriction)


class ActorCache:
    """Effective rights per user (and per restriction of a narrower credential), valid while
    `repository_state.access_revision` and the metamodel revision stay the same (any change to users,
    roles, groups or permissions bumps the access revision). One object per key: the compiled views and
    readers are kept per actor object (`elements.compiled`)."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[int, int, int, Restriction | None], Actor] = {}
        self._max_entries = max_entries

    def cached(
        self,
        user_id: int,
        login: str,
        access_revision: int,
        metamodel_revision: int,
        restriction: Restriction | None = None,
    ) -> Actor | None:
        """The actor if it is held for these revisions, without touching the database."""
        actor = self._entries.get((user_id, access_revision, metamodel_revision, restriction))
        if actor is None and restriction is not None:
            owner = self._entries.get((user_id, access_revision, metamodel_revision, None))
            if owner is not None and owner.login == login:
                actor = self._keep((user_id, access_revision, metamodel_revision, restriction), owner)
        return actor if actor is not None and actor.login == login else None

    def get(
        self,
        db: Session,
        user_id: int,
        login: str,
        access_revision: int,
        metamodel_revision: int,
        restriction: Restriction | None = None,
    ) -> Actor:
        actor = self.cached(user_id, login, access_revision, metamodel_revision, restriction)
        if actor is not None:
            return actor
        owner = load_actor_of(db, user_id, login)
        self._keep((user_id, access_revision, metamodel_revision, None), owner)
        return self._keep((user_id, access_revision, metamodel_revision, restriction), owner)

    def _keep(self, key: tuple[int, int, int, Restriction | None], owner: Actor) -> Actor:
        actor = restricted(owner, key[3])
        with self._lock:
            if len(self._entries) >= self._max_entries:
                self._entries.clear()
            held = self._entries.get(key)
            if held is not None and held.login == actor.login:
                return held  # one object per key: the compiled views are kept per actor object
            self._entries[key] = actor
            return actor
