"""Silences: for a time, no notification for the alerts they match.

A silence matches an alert instance when the rule's name matches one of ``rules`` (shell
patterns; empty = every rule) and the instance's labels match ``selector`` (target name
patterns, tags, modes, probe, sites). Silenced alerts are still evaluated, shown (marked
silenced) and recorded; when the silence ends, whatever the contacts have not been told
yet (a firing, or the resolution of an alert they were told about) is sent.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.alerts.tables import alert_silences
from app.targets.selector import Selector

MAX_SPAN = timedelta(days=366)


class SilenceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    rules: list[str] = Field(default_factory=list)
    selector: Selector = Field(default_factory=Selector)
    starts_at: datetime
    ends_at: datetime
    author: str = Field(min_length=1, max_length=200)
    comment: str = Field(min_length=1, max_length=2000)

    @model_validator(mode="after")
    def _span(self) -> SilenceSpec:
        if self.starts_at.tzinfo is None or self.ends_at.tzinfo is None:
            raise ValueError("starts_at, ends_at: give a time zone (e.g. 2026-11-22T02:00:00Z)")
        if self.ends_at <= self.starts_at:
            raise ValueError("ends_at: must be after starts_at")
        if self.ends_at - self.starts_at > MAX_SPAN:
            raise ValueError("ends_at: a silence lasts at most a year")
        return self

    def matches(self, rule: str, labels: dict[str, str]) -> bool:
        if self.rules and not any(fnmatch.fnmatchcase(rule, p) for p in self.rules):
            return False
        return self.selector.matches_labels(labels)


@dataclass(frozen=True, slots=True)
class Silence:
    id: int
    spec: SilenceSpec
    created_at: datetime

    def state(self, now: datetime) -> str:
        if now < self.spec.starts_at:
            return "pending"
        return "active" if now < self.spec.ends_at else "expired"


def _row(r: Any) -> Silence:
    spec = SilenceSpec(
        rules=list(r.rules),
        selector=Selector.model_validate(r.selector),
        starts_at=r.starts_at,
        ends_at=r.ends_at,
        author=r.author,
        comment=r.comment,
    )
    return Silence(int(r.id), spec, r.created_at)


def create_silence(conn: Connection, spec: SilenceSpec) -> int:
    new = conn.execute(
        alert_silences.insert()
        .values(
            rules=spec.rules,
            selector=spec.selector.doc(),
            starts_at=spec.starts_at,
            ends_at=spec.ends_at,
            author=spec.author,
            comment=spec.comment,
        )
        .returning(alert_silences.c.id)
    )
    return int(new.scalar_one())


def expire_silence(conn: Connection, silence_id: int) -> bool:
    """End a silence now (its record stays, for the history)."""
    return (
        conn.execute(
            text(
                "update alert_silences set ends_at = greatest(starts_at + interval '1 second', "
                "now()) where id = :i and ends_at > now()"
            ),
            {"i": silence_id},
        ).rowcount
        > 0
    )


def list_silences(
    conn: Connection, *, now: datetime, include_expired_since: timedelta = timedelta(days=7)
) -> list[Silence]:
    rows = conn.execute(
        alert_silences.select()
        .where(alert_silences.c.ends_at > now - include_expired_since)
        .order_by(alert_silences.c.starts_at.desc(), alert_silences.c.id.desc())
    ).all()
    return [_row(r) for r in rows]


def active_silences(conn: Connection, now: datetime) -> list[Silence]:
    rows = conn.execute(
        alert_silences.select().where(
            alert_silences.c.starts_at <= now, alert_silences.c.ends_at > now
        )
    ).all()
    return [_row(r) for r in rows]
