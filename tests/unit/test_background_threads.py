"""A background task stopped with `Task.cancel` (as the lifespan stops the webhook worker and the change
stream's reader) waits for the database work it handed to a thread: nothing of it runs on after the
application has disposed of its pools, so no connection goes back to a pool that is gone."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from blockrepo.api.background_threads import run_to_end


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

    assert asyncio.run(main()) == ["read", "released"]


def test_an_uncancelled_call_answers_what_the_function_returns() -> None:
    assert asyncio.run(run_to_end(lambda left, right: left + right, 2, 3)) == 5
