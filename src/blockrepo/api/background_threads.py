"""Blocking work of background tasks, run on a worker thread to its end even when the task is cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from anyio import to_thread

T = TypeVar("T")


async def run_to_end(function: Callable[..., T], *arguments: object) -> T:
    """`function(*arguments)` on a worker thread. A thread cannot be stopped, and anyio lets go of one
    when the awaiting asyncio task is cancelled (`Task.cancel`, as a lifespan stops its background
    tasks): then this still waits for it to return before the cancellation goes on, so that no database
    work of a stopped task runs on after the application has disposed of its pools (its connection
    would go back to a pool that is gone, and be dropped unclosed)."""
    work = asyncio.ensure_future(to_thread.run_sync(function, *arguments))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        if not work.done():
            await asyncio.wait([work])
        raise
