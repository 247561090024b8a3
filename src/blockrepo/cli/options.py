"""Turns command-line flags into settings: flags override BLOCKREPO_* variables, which override defaults."""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError
from rich.console import Console

from blockrepo.settings import Settings

console = Console(stderr=True)


def build_settings(**flags: Any) -> Settings:
    """Settings from the environment with the given flags (None = not given) on top.

    The flags are also exported as BLOCKREPO_* variables so that worker processes started by uvicorn
    build exactly the same settings."""
    given = {name: value for name, value in flags.items() if value is not None}
    try:
        settings = Settings(**given)
    except ValidationError as exc:
        console.print(f"[red]invalid setting:[/red] {exc}")
        raise SystemExit(2) from exc
    for name, value in given.items():
        os.environ[f"BLOCKREPO_{name.upper()}"] = (
            str(value).lower() if isinstance(value, bool) else str(value)
        )
    return settings
