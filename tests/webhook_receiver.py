"""A webhook receiver for tests: a real HTTP server on 127.0.0.1 that keeps what it is sent, answers as the
test tells it, and checks each message with the Standard Webhooks reference verifier."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks import Webhook


@dataclass
class Received:
    """One request as it arrived."""

    headers: dict[str, str]
    body: bytes

    @property
    def message_id(self) -> str:
        return self.headers["webhook-id"]

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class Receiver:
    """Start with `with Receiver() as receiver:`; `answer` decides each answer (default 200)."""

    def __init__(self, answer: Callable[[Received], Answer] | None = None) -> None:
        self.answer = answer or (lambda _: Answer())
        self.received: queue.Queue[Received] = queue.Queue()
        self.log: list[Received] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                got = Received({k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length))
                answer = receiver.answer(got)
                if answer.delay:
                    time.sleep(answer.delay)
                receiver.log.append(got)
                if 200 <= answer.status < 300:
                    receiver.received.put(got)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def next(self, timeout: float = 20.0) -> Received:
        return self.received.get(timeout=timeout)

    def events_until(
        self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 20.0
    ) -> list[Received]:
        """Messages answered 2xx until the events in them satisfy `predicate`."""
        messages: list[Received] = []
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while not predicate(events):
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"only these events arrived: {events}"
            message = self.received.get(timeout=remaining)
            messages.append(message)
            events.extend(message.json["data"].get("events", []))
        return messages


def verified(message: Received, secret: str) -> Any:
    """The message's JSON, checked by the reference verifier (raises if the signature does not hold)."""
    return Webhook(secret).verify(message.body, message.headers)
