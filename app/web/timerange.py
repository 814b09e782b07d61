"""The time window a page or API call looks at: a preset (``range=24h``) or ``from``/``to``.

Every page keeps its window in the URL, so a pasted link opens the same view.
Presets end "now"; a custom window gives both ends as ISO 8601 instants (a
naive instant is taken as UTC). Bad input raises :class:`RangeError`, whose
message names the parameter and what was expected (the routes turn it into a 422).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

PRESETS: dict[str, timedelta] = {
    "1h": timedelta(hours=1),
    "6h": timedelta(hours=6),
    "24h": timedelta(hours=24),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
    "90d": timedelta(days=90),
    "1y": timedelta(days=365),
}
DEFAULT_PRESET = "24h"
MAX_SPAN = timedelta(days=5 * 366)
# Instants a window may name: windows and their buckets are computed with datetime, which
# overflows at the calendar's ends (year 1 and 9999 with an offset were 500s).
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
MIN_SPAN = timedelta(seconds=10)


class RangeError(ValueError):
    """A time window parameter is unusable; the message says which and why."""


@dataclass(frozen=True, slots=True)
class TimeRange:
    start: datetime
    end: datetime
    preset: str | None  # None for a custom window

    @property
    def span(self) -> timedelta:
        return self.end - self.start

    def query(self) -> dict[str, str]:
        """URL parameters that reproduce this window."""
        if self.preset is not None:
            return {"range": self.preset}
        return {"from": iso(self.start), "to": iso(self.end)}


def iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_instant(value: str, name: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        raise RangeError(
            f"{name}: {value!r} is not an ISO 8601 instant (e.g. 2026-11-21T03:12:00Z)"
        ) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    try:
        t = t.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00+14:00 is before the calendar's first day
        t = EARLIEST - timedelta(days=1)
    if not EARLIEST <= t < LATEST:
        raise RangeError(
            f"{name}: {value[:40]!r} is outside {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d} "
            "(UTC), the instants connwatch reads"
        )
    return t


def parse_range(
    preset: str | None,
    start: str | None,
    end: str | None,
    *,
    now: datetime | None = None,
    default: str = DEFAULT_PRESET,
) -> TimeRange:
    """The window named by ``range`` or by ``from``/``to`` (not both)."""
    now = now or datetime.now(UTC)
    if start or end:
        if preset:
            raise RangeError("give either range or from/to, not both")
        if not start:
            raise RangeError("from: missing (a custom window needs from, and to or now)")
        t0 = parse_instant(start, "from")
        t1 = parse_instant(end, "to") if end else now
        if t1 <= t0:
            raise RangeError(f"to ({iso(t1)}) must be after from ({iso(t0)})")
        if t1 - t0 < MIN_SPAN:
            raise RangeError("the window must span at least 10 seconds")
        if t1 - t0 > MAX_SPAN:
            raise RangeError("the window must not span more than 5 years")
        return TimeRange(t0, t1, None)
    name = preset or default
    span = PRESETS.get(name)
    if span is None:
        raise RangeError(f"range: {name!r} is not one of {', '.join(PRESETS)} (or use from/to)")
    return TimeRange(now - span, now, name)
