"""Wakes the live change streams of a process when the committed horizon moves: one poll for all of them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from anyio import to_thread

log = logging.getLogger("blockrepo.api")


class RevisionWatch:
    """One reader of the newest revision per process, running while a stream waits: every
    `interval` seconds it reads the revision (one short statement), and streams waiting for a revision
    beyond the one they sent wake when it moves. A write in any worker or host is seen, since the
    database is what is read; the wait is the poll interval at most."""

    def __init__(self, read_newest: Callable[[], int], interval: float = 0.2) -> None:
        self._read_newest = read_newest
        self._interval = interval
        self._newest = -1
        self._waiting = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._moved = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def beyond(self, revision: int, timeout: float) -> bool:
        """Whether a revision newer than `revision` is there within `timeout` seconds."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a process serves from one loop; a test may run several in turn
            self._loop, self._moved, self._task = loop, asyncio.Event(), None
        if self._newest > revision:
            return True
        self._waiting += 1
        try:
            if self._task is None or self._task.done():
                self._task = loop.create_task(self._poll())
            deadline = loop.time() + timeout
            while self._newest <= revision:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return False
                moved = self._moved
                try:
                    await asyncio.wait_for(moved.wait(), remaining)
                except TimeoutError:
                    return False
            return True
        finally:
            self._waiting -= 1

    async def _poll(self) -> None:
        while self._waiting > 0:
            try:
                newest = await to_thread.run_sync(self._read_newest)
            except Exception:
                log.warning("the change stream could not read the newest revision", exc_info=True)
                newest = self._newest
            if newest > self._newest:
                self._newest = newest
                moved, self._moved = self._moved, asyncio.Event()
                moved.set()
            await asyncio.sleep(self._interval)
