"""Where in its interval each series runs: a deterministic, hash-derived phase.

Like Prometheus' scrape offsets, every series gets a fixed offset inside its
interval from a hash of its id, so a thousand 1-second series start spread over the
second instead of all at once. The instants are anchored on the Unix epoch, so
they are the same in every agent and after every restart: instant ``t`` (in ms since
the epoch) is scheduled for a series iff ``(t - offset) % interval == 0``. Two agents
taking turns on a series therefore agree on its ``scheduled_at`` values, and the
store's key ``(series_id, scheduled_at)`` makes an overlap at hand-over harmless.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def phase_offset_ms(series_id: int, interval_ms: int) -> int:
    """The series' offset within its interval, in ``[0, interval_ms)``."""
    digest = hashlib.blake2b(f"connwatch-series-{series_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % interval_ms


def to_ms(at: datetime) -> int:
    delta = at.astimezone(UTC) - EPOCH
    return (delta.days * 86_400_000) + (delta.seconds * 1000) + (delta.microseconds // 1000)


def from_ms(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def grid_at_or_before_ms(t_ms: int, offset_ms: int, interval_ms: int) -> int:
    """The latest instant ``offset_ms + k * interval_ms`` (ms since the epoch) not after
    ``t_ms``."""
    return t_ms - (t_ms - offset_ms) % interval_ms


def instant_at_or_before(series_id: int, interval_ms: int, at: datetime) -> datetime:
    """The latest scheduled instant not after ``at``."""
    off = phase_offset_ms(series_id, interval_ms)
    return from_ms(grid_at_or_before_ms(to_ms(at), off, interval_ms))


def instant_after(series_id: int, interval_ms: int, at: datetime) -> datetime:
    """The first scheduled instant strictly after ``at``."""
    return instant_at_or_before(series_id, interval_ms, at) + timedelta(milliseconds=interval_ms)


def grace_s(interval_ms: int, max_grace_s: float) -> float:
    """How late a run may start before it counts as skipped: half an interval, capped."""
    return min(interval_ms / 2000.0, max_grace_s)
