"""Peak memory of one JSON import in-process, against the size of its body (issue 22, finding 2).

    python bench/import_memory.py                      # about 27 MB of export, RSS growth and the factor
    python bench/import_memory.py --mb 5 --trace       # tracemalloc's peak and its top lines instead
    python bench/import_memory.py --trace --frames 8   # the same, each entry with 8 frames of its stack
    python bench/import_memory.py --mb 19 --chunk 0    # the whole file as one chunk (CPU a record)

The body is what `POST /api/massdata/export` gives for bench/massdata_scale.py's load: one
`TechnicalComponent` per 50 `InformationSystem`s, each system with five attribute values and two
components listed by name. It is built here (no source repository is written first) and imported into an
empty in-process repository (Starlette's TestClient) whose attributes exist already. Without `--trace`
the figure is the growth of the process's peak resident set (VmHWM, reset through /proc/self/clear_refs
right before the request) over its resident set then; with `--trace`, tracemalloc's peak of the request
and, at the highest point a sampling thread saw, the lines that held the most. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import random
import sys
import threading
import time
import tracemalloc
import warnings
from pathlib import Path

import orjson
from harness import cheap_settings, scratch_database
from massdata_scale import ATTRIBUTES, END, LITERALS, TARGET_TYPE, TYPE

import blockrepo
from blockrepo import interpreter
from blockrepo.app import create_app
from blockrepo.cli.repository import initialize_repository

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password"
SYSTEM_BYTES = 185  # about what one system's record takes in the document


def export_body(size: int) -> tuple[bytes, int]:
    """An export document of about `size` bytes and the number of records it holds."""
    systems = max(50, size // SYSTEM_BYTES)
    rng = random.Random(42)
    start = dt.date(2000, 1, 1)
    components = [f"Component {n:06d}" for n in range(systems // 50)]
    records = [
        {
            "id": 1_000_000 + n,
            "name": f"System {n:07d}",
            "Costs": [round(rng.uniform(0, 100_000), 2)],
            "Criticality": [rng.choice(LITERALS)],
            "Go-live": [(start + dt.timedelta(days=rng.randrange(9000))).isoformat()],
            "Owner": [f"Team {rng.randrange(200)}"],
            "Cloud": [rng.random() < 0.4],
            END: rng.sample(components, 2),
        }
        for n in range(systems)
    ]
    document = {
        "format": "blockrepo-export",
        "elements": {
            TARGET_TYPE: [{"id": n + 1, "name": name} for n, name in enumerate(components)],
            TYPE: records,
        },
    }
    return orjson.dumps(document), systems + len(components)


def resident_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


class PeakSampler:
    """Samples tracemalloc's current size and snapshots the traces whenever it is 5 % above the last
    snapshot's (the last snapshot is then within 5 % of the peak)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.snapshot: tracemalloc.Snapshot | None = None
        self.at = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            current, _ = tracemalloc.get_traced_memory()
            if current > self.at * 1.05:
                self.snapshot = tracemalloc.take_snapshot()
                self.at = current


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=27.0, help="size of the body in MB (10**6 bytes)")
    parser.add_argument("--trace", action="store_true", help="tracemalloc's peak and top lines, not RSS")
    parser.add_argument("--frames", type=int, default=1, help="with --trace: frames kept per allocation")
    parser.add_argument("--top", type=int, default=25, help="with --trace: lines shown")
    parser.add_argument("--interval", type=float, default=0.25, help="with --trace: seconds between samples")
    parser.add_argument("--chunk", type=int, help="records a chunk (IMPORT_CHUNK; 0: whole file)")
    arguments = parser.parse_args()
    print(f"blockrepo from {blockrepo.__file__}", file=sys.stderr)
    if arguments.chunk is not None:
        from blockrepo.massdata.transfer import importer

        importer.IMPORT_CHUNK = arguments.chunk or 2**62
    body, records = export_body(int(arguments.mb * 1e6))
    with scratch_database(None, "import_memory") as url:
        settings = cheap_settings(url, PASSWORD)
        initialize_repository(settings)
        app = create_app(settings)
        interpreter.settle_after_startup()  # as a served worker (`app_from_environment`)
        with TestClient(app) as client:
            client.auth = ("system", PASSWORD)
            for attribute in ATTRIBUTES:
                response = client.post("/api/administration/attributes", json={**attribute, "types": [TYPE]})
                assert response.status_code == 201, response.text
            headers = {"Content-Type": "application/json"}
            gc.collect()
            sampler = None
            if arguments.trace:
                tracemalloc.start(arguments.frames)
                sampler = PeakSampler(arguments.interval)
                sampler.__enter__()
            else:
                Path("/proc/self/clear_refs").write_text("5")
            before = resident_mb("VmRSS")
            started, cpu_started = time.perf_counter(), time.process_time()
            response = client.post("/api/massdata/import", content=body, headers=headers)
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            assert response.status_code == 200, response.text[:2000]
            assert response.json()["created"] == records, response.text[:2000]
            size_mb = len(body) / 1e6
            print(
                f"body {size_mb:.1f} MB, {records:,} records, {seconds:.1f} s, {records / seconds:,.0f}/s, "
                f"{cpu * 1e6 / records:.0f} µs of CPU a record"
            )
            if sampler is None:
                grown = resident_mb("VmHWM") - before
                print(f"peak RSS +{grown:,.0f} MiB over {before:,.0f} MiB: {grown * 2**20 / len(body):.1f}x")
                return 0
            sampler.__exit__()
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"tracemalloc peak {peak / 1e6:,.1f} MB: {peak / len(body):.1f}x the body")
            if sampler.snapshot is not None:
                print(f"snapshot at {sampler.at / 1e6:,.1f} MB, top lines:")
                by = "traceback" if arguments.frames > 1 else "lineno"
                for stat in sampler.snapshot.statistics(by)[: arguments.top]:
                    frame = stat.traceback[0]
                    print(f"{stat.size / 1e6:8.1f} MB {stat.count:9,} {frame.filename}:{frame.lineno}")
                    if arguments.frames > 1:
                        for line in stat.traceback.format()[2::2][: arguments.frames - 1]:
                            print("                           ", line.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
