"""Small page-specific lookups: which targets, modes and series exist.

Everything about samples (latencies, percentiles, errors) comes from the store's
query functions; this module only reads the configuration tables (agents:
:mod:`app.store.read.agents`).
Passwords are never selected here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

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


# One round trip for a page's whole configuration: each target row carries its modes,
# each mode its series, as JSON arrays (ordered by id). Three queries used to cost a
# dashboard request more than its own figures (issue 16: profiles of the compare API).
_LOAD_SQL = """
select t.id, t.name, t.kind, t.dsn, t.username, t.description, t.enabled, t.labels,
       t.password_ref, (t.password_enc is not null or t.password_ref is not null) as has_pw,
       coalesce((
         select json_agg(json_build_array(
                  m.id, m.name, m.kind, m.transport, m.enabled, m.params,
                  coalesce((
                    select json_agg(json_build_array(s.id, s.probe, s.site, s.interval_ms,
                                                     s.timeout_ms, s.enabled) order by s.id)
                    from series s where s.mode_id = m.id), '[]'::json))
                order by m.id)
         from modes m where m.target_id = t.id), '[]'::json) as modes
from targets t
"""
_ALL = text(_LOAD_SQL + "order by t.name")
_ONE = text(_LOAD_SQL + "where t.name = :name")


def load_targets(conn: Connection, name: str | None = None) -> list[TargetInfo]:
    """Targets (all, or the one named) with their modes and series, ordered by name."""
    rows = conn.execute(_ALL) if name is None else conn.execute(_ONE, {"name": name})
    out: list[TargetInfo] = []
    for r in rows:
        target = TargetInfo(
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
        for mid, mname, kind, transport, enabled, params, rows_s in r.modes:
            info = ModeInfo(mid, mname, kind, transport, enabled, dict(params or {}))
            info.series = [SeriesInfo(*row) for row in rows_s]
            target.modes.append(info)
        styles = target_styles(target.modes)
        for info in target.modes:
            info.style = styles[info.name]
        out.append(target)
    return out


def config_key(target: TargetInfo) -> tuple[Any, ...]:
    """What a read of ``target``'s samples, and its presentation, depend on in the
    configuration: reuse keys carry it (app.web.views.reuse.recent), so a change is seen at once."""
    return (
        target.id,
        target.name,
        target.kind,
        tuple(
            (m.id, m.name, m.kind, m.enabled, tuple(m.style.values()),
             tuple((s.id, s.probe, s.site, s.enabled) for s in m.series))
            for m in target.modes
        ),
    )  # fmt: skip


def load_target(conn: Connection, name: str) -> TargetInfo | None:
    found = load_targets(conn, name)
    return found[0] if found else None
