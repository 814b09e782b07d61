"""The heap settler: freezes survivors, collects garbage first, settles only when quiet."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from app.agent.heap import HeapSettler, settle


class Node:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_settle_collects_cycles_then_freezes_survivors() -> None:
    dead = Node()
    ref = weakref.ref(dead)
    del dead  # a cycle: only the collector can free it
    kept = Node()
    settle()
    assert ref() is None, "garbage from before the settle must be collected, not frozen"
    assert gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # frozen objects are not walked


def test_an_object_frozen_then_dropped_is_collected_at_the_next_settle() -> None:
    node = Node()
    settle()
    ref = weakref.ref(node)
    del node
    gc.collect()
    assert ref() is not None  # frozen: exempt from collections
    settle()
    assert ref() is None


def test_settles_once_logons_stop_growing_and_not_too_often() -> None:
    h = HeapSettler(quiet_s=3.0, min_gap_s=60.0)
    h.start()
    assert h.settles == 1
    assert not h.observe(0, now=1000.0)  # nothing new since start
    assert not h.observe(500, now=1001.0)  # growing
    assert not h.observe(1000, now=1002.0)
    assert not h.observe(1000, now=1004.0)  # quiet for 2 s only
    assert h.observe(1000, now=1005.5)
    assert h.settles == 2
    assert not h.observe(1000, now=1010.0)  # nothing new
    assert not h.observe(1005, now=1011.0)
    assert not h.observe(1005, now=1020.0)  # quiet, but within min_gap of the last settle
    assert h.observe(1005, now=1066.0)
    assert h.settles == 3
