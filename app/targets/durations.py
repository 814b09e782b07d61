"""Durations as targets files write them: ``10s``, ``500ms``, ``1m``, ``1h``, ``30d``, or bare
seconds."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1000}


def parse_duration_ms(value: Any) -> int:
    """``10s`` / ``500ms`` / ``1m`` / ``1h`` / a number of seconds -> milliseconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 10s, 500ms or 1m")
    if isinstance(value, int | float):
        return round(value * 1000)
    if isinstance(value, str):
        m = _DURATION.match(value)
        if m:
            return round(float(m.group(1)) * _UNIT_MS[m.group(2)])
    raise ValueError("expected a duration such as 10s, 500ms or 1m")


def format_duration_ms(ms: int) -> str:
    if ms == 0:
        return "0s"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


Duration = Annotated[int, BeforeValidator(parse_duration_ms)]
