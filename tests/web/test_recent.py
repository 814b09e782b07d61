"""Recent figures: reused within their time, per key, computed one at a time."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from app.web.views.reuse.recent import Recent


def test_a_value_is_reused_within_its_time_and_computed_again_after() -> None:
    r = Recent[int]()
    calls = iter(range(100))
    assert r.get("k", 0.5, lambda: next(calls)) == 0
    assert r.get("k", 0.5, lambda: next(calls)) == 0  # reused
    time.sleep(0.6)
    assert r.get("k", 0.5, lambda: next(calls)) == 1  # too old: computed again
    assert r.computed == 2


def test_another_key_is_computed_at_once() -> None:
    r = Recent[str]()
    assert r.get(("a", 1), 60, lambda: "first") == "first"
    assert r.get(("a", 2), 60, lambda: "second") == "second"  # e.g. a mode was added
    assert r.get(("a", 1), 60, lambda: "stale?") == "first"


def test_zero_computes_every_time() -> None:
    r = Recent[int]()
    assert [r.get("k", 0, lambda i=i: i) for i in range(3)] == [0, 1, 2]  # type: ignore[misc]


def test_requests_that_wait_for_a_computation_take_its_result() -> None:
    r = Recent[int]()
    started = threading.Event()
    n = iter(range(100))

    def slow() -> int:
        started.set()
        time.sleep(0.5)
        return next(n)

    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(r.get, "k", 0, slow)
        started.wait(5)
        rest = [pool.submit(r.get, "k", 0, slow) for _ in range(7)]
        values = [first.result()] + [f.result() for f in rest]
    # even with no reuse time, the seven that arrived during the first computation
    # take its result instead of computing seven more
    assert values == [0] * 8 and r.computed == 1


def test_different_keys_are_computed_side_by_side() -> None:
    r = Recent[str]()
    both = threading.Barrier(2, timeout=5)

    def slow(name: str) -> str:
        both.wait()  # returns only when the other key's computation is running too
        return name

    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(r.get, "a", 60, lambda: slow("a"))
        b = pool.submit(r.get, "b", 60, lambda: slow("b"))
        assert (a.result(), b.result()) == ("a", "b")


def test_the_least_recently_used_key_goes_first() -> None:
    r = Recent[int](keep=2)
    r.get("a", 60, lambda: 1)
    r.get("b", 60, lambda: 2)
    r.get("a", 60, lambda: -1)  # used: "b" is now the oldest
    r.get("c", 60, lambda: 3)
    assert r.get("a", 60, lambda: -1) == 1
    assert r.get("b", 60, lambda: 20) == 20  # was dropped, computed again
    assert r.computed == 4


def test_a_failed_computation_keeps_nothing() -> None:
    r = Recent[int]()

    def boom() -> int:
        raise ValueError("bad window")

    with pytest.raises(ValueError, match="bad window"):
        r.get("k", 60, boom)
    assert r.get("k", 60, lambda: 7) == 7 and r.computed == 1


def test_while_a_value_is_renewed_the_one_before_it_is_served() -> None:
    r = Recent[str]()
    assert r.get("k", 2.0, lambda: "old") == "old"
    time.sleep(2.05)  # past its time, not yet twice it
    renewing = threading.Event()
    release = threading.Event()

    def slow() -> str:
        renewing.set()
        release.wait(5)
        return "new"

    with ThreadPoolExecutor(2) as pool:
        renewal = pool.submit(r.get, "k", 2.0, slow)
        assert renewing.wait(5)
        # the renewal is under way: another request takes the last value without waiting
        assert pool.submit(r.get, "k", 2.0, lambda: "never").result(timeout=5) == "old"
        release.set()
        assert renewal.result() == "new"
    assert r.get("k", 2.0, lambda: "never") == "new" and r.computed == 2
