"""Durations as targets files write them: ``10s``, ``500ms``, ``1m``, ``1h``, ``30d``, or bare
seconds."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1000}
# No duration in connwatch is longer (retention, windows, silences); a larger one is a
# typo or an attack, and would overflow the store's columns or Python's timedelta.
MAX_DURATION_MS = 3650 * 86_400_000  # 3650d
# The store keeps series intervals and timeouts in milliseconds in int4 columns
# (at most 2,147,483,647 ms, 24.8 days): the longest interval or timeout is 24d.
MAX_SERIES_MS = 24 * 86_400_000
_WHAT = "expected a duration such as 10s, 500ms or 1m"


def _checked(ms: float, value: Any) -> int:
    if not math.isfinite(ms) or abs(ms) > MAX_DURATION_MS:
        raise ValueError(f"{value!r} is too long: a duration is at most 3650d")
    return round(ms)


def parse_duration_ms(value: Any) -> int:
    """``10s`` / ``500ms`` / ``1m`` / ``1h`` / a number of seconds -> milliseconds.

    Raises ValueError for anything else, for NaN or infinity, and beyond
    :data:`MAX_DURATION_MS` (callers bound their own fields tighter, e.g. series
    intervals by :data:`MAX_SERIES_MS`).
    """
    if isinstance(value, bool):
        raise ValueError(_WHAT)
    if isinstance(value, int | float):
        return _checked(float(value) * 1000, value)
    if isinstance(value, str) and len(value) <= 64:
        m = _DURATION.match(value)
        if m:
            return _checked(float(m.group(1)) * _UNIT_MS[m.group(2)], value)
    raise ValueError(_WHAT)


def format_duration_ms(ms: int) -> str:
    if ms == 0:
        return "0s"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


Duration = Annotated[int, BeforeValidator(parse_duration_ms)]
