"""The last ``/metrics`` exposition of a web app, reused for a moment.

Rendering the exposition reads the store for every series, mode and agent (about 0.3 s
for 300 series on the benchmark machine, docs/benchmarks.md "serve under load"); several
scrapers, or a dashboard and a scraper, asking within the same second get the same
text. One render at a time: requests that arrive while one is rendering wait for it and
take its result instead of rendering again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RecentText:
    """A text kept for ``ttl_s`` seconds after it was made (0: never kept)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._text: str | None = None
        self._made = 0.0
        self.renders = 0

    def get(self, ttl_s: float, render: Callable[[], str]) -> str:
        asked = time.monotonic()
        with self._lock:  # one render at a time; the waiting requests reuse it
            if self._text is not None and (
                time.monotonic() - self._made < ttl_s or self._made >= asked
            ):
                return self._text
            text = render()
            self._text, self._made = text, time.monotonic()
            self.renders += 1
            return text
