"""The one line a holder of ADMIN_USERS or ADMIN_ROLES cannot cross: only a supervisor may make somebody a
supervisor or touch what makes somebody one.

A role *carries Supervisor* when it is the built-in `Supervisor` or has it among its sub-roles, directly or
through others (`repository.supervisor_roles`); a user *is a supervisor* when one of their roles carries
it, enabled or not (a disabled supervisor re-enabled with a new password would be a supervisor again).
A caller who is not a supervisor gets 403 `supervisor_only` for:

- granting a role that carries Supervisor to a user (create or change);
- changing, disabling, re-passwording or deleting a user who is a supervisor;
- adding a role that carries Supervisor as a sub-role (create or change a role);
- changing or deleting a role that carries Supervisor.

Every other right stays grantable by these administrators, to others and to themselves: ADMIN_ROLES,
ADMIN_USERS and ADMIN_ATTRIBUTES are powers over rights, for trusted administrators (docs/architecture.md,
"The permission model").
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.administration import repository
from blockrepo.errors import ErrorItem, Forbidden

SUPERVISOR_ONLY = "supervisor_only"


def refuse_granting(db: Session, actor: Actor, names: Iterable[str], pointer: str, what: str) -> None:
    """403 when a non-supervisor names (as a user's roles or a role's sub-roles) a role that carries
    Supervisor; `pointer` is the body member, e.g. `/roles`."""
    if actor.supervisor:
        return
    carrying = set(repository.supervisor_roles(db).values())
    named = {i: name for i, name in enumerate(names) if name in carrying}
    if named:
        raise Forbidden(
            f"only a supervisor may {what} a role that carries Supervisor: "
            + ", ".join(sorted(set(named.values()))),
            code=SUPERVISOR_ONLY,
            errors=[
                ErrorItem(f"{pointer}/{i}", SUPERVISOR_ONLY, f"'{name}' carries Supervisor")
                for i, name in named.items()
            ],
        )


def refuse_touching_role(db: Session, actor: Actor, role_name: str, what: str) -> None:
    """403 when a non-supervisor changes or deletes a role that carries Supervisor."""
    if not actor.supervisor and role_name in repository.supervisor_roles(db).values():
        raise Forbidden(
            f"only a supervisor may {what} the role '{role_name}', which carries Supervisor",
            code=SUPERVISOR_ONLY,
        )


def refuse_touching_user(db: Session, actor: Actor, login: str, roles: Iterable[str], what: str) -> None:
    """403 when a non-supervisor changes or deletes a user who is a supervisor (enabled or not)."""
    if actor.supervisor:
        return
    if set(roles) & set(repository.supervisor_roles(db).values()):
        raise Forbidden(
            f"only a supervisor may {what} the supervisor '{login}'",
            code=SUPERVISOR_ONLY,
        )
