"""A background task stopped with `Task.cancel` (as the lifespan stops the webhook worker and the change
stream's reader) waits for the database work it handed to a thread: nothing of it runs on after the
application has disposed of its pools, so no connection goes back to a pool that is gone."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from blockrepo.api.background_threads import run_to_end

T = TypeVar("T")


def run_in_own_loop(main: Callable[[], Awaitable[T]]) -> T:
    """`main()` on an event loop of its own, on a thread of its own: whatever loop another test left
    running on this thread is not this one's business."""

    async def wrapped() -> T:
        return await main()

    with ThreadPoolExecutor(max_workers=1) as thread:
        return thread.submit(asyncio.run, wrapped()).result(timeout=60)


def test_a_cancelled_task_waits_for_its_threads_work_and_its_cleanup() -> None:
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def work(name: str) -> str:
        started.set()
        release.wait(timeout=10)
        finished.append(name)
        return name

    async def task_body() -> None:
        try:
            await run_to_end(work, "read")
        finally:  # a lease released on the way out, as the webhook worker does
            await run_to_end(lambda: finished.append("released"))

    async def main() -> list[str]:
        task = asyncio.get_running_loop().create_task(task_body())
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 10)
        task.cancel()
        threading.Timer(0.2, release.set).start()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return list(finished)  # what had run when the cancelled task was done

    assert run_in_own_loop(main) == ["read", "released"]


def test_an_uncancelled_call_answers_what_the_function_returns() -> None:
    async def main() -> int:
        return await run_to_end(lambda left, right: left + right, 2, 3)

    assert run_in_own_loop(main) == 5
