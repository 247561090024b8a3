"""The element hot path against its ceiling, in one run: a bare Starlette app (uvicorn, 2 workers) that
answers a constant element-sized JSON body, and `blockrepo serve --workers 2 --demo`, both loaded by wrk.

Scenarios, each at 1 and at 32 connections (`wrk -t2 -d10s` by default): GET by id with a session cookie,
GET by id with the same Basic credentials on every request and no cookie sent back, GET by id with an API
token (`Authorization: Bearer brp_…`, issue 26: it must cost no more than the session GET), and PUT of one
attribute (`Criticality`, cycling through its three literals, so nearly every request writes a revision
with history) with the session cookie and `X-XSRF-TOKEN`, on the one demo element and (`put-distinct`)
round the elements of its type. Prints req/s, p99 and the ratio to the bare
baseline measured in the same run, and the CPU time the server's processes spent per request (Linux
/proc: steadier than rates on a machine shared with other work) and, beside it (`DB CPU`), what the
PostgreSQL server's processes spent (SQLite's work is in the server's own); asserts nothing.

    .venv/bin/python bench/hot_path.py [--database postgresql://postgres@127.0.0.1:5432/postgres]
                                       [--redis-url redis://127.0.0.1:6379/0] [--duration 10]
                                       [--scenarios get-session get-basic get-bearer put put-distinct]
                                       [--rounds 1]

The PUT scenario also counts the answers by status and wrk's socket errors by kind, so that an error
column that is not zero says what it was (a 409 `concurrent_write`, a timeout ...).

Needs `wrk`. The database is a scratch one (a fresh SQLite file, or a new database on the given
PostgreSQL server), dropped afterwards.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import httpx
from harness import WrkResult, free_port, parse_wrk, scratch_database, stop_process

PASSWORD = "bench-password"
BENCH_DIR = Path(__file__).resolve().parent
CONNECTIONS = (1, 32)
SCENARIOS = ("get-session", "get-basic", "get-bearer", "put", "put-distinct")

# wrk's request() hook: headers from the command line, and for PUT a body that moves the attribute to
# another literal on every request (a body that changes nothing would write nothing).
PUT_SCRIPT = """
local literals = {"low", "medium", "high"}
local counter = 0
local paths = {%s}
wrk.method = "PUT"
wrk.headers["Content-Type"] = "application/json"
function init(args) counter = tonumber(offset or "0") end
request = function()
  counter = counter + 1
  local body = '{"Criticality": ["' .. literals[counter %% 3 + 1] .. '"]}'
  if #paths == 0 then return wrk.format(nil, nil, nil, body) end
  -- distinct elements: a literal is kept per element for a whole round, then moves on
  local round = math.floor(counter / #paths)
  body = '{"Criticality": ["' .. literals[round %% 3 + 1] .. '"]}'
  return wrk.format(nil, paths[counter %% #paths + 1], nil, body)
end
statuses = {}
response = function(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end
local threads = {}
function setup(thread)
  thread:set("offset", tostring(#threads * 7919))
  table.insert(threads, thread)
end
function done(summary, latency, requests)
  local total = {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do total[status] = (total[status] or 0) + count end
  end
  local parts = {}
  for status, count in pairs(total) do table.insert(parts, status .. "=" .. count) end
  table.sort(parts)
  local e = summary.errors
  io.write(string.format("statuses: %%s; socket errors: connect=%%d read=%%d write=%%d timeout=%%d\\n",
    table.concat(parts, " "), e.connect, e.read, e.write, e.timeout))
end
"""


@dataclass(frozen=True)
class Row:
    scenario: str
    connections: int
    result: WrkResult
    cpu_ms: float  # the server's CPU time (all its processes) per request
    database_cpu_ms: float  # the PostgreSQL server's CPU time per request (0 on SQLite: in the server's)
    statuses: str = ""  # what the wrk script counted (PUT: answers by status, socket errors by kind)


def cpu_seconds(root: int) -> tuple[float, float]:
    """User and system CPU seconds of a process and its children, and of the PostgreSQL server's processes
    on this machine (Linux /proc): on a machine shared with other work, what a request costs the server is
    steadier than how many it answers per second. SQLite's work is in the server's own processes; a
    PostgreSQL server's has to be added to compare the two."""
    ticks = os.sysconf("SC_CLK_TCK")
    server = database = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command, _, rest = (entry / "stat").read_text().rpartition(")")
        except OSError:
            continue  # a process that ended meanwhile
        fields = rest.split()
        # After the command: state, ppid, ... utime and stime are fields 14 and 15 of the whole line.
        seconds = (int(fields[11]) + int(fields[12])) / ticks
        if int(entry.name) == root or int(fields[1]) == root:
            server += seconds
        elif command.endswith("(postgres"):
            database += seconds
    return server, database


def measured(
    scenario: str, server: Process, connections: int, run: Callable[[], tuple[WrkResult, str]]
) -> Row:
    server_before, database_before = cpu_seconds(server.process.pid)
    result, statuses = run()
    server_after, database_after = cpu_seconds(server.process.pid)
    requests = max(result.requests, 1)
    return Row(
        scenario,
        connections,
        result,
        (server_after - server_before) * 1000 / requests,
        (database_after - database_before) * 1000 / requests,
        statuses,
    )


class Process:
    """A server in its own process on a free loopback port, its output in a log file."""

    def __init__(self, command: list[str], environment: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        with log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)

    def wait_for(self, url: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited:\n{self.log_path.read_text()}")
            try:
                if httpx.get(url, timeout=2).status_code < 500:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the server did not come up:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        stop_process(self.process, timeout=20)


def clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}


def start_blockrepo(
    directory: Path,
    database: str,
    redis_url: str | None,
    workers: int,
    settings: dict[str, str] | None = None,
) -> tuple[Process, str]:
    port = free_port()
    environment = clean_environment()
    environment.update({"BLOCKREPO_ADMIN_PASSWORD": PASSWORD, "BLOCKREPO_LOG_LEVEL": "warning"})
    environment.update(settings or {})
    if redis_url:
        environment["BLOCKREPO_REDIS_URL"] = redis_url
        environment["BLOCKREPO_REDIS_KEY_PREFIX"] = f"blockrepo-bench:{os.getpid()}:"
    command = [
        sys.executable, "-m", "blockrepo", "serve", "--host", "127.0.0.1", "--port", str(port),
        "--database", database, "--workers", str(workers), "--demo",
    ]  # fmt: skip
    server = Process(command, environment, directory / "blockrepo.log")
    base = f"http://127.0.0.1:{port}"
    server.wait_for(f"{base}/api/7_4/openapi.json")
    return server, base


def start_bare(directory: Path, body: bytes, workers: int) -> tuple[Process, str]:
    port = free_port()
    body_file = directory / "element.json"
    body_file.write_bytes(body)
    environment = clean_environment()
    environment["BARE_BODY_FILE"] = str(body_file)
    command = [
        sys.executable, "-m", "uvicorn", "bare_starlette:app", "--app-dir", str(BENCH_DIR),
        "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
        "--log-level", "warning", "--no-access-log", "--no-server-header",
    ]  # fmt: skip
    server = Process(command, environment, directory / "bare.log")
    base = f"http://127.0.0.1:{port}"
    server.wait_for(f"{base}/api/element/X/1")
    return server, base


def wrk(
    url: str, headers: list[str], connections: int, duration: int, script: Path | None = None
) -> tuple[WrkResult, str]:
    """wrk's result, and the line its script printed about statuses (empty without one)."""
    command = ["wrk", f"-t{min(2, connections)}", f"-c{connections}", f"-d{duration}s", "--latency"]
    for header in headers:
        command += ["-H", header]
    if script is not None:
        command += ["-s", str(script)]
    command.append(url)
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    statuses = next((line for line in output.splitlines() if line.startswith("statuses: ")), "")
    return parse_wrk(output), statuses.removeprefix("statuses: ")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", help="a PostgreSQL server URL (default: a fresh SQLite file)")
    parser.add_argument("--redis-url", help="keep sessions (and throttling) in Redis")
    parser.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of both servers")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="measure the GET scenarios this many times, alternating their order, and print the medians "
        "(GETs of nearly equal cost are told apart only so on a machine whose speed drifts)",
    )
    parser.add_argument(
        "--scenarios", nargs="+", choices=SCENARIOS, default=list(SCENARIOS), help="what to measure"
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        help="the server's BLOCKREPO_LOG_LEVEL: `info` writes the access log (one line per request, the "
        "default of a server); `warning`, the default here, measures without it, as earlier figures were",
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian: apt-get install -y wrk)", file=sys.stderr)
        return 2
    authorization = "Basic " + base64.b64encode(f"system:{PASSWORD}".encode()).decode()
    rows: list[Row] = []
    with (
        tempfile.TemporaryDirectory(prefix="blockrepo-hot-") as tmp,
        scratch_database(args.database, "hot_path") as database,
    ):
        directory = Path(tmp)
        server, base = start_blockrepo(
            directory, database, args.redis_url, args.workers, {"BLOCKREPO_LOG_LEVEL": args.log_level}
        )
        try:
            path = _example_path(server.log_path)
            url = base + path
            login = httpx.get(url, headers={"Authorization": authorization}, timeout=30)
            login.raise_for_status()
            body = login.content
            cookie = (
                f"Cookie: JSESSIONID={login.cookies['JSESSIONID']}; XSRF-TOKEN={login.cookies['XSRF-TOKEN']}"
            )
            xsrf = f"X-XSRF-TOKEN: {login.cookies['XSRF-TOKEN']}"
            put_script = directory / "put.lua"
            put_script.write_text(PUT_SCRIPT % "")
            distinct_script = directory / "put-distinct.lua"
            distinct_paths = _sibling_paths(base, path, authorization)
            distinct_script.write_text(PUT_SCRIPT % ", ".join(f'"{p}"' for p in distinct_paths))
            revision_before = login.json()["revision"][0]
            bare, bare_base = start_bare(directory, body, args.workers)
            try:
                wrk(bare_base + path, [], 2, 2)  # warm-up
                for connections in CONNECTIONS:
                    rows.append(
                        measured(
                            "bare Starlette baseline",
                            bare,
                            connections,
                            partial(wrk, bare_base + path, [], connections, args.duration),
                        )
                    )
            finally:
                bare.stop()
            bearer = f"Authorization: Bearer {_minted_token(base, authorization)}"
            wrk(url, [cookie], 2, 2)  # warm-up: caches, connections
            wrk(url, [f"Authorization: {authorization}"], 2, 2)
            wrk(url, [bearer], 2, 2)
            puts = 0
            basic = f"Authorization: {authorization}"
            for connections in CONNECTIONS:
                gets = [
                    (name, headers)
                    for scenario, name, headers in (
                        ("get-session", "GET, session cookie", [cookie]),
                        ("get-basic", "GET, repeated Basic (no cookie)", [basic]),
                        ("get-bearer", "GET, API token (Bearer)", [bearer]),
                    )
                    if scenario in args.scenarios
                ]
                measured_gets: dict[str, list[Row]] = {name: [] for name, _ in gets}
                for round_number in range(args.rounds):
                    for name, headers in gets if round_number % 2 == 0 else reversed(gets):
                        measured_gets[name].append(
                            measured(
                                name,
                                server,
                                connections,
                                partial(wrk, url, headers, connections, args.duration),
                            )
                        )
                rows.extend(_median(rounds) for rounds in measured_gets.values())
                if "put-distinct" in args.scenarios:
                    distinct = measured(
                        f"PUT distinct elements ({len(distinct_paths)})",
                        server,
                        connections,
                        partial(wrk, url, [cookie, xsrf], connections, args.duration, distinct_script),
                    )
                    rows.append(distinct)
                if "put" not in args.scenarios:
                    continue
                put = measured(
                    "PUT 1 attribute, session + XSRF",
                    server,
                    connections,
                    partial(wrk, url, [cookie, xsrf], connections, args.duration, put_script),
                )
                puts += put.result.requests
                rows.append(put)
            after = httpx.get(url, headers={"Authorization": authorization}, timeout=30).json()
            written = after["revision"][0] - revision_before
        finally:
            server.stop()
    store = "Redis" if args.redis_url else "the database"
    kind = "PostgreSQL" if args.database else "SQLite"
    print(
        f"\nGET/PUT {path} ({kind}, sessions in {store}), {args.workers} workers each, "
        f"{os.cpu_count()} CPUs, wrk -t2 -d{args.duration}s\n"
    )
    baseline = {
        row.connections: row.result.requests_per_second for row in rows if row.scenario.startswith("bare")
    }
    header = (
        f"{'scenario':<34} {'conns':>5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'of bare':>8} "
        f"{'CPU ms/req':>10} {'DB CPU':>7} {'errors':>7}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        result = row.result
        ratio = result.requests_per_second / baseline[row.connections]
        print(
            f"{row.scenario:<34} {row.connections:>5} {result.requests_per_second:>9,.0f} "
            f"{result.latency_ms.get('50%', 0):>8.2f} {result.latency_ms.get('99%', 0):>8.2f} "
            f"{ratio:>8.1%} {row.cpu_ms:>10.3f} {row.database_cpu_ms:>7.3f} {result.errors:>7}"
        )
    by_key = {(row.scenario, row.connections): row.result.requests_per_second for row in rows}
    cpu_by_key = {(row.scenario, row.connections): row.cpu_ms for row in rows}
    if {"get-session", "get-basic"} <= set(args.scenarios):
        session_32 = by_key[("GET, session cookie", 32)]
        basic_32 = by_key[("GET, repeated Basic (no cookie)", 32)]
        basic_cpu_32 = cpu_by_key[("GET, repeated Basic (no cookie)", 32)]
        cpu_ratio = basic_cpu_32 / cpu_by_key[("GET, session cookie", 32)]
        print(
            f"\nBasic / session GET at 32 connections: {basic_32 / session_32:.1%} by rate, "
            f"{cpu_ratio:.1%} by CPU per GET"
            f"; session GET 32 / 1 connection(s): {session_32 / by_key[('GET, session cookie', 1)]:.2f}"
        )
    if {"get-session", "get-bearer"} <= set(args.scenarios):
        for connections in CONNECTIONS:
            session_cpu = cpu_by_key[("GET, session cookie", connections)]
            bearer_cpu = cpu_by_key[("GET, API token (Bearer)", connections)]
            rate = (
                by_key[("GET, API token (Bearer)", connections)]
                / by_key[("GET, session cookie", connections)]
            )
            print(
                f"Bearer / session GET at {connections} connection(s): {rate:.1%} by rate, "
                f"{bearer_cpu / session_cpu:.1%} by CPU per GET"
            )
    if {"put", "put-distinct"} & set(args.scenarios):
        print(
            f"\nPUTs of the one element: {puts:,}, its revisions written: {written:,} (the rest set the "
            "literal it already had)"
        )
        for row in rows:
            if row.statuses:
                print(f"PUT answers at {row.connections} connection(s): {row.statuses}")
    return 0


def _median(rounds: list[Row]) -> Row:
    """One row for the rounds of a scenario: the round of the median rate, with the median CPU figures."""
    by_rate = sorted(rounds, key=lambda row: row.result.requests_per_second)
    middle = by_rate[len(by_rate) // 2]
    return replace(
        middle,
        cpu_ms=statistics.median(row.cpu_ms for row in rounds),
        database_cpu_ms=statistics.median(row.database_cpu_ms for row in rounds),
    )


def _minted_token(base: str, authorization: str) -> str:
    """An API token of the demo's supervisor, valid for a day."""
    expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
    response = httpx.post(
        f"{base}/api/tokens",
        json={"name": "hot path", "expiresAt": expires},
        headers={"Authorization": authorization},
        timeout=30,
    )
    response.raise_for_status()
    return str(response.json()["token"])


def _sibling_paths(base: str, path: str, authorization: str) -> list[str]:
    """The element paths of the demo element's type: the PUT of distinct elements goes round them, so
    that concurrent writes rarely meet on one element (on PostgreSQL they then overlap their commits)."""
    type_name = path.split("/")[3]
    listing = httpx.get(
        f"{base}/api/massdata/{type_name}",
        params={"limit": 500, "fields": "id"},
        headers={"Authorization": authorization},
        timeout=30,
    )
    listing.raise_for_status()
    return [f"/api/element/{type_name}/{item['id'][0]}" for item in listing.json()["items"]]


def _example_path(log_path: Path) -> str:
    """The demo business process that `serve --demo` names in its output."""
    for line in log_path.read_text().splitlines():
        if "Try: curl" in line:
            return "/" + line.split("://", 1)[1].split("/", 1)[1].strip()
    raise RuntimeError(f"no example path in the server's output:\n{log_path.read_text()}")


if __name__ == "__main__":
    sys.exit(main())
