"""Small page-specific lookups: which targets, modes and series exist.

Everything about samples (latencies, percentiles, errors) comes from the store's
query functions; this module only reads the configuration tables (agents:
:mod:`app.store.read.agents`).
Passwords are never selected here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from app.models import modes, series, targets
from app.web.palette import ModeStyle, mode_style, target_styles


@dataclass(frozen=True, slots=True)
class SeriesInfo:
    id: int
    probe: str
    site: str
    interval_ms: int
    timeout_ms: int
    enabled: bool


@dataclass(slots=True)
class ModeInfo:
    id: int
    name: str
    kind: str
    transport: str
    enabled: bool
    params: dict[str, Any]
    series: list[SeriesInfo] = field(default_factory=list)
    # its colour, dash and marker on every page: set by load_targets from the whole
    # target (app/web/palette.py), so no two modes of a target share a colour
    style: ModeStyle = field(default_factory=lambda: ModeStyle(color="", dash="", symbol=""))

    def __post_init__(self) -> None:
        if not self.style["color"]:
            self.style = mode_style(self.kind, self.transport)

    def series_for(self, probe: str | None) -> list[SeriesInfo]:
        return [s for s in self.series if s.probe == probe]


@dataclass(slots=True)
class TargetInfo:
    id: int
    name: str
    kind: str
    dsn: str
    username: str
    description: str
    enabled: bool
    has_password: bool
    password_ref: str | None  # a reference (env:/file:) is not a secret; a token is never read
    labels: dict[str, Any]
    modes: list[ModeInfo] = field(default_factory=list)

    def mode(self, name: str) -> ModeInfo | None:
        return next((m for m in self.modes if m.name == name), None)


_TARGET_COLS = (
    targets.c.id,
    targets.c.name,
    targets.c.kind,
    targets.c.dsn,
    targets.c.username,
    targets.c.description,
    targets.c.enabled,
    targets.c.labels,
    targets.c.password_ref,
    (targets.c.password_enc.is_not(None) | targets.c.password_ref.is_not(None)).label("has_pw"),
)


def load_targets(conn: Connection, name: str | None = None) -> list[TargetInfo]:
    """Targets (all, or the one named) with their modes and series, ordered by name."""
    q = select(*_TARGET_COLS).order_by(targets.c.name)
    if name is not None:
        q = q.where(targets.c.name == name)
    out: dict[int, TargetInfo] = {}
    for r in conn.execute(q):
        out[r.id] = TargetInfo(
            id=r.id,
            name=r.name,
            kind=r.kind,
            dsn=r.dsn,
            username=r.username,
            description=r.description,
            enabled=r.enabled,
            has_password=bool(r.has_pw),
            password_ref=r.password_ref,
            labels=dict(r.labels or {}),
        )
    if not out:
        return []
    mode_by_id: dict[int, ModeInfo] = {}
    mq = select(modes).where(modes.c.target_id.in_(list(out))).order_by(modes.c.id)
    for m in conn.execute(mq):
        info = ModeInfo(m.id, m.name, m.kind, m.transport, m.enabled, dict(m.params or {}))
        mode_by_id[m.id] = info
        out[m.target_id].modes.append(info)
    for t in out.values():
        styles = target_styles(t.modes)
        for info in t.modes:
            info.style = styles[info.name]
    if mode_by_id:
        sq = select(series).where(series.c.mode_id.in_(list(mode_by_id))).order_by(series.c.id)
        for s in conn.execute(sq):
            mode_by_id[s.mode_id].series.append(
                SeriesInfo(s.id, s.probe, s.site, s.interval_ms, s.timeout_ms, s.enabled)
            )
    return list(out.values())


def load_target(conn: Connection, name: str) -> TargetInfo | None:
    found = load_targets(conn, name)
    return found[0] if found else None
