"""Annotations: events people (or deploy pipelines) record, such as "DRCP pool resized" or
"listener restarted", for one target or for all, at an instant or over a span.

They are drawn on the charts of their targets, listed on the Spikes page and in the
weekly report. :func:`events` merges them with the alert firings and resolutions of the
same window (from ``alert_transitions``), so every consumer shows both the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.alerts.tables import annotations_table


class AnnotationError(ValueError):
    """Bad annotation input (the text says which field)."""


class AnnotationSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    text: str = Field(min_length=1, max_length=500)
    target: str | None = None  # None: every target
    at: datetime | None = None  # default now
    ends_at: datetime | None = None
    tags: list[str] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _times(self) -> AnnotationSpec:
        for name in ("at", "ends_at"):
            v = getattr(self, name)
            if v is not None and v.tzinfo is None:
                raise ValueError(f"{name}: give a time zone (e.g. 2026-11-22T14:05:00Z)")
        if self.ends_at is not None and self.at is not None and self.ends_at <= self.at:
            raise ValueError("ends_at: must be after at")
        if any(not t or len(t) > 40 or any(c.isspace() for c in t) for t in self.tags):
            raise ValueError("tags: short words without spaces")
        return self


@dataclass(frozen=True, slots=True)
class Event:
    """One annotation or alert change on a time axis."""

    kind: str  # "annotation" | "firing" | "resolved"
    at: datetime
    ends_at: datetime | None
    target: str | None  # None: every target
    text: str
    author: str | None
    tags: list[str]
    id: int | None = None  # annotation id
    rule: str | None = None
    severity: str | None = None
    labels: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "at": self.at.isoformat(),
            "ends_at": self.ends_at.isoformat() if self.ends_at else None,
            "target": self.target,
            "text": self.text,
            "author": self.author,
            "tags": self.tags,
            "id": self.id,
            "rule": self.rule,
            "severity": self.severity,
            "labels": self.labels,
        }


def add_annotation(
    conn: Connection, spec: AnnotationSpec, *, author: str, source: str, now: datetime
) -> int:
    target_id = None
    if spec.target is not None:
        target_id = conn.execute(
            text("select id from targets where name = :n"), {"n": spec.target}
        ).scalar_one_or_none()
        if target_id is None:
            raise AnnotationError(f"target: no target named {spec.target!r}")
    new = conn.execute(
        annotations_table.insert()
        .values(
            at=spec.at or now,
            ends_at=spec.ends_at,
            target_id=target_id,
            text=spec.text,
            tags=spec.tags,
            author=author,
            source=source,
        )
        .returning(annotations_table.c.id)
    )
    return int(new.scalar_one())


def delete_annotation(conn: Connection, annotation_id: int) -> bool:
    t = annotations_table
    return conn.execute(t.delete().where(t.c.id == annotation_id)).rowcount > 0


def events(
    conn: Connection,
    start: datetime,
    end: datetime,
    *,
    target: str | None = None,
    alerts: bool = True,
    limit: int = 500,
) -> list[Event]:
    """Annotations overlapping ``[start, end)`` (of ``target`` and of every target) and,
    with ``alerts``, the firings and resolutions in it; oldest first."""
    rows = conn.execute(
        text(
            "select a.id, a.at, a.ends_at, t.name, a.text, a.author, a.tags from annotations a "
            "left join targets t on t.id = a.target_id "
            "where a.at < :b and coalesce(a.ends_at, a.at) >= :a "
            "and (cast(:t as text) is null or a.target_id is null or t.name = :t) "
            "order by a.at limit :n"
        ),
        {"a": start, "b": end, "t": target, "n": limit},
    ).all()
    out = [
        Event("annotation", r[1], r[2], r[3], r[4], r[5], list(r[6]), id=int(r[0])) for r in rows
    ]
    if alerts:
        rows = conn.execute(
            text(
                "select at, rule_name, severity, labels, to_state, summary from alert_transitions "
                "where at >= :a and at < :b and to_state in ('firing', 'resolved') "
                "and (cast(:t as text) is null or labels->>'target' = :t) order by at limit :n"
            ),
            {"a": start, "b": end, "t": target, "n": limit},
        ).all()
        for at, rule, sev, labels, state, summary in rows:
            out.append(
                Event(
                    state,
                    at,
                    None,
                    labels.get("target"),
                    f"{rule}: {summary}",
                    None,
                    [],
                    rule=rule,
                    severity=sev,
                    labels=dict(labels),
                )
            )
    return sorted(out, key=lambda e: e.at)
