"""The period a report covers: an ISO week (Monday 00:00 to Monday 00:00 UTC) or a calendar
month (the 1st 00:00 UTC to the next 1st), whole or "so far".

``parse_period`` reads what a user types: ``2026-W47``, ``2026-03``, ``current`` (this
week so far), ``current-month`` (this month so far), ``last`` (the last complete week),
``last-month`` (the last complete month). An empty value is the default week, which
depends on the data (:func:`app.reports.content.build.default_period`): the last
complete week, or the current week so far when the last week has no samples (a fresh
install). Bad input raises :class:`PeriodError` naming what was wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

WEEK = timedelta(days=7)
WEEK_RE = re.compile(r"^(\d{4})-W(\d{1,2})$")
MONTH_RE = re.compile(r"^(\d{4})-(\d{1,2})$")
OLDEST_YEAR = 2000

Kind = Literal["week", "month"]


class PeriodError(ValueError):
    """A period the user asked for is unusable; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Period:
    kind: Kind
    start: datetime
    full_end: datetime  # the next Monday / the next 1st
    end: datetime  # full_end, or now for a period still running
    label: str  # 2026-W47 or 2026-03

    @property
    def complete(self) -> bool:
        return self.end >= self.full_end

    @property
    def noun(self) -> str:
        return self.kind

    def previous(self) -> Period:
        """The whole period before this one."""
        if self.kind == "week":
            return week_at(self.start - WEEK, self.start)
        prev = (self.start - timedelta(days=1)).replace(day=1)
        return month_at(prev, self.start)

    def following(self, now: datetime) -> Period | None:
        """The period after this one, if it has started by ``now``."""
        if self.full_end > now:
            return None
        if self.kind == "week":
            return week_at(self.full_end, now)
        return month_at(self.full_end, now)

    def describe(self) -> str:
        what = f"week {self.label}" if self.kind == "week" else f"month {self.label}"
        return what if self.complete else f"{what} so far"


def monday(d: date) -> datetime:
    m = d - timedelta(days=d.isoweekday() - 1)
    return datetime(m.year, m.month, m.day, tzinfo=UTC)


def week_at(start: datetime, now: datetime) -> Period:
    y, w, _ = start.date().isocalendar()
    full = start + WEEK
    return Period("week", start, full, min(full, now), f"{y}-W{w:02d}")


def _next_month(start: datetime) -> datetime:
    return (start.replace(day=28) + timedelta(days=4)).replace(day=1)


def month_at(start: datetime, now: datetime) -> Period:
    start = datetime(start.year, start.month, 1, tzinfo=UTC)
    full = _next_month(start)
    return Period("month", start, full, min(full, now), f"{start.year}-{start.month:02d}")


def last_week(now: datetime) -> Period:
    return week_at(monday(now.astimezone(UTC).date()) - WEEK, now)


def current_week(now: datetime) -> Period:
    return week_at(monday(now.astimezone(UTC).date()), now)


def current_month(now: datetime) -> Period:
    return month_at(now.astimezone(UTC), now)


def last_month(now: datetime) -> Period:
    return current_month(now).previous()


def parse_period(value: str | None, now: datetime) -> Period | None:
    """The period named by ``value``; ``None`` for an empty value (the data decides)."""
    text = (value or "").strip()
    if not text:
        return None
    named = {
        "current": current_week,
        "last": last_week,
        "current-month": current_month,
        "last-month": last_month,
    }
    if text in named:
        return named[text](now)
    if m := WEEK_RE.match(text):
        year, number = int(m.group(1)), int(m.group(2))
        try:
            first = date.fromisocalendar(year, number, 1)
        except ValueError:
            raise PeriodError(f"week: {year} has no ISO week {number}") from None
        period = week_at(monday(first), now)
    elif m := MONTH_RE.match(text):
        year, month = int(m.group(1)), int(m.group(2))
        if not 1 <= month <= 12:
            raise PeriodError(f"week: {text!r}: there is no month {month}")
        period = month_at(datetime(year, month, 1, tzinfo=UTC), now)
    else:
        raise PeriodError(
            f"week: {value!r} is not an ISO week such as 2026-W46, a month such as 2026-03, "
            "or one of current, last, current-month, last-month"
        )
    if period.start.year < OLDEST_YEAR:
        raise PeriodError(f"week: {value!r} is before {OLDEST_YEAR}")
    if period.start > now:
        raise PeriodError(f"week: {text} has not started yet")
    return period
