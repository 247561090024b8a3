"""The collector pause of bulk writes: counted across threads, and it never switches on a collector that
someone else switched off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from blockrepo.interpreter import collector_paused


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


def test_the_collector_resumes_after_the_pause() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_overlapping_pauses_resume_only_after_the_last() -> None:
    first_in = threading.Event()
    second_in = threading.Event()
    first_may_leave = threading.Event()
    states: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            first_in.set()
            first_may_leave.wait(10)
        states["after first"] = gc.isenabled()
        second_in.set()

    thread = threading.Thread(target=first)
    thread.start()
    first_in.wait(10)
    with collector_paused():
        first_may_leave.set()
        second_in.wait(10)
        states["second still inside"] = gc.isenabled()
    thread.join(10)
    assert states == {"after first": False, "second still inside": False}
    assert gc.isenabled()


def test_a_collector_switched_off_elsewhere_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_the_pause_ends_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
