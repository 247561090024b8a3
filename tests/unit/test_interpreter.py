"""`blockrepo.interpreter`'s off switch: with the tuning off, no switch touches the interpreter."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from blockrepo import interpreter


@pytest.fixture
def tuning_off() -> Iterator[None]:
    interpreter.configure(enabled=False)
    try:
        yield
    finally:
        interpreter.configure(enabled=True)


@pytest.mark.usefixtures("tuning_off")
def test_nothing_changes_with_the_tuning_off() -> None:
    threshold, interval, enabled = gc.get_threshold(), sys.getswitchinterval(), gc.isenabled()
    frozen = gc.get_freeze_count()
    interpreter.settle_after_startup()
    with interpreter.collector_paused(), interpreter.switch_interval_lowered():
        assert (gc.isenabled(), sys.getswitchinterval()) == (enabled, interval)
    assert (gc.get_threshold(), gc.get_freeze_count()) == (threshold, frozen)


def test_the_switch_interval_is_lowered_and_restored_when_on() -> None:
    before = sys.getswitchinterval()
    with interpreter.switch_interval_lowered():
        with interpreter.switch_interval_lowered():
            assert sys.getswitchinterval() == pytest.approx(min(before, interpreter.SWITCH_INTERVAL))
        assert sys.getswitchinterval() == pytest.approx(min(before, interpreter.SWITCH_INTERVAL))
    assert sys.getswitchinterval() == before
