"""The store reads pages and the API share, reused through the web process's
:class:`~app.web.views.reuse.recent.Reuse` for identical requests (``CONNWATCH_READS_CACHE_S``).

Each function here is its view's function with a key: the kind of read, the
configuration it depends on (:func:`~app.web.views.lookups.config_key`) and every
parameter of the request, a preset range by its name. The page and the API of one read
share a key, so a dashboard and its charts' API calls within the second read once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy.engine import Connection

from app.web.schemas import TimeseriesOut
from app.web.timerange import TimeRange
from app.web.views import samples as samples_view
from app.web.views.comparing import CompareOut, compare_view
from app.web.views.lookups import TargetInfo, config_key
from app.web.views.readers import target_timeseries
from app.web.views.reuse.recent import Reuse
from app.web.views.samples import SampleFilter, SamplesOut
from app.web.views.serverside import LogonCostOut, ServerPanelOut, logon_costs, server_panel

T = TypeVar("T")


def window_key(window: TimeRange) -> tuple[tuple[str, str], ...]:
    """A preset by its name ("the last hour" asked twice is one read), else from/to."""
    return tuple(sorted(window.query().items()))


def timeseries(
    reuse: Reuse,
    conn: Connection,
    target: TargetInfo,
    modes: list[str],
    window: TimeRange,
    *,
    phase: str,
    probe: str,
    points: int | None,
) -> TimeseriesOut:
    key = ("timeseries", config_key(target), tuple(modes), window_key(window), phase, probe,
           points)  # fmt: skip
    return reuse(
        key,
        lambda: target_timeseries(
            conn, target, modes, window, phase=phase, probe=probe, points=points
        ),
    )


def comparison(
    reuse: Reuse,
    conn: Connection,
    target: TargetInfo,
    window: TimeRange,
    phase: str,
    modes: list[str],
    probe: str,
) -> CompareOut:
    key = ("compare", config_key(target), window_key(window), phase, tuple(modes), probe)
    return reuse(
        key, lambda: compare_view(conn, target, window.start, window.end, phase, modes, probe)
    )


def costs(
    reuse: Reuse, conn: Connection, target: TargetInfo, modes: list[str], window: TimeRange
) -> list[LogonCostOut]:
    key = ("costs", config_key(target), tuple(modes), window_key(window))
    return reuse(key, lambda: logon_costs(conn, target, modes, window.start, window.end))


def panel(reuse: Reuse, conn: Connection, target: TargetInfo, window: TimeRange) -> ServerPanelOut:
    key = ("panel", config_key(target), window_key(window))
    return reuse(key, lambda: server_panel(conn, target, window.start, window.end))


def samples_key(
    targets: list[TargetInfo],
    f: SampleFilter,
    window: TimeRange,
    after: str | None,
    limit: int,
    newest_first: bool,
) -> tuple[Any, ...]:
    return ("samples", tuple(config_key(t) for t in targets), f, window_key(window), after,
            limit, newest_first)  # fmt: skip


def samples(
    reuse: Reuse,
    conn: Connection,
    targets: list[TargetInfo],
    f: SampleFilter,
    window: TimeRange,
    *,
    after: str | None,
    limit: int,
    newest_first: bool,
) -> SamplesOut:
    def read() -> SamplesOut:
        return samples_view.page(conn, f, window.start, window.end, after=after, limit=limit,
                                 newest_first=newest_first, targets=targets)  # fmt: skip

    return reuse(samples_key(targets, f, window, after, limit, newest_first), read)


def samples_shown(
    reuse: Reuse,
    conn: Connection,
    targets: list[TargetInfo],
    f: SampleFilter,
    window: TimeRange,
    *,
    after: str | None,
    limit: int,
    newest_first: bool,
    render: Callable[[SamplesOut], T],
) -> tuple[SamplesOut, T]:
    """The Samples page's read and its table rows, rendered once with the read (``render``
    has nothing of the request in it): 100 rows cost the page more than its query."""

    def read() -> tuple[SamplesOut, T]:
        found = samples_view.page(conn, f, window.start, window.end, after=after, limit=limit,
                                  newest_first=newest_first, targets=targets)  # fmt: skip
        return found, render(found)

    key = ("shown", *samples_key(targets, f, window, after, limit, newest_first))
    return reuse(key, read)
