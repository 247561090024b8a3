"""The `blockrepo` command line: one typer app, one module per command group."""

from __future__ import annotations

import typer

from blockrepo import __version__
from blockrepo.cli import backup, repository, serve, transfer, users

app = typer.Typer(
    name="blockrepo",
    help="blockrepo: an open enterprise-architecture repository with a LUY/iteraplan 7.4 REST API.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"blockrepo {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: bool = typer.Option(
        False,
        "--version",
        help="Print the installed version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    """blockrepo: an open enterprise-architecture repository with a LUY/iteraplan 7.4 REST API."""


serve.register(app)
repository.register(app)
transfer.register(app)
backup.register(app)
app.add_typer(users.app, name="user")


def main() -> None:
    app()
