"""What each rule sees now: one :class:`Obs` per alert instance (unit), per rule kind.

An observation says whether the firing condition holds (``fire``), whether the clear
condition holds (``clear``: with hysteresis the two differ, and between them the
instance keeps its state), or that there is no data / the evaluation failed. Units:
``per: series`` one per series; ``mode`` one per (mode, probe kind), sites pooled;
``target`` one per (target, probe kind). A quorum rule (``sites_required``) checks each
site's series of a mode and counts the sites that see the condition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from app.alerts.engine import data
from app.alerts.rules import RuleSpec
from app.explain import explain
from app.slo.compute import BURN_WINDOWS, Counts, burn_rate, group_counts, series_counts
from app.slo.definitions import get_slo
from app.targets.durations import format_duration_ms
from app.targets.selector import SeriesRef


@dataclass(slots=True)
class Unit:
    key: str  # fingerprint: sorted label pairs
    labels: dict[str, str]
    series: list[SeriesRef]
    target_id: int | None = None


@dataclass(slots=True)
class Obs:
    unit: Unit
    value: float | None = None
    threshold: float | None = None
    fire: bool = False
    clear: bool = True
    nodata: bool = False
    error: str | None = None
    text: str = ""  # "logon p95 412 ms > 200 ms over 5m"
    detail: dict[str, Any] = field(default_factory=dict)


def fingerprint(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def units_of(spec: RuleSpec, series: Sequence[SeriesRef]) -> list[Unit]:
    """Group the rule's series into alert instances."""
    per = "mode" if spec.sites_required is not None else spec.per
    out: dict[tuple[Any, ...], Unit] = {}
    for s in series:
        labels = {"target": s.target, "probe": s.probe}
        if per in ("series", "mode"):
            labels["mode"] = s.mode
        if per == "series":
            labels["site"] = s.site
        key = tuple(sorted(labels.items()))
        unit = out.get(key)
        if unit is None:
            unit = out[key] = Unit(fingerprint(labels), labels, [], s.target_id)
        unit.series.append(s)
    return list(out.values())


def _ms(v: float | None) -> str:
    return "-" if v is None else (f"{v:.0f} ms" if v >= 10 else f"{v:.2f} ms")


