"""The live change stream under load (issue 26): many `GET /api/history/stream` clients of one
`blockrepo serve --workers 2 --demo` while a writer changes elements at a steady rate.

Each write PATCHes a demo business process's description to `w<k>`; the writer notes when its answer
arrived (the write had committed by then). Every client reads its stream and notes, for each `w<k>` it
receives, how long after that answer it came. Prints the latency percentiles over every (client, change),
how many of the changes each client received, and the workers' resident memory at the start and the end of
the run (flat memory: it must not grow with the changes streamed). Asserts nothing.

    .venv/bin/python bench/events.py [--clients 200] [--rate 100] [--duration 60]
                                     [--database postgresql://postgres@127.0.0.1:5432/postgres]

The clients run in this process (asyncio, one connection each), so they share the machine with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path

import httpx
from harness import scratch_database
from hot_path import PASSWORD, start_blockrepo

CHANGE = re.compile(rb'"new":\["w(\d+)"\]')


def worker_rss_kib(root: int) -> int:
    """Resident memory of the server's worker processes (the children of its master), KiB (Linux /proc)."""
    total = 0
    for child in Path(f"/proc/{root}/task/{root}/children").read_text().split():
        for line in Path(f"/proc/{child}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


async def client(
    base: str,
    headers: dict[str, str],
    answered: dict[int, float],
    latencies: list[float],
    ready: asyncio.Event,
) -> int:
    received = 0
    async with (
        httpx.AsyncClient(timeout=None) as http,
        http.stream("GET", f"{base}/api/history/stream", headers=headers) as response,
    ):
        response.raise_for_status()
        ready.set()
        pending = b""
        async for chunk in response.aiter_bytes():
            now = time.monotonic()
            # Only whole events: a change may arrive split over two chunks.
            complete, _, pending = (pending + chunk).rpartition(b"\n\n")
            for match in CHANGE.finditer(complete):
                at = answered.get(int(match.group(1)))
                if at is not None:
                    latencies.append(max(now - at, 0.0))
                    received += 1
    return received


async def run(base: str, token: str, paths: list[str], args: argparse.Namespace) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    answered: dict[int, float] = {}
    latencies: list[float] = []
    readies = [asyncio.Event() for _ in range(args.clients)]
    clients = [asyncio.create_task(client(base, headers, answered, latencies, ready)) for ready in readies]
    for ready in readies:
        await asyncio.wait_for(ready.wait(), 60)
    root = args.server_pid
    rss_start = worker_rss_kib(root)
    writes = 0
    samples: list[tuple[float, int]] = []
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as writer:
        started = time.monotonic()
        while time.monotonic() - started < args.duration:
            if not samples or time.monotonic() - started - samples[-1][0] >= 30:
                samples.append((time.monotonic() - started, worker_rss_kib(root)))
            due = started + writes / args.rate
            await asyncio.sleep(max(due - time.monotonic(), 0))
            body = {"description": [f"w{writes}"]}
            response = await writer.patch(paths[writes % len(paths)], json=body)
            response.raise_for_status()
            answered[writes] = time.monotonic()
            writes += 1
        elapsed = time.monotonic() - started
    await asyncio.sleep(3)  # the last changes on their way
    rss_end = worker_rss_kib(root)
    for task in clients:
        task.cancel()
    counts = [0] * len(clients)
    for i, task in enumerate(clients):
        try:
            counts[i] = await task
        except (asyncio.CancelledError, httpx.HTTPError):
            counts[i] = -1
    ordered = sorted(latencies)

    def percentile(p: float) -> float:
        return ordered[min(int(p * len(ordered)), len(ordered) - 1)] * 1000 if ordered else float("nan")

    print(
        f"\n{args.clients} stream clients, writes at {writes / elapsed:.0f}/s for {elapsed:.0f} s "
        f"({writes} changes), 2 workers, {args.database or 'SQLite'}"
    )
    print(
        f"latency from the write's answer to each client's receipt: p50 {percentile(0.50):.0f} ms, "
        f"p99 {percentile(0.99):.0f} ms, max {percentile(1.0):.0f} ms over {len(ordered):,} receipts "
        f"(expected {writes * args.clients:,}; {len(ordered) / max(writes * args.clients, 1):.1%})"
    )
    print(
        f"workers' resident memory: {rss_start / 1024:.1f} MiB at the start, "
        f"{rss_end / 1024:.1f} MiB at the end"
    )
    print(
        "workers' resident memory every 30 s (MiB): "
        + ", ".join(f"{at:.0f} s {kib / 1024:.1f}" for at, kib in samples)
    )
    missing = sum(1 for count in counts if count == 0)
    print(f"clients that received nothing: {missing}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", help="a PostgreSQL server URL (default: a fresh SQLite file)")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--rate", type=float, default=100, help="writes per second")
    parser.add_argument("--duration", type=float, default=60, help="seconds of writing")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="blockrepo-events-") as tmp,
        scratch_database(args.database, "events") as database,
    ):
        server, base = start_blockrepo(Path(tmp), database, None, 2)
        try:
            args.server_pid = server.process.pid
            auth = ("system", PASSWORD)
            expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
            minted = httpx.post(
                f"{base}/api/tokens", json={"name": "events", "expiresAt": expires}, auth=auth
            )
            minted.raise_for_status()
            listing = httpx.get(
                f"{base}/api/massdata/BusinessProcess",
                params={"limit": 500, "fields": "id"},
                auth=auth,
                timeout=30,
            )
            listing.raise_for_status()
            paths = [f"/api/element/BusinessProcess/{item['id'][0]}" for item in listing.json()["items"]]
            asyncio.run(run(base, minted.json()["token"], paths, args))
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
