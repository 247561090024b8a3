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

With `--webhook`, webhook delivery instead: one webhook to a receiver in this process (a threaded HTTP
server on 127.0.0.1), while a writer changes `--batch` elements per bulk request (one revision each) at
`--rate` changes per second. Prints the changes committed and delivered per second, the messages and
events per message, and the delay from the write's answer to the receiver's receipt; every change must
arrive once.

    .venv/bin/python bench/events.py --webhook [--rate 1500] [--batch 100] [--duration 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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


class WebhookReceiver:
    """Notes when each `w<k>` change arrives, and how many messages and events came."""

    def __init__(self) -> None:
        self.arrived: dict[int, float] = {}
        self.messages = 0
        self.events = 0
        self.repeats = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                now = time.monotonic()
                events = json.loads(body)["data"]["events"]
                receiver.messages += 1
                receiver.events += len(events)
                for match in CHANGE.finditer(body):
                    k = int(match.group(1))
                    if k in receiver.arrived:
                        receiver.repeats += 1
                    receiver.arrived.setdefault(k, now)
                self.send_response(204)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


async def run_webhook(base: str, token: str, ids: list[int], args: argparse.Namespace) -> None:
    receiver = WebhookReceiver()
    headers = {"Authorization": f"Bearer {token}"}
    answered: dict[int, float] = {}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as writer:
        hook = await writer.post(
            "/api/webhooks",
            json={"name": "bench", "url": receiver.url, "events": ["element.updated"]},
        )
        hook.raise_for_status()
        changes, requests = 0, 0
        started = time.monotonic()
        while time.monotonic() - started < args.duration:
            due = started + changes / args.rate
            await asyncio.sleep(max(due - time.monotonic(), 0))
            batch = range(changes, changes + args.batch)
            elements = [{"id": ids[k % len(ids)], "description": [f"w{k}"]} for k in batch]
            response = await writer.post("/api/massdata/BusinessProcess", json={"elements": elements})
            assert response.status_code == 200, response.text[:2000]
            now = time.monotonic()
            for k in batch:
                answered[k] = now
            changes += args.batch
            requests += 1
        elapsed = time.monotonic() - started
        deadline = time.monotonic() + 120
        while len(receiver.arrived) < changes and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        drained = time.monotonic() - started
    receiver.server.shutdown()
    delays = sorted(max(receiver.arrived[k] - answered[k], 0.0) for k in receiver.arrived if k in answered)

    def percentile(p: float) -> float:
        return delays[min(int(p * len(delays)), len(delays) - 1)] * 1000 if delays else float("nan")

    last = max(receiver.arrived.values(), default=started) - started
    print(
        f"\nwebhook delivery, 2 workers, {args.database or 'SQLite'}: {changes:,} changes committed in "
        f"{requests:,} bulk writes of {args.batch} over {elapsed:.1f} s ({changes / elapsed:,.0f} changes/s)"
    )
    print(
        f"delivered {len(receiver.arrived):,} of {changes:,} ({receiver.repeats} repeated) by {last:.1f} s: "
        f"{len(receiver.arrived) / max(last, 1e-9):,.0f} changes/s; {receiver.messages:,} messages, "
        f"{receiver.events / max(receiver.messages, 1):,.0f} events per message"
    )
    print(
        f"delay from the write's answer to the receipt: p50 {percentile(0.5):.0f} ms, p99 "
        f"{percentile(0.99):.0f} ms, max {percentile(1.0):.0f} ms (all delivered after {drained:.1f} s)"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", help="a PostgreSQL server URL (default: a fresh SQLite file)")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--rate", type=float, default=100, help="writes per second")
    parser.add_argument("--duration", type=float, default=60, help="seconds of writing")
    parser.add_argument("--webhook", action="store_true", help="measure webhook delivery instead")
    parser.add_argument("--batch", type=int, default=100, help="changes per bulk write (--webhook)")
    args = parser.parse_args()
    if args.webhook and args.rate == 100:
        args.rate = 1500
    with (
        tempfile.TemporaryDirectory(prefix="blockrepo-events-") as tmp,
        scratch_database(args.database, "events") as database,
    ):
        loopback = {"BLOCKREPO_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}
        server, base = start_blockrepo(Path(tmp), database, None, 2, loopback)
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
            ids = [item["id"][0] for item in listing.json()["items"]]
            if args.webhook and len(ids) < args.batch:  # distinct elements for each bulk write
                more = [{"name": [f"bench process {n}"]} for n in range(args.batch)]
                httpx.post(
                    f"{base}/api/massdata/BusinessProcess", json={"elements": more}, auth=auth, timeout=60
                ).raise_for_status()
                listing = httpx.get(
                    f"{base}/api/massdata/BusinessProcess",
                    params={"limit": 500, "fields": "id"},
                    auth=auth,
                    timeout=30,
                )
                ids = [item["id"][0] for item in listing.json()["items"]]
            if args.webhook:
                asyncio.run(run_webhook(base, minted.json()["token"], ids, args))
            else:
                paths = [f"/api/element/BusinessProcess/{n}" for n in ids]
                asyncio.run(run(base, minted.json()["token"], paths, args))
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
