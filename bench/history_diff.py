"""The landscape diff (`GET /api/history/diff`) against the size of the repository and of the range: its
time grows with the changes in the range, not with the elements or the history around them.

    python bench/history_diff.py                         # 10,000 and 100,000 elements, SQLite
    python bench/history_diff.py --sizes 10000           # a quicker run
    python bench/history_diff.py --database postgresql://postgres@127.0.0.1:5432/postgres

For each size, `blockrepo serve` (one worker) gets that many information systems by bulk writes (10,000
a request), then, per range, that many of them get a new description in bulk updates (1,000 an update,
so 100 changes are one revision and 10,000 ten), and the diff of exactly that range is read: the first
page (100 elements, with the summary that folds the whole range) and, from its cursor, the second. The
median of five reads of each, from a client on the same machine. Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from harness import scratch_database
from massdata_scale import Server, check, running

TYPE = "InformationSystem"
BATCH = 10_000
UPDATE_BATCH = 1_000
RANGES = (100, 1_000, 10_000)
READS = 5


def load(server: Server, elements: int) -> list[int]:
    ids: list[int] = []
    headers = {"Content-Type": "application/json"}
    for first in range(0, elements, BATCH):
        batch = [{"name": [f"System {n:07d}"]} for n in range(first, min(elements, first + BATCH))]
        body = orjson.dumps({"elements": batch})
        result = check(server.client.post(f"/api/massdata/{TYPE}", content=body, headers=headers))
        ids += [item["id"] for item in result["results"]]
    return ids


def change(server: Server, ids: list[int], label: str) -> tuple[int, int]:
    """A new description for each of `ids`; the revisions (before, after) of the range."""
    headers = {"Content-Type": "application/json"}
    before = after = 0
    for first in range(0, len(ids), UPDATE_BATCH):
        batch = [{"id": [i], "description": [f"{label} {i}"]} for i in ids[first : first + UPDATE_BATCH]]
        body = orjson.dumps({"elements": batch})
        result = check(server.client.post(f"/api/massdata/{TYPE}", content=body, headers=headers))
        if result["updated"] != len(batch):
            raise RuntimeError(f"the bulk update changed {result['updated']} elements, not {len(batch)}")
        # The global revision of this update: the element's newest changeset (its own `revision` counts
        # its versions).
        history = check(server.client.get(f"/api/history/{TYPE}/{ids[first]}", params={"limit": 1}))
        revision = int(history["items"][0]["revision"])
        before = before or revision - 1
        after = revision
    return before, after


def timed(client: httpx.Client, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    times = []
    page: dict[str, Any] = {}
    for _ in range(READS):
        started = time.perf_counter()
        page = check(client.get("/api/history/diff", params=params))
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, page


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", help="a PostgreSQL server URL (default: a fresh SQLite file)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for size in args.sizes:
            with (
                scratch_database(args.database, f"diff{size}") as url,
                running(url, Path(directory), f"diff{size}") as server,
            ):
                ids = load(server, size)
                for count in RANGES:
                    if count > size:
                        continue
                    before, after = change(server, ids[:count], f"round {count}")
                    params = {"from": before, "to": after, "limit": 100}
                    first_ms, page = timed(server.client, params)
                    if sum(sum(c.values()) for c in page["summary"].values()) != count:
                        raise RuntimeError(f"the diff counted {page['summary']}, not {count} changes")
                    cursor = page["nextCursor"]
                    next_ms = timed(server.client, {**params, "cursor": cursor})[0] if cursor else 0.0
                    rows.append((size, count, after - before, first_ms, next_ms))
    kind = "PostgreSQL" if args.database else "SQLite"
    print(f"\nGET /api/history/diff on {kind}, median of {READS} reads, 100 elements a page\n")
    header = f"{'elements':>9} {'changes':>8} {'revisions':>9} {'first page ms':>14} {'next page ms':>13}"
    print(header)
    print("-" * len(header))
    for size, count, revisions, first_ms, next_ms in rows:
        print(f"{size:>9,} {count:>8,} {revisions:>9,} {first_ms:>14.1f} {next_ms:>13.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
