"""The changes a process reads once for all its live change streams, and the wake-up when they move."""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

from blockrepo.api.background_threads import run_to_end
from blockrepo.history.stream import AFTER_REVISION, FeedRow, RecentRows

log = logging.getLogger("blockrepo.api")

# Changesets read per poll, and kept for streams that fall behind a little (a stream further behind reads
# the database itself until it catches up). The kept rows are trimmed to KEPT_ROWS after every read, so a
# worker's memory stops growing once they are full (20 s of changes at 100 writes/s), with no sawtooth.
READ_PER_POLL = 5_000
KEPT_ROWS = 2_000


@dataclass(frozen=True)
class Recent:
    """What the watch holds: every changeset after `start` up to revision `through`, and the metamodel
    and access revisions read with them."""

    start: tuple[int, int]
    through: int
    metamodel_revision: int
    access_revision: int

    def covers(self, position: tuple[int, int]) -> bool:
        return position >= self.start


class RevisionWatch:
    """One reader of new changesets per process, running while a stream waits: every `interval` seconds
    it reads the changesets committed since its last read (one statement, every reader's changesets
    alike) and wakes the streams; each stream then picks what its reader may see in memory
    (`history.stream.select_changes`). A write in any worker or host is seen, since the database is what
    is read; the wait is the poll interval at most. The rows are only ever those of whole revisions up
    to `through`, without gaps after `start`."""

    def __init__(
        self, read_after: Callable[[tuple[int, int] | None, int], RecentRows], interval: float = 0.2
    ) -> None:
        self._read_after = read_after
        self._interval = interval
        self._rows: list[FeedRow] = []
        self._keys: list[tuple[int, int]] = []
        self._recent: Recent | None = None
        self._read_position: tuple[int, int] | None = None
        self._waiting = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._moved = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def recent(self) -> Recent | None:
        """What is held now (None before the first read)."""
        return self._recent

    def rows_after(self, position: tuple[int, int], through: int) -> list[FeedRow]:
        """The held changesets after `position` up to revision `through` (`recent.covers(position)`)."""
        start = bisect.bisect_right(self._keys, position)
        end = bisect.bisect_right(self._keys, (through, AFTER_REVISION))
        return self._rows[start:end]

    async def beyond(self, revision: int, timeout: float) -> bool:
        """Whether changes after `revision` are held within `timeout` seconds."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # a process serves from one loop; a test may run several in turn
            self._loop, self._moved, self._task = loop, asyncio.Event(), None
        if self._recent is not None and self._recent.through > revision and self._task is not None:
            return True
        self._waiting += 1
        try:
            if self._task is None or self._task.done():
                self._task = loop.create_task(self._poll())
            deadline = loop.time() + timeout
            while self._recent is None or self._recent.through <= revision:
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

    async def stop(self) -> None:
        """End this loop's reading task, a read under way first (the application's lifespan calls it before
        the engines are disposed: a read finishing after that would hand its connection to a pool that is
        gone, and the connection would be dropped unclosed)."""
        task = self._task
        if task is not None and self._loop is asyncio.get_running_loop() and not task.done():
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task  # a read under way in a worker thread is waited for (`run_to_end`)
        self._task = None

    async def _poll(self) -> None:
        while self._waiting > 0:
            more = False
            try:
                more = await self._read()
            except Exception:
                log.warning("the change stream could not read new changes", exc_info=True)
            if not more:
                await asyncio.sleep(self._interval)

    async def _read(self) -> bool:
        """Read what committed since the last read; whether more is waiting to be read at once."""
        if self._read_position is None:
            # The first read starts now: streams that began earlier read the database until they get here.
            first = await run_to_end(self._read_after, None, 0)
            self._read_position = (first.through, AFTER_REVISION)
            self._recent = Recent(
                self._read_position, first.through, first.metamodel_revision, first.access_revision
            )
            self._wake()
            return False
        read = await run_to_end(self._read_after, self._read_position, READ_PER_POLL)
        self._rows.extend(read.rows)
        self._keys.extend((row.revision, row.change_id) for row in read.rows)
        self._read_position = read.position
        recent = self._recent
        assert recent is not None
        start = recent.start
        if len(self._rows) > KEPT_ROWS:
            drop = len(self._rows) - KEPT_ROWS
            start = self._keys[drop - 1]
            del self._rows[:drop], self._keys[:drop]
        moved = read.through > recent.through or (read.metamodel_revision, read.access_revision) != (
            recent.metamodel_revision,
            recent.access_revision,
        )
        self._recent = Recent(
            start, max(read.through, recent.through), read.metamodel_revision, read.access_revision
        )
        if moved:
            self._wake()
        return len(read.rows) >= READ_PER_POLL

    def _wake(self) -> None:
        moved, self._moved = self._moved, asyncio.Event()
        moved.set()
