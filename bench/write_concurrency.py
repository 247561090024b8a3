"""Throughput of concurrent element writes: PATCH of distinct elements by several connections at once, with
wrk against a live `blockrepo serve`, to see what the write lock order (storage.transactions: every write
takes the `repository_state` row first) costs next to writes that overlapped until their commit.

    python bench/write_concurrency.py                                            # SQLite (a temporary file)
    python bench/write_concurrency.py --database postgresql://postgres@127.0.0.1:5432/postgres
    python bench/write_concurrency.py --workers 1 2 --connections 1 4 16 --duration 10

With an artificial commit latency (`--commit-latency-ms`: a deferred trigger that sleeps at each write's
commit, its locks held, as a slow disk or a synchronous standby would) and few connections per process, the
writes wait on the database rather than on the machine's cores: then two worker processes (two instances
of the service) write nearly twice what one does, where a design in which every write queues behind one
row stays at one commit's latency:

    python bench/write_concurrency.py --workers 1 2 --connections 16 --pool-size 4 --commit-latency-ms 20 \
        --database postgresql://postgres@127.0.0.1:5432/postgres

Each request sets a text attribute of one of `--elements` information systems to a new value (round robin,
so two connections rarely write the same element): a real write, one revision each. Needs `wrk` (Debian:
`apt-get install -y wrk`). With PostgreSQL a scratch database is created next to the given one and dropped
afterwards. Prints a table; asserts nothing.
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
from harness import WrkResult, free_port, parse_wrk, print_wrk_table, scratch_database, stop_process
from sqlalchemy import create_engine, text

from blockrepo.storage.engine import normalize_url

PASSWORD = "bench-password"
ATTRIBUTE = "Probe"

# Round robin over the element paths; every request sends a value of its own.
LUA = """
paths = {%s}
counter = 0
request = function()
  counter = counter + 1
  local path = paths[(counter %% #paths) + 1]
  return wrk.format("PATCH", path, nil, '{"%s": ["value ' .. counter .. '"]}')
end
"""


def start_server(
    database: str, workers: int, log_path: Path, pool_size: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}
    environment.update({"BLOCKREPO_ADMIN_PASSWORD": PASSWORD, "BLOCKREPO_LOG_LEVEL": "warning"})
    if pool_size is not None:
        environment["BLOCKREPO_DB_POOL_SIZE"] = str(pool_size)
    command = [
        sys.executable, "-m", "blockrepo", "serve", "--host", "127.0.0.1", "--port", str(port),
        "--database", database, "--workers", str(workers),
    ]  # fmt: skip
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log_path.read_text()}")
        try:
            if httpx.get(f"{base_url}/api/7_4/openapi.json", timeout=2).status_code == 200:
                return process, base_url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    stop_process(process, timeout=20)
    raise RuntimeError(f"the server did not come up:\n{log_path.read_text()}")


def prepare(base_url: str, elements: int, label: str) -> list[str]:
    """The attribute and the elements the load writes (named after `label`); returns their paths."""
    with httpx.Client(base_url=base_url, auth=("system", PASSWORD), timeout=60) as client:
        attributes = client.get("/api/administration/attributes").json()
        if not any(a["name"] == ATTRIBUTE for a in attributes):
            created = client.post(
                "/api/administration/attributes",
                json={"name": ATTRIBUTE, "valueType": "text", "types": ["InformationSystem"]},
            )
            created.raise_for_status()
        paths = []
        for n in range(elements):
            response = client.post("/api/element/InformationSystem", json={"name": [f"{label} {n}"]})
            response.raise_for_status()
            paths.append(f"/api/element/InformationSystem/{response.json()['id'][0]}")
        return paths


def run_wrk(
    base_url: str, script: Path, connections: int, duration: int, authorization: str
) -> tuple[str, WrkResult]:
    command = [
        "wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(script),
        "-H", f"Authorization: {authorization}", "-H", "Content-Type: application/json", base_url,
    ]  # fmt: skip
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    shown = [("'Authorization: Basic …'" if part.startswith("Authorization") else part) for part in command]
    return " ".join(shown), parse_wrk(output)


def slow_commits(database: str, milliseconds: int) -> None:
    """Every transaction that writes a revision sleeps `milliseconds` at its commit, holding its locks:
    where writes queue behind one row the rate stays at one commit's latency whatever the instances."""
    engine = create_engine(normalize_url(database), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(
                text(
                    "CREATE OR REPLACE FUNCTION bench_slow_commit() RETURNS trigger LANGUAGE plpgsql AS "
                    f"$$ BEGIN PERFORM pg_sleep({milliseconds / 1000}); RETURN NULL; END $$"
                )
            )
            connection.execute(text("DROP TRIGGER IF EXISTS bench_slow_commit ON revision"))
            connection.execute(
                text(
                    "CREATE CONSTRAINT TRIGGER bench_slow_commit AFTER INSERT ON revision DEFERRABLE "
                    "INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bench_slow_commit()"
                )
            )
    finally:
        engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", help="a PostgreSQL URL (a scratch database is made beside it)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="server worker processes")
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 4, 16], help="open connections")
    parser.add_argument("--elements", type=int, default=64, help="elements the writes go round")
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    parser.add_argument(
        "--pool-size",
        type=int,
        help="database connections per worker process (BLOCKREPO_DB_POOL_SIZE): how many writes one "
        "process has in flight at once",
    )
    parser.add_argument(
        "--commit-latency-ms",
        type=int,
        help="PostgreSQL: make every write's commit take this long (a deferred trigger on `revision` that "
        "sleeps), as a slow disk or a synchronous standby would, with the write's locks held",
    )
    args = parser.parse_args()
    if args.commit_latency_ms and not args.database:
        parser.error("--commit-latency-ms needs --database (PostgreSQL)")
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian: apt-get install -y wrk)", file=sys.stderr)
        return 2

    authorization = "Basic " + base64.b64encode(f"system:{PASSWORD}".encode()).decode()
    rows: list[tuple[int, int, WrkResult]] = []
    commands: list[str] = []
    with (
        tempfile.TemporaryDirectory(prefix="blockrepo-bench-") as directory,
        scratch_database(args.database, "writes") as database,
    ):
        for workers in args.workers:
            process, base_url = start_server(
                database, workers, Path(directory) / f"server-{workers}.log", args.pool_size
            )
            try:
                if args.commit_latency_ms:
                    slow_commits(database, args.commit_latency_ms)
                paths = prepare(base_url, args.elements, f"Bench {workers}")
                script = Path(directory) / "patch.lua"
                script.write_text(LUA % (", ".join(f'"{p}"' for p in paths), ATTRIBUTE))
                run_wrk(base_url, script, 2, 2, authorization)  # warm up: caches, connections, the hash
                for connections in args.connections:
                    command, result = run_wrk(base_url, script, connections, args.duration, authorization)
                    commands.append(command)
                    rows.append((workers, connections, result))
            finally:
                stop_process(process, timeout=20)

    backend = "PostgreSQL" if args.database else "SQLite"
    print(
        f"\nPATCH /api/element/InformationSystem/{{id}} ({args.elements} elements round robin, {backend}), "
        f"{os.cpu_count()} CPUs, {args.duration} s per row\n"
    )
    print_wrk_table([("workers", 7), ("conns", 5)], [((w, c), r) for w, c, r in rows], commands)
    return 0


if __name__ == "__main__":
    sys.exit(main())
