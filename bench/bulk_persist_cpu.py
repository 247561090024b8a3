"""CPU time per element of massdata_scale's bulk write, in-process (no server process, no sockets).

    python bench/bulk_persist_cpu.py                          # 6 requests of 10,000 elements, SQLite
    py-spy record --format raw -o /tmp/bulk.txt -- .venv/bin/python bench/bulk_persist_cpu.py   # its profile
    PYTHONPATH=/tmp/before/src python bench/bulk_persist_cpu.py   # the same load on other code
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.out \
        .venv/bin/python bench/bulk_persist_cpu.py --requests 3 --batch 2000 --callgrind   # instructions

The repository, the five attributes and the technical components are made as bench/massdata_scale.py
makes them; then `--requests` bodies of `--batch` InformationSystems (five values and two relations each,
encoded before the clock starts) are posted to `POST /api/massdata/InformationSystem` through Starlette's
TestClient. Each request's process CPU time (`time.process_time`: the app and the client in one
process) is divided by its elements, and so is the CPU time its thread spent in the persist side
(`elements.write.persistence.persist` and `RequestContext.commit`, wrapped here); the first request
is a warm-up and is left out. Prints the median and
the spread; asserts nothing. Meant for before/after comparisons in one sitting (`PYTHONPATH`), since
CPU time moves less than the clock on a shared machine.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import orjson
from harness import cheap_settings, scratch_database
from massdata_scale import ATTRIBUTES, BATCH, TARGET_TYPE, TYPE, element_bodies

import blockrepo
from blockrepo.api.context import RequestContext
from blockrepo.app import create_app
from blockrepo.cli.repository import initialize_repository
from blockrepo.elements.write import persistence

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password"
SPENT = {"persist": 0.0}  # CPU seconds of the request thread in the persist side (write, history, commit)


def timed(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function`, adding the CPU time of the thread that runs it to SPENT (the persist side's share of a
    request, without the event loop's and the client's work in the other threads)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            SPENT["persist"] += time.thread_time() - started

    return wrapper


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=6, help="bulk requests (the first is a warm-up)")
    parser.add_argument("--batch", type=int, default=BATCH, help="elements per request")
    parser.add_argument("--database", default=None, help="a PostgreSQL URL (default: a SQLite file)")
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="run under valgrind --tool=callgrind --instr-atstart=no: instrumentation is switched on for the "
        "measured requests only (callgrind_control), so the dump counts their instructions",
    )
    args = parser.parse_args()
    # The persist side: the write core's `persist` (rows, history) and the request's commit (the flush of
    # the history and COMMIT), timed in their own thread.
    persistence.persist = timed(persistence.persist)
    RequestContext.commit = timed(RequestContext.commit)  # type: ignore[method-assign]
    elements = args.requests * args.batch
    with scratch_database(args.database, "bulk_cpu") as url:
        settings = cheap_settings(url, PASSWORD)
        initialize_repository(settings)
        with TestClient(create_app(settings)) as client:
            client.auth = ("system", PASSWORD)
            for attribute in ATTRIBUTES:
                response = client.post("/api/administration/attributes", json={**attribute, "types": [TYPE]})
                assert response.status_code == 201, response.text[:300]
            target_count = max(10, elements // 50)
            ids: list[int] = []
            for first in range(0, target_count, BATCH):
                last = min(target_count, first + BATCH)
                names = [{"name": [f"Component {n:06d}"]} for n in range(first, last)]
                response = client.post(f"/api/massdata/{TARGET_TYPE}", json={"elements": names})
                assert response.status_code == 200, response.text[:300]
                ids += [item["id"] for item in response.json()["results"]]
            encoded = element_bodies(elements, ids)
            items = [item for body in encoded for item in orjson.loads(body)["elements"]]
            bodies = [
                orjson.dumps({"elements": items[first : first + args.batch]})
                for first in range(0, elements, args.batch)
            ]
            samples, persisting = [], []
            for index, body in enumerate(bodies):
                gc.collect()
                SPENT["persist"] = 0.0
                instrument = args.callgrind and index > 0
                if instrument:
                    subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True)
                started = time.process_time()
                response = client.post(
                    f"/api/massdata/{TYPE}", content=body, headers={"Content-Type": "application/json"}
                )
                if instrument:
                    subprocess.run(["callgrind_control", "-i", "off", str(os.getpid())], check=True)
                spent = time.process_time() - started
                assert response.status_code == 200, response.text[:300]
                if index > 0:
                    samples.append(spent * 1e6 / args.batch)
                    persisting.append(SPENT["persist"] * 1e6 / args.batch)
    print(
        f"{blockrepo.__file__}: {len(samples)} requests of {args.batch:,}; CPU µs an element: median "
        f"{statistics.median(samples):.1f}, min {min(samples):.1f}, max {max(samples):.1f}; persist side "
        f"(persist and commit, their thread's CPU) median {statistics.median(persisting):.1f}, min "
        f"{min(persisting):.1f}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
