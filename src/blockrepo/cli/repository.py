"""`blockrepo init`: create the schema and seed an empty repository."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from blockrepo.auth.passwords import Passwords
from blockrepo.bootstrap import InitResult, initialize
from blockrepo.cli.options import build_settings, console
from blockrepo.errors import BlockrepoError
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine


def initialize_repository(settings: Settings) -> InitResult:
    """Migrate and seed; print the generated supervisor password once, when it was generated now."""
    engine = build_engine(settings.database_url)
    try:
        result = initialize(engine, settings, Passwords(settings))
    except BlockrepoError as exc:
        problems = "; ".join(f"{e.pointer}: {e.message}" for e in exc.errors)
        console.print(f"[red]{escape(exc.detail)}[/red] ({escape(problems)})", soft_wrap=True)
        raise typer.Exit(1) from exc
    finally:
        engine.dispose()
    if result.generated_password:
        console.print(
            "[bold]Created the supervisor `system` with the generated password:[/bold] "
            f"[green]{result.generated_password}[/green]\n(it is shown only this once)"
        )
    return result


def register(app: typer.Typer) -> None:
    @app.command()
    def init(
        database: Annotated[
            str | None,
            typer.Option("--database", help="sqlite:///path or postgresql://… (env BLOCKREPO_DATABASE_URL)"),
        ] = None,
    ) -> None:
        """Create or upgrade the schema; seed the default metamodel and `system` into an empty repository."""
        settings = build_settings(database_url=database)
        result = initialize_repository(settings)
        console.print("repository initialised" if result.created else "repository is up to date")
