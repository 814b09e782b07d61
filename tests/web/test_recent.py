"""Recent figures: reused within their time, per key, computed one at a time."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from app.web.views.recent import Recent


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
