"""Live-server fixtures: start `blockrepo serve` as a separate process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

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
        """`database` replaces this test's repository; `admin_password=None` leaves BLOCKREPO_ADMIN_PASSWORD
        unset (a first start then generates and prints the password of `system`)."""
        port = free_port()
        log_path = tmp_path / f"server-{port}.log"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}
        if admin_password is not None:
            environment["BLOCKREPO_ADMIN_PASSWORD"] = admin_password
        if cheap_hashing:
            environment.update({f"BLOCKREPO_{k.upper()}": str(v) for k, v in CHEAP_HASHING.items()})
        environment.update(env or {})
        command = [
            sys.executable, "-m", "blockrepo", "serve",
            "--host", "127.0.0.1", "--port", str(port), "--database", database or database_url, *extra_args,
        ]  # fmt: skip
        with log_path.open("wb") as log_file:
            process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=environment)
        server = LiveServer(f"http://127.0.0.1:{port}", process, log_path)
        servers.append(server)
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"blockrepo serve exited with {process.returncode}:\n{server.log()}")
            try:
                if httpx.get(f"{server.base_url}/api/7_4/openapi.json", timeout=2).status_code == 200:
                    return server
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"blockrepo serve did not come up:\n{server.log()}")
            time.sleep(0.1)

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def live_server(start_server: StartServer) -> LiveServer:
    return start_server()
