"""GET-by-id throughput with repeated Basic credentials: `blockrepo serve --demo` on SQLite, loaded by wrk.

The server and the load generator are separate processes on the loopback interface. Every request sends
the same `Authorization: Basic …` header, as a script would; after the first, the credential cache spares
the Argon2id hash, so the figure measures the request path itself: authentication lookup, session, the
element read (a fixed number of queries) and the JSON rendering. Prints a table; asserts nothing.

    python bench/get_by_id.py                       # 1 and 2 workers, 1/4/16 connections, 10 s each
    python bench/get_by_id.py --workers 1 --connections 8 --duration 30
    python bench/get_by_id.py --auth basic session  # also with a session cookie instead of credentials

Needs `wrk` (Debian: `apt-get install -y wrk`).
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from harness import WrkResult, free_port, parse_wrk, print_wrk_table, stop_process, wait_for_demo_server

PASSWORD = "bench-password"


class Server:
    """`blockrepo serve --demo` in its own process over a fresh SQLite repository."""

    def __init__(self, directory: Path, workers: int) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = directory / f"server-{workers}.log"
        database = f"sqlite:///{directory / f'bench-{workers}.db'}"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}
        environment.update({"BLOCKREPO_ADMIN_PASSWORD": PASSWORD, "BLOCKREPO_LOG_LEVEL": "warning"})
        command = [
            sys.executable, "-m", "blockrepo", "serve", "--host", "127.0.0.1", "--port", str(self.port),
            "--database", database, "--workers", str(workers), "--demo",
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)

    def wait_until_ready(self) -> str:
        """The path of the demo business process printed at start, once the server answers."""
        return wait_for_demo_server(self.process, self.log_path, self.base_url, 120)

    def stop(self) -> None:
        stop_process(self.process, timeout=20)


def run_wrk(url: str, header: str, connections: int, threads: int, duration: int) -> tuple[str, WrkResult]:
    """One wrk run; returns the command as shown (without the secret) and what wrk measured."""
    command = [
        "wrk", f"-t{min(threads, connections)}", f"-c{connections}", f"-d{duration}s", "--latency",
        "-H", header, url,
    ]  # fmt: skip
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    hidden = "'" + header.split(" ", 1)[0] + " …'"
    return " ".join(hidden if part == header else part for part in command), parse_wrk(output)


def session_header(url: str, authorization: str) -> str:
    """A Cookie header with a fresh session, started by one request with credentials."""
    response = httpx.get(url, headers={"Authorization": authorization}, timeout=30)
    session = response.cookies.get("JSESSIONID")
    if response.status_code != 200 or not session:
        raise RuntimeError(f"no session cookie from {url}: {response.status_code}")
    return f"Cookie: JSESSIONID={session}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="server worker processes")
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 4, 16], help="open connections")
    parser.add_argument("--threads", type=int, default=1, help="wrk threads (the machine's cores are shared)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    parser.add_argument(
        "--auth", nargs="+", choices=("basic", "session"), default=["basic"], help="how requests authenticate"
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian: apt-get install -y wrk)", file=sys.stderr)
        return 2

    authorization = "Basic " + base64.b64encode(f"system:{PASSWORD}".encode()).decode()
    rows: list[tuple[int, str, int, WrkResult]] = []
    commands: list[str] = []
    with tempfile.TemporaryDirectory(prefix="blockrepo-bench-") as directory:
        for workers in args.workers:
            server = Server(Path(directory), workers)
            try:
                path = server.wait_until_ready()
                url = server.base_url + path
                check = httpx.get(url, headers={"Authorization": authorization}, timeout=30)
                if check.status_code != 200 or check.json().get("type") != ["BusinessProcess"]:
                    raise RuntimeError(f"GET {path} answered {check.status_code}: {check.text[:300]}")
                basic = f"Authorization: {authorization}"
                run_wrk(url, basic, 2, 1, 2)  # warm up: caches, connections, the first hash
                for auth in args.auth:
                    header = basic if auth == "basic" else session_header(url, authorization)
                    for connections in args.connections:
                        command, result = run_wrk(url, header, connections, args.threads, args.duration)
                        commands.append(command)
                        rows.append((workers, auth, connections, result))
            finally:
                server.stop()

    print(
        f"\nGET /api/element/BusinessProcess/{{id}} (demo data, SQLite), {os.cpu_count()} CPUs, "
        f"{args.duration} s per row; basic: the same credentials on every request, session: a cookie\n"
    )
    print_wrk_table(
        [("workers", 7), ("auth", 7), ("conns", 5)], [((w, a, c), r) for w, a, c, r in rows], commands
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
