"""The sweep command's progress bar and result table."""

from __future__ import annotations

import sys
from typing import Any

from app.probes.runner import run_once
from app.samples import Sample


class Progress:
    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self.done = 0
        self.label = ""
        self.tty = sys.stderr.isatty()

    def update(self, done: int) -> None:
        self.done = done
        width = 30
        fill = int(width * self.done / self.total)
        text = f"\r[{'#' * fill}{'.' * (width - fill)}] {self.done}/{self.total} {self.label}"
        if self.tty or self.done == self.total:
            sys.stderr.write(text)
            sys.stderr.flush()

    def finish(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


async def sweep_all(
    probes: list[tuple[str, Any]], bar: Progress, results: list[tuple[str, Sample]]
) -> None:
    base = 0
    for m, probe in probes:
        bar.label = m
        offset = base
        probe.progress = lambda n, o=offset: bar.update(o + n)
        s = await run_once(probe)
        results.append((m, s))
        base += sum(probe.levels) * probe.logons


def sweep_table(results: list[tuple[str, Sample]]) -> list[str]:
    """One table: a row per mode and level."""
    head = (
        f"{'mode':<22} {'level':>5} {'logons':>6} {'errors':>6} {'logon p50':>10}"
        f" {'p90':>9} {'max':>9} {'logoff p50':>10} {'logons/s':>9}"
    )
    lines = [head, "-" * len(head)]
    for m, s in results:
        for lv in s.extra.get("levels", []):
            lo = lv.get("logon_ns") or {}
            lf = lv.get("logoff_ns") or {}

            def ms(d: dict[str, int], k: str) -> str:
                return f"{d[k] / 1e6:.2f}" if k in d else "-"

            lines.append(
                f"{m:<22} {lv['level']:>5} {lv['logons']:>6} {lv['errors']:>6}"
                f" {ms(lo, 'p50'):>10} {ms(lo, 'p90'):>9} {ms(lo, 'max'):>9}"
                f" {ms(lf, 'p50'):>10} {lv['throughput_per_s']:>9.1f}"
            )
    lines.append("(times in ms; a logon is connect until a usable session, logoff is close)")
    return lines
