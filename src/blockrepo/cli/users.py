"""`blockrepo user add|passwd`: manage accounts from the command line (for the first admin, or recovery)."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from blockrepo.access.models import SUPERVISOR_ROLE
from blockrepo.administration import repository
from blockrepo.administration.schemas import LOGIN_PATTERN, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH
from blockrepo.auth.password_policy import refuse_weak_password
from blockrepo.auth.passwords import Passwords
from blockrepo.cli.options import build_settings, console
from blockrepo.cli.repository import initialize_repository
from blockrepo.errors import ValidationFailed
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.storage.engine import build_engine, build_session_factory
from blockrepo.storage.transactions import begin_write

app = typer.Typer(help="Manage user accounts.", no_args_is_help=True)

DatabaseOption = Annotated[
    str | None, typer.Option("--database", help="the database (env BLOCKREPO_DATABASE_URL)")
]


def _ask_password(password: str | None, login: str) -> str:
    """The given password, or one typed twice; refused (exit 1) when the API would refuse it."""
    secret: str = (
        password
        if password is not None
        else typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    )
    if not PASSWORD_MIN_LENGTH <= len(secret) <= PASSWORD_MAX_LENGTH:
        console.print(
            f"[red]the password must have {PASSWORD_MIN_LENGTH} to {PASSWORD_MAX_LENGTH} characters[/red]"
        )
        raise typer.Exit(1)
    try:
        refuse_weak_password(secret, login)
    except ValidationFailed as refused:
        console.print(f"[red]{refused.errors[0].message}[/red]")
        raise typer.Exit(1) from None
    return secret


def _check_login(login: str) -> None:
    """The API's rule: letters, digits, '.', '_', '@', '-' (no ':', which HTTP Basic cannot carry)."""
    if re.fullmatch(LOGIN_PATTERN, login) is None:
        console.print(
            f"[red]invalid login {login!r}: use letters, digits, '.', '_', '@' and '-', "
            "starting with a letter or digit, at most 128 characters[/red]"
        )
        raise typer.Exit(1)


@app.command("add")
def add_user(
    login: str,
    password: Annotated[str | None, typer.Option(help="the password (asked for when omitted)")] = None,
    role: Annotated[list[str] | None, typer.Option(help="a role name; repeat for several")] = None,
    supervisor: Annotated[bool, typer.Option(help=f"give the {SUPERVISOR_ROLE} role")] = False,
    database: DatabaseOption = None,
) -> None:
    """Create a user."""
    _check_login(login)
    settings = build_settings(database_url=database)
    initialize_repository(settings)
    roles = list(role or []) + ([SUPERVISOR_ROLE] if supervisor else [])
    # Hashed before the write lock is taken: Argon2id takes a noticeable time, on purpose.
    password_hash = Passwords(settings).hash(_ask_password(password, login))
    engine = build_engine(settings.database_url)
    try:
        with build_session_factory(engine.execution_options(begin_immediate=True))() as db:
            begin_write(db)
            if repository.login_taken(db, login):  # ignoring case, as the API does
                console.print(f"[red]user {login!r} exists[/red]")
                raise typer.Exit(1)
            role_ids = repository.role_ids_by_name(db, roles)
            missing = set(roles) - set(role_ids)
            if missing:
                console.print(f"[red]unknown role(s): {', '.join(sorted(missing))}[/red]")
                raise typer.Exit(1)
            user_id = repository.insert_user(
                db, {"login": login, "password_hash": password_hash, "enabled": True}
            )
            repository.set_user_roles(db, user_id, role_ids.values())
            log = ChangeLog(user_login="cli", request_id="cli")
            log.administration("created", f"user {login}", [{"property": "roles", "old": [], "new": roles}])
            log.flush(db)
            db.commit()
    finally:
        engine.dispose()
    console.print(f"created user {login!r}")


@app.command("passwd")
def change_password(
    login: str,
    password: Annotated[str | None, typer.Option(help="the new password (asked for when omitted)")] = None,
    database: DatabaseOption = None,
) -> None:
    """Set a user's password; existing sessions and cached credentials of the user stop working."""
    settings = build_settings(database_url=database)
    initialize_repository(settings)
    password_hash = Passwords(settings).hash(_ask_password(password, login))
    engine = build_engine(settings.database_url)
    try:
        with build_session_factory(engine.execution_options(begin_immediate=True))() as db:
            begin_write(db)
            user_id = repository.user_id_by_login(db, login)
            if user_id is None:
                console.print(f"[red]no user {login!r}[/red]")
                raise typer.Exit(1)
            repository.set_password(db, user_id, password_hash)
            log = ChangeLog(user_login="cli", request_id="cli")
            log.administration("updated", f"user {login}", [{"property": "password", "old": [], "new": []}])
            log.flush(db)
            db.commit()
    finally:
        engine.dispose()
    console.print(f"password of {login!r} changed")
