"""What the benchmark scripts share: scratch databases, a free loopback port and latency statistics.

The scripts run as `python bench/<script>.py`, so this module is importable as `harness` beside them."""

from __future__ import annotations

import math
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from blockrepo.settings import Settings
from blockrepo.storage.engine import normalize_url


@contextmanager
def scratch_database(url: str | None, label: str, *, keep: bool = False) -> Iterator[str]:
    """A SQLite file `<label>.db` in a new temporary directory (url None or sqlite), or a new database
    `bench_<label>_<random>` on the PostgreSQL server of `url`; removed afterwards unless `keep`."""
    if url is None or url.startswith("sqlite"):
        directory = Path(tempfile.mkdtemp(prefix="blockrepo-bench-"))
        try:
            yield f"sqlite:///{directory / f'{label}.db'}"
        finally:
            if not keep:
                for path in directory.iterdir():
                    path.unlink()
                directory.rmdir()
        return
    server = make_url(normalize_url(url))
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    name = f"bench_{label}_{uuid.uuid4().hex[:10]}"
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        if not keep:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def wait_for_demo_server(
    process: subprocess.Popen[bytes], log_path: Path, base_url: str, seconds: float
) -> str:
    """The path of the demo business process `blockrepo serve --demo` printed at start (its log is
    `log_path`), once the server at `base_url` answers; RuntimeError with the log if it exits or does not
    come up within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log_path.read_text()}")
        printed = re.search(r"Try: curl -u system:\$PW http://[^/\s]+(/\S+)", log_path.read_text())
        if printed:
            try:
                if httpx.get(f"{base_url}/api/7_4/openapi.json", timeout=2).status_code == 200:
                    return printed.group(1)
            except httpx.TransportError:
                pass
        time.sleep(0.2)
    raise RuntimeError(f"the server did not come up:\n{log_path.read_text()}")


def blockrepo_command(
    arguments: Sequence[str], *, source_tree: Path | None = None
) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB, output) of `python -m blockrepo ARGUMENTS` as a process of its own (its
    own peak, from `wait4`; Python's start included), run from `source_tree` (a `src/`) when given."""
    environment = {**os.environ, "BLOCKREPO_ADMIN_PASSWORD": "Bench-password-42"}
    if source_tree is not None:
        environment["PYTHONPATH"] = str(source_tree)
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "blockrepo", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=environment,
    )
    assert process.stdout is not None
    output = process.stdout.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"blockrepo {' '.join(arguments)} failed:\n{output[-3000:]}")
    return seconds, usage.ru_maxrss / 1024, output


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def latency(call: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(median, p95) milliseconds of `repeat` calls after one warm-up call (caches, connections); the
    p95 is the nearest-rank one."""
    call()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[max(0, math.ceil(len(samples) * 0.95) - 1)]


def stop_process(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Ask a server process to end (SIGTERM); kill it when it has not ended within `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def cheap_settings(database_url: str, admin_password: str) -> Settings:
    """Settings of an in-process repository for a benchmark: the given admin password, and argon2 at its
    cheapest, since what is measured is never the login."""
    return Settings(
        database_url=database_url,
        admin_password=admin_password,
        argon2_time_cost=1,
        argon2_memory_cost=1024,
        argon2_parallelism=1,
    )


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


@dataclass(frozen=True)
class WrkResult:
    requests_per_second: float
    latency_ms: dict[str, float]  # "avg", "50%", "90%", "99%"
    requests: int
    errors: int  # socket errors plus non-2xx/3xx answers


def _milliseconds(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS[unit]


def parse_wrk(output: str) -> WrkResult:
    latency: dict[str, float] = {}
    average = re.search(r"^\s*Latency\s+(\S+)", output, re.MULTILINE)
    if average:
        latency["avg"] = _milliseconds(average.group(1))
    for percentile, value in re.findall(r"^\s*(50|90|99)%\s+(\S+)", output, re.MULTILINE):
        latency[f"{percentile}%"] = _milliseconds(value)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    total = re.search(r"(\d+) requests in", output)
    non_ok = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if rate is None or total is None:
        raise RuntimeError(f"cannot read wrk's output:\n{output}")
    errors = int(non_ok.group(1)) if non_ok else 0
    if socket_errors:
        errors += sum(int(n) for n in socket_errors.groups())
    return WrkResult(float(rate.group(1)), latency, int(total.group(1)), errors)


def print_wrk_table(
    leading: Sequence[tuple[str, int]],
    rows: Sequence[tuple[tuple[object, ...], WrkResult]],
    commands: Sequence[str],
) -> None:
    """wrk results, one row each: the caller's leading columns (name, width), then rate, latencies, counts;
    then every distinct wrk command, so a figure can be reproduced."""
    columns = (*leading, ("req/s", 9), ("avg ms", 8), ("p50 ms", 8), ("p90 ms", 8), ("p99 ms", 8))
    columns += (("requests", 9), ("errors", 6))
    header = " ".join(f"{name:>{width}}" for name, width in columns)
    print(header)
    print("-" * len(header))
    for values, r in rows:
        lat = r.latency_ms
        print(
            " ".join(f"{value!s:>{width}}" for value, (_, width) in zip(values, leading, strict=True))
            + f" {r.requests_per_second:>9.0f} "
            + " ".join(f"{lat.get(key, 0):>8.2f}" for key in ("avg", "50%", "90%", "99%"))
            + f" {r.requests:>9} {r.errors:>6}"
        )
    print("\nwrk commands:")
    for command in dict.fromkeys(commands):
        print(f"  {command}")
