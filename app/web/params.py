"""The URL parameters shared by the API and the pages, each validated in one place.

A window is ``range`` (a preset ending now) or ``from``/``to``; a scope is a target
(by name: 404 when unknown) with some of its modes (422 naming the unknown ones); a
probe kind picks which series of each mode are read (default ``connping``: every
comparison and chart uses one probe kind, never a mix).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Path, Query

from app.web.deps import ConnDep
from app.web.timerange import TimeRange, parse_range
from app.web.views.lookups import TargetInfo, load_target

Phase = Literal["total", "logon", "ping", "query", "logoff", "commit", "acquire"]
Probe = Literal["connping", "sessionping", "poolacquire", "commit", "sweep"]
PROBES: tuple[str, ...] = ("connping", "sessionping", "commit", "poolacquire", "sweep")
ProbeQ = Annotated[
    Probe, Query(description="which probe's series of each mode (one kind, never mixed)")
]
TargetName = Annotated[str, Path(min_length=1, max_length=63, description="target name")]
TargetQ = Annotated[str, Query(min_length=1, max_length=63, description="target name")]
RangeQ = Annotated[
    str | None,
    Query(alias="range", description="1h, 6h, 24h, 7d, 30d, 90d or 1y (default 24h)"),
]
FromQ = Annotated[str | None, Query(alias="from", description="custom window start, ISO 8601")]
ToQ = Annotated[str | None, Query(alias="to", description="custom window end, ISO 8601")]
ModesQ = Annotated[
    str | None, Query(max_length=500, description="comma-separated mode names (default: all)")
]


# Cheap dependencies are coroutines: FastAPI runs a plain function dependency in the
# thread pool, a hop (two thread switches under the GIL) per dependency per request.
async def window_24h(range_: RangeQ = None, from_: FromQ = None, to: ToQ = None) -> TimeRange:
    return parse_range(range_, from_, to)


async def window_7d(range_: RangeQ = None, from_: FromQ = None, to: ToQ = None) -> TimeRange:
    return parse_range(range_, from_, to, default="7d")


async def window_1h(range_: RangeQ = None, from_: FromQ = None, to: ToQ = None) -> TimeRange:
    return parse_range(range_, from_, to, default="1h")


async def window_30d(range_: RangeQ = None, from_: FromQ = None, to: ToQ = None) -> TimeRange:
    return parse_range(range_, from_, to, default="30d")


Window = Annotated[TimeRange, Depends(window_24h)]
Window7d = Annotated[TimeRange, Depends(window_7d)]
Window1h = Annotated[TimeRange, Depends(window_1h)]
Window30d = Annotated[TimeRange, Depends(window_30d)]


def target_or_404(conn: ConnDep, name: str) -> TargetInfo:
    target = load_target(conn, name)
    if target is None:
        raise HTTPException(404, f"no target named {name!r}")
    return target


def named(targets: list[TargetInfo], name: str) -> TargetInfo:
    """The target called ``name`` among those a page has loaded, or 404."""
    found = next((t for t in targets if t.name == name), None)
    if found is None:
        raise HTTPException(404, f"no target named {name!r}")
    return found


def pick_modes(target: TargetInfo, modes: str | None) -> list[str]:
    if not modes:
        return [m.name for m in target.modes]
    names = [m.strip() for m in modes.split(",") if m.strip()]
    unknown = [n for n in names if target.mode(n) is None]
    if unknown:
        raise HTTPException(
            422,
            f"modes: target {target.name!r} has no mode {', '.join(map(repr, unknown))} "
            f"(it has {', '.join(m.name for m in target.modes) or 'none'})",
        )
    return names


@dataclass(frozen=True, slots=True)
class Scope:
    """A target and the modes asked for (all of them when none were named)."""

    target: TargetInfo
    modes: list[str]


def scope_by_path(conn: ConnDep, name: TargetName, modes: ModesQ = None) -> Scope:
    target = target_or_404(conn, name)
    return Scope(target, pick_modes(target, modes))


def scope_by_query(conn: ConnDep, target: TargetQ, modes: ModesQ = None) -> Scope:
    return scope_by_path(conn, target, modes)


PathScope = Annotated[Scope, Depends(scope_by_path)]
QueryScope = Annotated[Scope, Depends(scope_by_query)]


@dataclass(frozen=True, slots=True)
class Measure:
    """Which timing, read from which probe kind's series."""

    phase: str
    probe: str


async def measure(phase: Phase = "logon", probe: ProbeQ = "connping") -> Measure:
    return Measure(phase, probe)


MeasureDep = Annotated[Measure, Depends(measure)]
