"""Throughput of 1, 2 and 3 `blockrepo serve` instances behind nginx on one PostgreSQL and one Redis (the
topology of deploy/compose.yaml and tests/e2e/test_team_deployment_live.py), in one run.

Each instance runs `--workers 1`; nginx (Debian's, the shipped `deploy/proxy.conf`) balances round robin.
For each count of instances, wrk at 32 connections through nginx: GET by id with a session cookie, and PUT
of one attribute round the demo's elements of one type (session + XSRF: as hot_path.py's put-distinct).
Everything shares the machine's cores (the instances, nginx, PostgreSQL, Redis and wrk): on 2 cores the
figures say what one more instance costs or gains on the same machine, not what a host per instance
gives. Asserts nothing.

    .venv/bin/python bench/instances.py [--database postgresql://postgres@127.0.0.1:5432/postgres]
                                        [--redis-url redis://127.0.0.1:6379/0] [--duration 10]

Needs `wrk` and `nginx`.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from harness import free_port, scratch_database, stop_process
from hot_path import (
    PASSWORD,
    PUT_SCRIPT,
    Process,
    _example_path,
    _sibling_paths,
    start_blockrepo,
    wrk,
)

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
CONNECTIONS = 32


def nginx_config(directory: Path, port: int, upstreams: list[str]) -> str:
    """deploy/nginx-processes.conf for these instances (nginx drops to `nobody` when started as root: it
    stays root here, to write its files in a directory of this user's)."""
    return (
        (DEPLOY / "nginx-processes.conf")
        .read_text()
        .format(
            user="user root;" if os.geteuid() == 0 else "",
            directory=directory,
            port=port,
            proxy_rules=DEPLOY / "proxy.conf",
            servers="\n".join(
                f"        server {address} max_fails=1 fail_timeout=5s;" for address in upstreams
            ),
        )
    )


def start_nginx(directory: Path, upstreams: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    directory.mkdir(parents=True)
    port = free_port()
    config = directory / "nginx.conf"
    config.write_text(nginx_config(directory, port, upstreams))
    with (directory / "nginx.out").open("wb") as output:
        process = subprocess.Popen(
            [nginx, "-p", str(directory), "-c", str(config), "-g", "daemon off;"],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return process, base
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError((directory / "nginx.out").read_text())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    args = parser.parse_args()
    authorization = "Basic " + base64.b64encode(f"system:{PASSWORD}".encode()).decode()
    rows: list[tuple[int, str, float, float, str]] = []
    with (
        tempfile.TemporaryDirectory(prefix="blockrepo-instances-") as tmp,
        scratch_database(args.database, "instances") as database,
    ):
        directory = Path(tmp)
        instances: list[Process] = []
        bases: list[str] = []
        try:
            for number in range(3):
                own = directory / f"instance-{number}"
                own.mkdir()
                server, base = start_blockrepo(own, database, args.redis_url, 1)
                instances.append(server)
                bases.append(base)
            path = _example_path(instances[0].log_path)
            paths = _sibling_paths(bases[0], path, authorization)
            script = directory / "put.lua"
            script.write_text(PUT_SCRIPT % ", ".join(f'"{p}"' for p in paths))
            for count in (1, 2, 3):
                upstreams = [base.removeprefix("http://") for base in bases[:count]]
                proxy, proxy_base = start_nginx(directory / f"nginx-{count}", upstreams)
                try:
                    login = httpx.get(proxy_base + path, headers={"Authorization": authorization}, timeout=30)
                    login.raise_for_status()
                    cookie = (
                        f"Cookie: JSESSIONID={login.cookies['JSESSIONID']}; "
                        f"XSRF-TOKEN={login.cookies['XSRF-TOKEN']}"
                    )
                    xsrf = f"X-XSRF-TOKEN: {login.cookies['XSRF-TOKEN']}"
                    url = proxy_base + path
                    wrk(url, [cookie], 4, 2)  # warm-up: every instance's caches and connections
                    get, _ = wrk(url, [cookie], CONNECTIONS, args.duration)
                    put, statuses = wrk(url, [cookie, xsrf], CONNECTIONS, args.duration, script)
                    rows.append(
                        (count, "GET by id, session", get.requests_per_second, get.latency_ms["99%"], "")
                    )
                    rows.append(
                        (
                            count,
                            "PUT one attribute, distinct elements",
                            put.requests_per_second,
                            put.latency_ms["99%"],
                            statuses,
                        )
                    )
                finally:
                    stop_process(proxy, timeout=10)
        finally:
            for server in instances:
                server.stop()
    print(f"\n{CONNECTIONS} connections through nginx, {args.duration} s each, PostgreSQL + Redis\n")
    print("| instances | scenario | req/s | p99 ms | statuses |")
    print("|---:|---|---:|---:|---|")
    for count, scenario, rate, p99, statuses in rows:
        print(f"| {count} | {scenario} | {rate:,.0f} | {p99:.1f} | {statuses} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
