"""Subscriptions: who gets which report when, managed in the UI and as YAML.

A subscription names its targets (shell patterns, empty: all) and labels (every
``key: value`` must match), a schedule (weekly: weekday, hour and minute in an IANA
time zone; monthly: day 1..28 of the month), the recipients and the paper size. The
same pydantic model validates the web form and the YAML file, so both give the same
one-line errors naming the field. YAML is all-or-nothing, like targets as code:

    subscriptions:
      - name: managers-weekly
        targets: ["sales-*"]
        labels: {env: prod}
        schedule: {every: week, day: monday, at: "08:00", timezone: Europe/Berlin}
        recipients: [dba-lead@example.com, cto@example.com]
        paper: A4
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection

from app.reports.content.scope import Selection
from app.reports.delivery.tables import report_subscriptions

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
EMAIL_RE = re.compile(r"^[^@\s,;<>\"']+@[^@\s,;<>\"']+\.[^@\s,;<>\"']+$")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MAX_RECIPIENTS = 50


class SubscriptionError(ValueError):
    """Invalid subscriptions: one line per problem, each naming where."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    every: Literal["week", "month"] = "week"
    day: str | int = Field("monday", description="weekday name (weekly) or 1..28 (monthly)")
    at: str = Field("08:00", description="HH:MM in the time zone")
    timezone: str = "UTC"

    @field_validator("at")
    @classmethod
    def _at(cls, v: str) -> str:
        m = re.fullmatch(r"(\d{1,2}):(\d{2})", v.strip())
        if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
            raise ValueError(f"{v!r} is not a time such as 08:00")
        return f"{int(m.group(1)):02d}:{m.group(2)}"

    @field_validator("timezone")
    @classmethod
    def _tz(cls, v: str) -> str:
        v = v.strip()
        if v not in available_timezones() and v != "UTC":
            raise ValueError(f"{v!r} is not an IANA time zone such as Europe/Berlin")
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{v!r} is not an IANA time zone such as Europe/Berlin") from None
        return v

    def weekday(self) -> int:
        return WEEKDAYS.index(str(self.day).lower()) + 1 if self.every == "week" else 1

    def day_of_month(self) -> int:
        return int(self.day) if self.every == "month" else 1

    def check_day(self) -> None:
        if self.every == "week" and str(self.day).lower() not in WEEKDAYS:
            raise ValueError(f"schedule.day: {self.day!r} is not a weekday such as monday")
        if self.every == "month" and not (str(self.day).isdigit() and 1 <= int(self.day) <= 28):
            raise ValueError(f"schedule.day: {self.day!r} is not a day of the month 1..28")

    def describe(self) -> str:
        if self.every == "week":
            return f"every {str(self.day).capitalize()} at {self.at} {self.timezone}"
        return f"monthly on day {self.day} at {self.at} {self.timezone}"


class SubscriptionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    enabled: bool = True
    targets: list[str] = Field(default_factory=list, description="name patterns; empty: all")
    labels: dict[str, str] = Field(default_factory=dict)
    schedule: Schedule = Field(default_factory=Schedule)
    recipients: list[str]
    paper: Literal["A4", "Letter"] = "A4"

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError(f"{v!r}: letters, digits, '.', '_' and '-', at most 63")
        return v

    @field_validator("targets")
    @classmethod
    def _targets(cls, v: list[str]) -> list[str]:
        out = [p.strip() for p in v if p.strip()]
        for p in out:
            if len(p) > 63 or not re.fullmatch(r"[A-Za-z0-9_.*?\[\]!-]+", p):
                raise ValueError(f"{p!r} is not a target name pattern such as sales-*")
        return out

    @field_validator("recipients")
    @classmethod
    def _recipients(cls, v: list[str]) -> list[str]:
        out = [r.strip() for r in v if r.strip()]
        if not out:
            raise ValueError("at least one e-mail address")
        if len(out) > MAX_RECIPIENTS:
            raise ValueError(f"at most {MAX_RECIPIENTS} addresses")
        for r in out:
            if not EMAIL_RE.match(r) or len(r) > 254:
                raise ValueError(f"{r!r} is not an e-mail address")
        return list(dict.fromkeys(out))

    def selection(self) -> Selection:
        return Selection(tuple(self.targets), tuple(sorted(self.labels.items())))


@dataclass(frozen=True, slots=True)
class Subscription:
    id: int
    spec: SubscriptionIn
    source: str
    created_at: datetime
    updated_at: datetime

    @property
    def name(self) -> str:
        return self.spec.name


def _errors(exc: ValidationError, where: str) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        out.append(f"{where}: {loc}: {msg}" if loc else f"{where}: {msg}")
    return out


