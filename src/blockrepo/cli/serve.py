"""`blockrepo serve`: initialise the repository if needed, then run the HTTP service with uvicorn."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
import uvicorn
from rich.markup import escape

from blockrepo.auth.passwords import hash_permits
from blockrepo.cli.http_protocol import HeadDeadlineProtocol
from blockrepo.cli.options import build_settings, console
from blockrepo.cli.repository import initialize_repository
from blockrepo.demo import DemoLoadFailed, load_demo
from blockrepo.logs import flush_logs, logging_config
from blockrepo.metrics import MULTIPROCESS_DIRECTORY
from blockrepo.settings import Settings
from blockrepo.storage.engine import build_engine

WORKER_HEALTHCHECK_SECONDS = 30
"""How long uvicorn's master waits for a worker to answer its health check before replacing it."""

_ENV_HELP = {
    name: f"{field.description} (env BLOCKREPO_{name.upper()})"
    for name, field in Settings.model_fields.items()
}
# Every setting, including those without a flag, so that `serve --help` lists them all.
_SETTINGS_EPILOG = "Settings (flag, then environment variable, then default):\n\n" + "\n\n".join(
    f"BLOCKREPO_{name.upper()} (default {field.default!r}): {field.description}"
    for name, field in Settings.model_fields.items()
)


def register(app: typer.Typer) -> None:
    @app.command(epilog=_SETTINGS_EPILOG)
    def serve(
        host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="port to listen on")] = 8080,
        workers: Annotated[int, typer.Option(help="worker processes")] = 1,
        database: Annotated[str | None, typer.Option("--database", help=_ENV_HELP["database_url"])] = None,
        demo: Annotated[bool | None, typer.Option("--demo", help=_ENV_HELP["demo"])] = None,
        csrf_enabled: Annotated[
            bool | None, typer.Option("--csrf/--no-csrf", help=_ENV_HELP["csrf_enabled"])
        ] = None,
        session_idle_timeout: Annotated[
            int | None, typer.Option(help=_ENV_HELP["session_idle_timeout"])
        ] = None,
        session_max_age: Annotated[int | None, typer.Option(help=_ENV_HELP["session_max_age"])] = None,
        cookie_secure: Annotated[
            bool | None, typer.Option("--cookie-secure/--no-cookie-secure", help=_ENV_HELP["cookie_secure"])
        ] = None,
        login_max_failures: Annotated[int | None, typer.Option(help=_ENV_HELP["login_max_failures"])] = None,
        login_max_failures_per_address: Annotated[
            int | None, typer.Option(help=_ENV_HELP["login_max_failures_per_address"])
        ] = None,
        login_window: Annotated[int | None, typer.Option(help=_ENV_HELP["login_window"])] = None,
        rate_limit: Annotated[float | None, typer.Option(help=_ENV_HELP["rate_limit"])] = None,
        max_body_bytes: Annotated[int | None, typer.Option(help=_ENV_HELP["max_body_bytes"])] = None,
        redis_url: Annotated[str | None, typer.Option(help=_ENV_HELP["redis_url"])] = None,
        log_level: Annotated[str | None, typer.Option(help=_ENV_HELP["log_level"])] = None,
    ) -> None:
        """Serve the REST API. Every setting also comes from its BLOCKREPO_* variable; flags win.

        BLOCKREPO_ADMIN_PASSWORD sets the password of `system` when it is first created."""
        settings = build_settings(
            database_url=database,
            demo=demo,
            csrf_enabled=csrf_enabled,
            session_idle_timeout=session_idle_timeout,
            session_max_age=session_max_age,
            cookie_secure=cookie_secure,
            login_max_failures=login_max_failures,
            login_max_failures_per_address=login_max_failures_per_address,
            login_window=login_window,
            rate_limit=rate_limit,
            max_body_bytes=max_body_bytes,
            redis_url=redis_url,
            log_level=log_level,
        )
        if settings.password_hash_concurrency == 0:
            # Each worker process has its own permits: the cores are shared among them.
            os.environ["BLOCKREPO_PASSWORD_HASH_CONCURRENCY"] = str(hash_permits(settings, workers))
        initialize_repository(settings)
        if settings.demo:
            load_demo_landscape(settings, f"http://{host}:{port}")
        console.print(
            f"blockrepo serving {settings.database_url} on http://{host}:{port} ({workers} worker(s))",
            soft_wrap=True,
        )
        with metrics_across(workers):
            run_uvicorn(settings, host, port, workers)


