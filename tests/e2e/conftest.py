"""Live-server fixtures: start `blockrepo serve` as a separate process on a free loopback port; and which
worker process of a server holds a connection (read from /proc, Linux only)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.conftest import ADMIN_PASSWORD, CHEAP_HASHING


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    base_url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """Terminate the server (and its workers) and wait for it to exit."""
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


StartServer = Callable[..., LiveServer]


def launch_server(
    database_url: str,
    log_directory: Path,
    *extra_args: str,
    env: dict[str, str] | None = None,
    cheap_hashing: bool = True,
    admin_password: str | None = ADMIN_PASSWORD,
    startup_seconds: float = 60,
) -> LiveServer:
    """Start `blockrepo serve` over `database_url` on a free port and wait (up to `startup_seconds`) until
    it answers; the caller stops it. `admin_password=None` leaves BLOCKREPO_ADMIN_PASSWORD unset (a first
    start then generates and prints the password of `system`)."""
    port = free_port()
    log_path = log_directory / f"server-{port}.log"
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}
    if admin_password is not None:
        environment["BLOCKREPO_ADMIN_PASSWORD"] = admin_password
    if cheap_hashing:
        environment.update({f"BLOCKREPO_{k.upper()}": str(v) for k, v in CHEAP_HASHING.items()})
    environment.update(env or {})
    command = [
        sys.executable, "-m", "blockrepo", "serve",
        "--host", "127.0.0.1", "--port", str(port), "--database", database_url, *extra_args,
    ]  # fmt: skip
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=environment)
    server = LiveServer(f"http://127.0.0.1:{port}", process, log_path)
    deadline = time.monotonic() + startup_seconds
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"blockrepo serve exited with {process.returncode}:\n{server.log()}")
        try:
            if httpx.get(f"{server.base_url}/api/7_4/openapi.json", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise RuntimeError(f"blockrepo serve did not come up:\n{server.log()}")
        time.sleep(0.1)


@pytest.fixture
def start_server(database_url: str, tmp_path: Path) -> Iterator[StartServer]:
    """Returns a function that starts a server over this test's repository; every server is stopped after."""
    servers: list[LiveServer] = []

    def start(
        *extra_args: str,
        env: dict[str, str] | None = None,
        cheap_hashing: bool = True,
        database: str | None = None,
        admin_password: str | None = ADMIN_PASSWORD,
    ) -> LiveServer:
        """`database` replaces this test's repository (see `launch_server` for the rest)."""
        server = launch_server(
            database or database_url,
            tmp_path,
            *extra_args,
            env=env,
            cheap_hashing=cheap_hashing,
            admin_password=admin_password,
        )
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def live_server(start_server: StartServer) -> LiveServer:
    return start_server()


# --- worker processes (Linux /proc) ----------------------------------------------------------------------


def child_pids(pid: int) -> list[int]:
    """Processes whose parent is `pid`."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # Fields after "(comm)": state, ppid, ...; comm may hold spaces and parentheses.
        if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
            children.append(int(entry.name))
    return children


def live_workers(server: LiveServer) -> list[int]:
    """The uvicorn worker processes of a server as they are now: the children of the master that
    multiprocessing spawned (the resource tracker, also a child, is not one). The master replaces a worker
    that died or missed its health check, so the list may change while a server runs."""
    workers = []
    for pid in child_pids(server.process.pid):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                workers.append(pid)
        except OSError:
            continue
    return sorted(workers)


def worker_pids(server: LiveServer, count: int) -> list[int]:
    """The worker processes of a server started with `--workers count`, once all have started (bounded)."""
    deadline = time.monotonic() + 60
    while True:
        workers = live_workers(server)
        if len(workers) == count or time.monotonic() > deadline:
            assert len(workers) == count, f"expected {count} workers, found {workers}:\n{server.log()}"
            return workers
        time.sleep(0.1)


def connection_owner(server: LiveServer, client_port: int) -> int | None:
    """Which worker process of the server holds the server side of our open connection from
    127.0.0.1:client_port; None if it cannot be told (the connection is already gone)."""
    server_port = urlsplit(server.base_url).port
    assert server_port is not None
    local, remote = f"0100007F:{server_port:04X}", f"0100007F:{client_port:04X}"
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == local and fields[2] == remote and fields[9] != "0":
            inode = fields[9]
            break
    if inode is None:
        return None
    target = f"socket:[{inode}]"
    for pid in live_workers(server):
        try:
            descriptors = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                if os.readlink(descriptor) == target:
                    return pid
            except OSError:
                continue
    return None


def log_tail(server: LiveServer, characters: int = 4000) -> str:
    """The end of a server's log, for a failure message (it says whether a worker was replaced)."""
    return server.log()[-characters:]


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def browser_unavailable(reason: str) -> None:
    """Skip, except on CI, where a missing browser is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One Chromium per test process, shared by every browser test: Playwright's sync API refuses to start
    a second instance while another one runs in the same thread."""
    if not CHROMIUM.exists() and shutil.which("chromium") is None:
        browser_unavailable("chromium is not installed (/usr/bin/chromium)")
    executable = str(CHROMIUM) if CHROMIUM.exists() else shutil.which("chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()