class Observer:
    """Evaluates rules against one cycle's data (queries shared between rules)."""

    def __init__(self, conn: Connection, now: datetime) -> None:
        self.conn = conn
        self.now = now
        self._cache: dict[tuple[Any, ...], Any] = {}
        # fingerprints of the rule being observed that are stored (not normal): a unit
        # that is normal now and not stored needs no observation object at all
        self.stored: set[str] | frozenset[str] = frozenset()
        self.evaluated = 0  # units looked at, including the skipped normal ones

    def _per_series(
        self, key: tuple[Any, ...], ids: Sequence[int], fetch: Callable[[list[int]], dict[int, Any]]
    ) -> dict[int, Any]:
        """Per-series figures shared by every rule reading the same ``key``: only series
        not read yet this cycle are fetched."""
        have: dict[int, Any] = self._cache.setdefault(key, {})
        seen: set[int] = self._cache.setdefault(("seen", *key), set())
        todo = sorted(set(ids) - seen)
        if todo:
            have.update(fetch(todo))
            seen.update(todo)
        return have

    def observe(self, spec: RuleSpec, units: list[Unit]) -> list[Obs]:
        self.evaluated += len(units)
        kind = spec.kind
        if kind == "latency" or kind == "baseline":
            return self._latency(spec, units)
        if kind == "availability":
            return self._availability(spec, units)
        if kind == "nodata":
            return self._nodata(spec, units)
        if kind == "slo_burn":
            return self._slo(spec, units)
        if kind == "mode_compare":
            return self._compare(spec, units)
        raise ValueError(f"rule kind {kind!r} is observed elsewhere")

    # -- what a rule reads: keys shared by rules, fetched for all of them at once --------
    def _need(
        self, spec: RuleSpec, units: list[Unit]
    ) -> tuple[tuple[Any, ...], Callable[[list[int]], dict[int, Any]]] | None:
        """The per-series figure a rule reads: its cache key and how to fetch it."""
        now = self.now
        if spec.kind in ("latency", "baseline"):
            start, phase = now - timedelta(milliseconds=spec.window), spec.phase
            return ("lat", phase, spec.window), lambda ids: data.latency(
                self.conn, {i: -1 for i in ids}, start, now, phase
            )[0]
        if spec.kind == "availability" and spec.m is not None and spec.n is not None:
            longest = max((s.interval_ms for u in units for s in u.series), default=10_000)
            lookback, n = _round_up(longest * spec.n * 2 + 120_000), spec.n
            return ("runs", n, lookback), lambda ids: data.last_runs(
                self.conn, ids, n, lookback, now
            )
        if spec.kind == "availability":
            a = now - timedelta(milliseconds=spec.window)
            return ("fail", spec.window), lambda ids: data.failures(self.conn, ids, a, now)
        if spec.kind == "nodata":
            longest = max((s.interval_ms for u in units for s in u.series), default=10_000)
            lookback = _round_up(max(longest * spec.intervals * 4, 600_000))
            return ("newest", lookback), lambda ids: data.newest_sample(
                self.conn, ids, lookback, now
            )
        return None

    def prefetch(self, work: list[tuple[RuleSpec, list[Unit]]]) -> None:
        """Read every rule's per-series figures with one query per key (not per rule)."""
        wanted: dict[tuple[Any, ...], tuple[set[int], Callable[[list[int]], dict[int, Any]]]] = {}
        for spec, units in work:
            need = self._need(spec, units)
            if need is not None:
                key, fetch = need
                ids, _ = wanted.setdefault(key, (set(), fetch))
                ids.update(s.series_id for u in units for s in u.series)
        for key, (ids, fetch) in wanted.items():
            self._per_series(key, sorted(ids), fetch)

    def _figures(self, spec: RuleSpec, units: list[Unit]) -> dict[int, Any]:
        need = self._need(spec, units)
        assert need is not None
        ids = [s.series_id for u in units for s in u.series]
        return self._per_series(need[0], ids, need[1])

    # -- latency and baseline -----------------------------------------------------------
    def _latency_data(
        self, spec: RuleSpec, units: list[Unit]
    ) -> tuple[dict[int, Any], dict[int, Any]]:
        """(per series, per multi-series unit index) latency over the rule's window."""
        start = self.now - timedelta(milliseconds=spec.window)
        per_s = self._figures(spec, units)
        pooled: dict[int, Any] = {}
        multi = [i for i, u in enumerate(units) if len(u.series) > 1]
        if multi and spec.sites_required is None:
            groups = {s.series_id: i for i in multi for s in units[i].series}
            _, pooled = data.latency(self.conn, groups, start, self.now, spec.phase)
        return per_s, pooled

    def _latency(self, spec: RuleSpec, units: list[Unit]) -> list[Obs]:
        per_s, pooled = self._latency_data(spec, units)
        base_s: dict[int, float] = {}
        base_g: dict[int, float] = {}
        if spec.kind == "baseline":
            groups = {s.series_id: i for i, u in enumerate(units) for s in u.series}
            base_s, base_g = data.baseline(
                self.conn,
                groups,
                self.now,
                phase=spec.phase,
                percentile=spec.percentile,
                weeks=spec.weeks if spec.baseline == "weeks" else None,
                trailing=timedelta(milliseconds=spec.trailing)
                if spec.baseline == "trailing"
                else None,
            )
        window = format_duration_ms(spec.window)
        out = []
        stored, fast = self.stored, spec.kind == "latency" and spec.sites_required is None
        thr, pct, least = spec.threshold_ms or 0.0, spec.percentile, spec.min_samples
        for i, u in enumerate(units):
            if spec.sites_required is not None:
                out.append(
                    self._quorum(spec, u, {s.site: per_s.get(s.series_id) for s in u.series})
                )
                continue
            lat = per_s.get(u.series[0].series_id) if len(u.series) == 1 else pooled.get(i)
            if (
                fast
                and lat is not None
                and lat.count >= least
                and lat.get(pct) <= thr
                and u.key not in stored
            ):
                continue  # normal and not stored: nothing to record (the common case)
            obs = Obs(u)
            if lat is None or lat.count < spec.min_samples:
                obs.nodata = True
                obs.text = f"fewer than {spec.min_samples} successful samples over {window}"
                out.append(obs)
                continue
            value = lat.get(spec.percentile)
            obs.detail = {"samples": lat.count}
            if spec.kind == "latency":
                assert spec.threshold_ms is not None and spec.clear_threshold_ms is not None
                obs.value, obs.threshold = value, spec.threshold_ms
                obs.fire = value > spec.threshold_ms
                obs.clear = value < spec.clear_threshold_ms
                op = ">" if obs.fire else "<="
                obs.text = (
                    f"{spec.phase} {spec.percentile} {_ms(value)} {op} "
                    f"{_ms(spec.threshold_ms)} over {window}"
                )
            else:
                base = base_s.get(u.series[0].series_id) if len(u.series) == 1 else base_g.get(i)
                assert spec.ratio is not None
                if not base:
                    obs.nodata = True
                    obs.text = "no baseline yet (needs earlier weeks or hours of rollups)"
                    out.append(obs)
                    continue
                ratio = value / base
                clear_ratio = spec.clear_ratio or spec.ratio
                obs.value, obs.threshold = round(ratio, 3), spec.ratio
                obs.fire, obs.clear = ratio >= spec.ratio, ratio < clear_ratio
                obs.detail.update(baseline_ms=base, current_ms=value)
                obs.text = (
                    f"{spec.phase} {spec.percentile} {_ms(value)} is {ratio:.1f}x its baseline "
                    f"{_ms(base)} (threshold {spec.ratio:g}x) over {window}"
                )
            out.append(obs)
        return out

    def _quorum(self, spec: RuleSpec, u: Unit, per_site: dict[str, Any]) -> Obs:
        """Per site: does it see the condition? Fire when enough sites do."""
        assert spec.threshold_ms is not None and spec.clear_threshold_ms is not None
        sites = sorted(per_site)
        need = len(sites) if spec.sites_required == "all" else int(spec.sites_required or 1)
        values = {
            s: lat.get(spec.percentile)
            for s, lat in per_site.items()
            if lat is not None and lat.count >= spec.min_samples
        }
        firing = sorted(s for s, v in values.items() if v > spec.threshold_ms)
        not_clear = [s for s, v in values.items() if v >= spec.clear_threshold_ms]
        obs = Obs(u, threshold=spec.threshold_ms)
        if not values:
            obs.nodata, obs.text = True, "no site has enough samples"
            return obs
        obs.value = max(values.values())
        obs.fire = len(firing) >= need
        obs.clear = len(not_clear) < need
        obs.detail = {"sites": {s: round(v, 3) for s, v in values.items()}, "firing_sites": firing}
        obs.text = (
            f"{len(firing)} of {len(sites)} sites see {spec.phase} {spec.percentile} > "
            f"{_ms(spec.threshold_ms)} (needs {need}): "
            + ", ".join(f"{s} {_ms(values.get(s))}" for s in sites)
        )
        return obs

    # -- availability --------------------------------------------------------------------
    def _availability(self, spec: RuleSpec, units: list[Unit]) -> list[Obs]:
        out = []
        if spec.m is not None and spec.n is not None:
            runs = self._figures(spec, units)
            for u in units:
                out.append(self._m_of_n(spec, u, runs))
            return out
        per = self._figures(spec, units)
        assert spec.error_rate_pct is not None
        clear_pct = spec.clear_rate_pct if spec.clear_rate_pct is not None else spec.error_rate_pct
        for u in units:
            if spec.sites_required is not None:
                out.append(self._rate_quorum(spec, u, per, clear_pct))
                continue
            f = data.summarise_failures(
                per, [s.series_id for s in u.series], spec.codes, spec.classes
            )
            obs = Obs(u, threshold=spec.error_rate_pct)
            if f.ran < spec.min_samples:
                obs.nodata, obs.text = (
                    True,
                    f"fewer than {spec.min_samples} runs over {format_duration_ms(spec.window)}",
                )
            else:
                rate = 100.0 * f.failed / f.ran
                obs.value, obs.fire, obs.clear = (
                    round(rate, 3),
                    rate >= spec.error_rate_pct,
                    rate < clear_pct,
                )
                obs.detail = {"ran": f.ran, "failed": f.failed, "codes": f.codes}
                obs.text = (
                    f"{f.failed} of {f.ran} runs failed ({rate:.1f} %, threshold "
                    f"{spec.error_rate_pct:g} %) over {format_duration_ms(spec.window)}"
                    f"{_codes(f.codes)}"
                )
            out.append(obs)
        return out

    def _rate_quorum(self, spec: RuleSpec, u: Unit, per: Any, clear_pct: float) -> Obs:
        assert spec.error_rate_pct is not None
        rates: dict[str, float] = {}
        for s in u.series:
            f = data.summarise_failures(per, [s.series_id], spec.codes, spec.classes)
            if f.ran >= spec.min_samples:
                rates[s.site] = 100.0 * f.failed / f.ran
        need = len(u.series) if spec.sites_required == "all" else int(spec.sites_required or 1)
        obs = Obs(u, threshold=spec.error_rate_pct)
        if not rates:
            obs.nodata, obs.text = True, "no site has enough runs"
            return obs
        firing = sorted(s for s, r in rates.items() if r >= spec.error_rate_pct)
        obs.value = max(rates.values())
        obs.fire = len(firing) >= need
        obs.clear = sum(1 for r in rates.values() if r >= clear_pct) < need
        obs.detail = {"sites": rates, "firing_sites": firing}
        obs.text = (
            f"{len(firing)} of {len(u.series)} sites see error rate >= "
            f"{spec.error_rate_pct:g} % (needs {need})"
        )
        return obs

    def _m_of_n(
        self, spec: RuleSpec, u: Unit, runs: dict[int, list[tuple[datetime, bool, str, str]]]
    ) -> Obs:
        assert spec.m is not None and spec.n is not None
        obs = Obs(u, threshold=float(spec.m))

        def failed_of(series: list[SeriesRef]) -> tuple[int, int, dict[str, int]]:
            merged = sorted((r for s in series for r in runs.get(s.series_id, [])), reverse=True)[
                : spec.n
            ]
            codes: dict[str, int] = {}
            bad = 0
            for _, is_bad, cls, code in merged:
                if is_bad and data._code_matches(code, cls, spec.codes, spec.classes):
                    bad += 1
                    codes[code or cls] = codes.get(code or cls, 0) + 1
            return bad, len(merged), codes

        if spec.sites_required is not None:
            need = len(u.series) if spec.sites_required == "all" else int(spec.sites_required)
            per_site = {s.site: failed_of([s]) for s in u.series}
            seen = {k: v for k, v in per_site.items() if v[1] > 0}
            if not seen:
                obs.nodata, obs.text = True, "no runs at any site"
                return obs
            firing = sorted(k for k, v in seen.items() if v[0] >= spec.m)
            obs.value = float(max(v[0] for v in seen.values()))
            obs.fire, obs.clear = len(firing) >= need, len(firing) < need
            obs.detail = {"firing_sites": firing}
            obs.text = (
                f"{len(firing)} of {len(u.series)} sites had {spec.m} of their last {spec.n} "
                f"runs fail (needs {need})"
            )
            return obs
        bad, total, codes = failed_of(u.series)
        if total == 0:
            obs.nodata, obs.text = True, "no runs recently"
            return obs
        obs.value, obs.fire, obs.clear = float(bad), bad >= spec.m, bad < spec.m
        obs.detail = {"failed": bad, "runs": total, "codes": codes}
        obs.text = (
            f"{bad} of the last {total} runs failed (threshold {spec.m} of {spec.n}){_codes(codes)}"
        )
        return obs

    # -- no data --------------------------------------------------------------------------
    def _nodata(self, spec: RuleSpec, units: list[Unit]) -> list[Obs]:
        newest = self._figures(spec, units)
        longest = max((s.interval_ms for u in units for s in u.series), default=10_000)
        lookback = _round_up(max(longest * spec.intervals * 4, 600_000))
        out = []
        for u in units:
            stale: list[str] = []
            ages: dict[str, float | None] = {}
            for s in u.series:
                limit = max(s.interval_ms * spec.intervals, 60_000) / 1000
                at = newest.get(s.series_id)
                age = None if at is None else (self.now - at).total_seconds()
                ages[s.site] = age
                if age is None or age > limit:
                    stale.append(s.site)
            need = (
                1
                if spec.sites_required is None
                else (len(u.series) if spec.sites_required == "all" else int(spec.sites_required))
            )
            if spec.sites_required is None:
                need = len(u.series)  # a mode has no data when none of its sites sends any
            known = [a for a in ages.values() if a is not None]
            limit_s = max(s.interval_ms for s in u.series) * spec.intervals / 1000
            obs = Obs(
                u, value=round(min(known), 1) if known else None, threshold=max(limit_s, 60.0)
            )
            obs.fire = len(stale) >= need
            obs.clear = not obs.fire
            obs.detail = {"stale_sites": stale}
            newest_txt = (
                "none in the last " + format_duration_ms(int(lookback.total_seconds() * 1000))
                if not known
                else f"newest {min(known):.0f} s ago"
            )
            obs.text = f"no sample for {spec.intervals} intervals ({newest_txt})"
            out.append(obs)
        return out

    # -- SLO burn ------------------------------------------------------------------------
    def _slo(self, spec: RuleSpec, units: list[Unit]) -> list[Obs]:
        slo = get_slo(self.conn, spec.slo or "")
        if slo is None:
            return [Obs(u, error=f"SLO {spec.slo!r} does not exist") for u in units]
        s = slo.spec
        groups: dict[Any, list[int]] = {u.key: [x.series_id for x in u.series] for u in units}
        ids = sorted({i for g in groups.values() for i in g})
        windows = sorted({w for _, long, short, _ in BURN_WINDOWS for w in (long, short)})
        burns: dict[timedelta, dict[Any, float | None]] = {}
        counts: dict[timedelta, dict[Any, Counts]] = {}
        for w in windows:
            per = series_counts(
                self.conn, ids, self.now - w, self.now, phase=s.phase, threshold_ms=s.threshold_ms
            )
            counts[w] = group_counts(per, groups)
            burns[w] = {k: burn_rate(c, s.objective) for k, c in counts[w].items()}
        out = []
        for u in units:
            obs = Obs(u)
            triggered = []
            for tier, long, short, factor in BURN_WINDOWS:
                bl, bs = burns[long].get(u.key), burns[short].get(u.key)
                if bl is not None and bs is not None and bl > factor and bs > factor:
                    triggered.append((tier, long, short, factor, bl))
            hour = burns[timedelta(hours=1)].get(u.key)
            if all(burns[w].get(u.key) is None for w in windows):
                obs.nodata, obs.text = True, "no runs counted"
                out.append(obs)
                continue
            obs.fire = bool(triggered)
            obs.clear = not triggered
            obs.value = round(triggered[0][4] if triggered else (hour or 0.0), 3)
            obs.threshold = triggered[0][3] if triggered else BURN_WINDOWS[0][3]
            obs.detail = {
                "burn": {
                    format_duration_ms(int(w.total_seconds() * 1000)): (
                        None if b is None else round(b, 2)
                    )
                    for w, d in burns.items()
                    for k, b in d.items()
                    if k == u.key
                },
                "slo": s.name,
            }
            if triggered:
                tier, long, short, factor, bl = triggered[0]
                obs.text = (
                    f"SLO {s.name} ({s.objective:g} %: {s.good_means()}) burning {bl:.1f}x over "
                    f"{format_duration_ms(int(long.total_seconds() * 1000))} and "
                    f"{format_duration_ms(int(short.total_seconds() * 1000))} "
                    f"(> {factor:g}x: {tier})"
                )
            else:
                obs.text = f"SLO {s.name} burn rate {hour or 0:.2f}x over 1h"
            out.append(obs)
        return out

    # -- mode comparison -------------------------------------------------------------------
    def _compare(self, spec: RuleSpec, units: list[Unit]) -> list[Obs]:
        from app.store.read.compare import compare

        window = timedelta(milliseconds=spec.window)
        assert spec.slower_pct is not None
        clear_pct = spec.clear_pct if spec.clear_pct is not None else spec.slower_pct / 2
        out = []
        seen: set[tuple[int | None, str]] = set()
        for u in units:
            key = (u.target_id, u.labels.get("probe", ""))
            if key in seen or u.target_id is None:
                continue
            seen.add(key)
            res = compare(
                self.conn,
                u.target_id,
                self.now - window,
                self.now,
                phase=spec.phase,
                baseline=spec.against,
                probe=u.labels.get("probe"),
                n_boot=200,
            )
            ms = next((m for m in res.modes if spec.mode in (m.mode, m.kind)), None)
            labels = {
                "target": u.labels["target"],
                "probe": u.labels["probe"],
                "mode": spec.mode or "",
            }
            unit = Unit(fingerprint(labels), labels, [s for s in u.series], u.target_id)
            obs = Obs(unit, threshold=spec.slower_pct)
            if ms is None or ms.ratio is None or res.baseline is None:
                obs.nodata, obs.text = True, f"no {spec.mode} or {spec.against} data to compare"
                out.append(obs)
                continue
            pct = (ms.ratio - 1.0) * 100.0
            obs.value = round(pct, 2)
            obs.fire = bool(ms.significant) and pct > spec.slower_pct
            obs.clear = pct < clear_pct or not ms.significant
            lo = (ms.ci_low or 0) * 100 - 100
            hi = (ms.ci_high or 0) * 100 - 100
            obs.detail = {"ratio": ms.ratio, "ci_low": ms.ci_low, "ci_high": ms.ci_high}
            obs.text = (
                f"{spec.mode} {spec.phase} {pct:+.0f} % vs {spec.against} (95 % CI {lo:+.0f} to "
                f"{hi:+.0f} %, threshold +{spec.slower_pct:g} %) over "
                f"{format_duration_ms(spec.window)}"
            )
            out.append(obs)
        return out


