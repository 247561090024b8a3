"""CPU time per element of one bulk write in-process: the whole write, and its validating half alone.

    python bench/bulk_cpu.py                          # 6 requests of 10,000 elements, SQLite
    py-spy record -o x.svg -- python bench/bulk_cpu.py --only dry   # a profile of the validating half

The load of bench/massdata_scale.py (InformationSystems with five attribute values and two
`technicalComponents` each, `POST /api/massdata/InformationSystem` in requests of 10,000) sent through the
ASGI app in this process (Starlette's TestClient), each request's body encoded before the clock starts.
Each round sends one request with `dryRun: true` (the body decoded, parsed and validated: the parse and
validate side) and then the same elements for real (the whole write, on a repository growing by 10,000
elements a round); the CPU time of the process (`time.process_time`, all threads) is divided by the
elements. Compare code versions by running the script twice with different `PYTHONPATH`s, back to back.
Prints a table (the median and the fastest round); asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import warnings

import orjson
from harness import cheap_settings, scratch_database
from massdata_scale import ATTRIBUTES, BATCH, TARGET_TYPE, TYPE, element_bodies
from rich.console import Console
from rich.table import Table

import blockrepo
from blockrepo import interpreter
from blockrepo.app import create_app
from blockrepo.cli.repository import initialize_repository

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from starlette.testclient import TestClient  # noqa: E402

PASSWORD = "bench-password"


def renamed(body: bytes, round_number: int, *, dry_run: bool) -> bytes:
    """The request of one round: its own names (each round creates new elements), dryRun or not."""
    document = orjson.loads(body)
    for item in document["elements"]:
        item["name"] = [f"{item['name'][0]} r{round_number}"]
    if dry_run:
        document["dryRun"] = True
    return orjson.dumps(document)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=6, help="rounds (each one dry run and one write)")
    parser.add_argument("--only", choices=("dry", "write"), help="send only dry runs or only writes")
    arguments = parser.parse_args()
    print(f"blockrepo from {blockrepo.__file__}", file=sys.stderr)
    dry: list[float] = []
    full: list[float] = []
    with scratch_database(None, "bulk_cpu") as url:
        settings = cheap_settings(url, PASSWORD)
        initialize_repository(settings)
        app = create_app(settings)
        # As `app_from_environment` sets up a served worker: the collector's settings change what a
        # large request body costs to decode (the young generation fills dozens of times per request).
        interpreter.settle_after_startup()
        with TestClient(app) as client:
            client.auth = ("system", PASSWORD)
            for attribute in ATTRIBUTES:
                response = client.post("/api/administration/attributes", json={**attribute, "types": [TYPE]})
                assert response.status_code == 201, response.text
            names = [{"name": [f"Component {n:06d}"]} for n in range(BATCH // 50)]
            response = client.post(f"/api/massdata/{TARGET_TYPE}", json={"elements": names})
            assert response.status_code == 200, response.text
            targets = [item["id"] for item in response.json()["results"]]
            (body,) = element_bodies(BATCH, targets)
            headers = {"Content-Type": "application/json"}
            for round_number in range(arguments.repeat):
                for dry_run, figures in ((True, dry), (False, full)):
                    if arguments.only == ("write" if dry_run else "dry"):
                        continue
                    content = renamed(body, round_number, dry_run=dry_run)
                    gc.collect()
                    started = time.process_time()
                    response = client.post(f"/api/massdata/{TYPE}", content=content, headers=headers)
                    figures.append((time.process_time() - started) / BATCH * 1e6)
                    if response.status_code != 200:
                        raise RuntimeError(f"the bulk write answered {response.status_code}: {response.text}")
    table = Table(title=f"bulk write CPU per element, {arguments.repeat} rounds of {BATCH:,} (µs)")
    for column in ("request", "median", "fastest"):
        table.add_column(column, justify="right" if column != "request" else "left")
    for label, figures in (("dryRun (decode, parse, validate)", dry), ("write", full)):
        if figures:
            table.add_row(label, f"{statistics.median(figures):.1f}", f"{min(figures):.1f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
