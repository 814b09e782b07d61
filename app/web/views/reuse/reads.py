"""The store reads pages and the API share, reused through the web process's
:class:`~app.web.views.reuse.recent.Reuse` for identical requests (``CONNWATCH_READS_CACHE_S``).

Each function here is its view's function with a key: the kind of read, the
configuration it depends on (:func:`~app.web.views.lookups.config_key`) and every
parameter of the request, a preset range by its name. The page and the API of one read
share a key, so a dashboard and its charts' API calls within the second read once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class SamplesAsk:
    """Which samples a page or an API call asks for: all of it goes into the key."""

    targets: tuple[TargetInfo, ...]
    f: SampleFilter
    window: TimeRange
    after: str | None
    limit: int
    newest_first: bool

    def key(self, kind: str) -> tuple[Any, ...]:
        return (kind, tuple(config_key(t) for t in self.targets), self.f,
                window_key(self.window), self.after, self.limit, self.newest_first)  # fmt: skip

    def read(self, conn: Connection) -> SamplesOut:
        w = self.window
        return samples_view.page(conn, self.f, w.start, w.end, after=self.after,
                                 limit=self.limit, newest_first=self.newest_first,
                                 targets=list(self.targets))  # fmt: skip


def samples(reuse: Reuse, conn: Connection, ask: SamplesAsk) -> SamplesOut:
    return reuse(ask.key("samples"), lambda: ask.read(conn))


def samples_shown(
    reuse: Reuse, conn: Connection, ask: SamplesAsk, render: Callable[[SamplesOut], T]
) -> tuple[SamplesOut, T]:
    """The Samples page's read and its table rows, rendered once with the read (``render``
    has nothing of the request in it): 100 rows cost the page more than its query."""

    def read() -> tuple[SamplesOut, T]:
        found = ask.read(conn)
        return found, render(found)

    return reuse(ask.key("shown"), read)
