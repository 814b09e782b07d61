"""Which targets, modes and series a report covers, and which probe speaks for each mode.

A selection is all targets, or those whose name matches one of a few shell-style
patterns (``sales-*``) and whose labels include every given ``key=value`` (the labels
of targets as code). Each mode is read from the series of ONE probe kind, the
overview's rule (connping where the mode runs it, else the first of sessionping,
commit, poolacquire), never a mix. Disabled targets and modes are still reported
for the weeks they have samples. Passwords are never read here.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.engine import Connection

from app.models import modes, series, targets

# the overview's order (app/web/views/overview.py OVERVIEW_PROBES; a test keeps them equal)
REPORT_PROBES = ("connping", "sessionping", "commit", "poolacquire")


@dataclass(frozen=True, slots=True)
class Selection:
    """All targets (both empty), or those matching a name pattern AND carrying the labels."""

    patterns: tuple[str, ...] = ()
    labels: tuple[tuple[str, str], ...] = ()

    def matches(self, name: str, target_labels: dict[str, str]) -> bool:
        if self.patterns and not any(fnmatch.fnmatchcase(name, p) for p in self.patterns):
            return False
        return all(str(target_labels.get(k)) == v for k, v in self.labels)

    def describe(self) -> str:
        parts = []
        if self.patterns:
            parts.append("targets " + ", ".join(self.patterns))
        if self.labels:
            parts.append("labels " + ", ".join(f"{k}={v}" for k, v in self.labels))
        return "; ".join(parts) if parts else "all targets"

    @staticmethod
    def parse(patterns: str | None, labels: str | None) -> Selection:
        """From text: ``"sales-*, hr"`` and ``"env=prod, team=dba"`` (ValueError if malformed)."""
        pats = tuple(p.strip() for p in (patterns or "").split(",") if p.strip())
        pairs: list[tuple[str, str]] = []
        for item in (labels or "").split(","):
            if not item.strip():
                continue
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"label {item.strip()!r} is not key=value")
            pairs.append((key.strip(), value.strip()))
        return Selection(pats, tuple(pairs))


@dataclass(frozen=True, slots=True)
class ModeScope:
    target_id: int
    target: str
    target_kind: str
    mode_id: int
    mode: str
    kind: str
    probe: str
    series_ids: tuple[int, ...]  # that probe's series (one per site)

    @property
    def label(self) -> str:
        return f"{self.target}/{self.mode}"


@dataclass(slots=True)
class Scope:
    selection: Selection
    modes: list[ModeScope] = field(default_factory=list)  # ordered by target, mode

    @property
    def series_ids(self) -> list[int]:
        return [s for m in self.modes for s in m.series_ids]

    @property
    def target_ids(self) -> list[int]:
        return sorted({m.target_id for m in self.modes})

    def owner(self) -> dict[int, ModeScope]:
        return {s: m for m in self.modes for s in m.series_ids}

    def targets(self) -> list[tuple[str, list[ModeScope]]]:
        out: dict[str, list[ModeScope]] = {}
        for m in self.modes:
            out.setdefault(m.target, []).append(m)
        return list(out.items())


def report_probe(probes: set[str]) -> str | None:
    return next((p for p in REPORT_PROBES if p in probes), None)


def load_scope(conn: Connection, selection: Selection | None = None) -> Scope:
    """The modes the selection covers, each with its report probe's series."""
    selection = selection or Selection()
    trows = conn.execute(
        select(targets.c.id, targets.c.name, targets.c.kind, targets.c.labels).order_by(
            targets.c.name
        )
    ).all()
    chosen = {
        r.id: (r.name, r.kind)
        for r in trows
        if selection.matches(r.name, {str(k): str(v) for k, v in (r.labels or {}).items()})
    }
    if not chosen:
        return Scope(selection)
    mrows = conn.execute(
        select(modes.c.id, modes.c.target_id, modes.c.name, modes.c.kind)
        .where(modes.c.target_id.in_(list(chosen)))
        .order_by(modes.c.name)
    ).all()
    srows = conn.execute(
        select(series.c.id, series.c.mode_id, series.c.probe)
        .where(series.c.mode_id.in_([m.id for m in mrows]))
        .order_by(series.c.id)
    ).all()
    by_mode: dict[int, list[tuple[int, str]]] = {}
    for s in srows:
        by_mode.setdefault(s.mode_id, []).append((s.id, s.probe))
    out: list[ModeScope] = []
    for m in mrows:
        have = by_mode.get(m.id, [])
        probe = report_probe({p for _, p in have})
        if probe is None:
            continue
        tname, tkind = chosen[m.target_id]
        ids = tuple(sid for sid, p in have if p == probe)
        out.append(ModeScope(m.target_id, tname, tkind, m.id, m.name, m.kind, probe, ids))
    out.sort(key=lambda m: (m.target, m.mode))
    return Scope(selection, out)
