"""CPU time of the GET lane alone, in-process: `GET /api/element/{type}/{id}` with a session cookie and with
repeated Basic credentials (no cookie kept), each answered by `ElementReadLane` without a server around it.

    .venv/bin/python bench/lane_cpu.py [--rounds 7] [--requests 3000]

A fresh SQLite repository with one element; the credentials are verified and the caches filled first, so
every measured request is the lane's plain case (one statement, the rendered body). Alternates the two
kinds round by round and prints the median of the process CPU time per GET (`time.process_time`: steadier
than a rate on a shared machine) and Basic's share of the session's; asserts nothing. Run it with
`PYTHONPATH=<an export>/src` to measure other code the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from starlette.testclient import TestClient
from starlette.types import Message, Scope

from blockrepo.app import create_app
from blockrepo.cli.repository import initialize_repository
from blockrepo.settings import Settings

PASSWORD = "bench-password"


def session_cookie(response: httpx.Response) -> str:
    for line in response.headers.get_list("set-cookie"):
        if line.startswith("JSESSIONID="):
            return line.split(";", 1)[0].split("=", 1)[1]
    raise RuntimeError("the Basic answer carried no session cookie")


def get_scope(path: str, header: tuple[bytes, bytes]) -> Scope:
    return {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1"), (b"user-agent", b"bench"), header],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
    }


async def receive() -> Message:
    return {"type": "http.request", "body": b"", "more_body": False}


async def main(rounds: int, requests: int) -> None:
    directory = Path(tempfile.mkdtemp(prefix="blockrepo-lane-"))
    settings = Settings(database_url=f"sqlite:///{directory / 'lane.db'}", admin_password=PASSWORD)
    initialize_repository(settings)
    app = create_app(settings)
    authorization = "Basic " + base64.b64encode(f"system:{PASSWORD}".encode()).decode()
    with TestClient(app, base_url="http://127.0.0.1") as client:
        created = client.post(
            "/api/element/BusinessProcess",
            json={"name": ["Measured"], "description": ["one element"]},
            headers={"Authorization": authorization},
        )
        path = f"/api/element/BusinessProcess/{created.json()['id'][0]}"
        client.cookies.clear()
        cookie = session_cookie(client.get(path, headers={"Authorization": authorization}))
    scopes = {
        "session": get_scope(path, (b"cookie", f"JSESSIONID={cookie}".encode())),
        "basic": get_scope(path, (b"authorization", authorization.encode())),
    }
    statuses: list[int] = []

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    for scope in scopes.values():  # verifies the credentials here, renders the body, fills the caches
        for _ in range(3):
            await app(scope, receive, send)
    spent: dict[str, list[float]] = {name: [] for name in scopes}
    for _ in range(rounds):
        for name, scope in scopes.items():
            started = time.process_time()
            for _ in range(requests):
                await app(scope, receive, send)
            spent[name].append((time.process_time() - started) / requests * 1e6)
    app.state.services.dispose()
    if set(statuses) != {200}:
        raise RuntimeError(f"answers other than 200: {sorted(set(statuses))}")
    session, basic = (statistics.median(spent[name]) for name in ("session", "basic"))
    print(
        f"CPU µs a GET on the lane, median of {rounds} rounds of {requests}: session {session:.1f}, "
        f"Basic {basic:.1f}; Basic / session {basic / session:.1%}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=3000)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.rounds, arguments.requests))
