"""The process-wide interpreter switches (the garbage collector's freeze, threshold and pauses, the GIL
switch interval), in one place, with one off switch (`interpreter_tuning` in the settings).

Each changes the whole process, not one request: they belong to the process that serves, and a program
embedding blockrepo (or a measurement of their worth) turns them off with `configure(enabled=False)`,
which `create_app` calls with the setting. Off, the interpreter runs with whatever it was given."""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# Allocations between collections of the youngest generation (CPython: 700).
GC_YOUNG_THRESHOLD = 50_000
# How long a thread may hold the GIL while another waits for it (CPython's default: 5 ms), while a write
# pipeline runs. Each pipelined statement needs the GIL to bind its parameters after the previous one
# has run without it; at 5 ms the insert thread waited longer for the GIL than SQLite took for the
# statement, and the overlap was lost (bench/README.md).
SWITCH_INTERVAL = 0.0002

# glibc's malloc arenas a process may have (its default: 8 per core). Each thread that allocates while
# another holds an arena gets one of its own, and memory freed in an arena is seldom given back: a worker
# serving change streams grew by 3 MiB a minute with the default and under 1 MiB with 2, latency alike
# (bench/README.md). The operator's MALLOC_ARENA_MAX, read by glibc itself, wins.
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number (glibc's malloc.h)

_enabled = True
_lock = threading.Lock()
_paused = 0
_resume = False
_lowered = 0
_switch_before = 0.0


def configure(*, enabled: bool) -> None:
    """Whether the switches below act (on by default). Set once, before serving."""
    global _enabled
    _enabled = enabled


def settle_after_startup() -> None:
    """For a serving process, once the application is built.

    What exists now (modules, the app, its routes and descriptions) lives as long as the process. Moved
    out of the collector's sight, it is no longer traversed by every full collection, which otherwise
    costs streams and bulk writes a large share of their time (bench/README.md). A stream or bulk write
    allocates tens of thousands of dicts and lists per batch that die together when the batch is done.
    With the default threshold (700) the young generation is collected dozens of times per batch, each
    survivor is promoted, and full collections follow every few batches; at GC_YOUNG_THRESHOLD most of a
    batch is freed by reference counting before any collection looks at it (fewer instructions per
    streamed element, bench/README.md)."""
    if not _enabled:
        return
    _limit_malloc_arenas()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def _limit_malloc_arenas() -> None:
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl's malloc has no arenas to limit)
        return
    mallopt(_M_ARENA_MAX, MALLOC_ARENAS)


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collections until every pause in the process has ended.

    A bulk write or an import keeps dozens of container objects per element alive until it commits, and
    CPython runs a full collection whenever the survivors have grown by a quarter, traversing all of them
    each time: about half of a 10,000-element bulk write (bench/massdata_scale.py), for graphs that are
    freed by reference counting anyway. Cycles made meanwhile, here or in other threads, are collected
    after the last pause ends. Pauses are counted, so overlapping requests cannot resume the collector
    under each other, and a collector someone else switched off stays off."""
    if not _enabled:
        yield
        return
    global _paused, _resume
    with _lock:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _resume:
                gc.enable()


@contextmanager
def switch_interval_lowered() -> Iterator[None]:
    """The GIL switch interval at most `SWITCH_INTERVAL` until every such block in the process has ended
    (counted like the collector's pauses), then as it was."""
    if not _enabled:
        yield
        return
    global _lowered, _switch_before
    with _lock:
        if _lowered == 0:
            _switch_before = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_before, SWITCH_INTERVAL))
        _lowered += 1
    try:
        yield
    finally:
        with _lock:
            _lowered -= 1
            if _lowered == 0:
                sys.setswitchinterval(_switch_before)
