"""The mode comparison in one sentence per target, with its confidence interval.

The store's ``compare()`` over the period on the logon timing of the target's report
probe: each mode's median logon against the baseline mode's (dedicated server for
Oracle, a direct connection for PostgreSQL), with a 95 % block-bootstrap interval
(blocks of whole hours; 400 resamples, seeded). A difference whose interval includes
no difference is said to be "not a clear difference".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from app.reports.content.period import Period
from app.reports.content.scope import ModeScope
from app.store.read.compare import ModeStats, compare

MODE_WORDS = {
    "dedicated": "dedicated server",
    "shared": "shared server",
    "pooled": "DRCP",
    "direct": "direct",
    "unix": "unix-socket",
    "pgbouncer_session": "pgbouncer (session)",
    "pgbouncer_transaction": "pgbouncer (transaction)",
}
BASELINE = {"oracle": "dedicated", "postgres": "direct"}
N_BOOT = 400


@dataclass(frozen=True, slots=True)
class ModeRatio:
    mode: str
    kind: str
    change_pct: float  # positive: faster than the baseline
    ci_low_pct: float | None
    ci_high_pct: float | None
    clear: bool


@dataclass(frozen=True, slots=True)
class Comparison:
    target: str
    baseline: str
    sentence: str
    ratios: list[ModeRatio]


def _words(kind: str, name: str) -> str:
    return MODE_WORDS.get(kind, name)


def _clause(m: ModeStats, first: bool, base: str) -> tuple[str, ModeRatio] | None:
    if m.ratio is None:
        return None
    change = (1.0 - m.ratio) * 100.0
    word = "faster" if change > 0 else "slower"
    than = f" than {base}" if first else ""
    who = _words(m.kind, m.mode) + (" logons were" if first else "")
    if m.ci_low is None or m.ci_high is None:
        r = ModeRatio(m.mode, m.kind, change, None, None, False)
        return f"{who} {abs(change):.0f} % {word}{than} (too little data for an interval)", r
    lo, hi = sorted((abs((1.0 - m.ci_high) * 100.0), abs((1.0 - m.ci_low) * 100.0)))
    clear = bool(m.significant)
    r = ModeRatio(
        m.mode, m.kind, change, (1.0 - m.ci_high) * 100.0, (1.0 - m.ci_low) * 100.0, clear
    )
    if not clear:
        return (
            f"{who} {abs(change):.0f} % {word}{than}, not a clear difference",
            r,
        )
    digits = 0 if hi - lo >= 2 else 1
    return (
        f"{who} {abs(change):.{digits}f} % {word}{than}, 95 % CI {lo:.{digits}f}-{hi:.{digits}f} %",
        r,
    )


def compare_modes(conn: Connection, modes: list[ModeScope], period: Period) -> Comparison | None:
    """One target's sentence (None when it has no baseline mode or nothing to compare)."""
    if len(modes) < 2:
        return None
    target = modes[0]
    baseline = BASELINE.get(target.target_kind, "dedicated")
    probe = Counter(m.probe for m in modes).most_common(1)[0][0]
    res = compare(
        conn, target.target_id, period.start, period.end, phase="logon", baseline=baseline,
        probe=probe, n_boot=N_BOOT,
    )  # fmt: skip
    if res.baseline is None:
        return None
    mine = {m.mode_id for m in modes}
    base = next(m for m in res.modes if m.kind == baseline and m.count)
    base_words = _words(base.kind, base.mode)
    clauses: list[str] = []
    ratios: list[ModeRatio] = []
    for m in sorted(res.modes, key=lambda m: m.mode):
        if m.mode_id not in mine or m.kind == baseline:
            continue
        got = _clause(m, not clauses, base_words)
        if got:
            clauses.append(got[0])
            ratios.append(got[1])
    if not clauses:
        return None
    sentence = "; ".join(clauses).replace(" %", "\u00a0%")  # "23.4 %" never splits
    return Comparison(target.target, base.mode, sentence[0].upper() + sentence[1:] + ".", ratios)
