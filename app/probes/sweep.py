"""sweep: seed 000's experiment, 1..N parallel logon loops, bounded.

One run walks the ``levels`` (e.g. 1, 2, 4). At level *k*, *k* loops run at once;
each loop does ``logons`` times, one after the other: log on, log off (the seed
measures connect plus disconnect; connwatch times each). Per level the sample's
``extra["levels"]`` holds: ``level``, ``logons`` (succeeded), ``errors``,
``wall_ns`` (first start to last end), ``throughput_per_s`` (successful
logon+logoff cycles per second of wall time), and for ``logon_ns`` and
``logoff_ns`` the ``p50``, ``p90``, ``max`` and ``mean`` in nanoseconds.

One run gives ONE sample (the runner's contract): ``logon_ns``/``logoff_ns`` are
the medians of level 1 (the uncontended cost), ``round_trips`` and
``logon_phases`` those of the first logon. If any logon failed, the sample is an
error carrying the most frequent error code (all counted per level in
``extra``) and, as its phase, the level where that code first failed (``level 1``);
completed levels stay in ``extra`` when the deadline cuts the sweep.

Guards (a sweep must never become a logon storm): at most ``MAX_LEVEL``
parallel loops, at most ``MAX_TOTAL_LOGONS`` logons per run, ``pause_s``
between one loop's logons, and at most one sweep at a time per endpoint in a
process. Parameters: ``levels`` (list of ints, default [1, 2, 4]), ``logons``
(per loop, default 20), ``pause_s`` (default 0.0).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from typing import Any

from app.drivers.base import RoundTripLog, logon_phases
from app.probes.base import Probe, ProbeConfigError, ProbeContext, checked_params
from app.probes.errors import ClassifiedError, ClassifiedException, classify
from app.probes.logon import open_measured
from app.probes.spec import OracleEndpoint, ProbeSpec
from app.targets.params import SWEEP_MAX_LEVEL, SWEEP_MAX_TOTAL_LOGONS

MAX_LEVEL = SWEEP_MAX_LEVEL
MAX_TOTAL_LOGONS = SWEEP_MAX_TOTAL_LOGONS
_ACTIVE: set[str] = set()


class SweepError(ClassifiedException):
    """Some logons of the sweep failed; carries the most frequent classified error."""

    def __init__(self, first: ClassifiedError, failures: int) -> None:
        msg = f"{failures} logon(s) failed; most often {first.code}: {first.message}"
        super().__init__(ClassifiedError(first.error_class, first.code, msg))


def _stats(values: list[int]) -> dict[str, int] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {
        "p50": int(statistics.median(ordered)),
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "max": ordered[-1],
        "mean": int(statistics.fmean(ordered)),
    }


class Sweep(Probe):
    name = "sweep"

    def __init__(self, spec: ProbeSpec) -> None:
        super().__init__(spec)
        p = checked_params(self.name, spec.params)
        self.levels: list[int] = p["levels"]
        self.logons: int = p["logons"]
        self.pause_s: float = p["pause_s"]
        self.progress: Any = None  # optional callable(done, total) for the command's bar

    async def _loop(self, ctx: ProbeContext, out: dict[str, Any], first: bool) -> None:
        ep = self.spec.endpoint
        for i in range(self.logons):
            trips = (
                RoundTripLog() if isinstance(ep, OracleEndpoint) and not ep.thick_lib_dir else None
            )
            try:
                t0 = time.perf_counter_ns()
                session = await open_measured(ep, trips)
                t1 = time.perf_counter_ns()
                logon_trips = trips.count if trips is not None else 0
                token = ctx.defer(session.close)
                await session.close()
                t2 = time.perf_counter_ns()
                ctx.release(token)
            except Exception as exc:
                out["errors"].append(classify(exc, self.secrets()))
            else:
                out["logon"].append(t1 - t0)
                out["logoff"].append(t2 - t1)
                if first and i == 0 and trips is not None:
                    ctx.result.round_trips = logon_trips
                    ctx.result.logon_phases = logon_phases(
                        t0, t1, trips.events[:logon_trips], trips.tls
                    )
            out["done"][0] += 1
            if self.progress is not None:
                self.progress(out["done"][0])
            if self.pause_s:
                await asyncio.sleep(self.pause_s)

    async def run(self, ctx: ProbeContext) -> None:
        key = self.spec.endpoint.describe()
        if key in _ACTIVE:
            raise ProbeConfigError(f"a sweep of {key} is already running")
        _ACTIVE.add(key)
        try:
            await self._run(ctx)
        finally:
            _ACTIVE.discard(key)

    async def _run(self, ctx: ProbeContext) -> None:
        r = ctx.result
        results: list[dict[str, Any]] = []
        r.extra["levels"] = results
        r.extra["logons_per_loop"] = self.logons
        all_errors: Counter[str] = Counter()
        firsts: dict[str, ClassifiedError] = {}
        first_level: dict[str, int] = {}  # code -> the level where it first failed
        done = [0]
        for n, level in enumerate(self.levels):
            ctx.phase = f"level {level}"
            out: dict[str, Any] = {"logon": [], "logoff": [], "errors": [], "done": done}
            start = time.perf_counter_ns()
            await asyncio.gather(*(self._loop(ctx, out, n == 0 and k == 0) for k in range(level)))
            wall = time.perf_counter_ns() - start
            ok = len(out["logon"])
            errs = Counter(e.code for e in out["errors"])
            for e in out["errors"]:
                firsts.setdefault(e.code, e)
                first_level.setdefault(e.code, level)
            all_errors.update(errs)
            results.append(
                {
                    "level": level,
                    "logons": ok,
                    "errors": len(out["errors"]),
                    "error_codes": dict(errs),
                    "wall_ns": wall,
                    "throughput_per_s": ok / (wall / 1e9) if wall else 0.0,
                    "logon_ns": _stats(out["logon"]),
                    "logoff_ns": _stats(out["logoff"]),
                }
            )
            if n == 0 and out["logon"]:
                r.logon_ns = int(statistics.median(out["logon"]))
                r.logoff_ns = int(statistics.median(out["logoff"]))
        if all_errors:
            code, _ = all_errors.most_common(1)[0]
            # the error phase is where that code first failed, not the last level walked
            ctx.phase = f"level {first_level[code]}"
            raise SweepError(firsts[code], sum(all_errors.values()))