@contextmanager
def metrics_across(workers: int) -> Iterator[None]:
    """With several workers, a directory in which they keep their metrics for `/metrics` to sum
    (prometheus_client's multiprocess mode): the operator's `PROMETHEUS_MULTIPROC_DIR`, emptied of an
    earlier run's files, or a new one removed at the end. The workers read it when they start."""
    if workers <= 1:
        yield
        return
    given = os.environ.get(MULTIPROCESS_DIRECTORY)
    if given:
        for stale in Path(given).glob("*.db"):
            stale.unlink()
        yield
        return
    directory = tempfile.mkdtemp(prefix="blockrepo-metrics-")
    os.environ[MULTIPROCESS_DIRECTORY] = directory
    try:
        yield
    finally:
        del os.environ[MULTIPROCESS_DIRECTORY]
        shutil.rmtree(directory, ignore_errors=True)


def run_uvicorn(settings: Settings, host: str, port: int, workers: int) -> None:
    # uvicorn restores this handler after a graceful shutdown and raises the signal again: the lines the
    # log handlers still hold are written first, then the process ends as SIGTERM ends it.
    signal.signal(signal.SIGTERM, _flush_logs_then_terminate)
    uvicorn.run(
        "blockrepo.app:app_from_environment",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=settings.log_level,
        # Every line with time, level, logger and request id; the access log is the application's
        # (blockrepo.access: user, route template, request id), uvicorn's own is off.
        log_config=logging_config(settings.log_level, settings.log_format),
        access_log=False,
        server_header=False,
        # Request heads have a deadline (`header_read_timeout`), which uvicorn alone does not give.
        http=HeadDeadlineProtocol,
        # uvicorn's own proxy-headers middleware believes X-Forwarded-For from 127.0.0.1 (and from
        # FORWARDED_ALLOW_IPS): off, the application believes only `trusted_proxies` (app.Application).
        proxy_headers=False,
        # uvicorn's master kills a worker whose health-check thread has not answered in this many
        # seconds, with its requests in flight; its default of 5 s fires on a loaded machine.
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
        # A change stream never ends by itself: a stopping server waits this long, then closes it.
        timeout_graceful_shutdown=settings.shutdown_timeout,
    )


def _flush_logs_then_terminate(signum: int, _frame: FrameType | None) -> None:
    flush_logs()
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)


def load_demo_landscape(settings: Settings, base_url: str) -> None:
    """Load the demo into an empty repository and say what was loaded, with a request to try."""
    engine = build_engine(settings.database_url)
    try:
        result = load_demo(engine, settings)
    except DemoLoadFailed as exc:
        console.print(f"[red]could not load the demo landscape:[/red] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(1) from exc
    finally:
        engine.dispose()
    if not result.loaded:
        console.print(f"demo landscape not loaded: {result.reason}", soft_wrap=True)
        return
    console.print(
        f"[bold]Loaded the demo landscape:[/bold] {result.elements} elements of {len(result.counts)} types",
        soft_wrap=True,
    )
    if result.users:
        password = (
            f"[green]{escape(result.generated_password)}[/green] (generated; shown only this once)"
            if result.generated_password
            else "from BLOCKREPO_DEMO_PASSWORD"
        )
        console.print(f"Demo users {', '.join(result.users)}: password {password}", soft_wrap=True)
    if result.example_path:
        console.print(f"Try: curl -u system:$PW {base_url}{result.example_path}", soft_wrap=True)
