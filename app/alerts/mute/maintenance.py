"""Recurring maintenance windows: planned work during which alerts send nothing.

A window has a selector (which series), a schedule in a time zone, and a duration:

- ``weekly: {days: [sat, sun], at: "02:00"}``: every listed weekday at that local time;
- ``cron: "30 2 * * 6"``: minute, hour, day of month, month, day of week (0 or 7 =
  Sunday), each ``*``, a number, a list ``1,15``, a range ``1-5`` or a step ``*/15``; when
  both day fields are restricted, either may match (as cron does);
- ``once: "2026-12-01T02:00"``: a single window (local time).

Local times follow the zone's daylight-saving rules (``zoneinfo``). Alerts of matching
series keep being evaluated and recorded but notify nothing while a window is open; what
is still due when it closes is sent then. ``pause_probes`` asks agents to skip the
matching series during the window (:func:`paused_series`), and charts shade the windows'
spans (:func:`spans`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from app.alerts.tables import maintenance_windows
from app.targets.durations import Duration, format_duration_ms
from app.targets.selector import Selector, SeriesRef

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


# --------------------------------------------------------------------------- cron


def _field(spec: str, lo: int, hi: int, where: str) -> frozenset[int]:
    out: set[int] = set()
    for part in spec.split(","):
        step = 1
        if "/" in part:
            part, step_s = part.split("/", 1)
            if not step_s.isdigit() or int(step_s) < 1:
                raise ValueError(f"{where}: bad step in {spec!r}")
            step = int(step_s)
        if part == "*":
            a, b = lo, hi
        elif re.fullmatch(r"\d+-\d+", part):
            a, b = (int(x) for x in part.split("-"))
        elif part.isdigit():
            a = b = int(part)
            if step > 1:
                b = hi
        else:
            raise ValueError(f"{where}: {spec!r} is not a number, range, list or */step")
        if not (lo <= a <= hi and lo <= b <= hi and a <= b):
            raise ValueError(f"{where}: {spec!r} is outside {lo}-{hi}")
        out.update(range(a, b + 1, step))
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    mdays: frozenset[int]
    months: frozenset[int]
    wdays: frozenset[int]  # 0 = Monday ... 6 = Sunday (Python's weekday())
    mday_any: bool
    wday_any: bool

    @classmethod
    def parse(cls, expr: str) -> Cron:
        parts = expr.split()
        if len(parts) != 5:
            raise ValueError(f"cron: {expr!r} needs 5 fields (minute hour day month weekday)")
        wd = _field(parts[4], 0, 7, "cron weekday")
        return cls(
            _field(parts[0], 0, 59, "cron minute"),
            _field(parts[1], 0, 23, "cron hour"),
            _field(parts[2], 1, 31, "cron day"),
            _field(parts[3], 1, 12, "cron month"),
            frozenset((d - 1) % 7 for d in wd),  # cron 0/7 = Sunday, 1 = Monday
            parts[2] == "*",
            parts[4] == "*",
        )

    def day_matches(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        md, wd = d.day in self.mdays, d.weekday() in self.wdays
        if self.mday_any or self.wday_any:
            return md and wd
        return md or wd


class Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    weekly: dict[str, Any] | None = None
    cron: str | None = None
    once: datetime | None = None

    @model_validator(mode="after")
    def _one(self) -> Schedule:
        given = [k for k in ("weekly", "cron", "once") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of weekly, cron or once")
        if self.cron is not None:
            Cron.parse(self.cron)
        if self.weekly is not None:
            self._weekly()
        if self.once is not None and self.once.tzinfo is not None:
            raise ValueError("once: a local time without offset (the window's timezone applies)")
        return self

    def _weekly(self) -> tuple[frozenset[int], time]:
        w = self.weekly or {}
        extra = set(w) - {"days", "at"}
        if extra:
            raise ValueError(f"weekly: unknown key(s) {', '.join(sorted(extra))} (days, at)")
        days = w.get("days") or list(DAYS)
        if not isinstance(days, list) or any(str(d).lower()[:3] not in DAYS for d in days):
            raise ValueError(f"weekly.days: use {', '.join(DAYS)}")
        at = str(w.get("at", "00:00"))
        if not re.fullmatch(r"([01]?\d|2[0-3]):[0-5]\d", at):
            raise ValueError(f"weekly.at: {at!r} is not HH:MM")
        hh, mm = (int(x) for x in at.split(":"))
        return frozenset(DAYS.index(str(d).lower()[:3]) for d in days), time(hh, mm)

    def starts_between(self, a: datetime, b: datetime, tz: ZoneInfo) -> list[datetime]:
        """Window starts (aware, UTC) in ``[a, b]``."""
        la, lb = a.astimezone(tz), b.astimezone(tz)
        out: list[datetime] = []
        if self.once is not None:
            start = self.once.replace(tzinfo=tz)
            return [start] if a <= start <= b else []
        day = la.date()
        while day <= lb.date():
            for t in self._times_on(day):
                at = datetime.combine(day, t, tzinfo=tz)
                if a <= at <= b:
                    out.append(at)
            day += timedelta(days=1)
        return out

    def _times_on(self, day: date) -> list[time]:
        if self.weekly is not None:
            days, at = self._weekly()
            return [at] if day.weekday() in days else []
        cron = Cron.parse(self.cron or "")
        if not cron.day_matches(day):
            return []
        return [time(h, m) for h in sorted(cron.hours) for m in sorted(cron.minutes)]

    def describe(self) -> str:
        if self.once is not None:
            return f"once at {self.once:%Y-%m-%d %H:%M}"
        if self.cron is not None:
            return f"cron {self.cron}"
        days, at = self._weekly()
        names = ", ".join(DAYS[d] for d in sorted(days)) if len(days) < 7 else "every day"
        return f"weekly {names} at {at:%H:%M}"


class WindowSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str
    description: str = ""
    enabled: bool = True
    selector: Selector = Field(default_factory=Selector)
    schedule: Schedule
    timezone: str = "UTC"
    duration: Duration = Field(ge=60_000, le=31 * 86_400_000)
    pause_probes: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("use 1-64 letters, digits, '.', '_' or '-', starting alphanumeric")
        return v

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{v!r} is not a time zone (e.g. Europe/Paris, UTC)") from None
        return v

    def open_at(self, now: datetime) -> tuple[datetime, datetime] | None:
        """The (start, end) of the occurrence open at ``now``, if any."""
        span = timedelta(milliseconds=self.duration)
        starts = self.schedule.starts_between(now - span, now, ZoneInfo(self.timezone))
        live = [s for s in starts if s <= now < s + span]
        return (max(live), max(live) + span) if live else None

    def spans(self, a: datetime, b: datetime) -> list[tuple[datetime, datetime]]:
        span = timedelta(milliseconds=self.duration)
        starts = self.schedule.starts_between(a - span, b, ZoneInfo(self.timezone))
        return [(s, s + span) for s in starts if s + span > a]

    def describe(self) -> str:
        return (
            f"{self.schedule.describe()} ({self.timezone}) for "
            f"{format_duration_ms(self.duration)}: {self.selector.describe()}"
        )

    def export(self) -> dict[str, Any]:
        doc = self.model_dump(mode="json", exclude_defaults=True, exclude={"selector", "schedule"})
        doc["name"] = self.name
        doc["schedule"] = self.schedule.model_dump(mode="json", exclude_none=True)
        doc["duration"] = format_duration_ms(self.duration)
        sel = self.selector.doc()
        if sel:
            doc["selector"] = sel
        return doc


@dataclass(frozen=True, slots=True)
class Window:
    id: int
    spec: WindowSpec


def _row(r: Any) -> Window:
    spec = WindowSpec(
        name=r.name,
        description=r.description,
        enabled=r.enabled,
        selector=Selector.model_validate(r.selector),
        schedule=Schedule.model_validate(r.schedule),
        timezone=r.timezone,
        duration=f"{r.duration_s}s",
        pause_probes=r.pause_probes,
    )
    return Window(int(r.id), spec)


def list_windows(conn: Connection, *, enabled_only: bool = False) -> list[Window]:
    q = maintenance_windows.select().order_by(maintenance_windows.c.name)
    if enabled_only:
        q = q.where(maintenance_windows.c.enabled)
    return [_row(r) for r in conn.execute(q).all()]


def upsert_window(conn: Connection, spec: WindowSpec) -> tuple[int, bool]:
    values = {
        "description": spec.description,
        "enabled": spec.enabled,
        "selector": spec.selector.doc(),
        "schedule": spec.schedule.model_dump(mode="json", exclude_none=True),
        "timezone": spec.timezone,
        "duration_s": spec.duration // 1000,
        "pause_probes": spec.pause_probes,
    }
    t = maintenance_windows
    existing = conn.execute(select(t.c.id).where(t.c.name == spec.name)).scalar_one_or_none()
    if existing is not None:
        conn.execute(update(t).where(t.c.id == existing).values(**values, updated_at=func.now()))
        return int(existing), False
    new = conn.execute(t.insert().values(name=spec.name, **values).returning(t.c.id))
    return int(new.scalar_one()), True


def delete_window(conn: Connection, name: str) -> bool:
    t = maintenance_windows
    return conn.execute(t.delete().where(t.c.name == name)).rowcount > 0


def open_windows(windows: list[Window], now: datetime) -> list[Window]:
    return [w for w in windows if w.spec.enabled and w.spec.open_at(now) is not None]


def paused_series(conn: Connection, series: list[SeriesRef], now: datetime) -> set[int]:
    """Series an agent should not probe now (windows with ``pause_probes`` open)."""
    out: set[int] = set()
    for w in open_windows(list_windows(conn, enabled_only=True), now):
        if w.spec.pause_probes:
            out.update(s.series_id for s in w.spec.selector.select(series))
    return out


def spans(
    conn: Connection, a: datetime, b: datetime, *, target: str | None = None
) -> list[tuple[str, datetime, datetime]]:
    """(window name, start, end) of every occurrence overlapping ``[a, b)``, for charts;
    with ``target``, only windows whose selector can match that target's name."""
    out: list[tuple[str, datetime, datetime]] = []
    for w in list_windows(conn, enabled_only=True):
        pats = w.spec.selector.targets
        if target is not None and pats:
            import fnmatch

            if not any(fnmatch.fnmatchcase(target, p) for p in pats):
                continue
        out.extend((w.spec.name, s, e) for s, e in w.spec.spans(a, b))
    return sorted(out, key=lambda x: x[1])
