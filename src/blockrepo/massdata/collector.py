"""A pause of the cyclic garbage collector for requests that build a large, short-lived object graph."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collections until every pause in the process has ended.

    A bulk write or an import keeps dozens of container objects per element alive until it commits, and
    CPython runs a full collection whenever the survivors have grown by a quarter, traversing all of them
    each time: a large share of a bulk write's time (bench/README.md), for graphs that are
    freed by reference counting anyway. Cycles made meanwhile, here or in other threads, are collected
    after the last pause ends. Pauses are counted, so overlapping requests cannot resume the collector
    under each other, and a collector someone else switched off stays off."""
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()
