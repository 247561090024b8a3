"""Massdata at scale: bulk import, NDJSON and JSON export (with the server's peak memory), filtered and
navigation queries, over 100,000 elements with five attributes and two relations each.

    python bench/massdata_scale.py                                  # SQLite (a temporary file)
    python bench/massdata_scale.py --elements 20000                 # a quicker run
    python bench/massdata_scale.py --database postgresql://postgres@127.0.0.1:5432/postgres

`blockrepo serve` runs in its own process on a free loopback port, so that its memory can be read from
/proc (VmHWM, the peak resident set, cannot be reset: each export gets a freshly started server). The
script creates five attributes through the administration API (a number, an enum, a date, a text and a
boolean on InformationSystem), writes `--elements / 50` technical components, then the information
systems with a value for each attribute and two `technicalComponents` each through `POST
/api/massdata/InformationSystem` in batches of 10,000 (on SQLite then bench/bulk_floor.py's floor for the
same rows, and the import's share of it), and analyzes the database (PostgreSQL: VACUUM
ANALYZE, as autovacuum would soon do). It then streams them all as NDJSON, exports the
repository as JSON, imports that document into a second, empty repository (`POST /api/massdata/import`)
and times the queries. Request bodies are encoded before the clock starts; the client shares the
machine's cores with the server. With PostgreSQL scratch databases are created next to the given one and
dropped afterwards. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
from harness import free_port, latency, scratch_database, stop_process
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from blockrepo.storage.engine import normalize_url

PASSWORD = "bench-password"
CHEAP_HASHING = {"ARGON2_TIME_COST": "1", "ARGON2_MEMORY_COST": "1024", "ARGON2_PARALLELISM": "1"}
TYPE = "InformationSystem"
TARGET_TYPE = "TechnicalComponent"
END = "technicalComponents"
NDJSON = "application/x-ndjson"
BATCH = 10_000  # the bulk API's default limit per request
LITERALS = ("low", "medium", "high")
ATTRIBUTES: list[dict[str, Any]] = [
    {"name": "Costs", "valueType": "number", "unit": "EUR", "min": 0},
    {"name": "Criticality", "valueType": "enum", "literals": [{"name": name} for name in LITERALS]},
    {"name": "Go-live", "valueType": "date"},
    {"name": "Owner", "valueType": "text"},
    {"name": "Cloud", "valueType": "boolean"},
]
THRESHOLD = 99_000  # Costs are uniform in [0, 100,000): 1 % of the elements lie above


@dataclass(frozen=True)
class Figure:
    measure: str
    value: str
    target: str = ""
    met: bool | None = None


class Server:
    """`blockrepo serve` (one worker: the process we start is the one that serves) over `database_url`,
    run under `wrapper` (a command prefix such as valgrind's) when one is given."""

    def __init__(
        self,
        database_url: str,
        log_directory: Path,
        label: str,
        *,
        wrapper: Sequence[str] = (),
        startup_seconds: float = 120,
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_directory / f"server-{label}.log"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKREPO_")}
        environment.update({f"BLOCKREPO_{k}": v for k, v in CHEAP_HASHING.items()})
        environment.update({"BLOCKREPO_ADMIN_PASSWORD": PASSWORD, "BLOCKREPO_LOG_LEVEL": "warning"})
        command = [
            *wrapper, sys.executable, "-m", "blockrepo", "serve", "--host", "127.0.0.1", "--port",
            str(self.port), "--database", database_url,
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment)
        deadline = time.monotonic() + startup_seconds
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited:\n{self.log_path.read_text()}")
            try:
                if httpx.get(f"{self.base_url}/api/7_4/openapi.json", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server did not come up:\n{self.log_path.read_text()}")
            time.sleep(0.2)
        self.client = httpx.Client(base_url=self.base_url, auth=("system", PASSWORD), timeout=1800)

    def cpu_seconds(self) -> float:
        """User and system CPU time the server process has used so far (/proc/<pid>/stat)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory_mb(self) -> tuple[float, float]:
        """(current, peak) resident set of the server process in MB, from /proc/<pid>/status."""
        fields: dict[str, float] = {}
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
        return fields["VmRSS"], fields["VmHWM"]

    def stop(self) -> None:
        if hasattr(self, "client"):
            self.client.close()
        stop_process(self.process, timeout=30)


@contextmanager
def running(database_url: str, log_directory: Path, label: str) -> Iterator[Server]:
    server = Server(database_url, log_directory, label)
    try:
        yield server
    finally:
        server.stop()


def check(response: httpx.Response, status: int = 200) -> Any:
    if response.status_code != status:
        request = response.request
        raise RuntimeError(
            f"{request.method} {request.url} answered {response.status_code}: {response.text[:1000]}"
        )
    return response.json()


def element_bodies(elements: int, targets: list[int]) -> list[bytes]:
    """The bulk requests that create the elements, encoded: values and relations vary deterministically."""
    rng = random.Random(42)
    start = dt.date(2000, 1, 1)
    bodies = []
    for first in range(0, elements, BATCH):
        batch = []
        for n in range(first, min(elements, first + BATCH)):
            one, two = rng.sample(targets, 2)
            batch.append(
                {
                    "name": [f"System {n:07d}"],
                    "Costs": [round(rng.uniform(0, 100_000), 2)],
                    "Criticality": [rng.choice(LITERALS)],
                    "Go-live": [(start + dt.timedelta(days=rng.randrange(9000))).isoformat()],
                    "Owner": [f"Team {rng.randrange(200)}"],
                    "Cloud": [rng.random() < 0.4],
                    END: [{"id": one}, {"id": two}],
                }
            )
        bodies.append(orjson.dumps({"elements": batch}))
    return bodies


def load(server: Server, elements: int) -> tuple[float, int, float]:
    """Attributes, targets and elements; returns (seconds of the element import, targets written, the
    server's CPU seconds in the element import)."""
    client = server.client
    for attribute in ATTRIBUTES:
        check(client.post("/api/administration/attributes", json={**attribute, "types": [TYPE]}), 201)
    target_count = max(10, elements // 50)
    target_ids: list[int] = []
    for first in range(0, target_count, BATCH):
        names = [{"name": [f"Component {n:06d}"]} for n in range(first, min(target_count, first + BATCH))]
        result = check(client.post(f"/api/massdata/{TARGET_TYPE}", json={"elements": names}))
        target_ids += [item["id"] for item in result["results"]]
    bodies = element_bodies(elements, target_ids)
    headers = {"Content-Type": "application/json"}
    created = 0
    cpu_before = server.cpu_seconds()
    started = time.perf_counter()
    for body in bodies:
        created += check(client.post(f"/api/massdata/{TYPE}", content=body, headers=headers))["created"]
    seconds = time.perf_counter() - started
    cpu = server.cpu_seconds() - cpu_before
    if created != elements:
        raise RuntimeError(f"the bulk writes created {created:,} elements, not {elements:,}")
    return seconds, target_count, cpu


def settle(database_url: str) -> None:
    """What autovacuum does in a running database after a load: planner statistics and, on PostgreSQL,
    a vacuum (visibility map, hint bits), so that the reads measure the steady state, not the first
    reader of 100,000 fresh rows."""
    engine = create_engine(normalize_url(database_url), isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("ANALYZE" if engine.dialect.name == "sqlite" else "VACUUM ANALYZE"))
    engine.dispose()


def stream_ndjson(server: Server) -> tuple[float, int]:
    """(seconds, elements) of streaming every element of TYPE as NDJSON."""
    lines = 0
    started = time.perf_counter()
    with server.client.stream("GET", f"/api/massdata/{TYPE}", headers={"Accept": NDJSON}) as response:
        if response.status_code != 200:
            response.read()
            check(response)
        for chunk in response.iter_bytes():
            lines += chunk.count(b"\n")
    return time.perf_counter() - started, lines


def export_json(server: Server, path: Path) -> tuple[float, int]:
    """(seconds, elements) of downloading the JSON export of the whole repository into `path`."""
    started = time.perf_counter()
    with server.client.stream("GET", "/api/massdata/export") as response, path.open("wb") as out:
        if response.status_code != 200:
            response.read()
            check(response)
        for chunk in response.iter_bytes():
            out.write(chunk)
    seconds = time.perf_counter() - started
    document = orjson.loads(path.read_bytes())
    return seconds, sum(len(records) for records in document["elements"].values())


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f} elements/s ({count:,} in {seconds:.1f} s)"


def run(
    database: str | None, elements: int, repeat: int, keep: bool, floor_repeat: int, console: Console
) -> list[Figure]:
    figures: list[Figure] = []
    load_before = os.getloadavg()[0]  # the machine may be shared: a high load explains odd figures
    with ExitStack() as stack:
        logs = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="blockrepo-bench-logs-")))
        url = stack.enter_context(scratch_database(database, "massdata_source", keep=keep))
        dialect = make_url(url).get_backend_name()
        sqlite = dialect == "sqlite"
        with running(url, logs, "import") as server:
            seconds, targets, cpu = load(server, elements)
            _, peak = server.memory_mb()
        figures.append(
            Figure(f"bulk import, POST /api/massdata/{TYPE} ({BATCH:,} a request)", rate(elements, seconds))
        )
        figures.append(Figure("  CPU time of the server, µs an element", f"{cpu * 1e6 / elements:.1f}"))
        figures.append(Figure("  peak RSS of the server during the load", f"{peak:,.0f} MB"))
        if sqlite and floor_repeat:
            # In this run, right after the import: the machine's speed moves too much between runs.
            import bulk_floor  # here: it imports this module

            floors = bulk_floor.floors_per_second(elements, BATCH, floor_repeat)
            # The floor binds rows as the server does (multi-row VALUES); executemany's is shown beside it.
            floor, floor_cpu = floors[bulk_floor.MULTIROW_FLOOR]
            executemany_floor, executemany_floor_cpu = floors[bulk_floor.FLOOR]
            old_floor, old_floor_cpu = floors[bulk_floor.OLD_FLOOR]
            share = elements / seconds / floor
            label = f"  floor: bare sqlite3 writing the same rows (bulk_floor.py, fastest of {floor_repeat})"
            figures.append(Figure(label, f"{floor:,.0f} elements/s"))
            figures.append(Figure("  bulk import / floor", f"{share:.1%}", "≥ 50 %", share >= 0.5))
            # By CPU time (the server's against the floor's): what a busy machine moves least.
            cpu_share = (elements / cpu) / floor_cpu
            figures.append(
                Figure(
                    "  by CPU time: server µs an element, floor µs, share",
                    f"{cpu * 1e6 / elements:.1f}, {1e6 / floor_cpu:.1f}, {cpu_share:.1%}",
                )
            )
            figures.append(
                Figure(
                    "  floor with executemany: elements/s, share by the clock, CPU µs, share by CPU",
                    f"{executemany_floor:,.0f}, {elements / seconds / executemany_floor:.1%}, "
                    f"{1e6 / executemany_floor_cpu:.1f}, {(elements / cpu) / executemany_floor_cpu:.1%}",
                )
            )
            # The old floor (full rows with their NULLs, ids looked up by name), for history.
            figures.append(
                Figure(
                    "  old floor: elements/s, share by the clock, CPU µs, share by CPU",
                    f"{old_floor:,.0f}, {elements / seconds / old_floor:.1%}, {1e6 / old_floor_cpu:.1f}, "
                    f"{(elements / cpu) / old_floor_cpu:.1%}",
                )
            )
        settle(url)
        with running(url, logs, "ndjson") as server:
            check(server.client.get(f"/api/massdata/{TYPE}", params={"limit": 1}))  # caches, connection
            before, _ = server.memory_mb()
            seconds, streamed = stream_ndjson(server)
            _, peak = server.memory_mb()
        if streamed != elements:
            raise RuntimeError(f"the NDJSON stream held {streamed:,} lines, not {elements:,}")
        figures.append(
            Figure(
                f"NDJSON export, GET /api/massdata/{TYPE}",
                rate(streamed, seconds),
                "≥ 50,000 elements/s",
                streamed / seconds >= 50_000,
            )
        )
        figures.append(
            Figure(
                "  peak RSS of the server during the stream",
                f"{peak:,.0f} MB (at start {before:,.0f} MB)",
                "< 300 MB",
                peak < 300,
            )
        )
        document = logs / "export.json"
        with running(url, logs, "export") as server:
            check(server.client.get(f"/api/massdata/{TYPE}", params={"limit": 1}))
            before, _ = server.memory_mb()
            seconds, exported = export_json(server, document)
            _, peak = server.memory_mb()
            figures.append(Figure("JSON export, GET /api/massdata/export", rate(exported, seconds)))
            figures.append(
                Figure(
                    "  peak RSS of the server during the export",
                    f"{peak:,.0f} MB (at start {before:,.0f} MB)",
                )
            )
            client = server.client
            predicate = f"@Costs > {THRESHOLD}"
            cases: list[tuple[str, Callable[[], object]]] = [
                (
                    f"GET /api/massdata/{TYPE}?filter={predicate}&limit=100",
                    lambda: check(client.get(f"/api/massdata/{TYPE}", params={"filter": predicate})),
                ),
                (
                    f"POST /api/massdata/query {TYPE}[{predicate}]; limit 100",
                    lambda: check(
                        client.post("/api/massdata/query", json={"query": f"{TYPE}[{predicate}];"})
                    ),
                ),
                (
                    f"POST /api/massdata/query {TYPE}[{predicate}]/{END}; limit 100",
                    lambda: check(
                        client.post("/api/massdata/query", json={"query": f"{TYPE}[{predicate}]/{END};"})
                    ),
                ),
            ]
            for label, call in cases:
                median, p95 = latency(call, repeat)
                figures.append(
                    Figure(
                        label,
                        f"median {median:.1f} ms, p95 {p95:.1f} ms",
                        "< 50 ms" if "/" + END not in label else "",
                        median < 50 if "/" + END not in label else None,
                    )
                )
        target_url = stack.enter_context(scratch_database(database, "massdata_target", keep=keep))
        with running(target_url, logs, "import-document") as server:
            body = document.read_bytes()
            cpu_before = server.cpu_seconds()
            started = time.perf_counter()
            report = check(
                server.client.post(
                    "/api/massdata/import", content=body, headers={"Content-Type": "application/json"}
                )
            )
            seconds = time.perf_counter() - started
            cpu = server.cpu_seconds() - cpu_before
            _, peak = server.memory_mb()
        if report["created"] != exported:
            raise RuntimeError(f"the import created {report['created']:,} elements, not {exported:,}")
        figures.append(
            Figure(
                f"import of the JSON export ({len(body) / 2**20:,.0f} MiB) into an empty repository",
                rate(exported, seconds),
            )
        )
        figures.append(Figure("  CPU time of the server, µs an element", f"{cpu * 1e6 / exported:.1f}"))
        figures.append(Figure("  peak RSS of the server during the import", f"{peak:,.0f} MB"))
        console.print(
            f"[bold]{dialect}[/]: {elements:,} {TYPE} elements with {len(ATTRIBUTES)} attribute values and "
            f"2 {END} each, {targets:,} {TARGET_TYPE} elements; {os.cpu_count()} CPUs, load average "
            f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        )
        if keep:
            console.print(f"kept: {url} and {target_url}")
    return figures


def argument_parser(description: str | None, elements: int) -> argparse.ArgumentParser:
    """The options of the scripts that load this benchmark's data: the database and the element count."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--database", help="postgresql://… server to create scratch databases on (default SQLite)"
    )
    parser.add_argument("--elements", type=int, default=elements, help="elements of the measured type")
    return parser


def main() -> int:
    parser = argument_parser(__doc__, 100_000)
    parser.add_argument("--repeat", type=int, default=20, help="runs of each query")
    parser.add_argument("--keep", action="store_true", help="keep the scratch databases (URLs are printed)")
    parser.add_argument(
        "--floor-repeat",
        type=int,
        default=3,
        help="SQLite: runs of bench/bulk_floor.py's floor (fastest shown) after the bulk import; 0: none",
    )
    args = parser.parse_args()
    console = Console(width=140)
    figures = run(args.database, args.elements, args.repeat, args.keep, args.floor_repeat, console)
    table = Table(title=f"Massdata at scale ({args.elements:,} elements)")
    table.add_column("measure")
    table.add_column("result", justify="right")
    table.add_column("target")
    table.add_column("met")
    for figure in figures:
        met = "" if figure.met is None else ("yes" if figure.met else "[red]no[/]")
        table.add_row(escape(figure.measure), figure.value, figure.target, met)
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
