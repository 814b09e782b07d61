"""Which series something applies to: the selector shared by alert rules, SLOs, silences
and maintenance windows.

A selector matches a series (target x mode x probe x site) when every field it sets
matches: ``targets`` (shell patterns on the target name, ``sales-*``), ``tags`` (target
labels, each value a pattern), ``modes`` (mode kinds or mode names: ``pooled``,
``pgbouncer_transaction``), ``probe`` (one probe kind), ``sites``. An empty field matches
everything. :func:`catalog` reads every enabled series once; :meth:`Selector.select`
filters it in Python (patterns compiled once).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import text
from sqlalchemy.engine import Connection

from app.models import PROBE_KINDS


@dataclass(frozen=True, slots=True)
class SeriesRef:
    series_id: int
    target_id: int
    target: str
    target_kind: str
    labels: tuple[tuple[str, str], ...]
    mode_id: int
    mode: str
    mode_kind: str
    probe: str
    site: str
    interval_ms: int


def catalog(conn: Connection, *, include_disabled: bool = False) -> list[SeriesRef]:
    """Every series whose target, mode and series are enabled (or every one), by id."""
    where = "" if include_disabled else "where t.enabled and m.enabled and s.enabled"
    rows = conn.execute(
        text(
            "select s.id, t.id, t.name, t.kind, t.labels, m.id, m.name, m.kind, s.probe, s.site, "
            "s.interval_ms from series s join modes m on m.id = s.mode_id "
            f"join targets t on t.id = m.target_id {where} order by s.id"
        )
    ).all()
    return [
        SeriesRef(
            r[0],
            r[1],
            r[2],
            r[3],
            tuple(sorted((r[4] or {}).items())),
            r[5],
            r[6],
            r[7],
            r[8],
            r[9],
            r[10],
        )
        for r in rows
    ]


def _compile(patterns: Iterable[str]) -> re.Pattern[str] | None:
    pats = [p for p in patterns if p]
    if not pats or "*" in pats:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in pats))


class Selector(BaseModel):
    """What a rule, SLO, silence or maintenance window covers (empty = everything)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True, frozen=True)

    targets: list[str] = Field(default_factory=list)  # name patterns
    tags: dict[str, str] = Field(default_factory=dict)  # label -> value pattern
    modes: list[str] = Field(default_factory=list)  # mode kinds or names
    probe: str | None = None  # one probe kind
    sites: list[str] = Field(default_factory=list)

    @field_validator("probe")
    @classmethod
    def _probe(cls, v: str | None) -> str | None:
        if v is not None and v not in PROBE_KINDS:
            raise ValueError(f"{v!r} is not one of {', '.join(PROBE_KINDS)}")
        return v

    @cached_property
    def _target_re(self) -> re.Pattern[str] | None:
        return _compile(self.targets)

    @cached_property
    def _tag_res(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(k, re.compile(fnmatch.translate(v))) for k, v in sorted(self.tags.items())]

    def matches(self, s: SeriesRef) -> bool:
        if self.probe is not None and s.probe != self.probe:
            return False
        if self.modes and s.mode_kind not in self.modes and s.mode not in self.modes:
            return False
        if self.sites and s.site not in self.sites:
            return False
        rx = self._target_re
        if rx is not None and not rx.match(s.target):
            return False
        if self._tag_res:
            labels = dict(s.labels)
            for key, vre in self._tag_res:
                if key not in labels or not vre.match(labels[key]):
                    return False
        return True

    def matches_labels(self, labels: dict[str, str]) -> bool:
        """For a silence against an alert's labels (target, mode, probe, site, tags)."""
        if self.probe is not None and labels.get("probe") not in (None, self.probe):
            return False
        if (
            self.modes
            and labels.get("mode") not in self.modes
            and labels.get("mode_kind") not in self.modes
        ):
            return False
        if self.sites and labels.get("site") not in (None, *self.sites):
            return False
        rx = self._target_re
        if rx is not None and not rx.match(labels.get("target", "")):
            return False
        return all(key in labels and vre.match(labels[key]) for key, vre in self._tag_res)

    def select(self, series: Iterable[SeriesRef]) -> list[SeriesRef]:
        return [s for s in series if self.matches(s)]

    def describe(self) -> str:
        """In words, for pages: "targets sales-*, modes pooled, probe connping"."""
        parts = []
        if self.targets:
            parts.append("targets " + ", ".join(self.targets))
        if self.tags:
            parts.append("tags " + ", ".join(f"{k}={v}" for k, v in sorted(self.tags.items())))
        if self.modes:
            parts.append("modes " + ", ".join(self.modes))
        if self.probe:
            parts.append(f"probe {self.probe}")
        if self.sites:
            parts.append("sites " + ", ".join(self.sites))
        return "; ".join(parts) or "everything"

    def doc(self) -> dict[str, Any]:
        """The selector as stored / exported (empty fields left out)."""
        return self.model_dump(exclude_defaults=True)
