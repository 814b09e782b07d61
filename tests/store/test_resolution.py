"""Which table serves a range, and the step."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.store.resolution import choose

END = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("span", "grain", "step"),
    [
        (timedelta(hours=1), "raw", timedelta(seconds=30)),
        (timedelta(days=2), "raw", timedelta(minutes=10)),
        (timedelta(days=4), "1m", timedelta(minutes=30)),
        (timedelta(days=30), "1h", timedelta(hours=3)),
        (timedelta(days=365), "1d", timedelta(days=2)),
    ],
)
def test_resolution_by_range(span: timedelta, grain: str, step: timedelta) -> None:
    p = choose(END - span, END)
    assert (p.grain.name, p.step) == (grain, step)
    assert p.start <= END - span and p.end >= END and p.buckets <= 302


def test_retention_moves_to_a_coarser_table() -> None:
    p = choose(END - timedelta(hours=1), END, raw_from=END - timedelta(minutes=10))
    assert p.grain.name == "1m"
    p = choose(END - timedelta(days=4), END, minute_from=END - timedelta(days=1))
    assert p.grain.name == "1h"


def test_many_series_move_to_coarser_tables() -> None:
    assert choose(END - timedelta(days=4), END, n_series=10).grain.name == "1h"


def test_bad_ranges_are_refused() -> None:
    with pytest.raises(ValueError, match="empty range"):
        choose(END, END)
    with pytest.raises(ValueError, match="timezone-aware"):
        choose(END.replace(tzinfo=None), END)