def _round_up(ms: int) -> timedelta:
    """A look-back rounded up to 5 min x a power of two, so rules share their queries."""
    step = 300_000
    while step < ms:
        step *= 2
    return timedelta(milliseconds=step)


def _codes(codes: dict[str, int]) -> str:
    if not codes:
        return ""
    top = sorted(codes.items(), key=lambda kv: -kv[1])[:3]
    parts = []
    for code, n in top:
        ex = explain(code)
        parts.append(f"{ex.line() if ex else code} x{n}")
    return "; " + "; ".join(parts)


def agent_observations(
    now: datetime, after_ms: int, beats: list[tuple[str, str, datetime]]
) -> list[Obs]:
    """One observation per agent seen in the last 7 days (older rows are retired agents)."""
    out = []
    for name, site, at in beats:
        age = (now - at).total_seconds()
        if age > 7 * 86400:
            continue
        labels = {"agent": name, "site": site}
        obs = Obs(
            Unit(fingerprint(labels), labels, []), value=round(age, 1), threshold=after_ms / 1000
        )
        obs.fire = age > after_ms / 1000
        obs.clear = not obs.fire
        obs.text = (
            f"agent {name} at site {site}: last heartbeat {age:.0f} s ago "
            f"(threshold {after_ms / 1000:g} s)"
        )
        out.append(obs)
    return out
