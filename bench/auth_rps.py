"""Requests per second of GET-by-id authenticated by the session cookie, by repeated Basic credentials, and
answered 401 without credentials, measured with `wrk` against a live `blockrepo serve` in one run.

    .venv/bin/python bench/auth_rps.py [--workers 1] [--duration 10] [--connections 16] [--database URL]
                                       [--redis-url redis://127.0.0.1:6379/0]

Needs the `wrk` binary (Debian/Ubuntu: `apt-get install -y wrk`). Starts its own server on a free loopback
port over a fresh SQLite file (or the given database) with production password hashing, prints a table,
asserts nothing about times.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from harness import free_port
from rich.console import Console
from rich.table import Table

PASSWORD = "bench-password-1"
console = Console(width=150)


@dataclass
class Scenario:
    name: str
    headers: list[str]
    expected_status: int
    path: str | None = None  # default: the element


@dataclass
class Result:
    scenario: Scenario
    requests_per_second: float
    latency_avg: str
    latency_p99: str
    requests: int
    unexpected: int


def start_server(args: argparse.Namespace, workdir: Path, port: int) -> subprocess.Popen[bytes]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}
    environment["BLOCKREPO_ADMIN_PASSWORD"] = PASSWORD
    if args.redis_url:
        environment["BLOCKREPO_REDIS_URL"] = args.redis_url
        environment["BLOCKREPO_REDIS_KEY_PREFIX"] = f"blockrepo-bench:{os.getpid()}:"
    database = args.database or f"sqlite:///{workdir / 'bench.db'}"
    command = [
        sys.executable, "-m", "blockrepo", "serve", "--host", "127.0.0.1", "--port", str(port),
        "--database", database, "--workers", str(args.workers), "--log-level", "warning",
    ]  # fmt: skip
    log = (workdir / "server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"blockrepo serve exited: {(workdir / 'server.log').read_text()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/7_4/openapi.json", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    process.terminate()
    raise SystemExit("blockrepo serve did not come up")


def run_wrk(url: str, scenario: Scenario, args: argparse.Namespace, script: Path) -> Result:
    command = [
        "wrk", "--latency", "-t", str(args.threads), "-c", str(args.connections), "-d", f"{args.duration}s",
        "-s", str(script),
    ]  # fmt: skip
    for header in scenario.headers:
        command += ["-H", header]
    command.append(url)
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    latency = re.search(r"Latency\s+(\S+)", output)
    p99 = re.search(r"99%\s+(\S+)", output)
    statuses = {int(code): int(count) for code, count in re.findall(r"status (\d{3}): (\d+)", output)}
    unexpected = sum(count for code, count in statuses.items() if code != scenario.expected_status)
    return Result(
        scenario=scenario,
        requests_per_second=rps,
        latency_avg=latency.group(1) if latency else "?",
        latency_p99=p99.group(1) if p99 else "?",
        requests=requests,
        unexpected=unexpected,
    )


# Counts responses per status code, so that the table can show that each scenario got what it expected.
# The status lines go to stdout after wrk's own summary.
WRK_STATUS_SCRIPT = """
counts = {}  -- a global: the done() hook reads it from each thread's state
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) counts = {} end
function response(status, headers, body) counts[status] = (counts[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    local c = thread:get("counts")
    for status, n in pairs(c) do total[status] = (total[status] or 0) + n end
  end
  for status, n in pairs(total) do io.write(string.format("status %d: %d\\n", status, n)) end
end
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--duration", type=int, default=10, help="seconds per scenario")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--database", help="database URL (default: a fresh SQLite file)")
    parser.add_argument("--redis-url", help="keep sessions in Redis")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed; on Debian/Ubuntu: apt-get install -y wrk")

    with tempfile.TemporaryDirectory(prefix="blockrepo-bench-") as tmp:
        workdir = Path(tmp)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = start_server(args, workdir, port)
        try:
            created = httpx.post(
                f"{base}/api/element/BusinessProcess",
                json={"name": ["Order handling"], "description": ["From order to invoice"]},
                auth=("system", PASSWORD),
                timeout=30,
            )
            created.raise_for_status()
            url = f"{base}/api/element/BusinessProcess/{created.json()['id'][0]}"
            login = httpx.post(
                f"{base}/j_service_security_check",
                data={"j_username": "system", "j_password": PASSWORD},
                timeout=30,
            )
            login.raise_for_status()
            cookie = f"Cookie: JSESSIONID={login.cookies['JSESSIONID']}"
            basic = "Authorization: Basic " + base64.b64encode(f"system:{PASSWORD}".encode()).decode()
            scenarios = [
                Scenario("GET by id, session cookie", [cookie], 200),
                Scenario("GET by id, repeated Basic credentials (no cookie kept)", [basic], 200),
                Scenario("GET by id, Basic credentials + own session cookie", [basic, cookie], 200),
                Scenario("no credentials -> 401", [], 401),
                # The auth layer alone: the session is resolved, the route does no database work.
                Scenario("GET /api/auth-scheme, session cookie", [cookie], 200, "/api/auth-scheme"),
            ]
            script = workdir / "status.lua"
            script.write_text(WRK_STATUS_SCRIPT)
            results = [
                run_wrk(f"{base}{scenario.path}" if scenario.path else url, scenario, args, script)
                for scenario in scenarios
            ]
        finally:
            server.terminate()
            server.wait(timeout=30)

    store = "Redis" if args.redis_url else "database"
    database = args.database or "SQLite (fresh file)"
    table = Table(
        title=f"blockrepo auth throughput: {args.workers} worker(s), {database}, sessions in {store}, "
        f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, {os.cpu_count()} CPU(s)"
    )
    for column in ("scenario", "requests/s", "avg latency", "p99 latency", "requests", "unexpected status"):
        table.add_column(column, justify="left" if column == "scenario" else "right")
    for result in results:
        table.add_row(
            result.scenario.name,
            f"{result.requests_per_second:,.0f}",
            result.latency_avg,
            result.latency_p99,
            f"{result.requests:,}",
            str(result.unexpected),
        )
    console.print(table)


if __name__ == "__main__":
    main()