def validate(data: Any, where: str = "subscription") -> SubscriptionIn:
    """One subscription from a mapping (form or YAML); SubscriptionError names the field."""
    try:
        spec = SubscriptionIn.model_validate(data)
        spec.schedule.check_day()
    except ValidationError as exc:
        raise SubscriptionError(_errors(exc, where)) from None
    except ValueError as exc:
        raise SubscriptionError([f"{where}: {exc}"]) from None
    return spec


def _values(spec: SubscriptionIn, source: str) -> dict[str, Any]:
    h, m = spec.schedule.at.split(":")
    return {
        "name": spec.name,
        "enabled": spec.enabled,
        "targets": spec.targets,
        "labels": spec.labels,
        "cadence": "weekly" if spec.schedule.every == "week" else "monthly",
        "weekday": spec.schedule.weekday(),
        "day_of_month": spec.schedule.day_of_month(),
        "hour": int(h),
        "minute": int(m),
        "timezone": spec.schedule.timezone,
        "recipients": spec.recipients,
        "paper": spec.paper,
        "source": source,
    }


def _from_row(r: Any) -> Subscription:
    every: Literal["week", "month"] = "week" if r.cadence == "weekly" else "month"
    day: str | int = WEEKDAYS[r.weekday - 1] if every == "week" else int(r.day_of_month)
    spec = SubscriptionIn(
        name=r.name,
        enabled=r.enabled,
        targets=list(r.targets),
        labels=dict(r.labels),
        schedule=Schedule(
            every=every, day=day, at=f"{r.hour:02d}:{r.minute:02d}", timezone=r.timezone
        ),
        recipients=list(r.recipients),
        paper=r.paper,
    )
    return Subscription(r.id, spec, r.source, r.created_at, r.updated_at)


def list_subscriptions(conn: Connection) -> list[Subscription]:
    rows = conn.execute(select(report_subscriptions).order_by(report_subscriptions.c.name))
    return [_from_row(r) for r in rows]


def get_subscription(conn: Connection, name: str) -> Subscription | None:
    r = conn.execute(
        select(report_subscriptions).where(report_subscriptions.c.name == name)
    ).one_or_none()
    return _from_row(r) if r is not None else None


def save(conn: Connection, spec: SubscriptionIn, *, source: str = "ui") -> Subscription:
    """Create or update (by name) one subscription."""
    values = _values(spec, source)
    stmt = pg_insert(report_subscriptions).values(**values)
    stmt = stmt.on_conflict_do_update(
        index_elements=["name"],
        set_={**{k: stmt.excluded[k] for k in values if k != "name"}, "updated_at": func.now()},
    )
    conn.execute(stmt)
    got = get_subscription(conn, spec.name)
    assert got is not None
    return got


def remove(conn: Connection, name: str) -> bool:
    res = conn.execute(delete(report_subscriptions).where(report_subscriptions.c.name == name))
    return bool(res.rowcount)


def set_enabled(conn: Connection, name: str, enabled: bool) -> bool:
    res = conn.execute(
        update(report_subscriptions)
        .where(report_subscriptions.c.name == name)
        .values(enabled=enabled, updated_at=func.now())
    )
    return bool(res.rowcount)


def load_yaml(text: str, where: str) -> list[SubscriptionIn]:
    """Every subscription of a YAML document, or SubscriptionError listing all problems."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark is not None else ""
        raise SubscriptionError([f"{where}:{at} not valid YAML"]) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("subscriptions"), list):
        raise SubscriptionError([f"{where}: expected a mapping with a 'subscriptions' list"])
    specs: list[SubscriptionIn] = []
    errors: list[str] = []
    for i, item in enumerate(doc["subscriptions"]):
        label = item.get("name") if isinstance(item, dict) else None
        try:
            specs.append(validate(item, f"{where}: subscription #{i + 1} {label!r}"))
        except SubscriptionError as exc:
            errors.extend(exc.errors)
    names = [s.name for s in specs]
    errors += [
        f"{where}: subscription {n!r} is named twice" for n in set(names) if names.count(n) > 1
    ]
    if errors:
        raise SubscriptionError(errors)
    return specs


def import_yaml(conn: Connection, path: Path, *, prune: bool = False) -> tuple[int, int, int]:
    """All-or-nothing upsert from a file; ``prune`` also removes subscriptions it does not
    name. Returns (created, updated, removed)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise SubscriptionError([f"{path}: {exc.strerror}"]) from None
    specs = load_yaml(text, str(path))
    have = {s.name for s in list_subscriptions(conn)}
    for spec in specs:
        save(conn, spec, source="yaml")
    removed = 0
    if prune:
        for name in have - {s.name for s in specs}:
            removed += remove(conn, name)
    created = sum(s.name not in have for s in specs)
    return created, len(specs) - created, removed


def dump_yaml(subs: Sequence[Subscription]) -> str:
    doc = {"subscriptions": [s.spec.model_dump(mode="json") for s in subs]}
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
