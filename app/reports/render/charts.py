"""Server-side SVG charts: the 12-week trend of one target (availability and logon p95 per mode).

Plain SVG text, no JavaScript and nothing fetched, so the same chart is in the page,
the PDF and (as an attachment only) the mail. Modes have the dashboard's colour-blind
safe colours (Okabe-Ito) plus their own dash pattern and marker, and a legend names
them, so colour is never the only cue. A week without samples is a gap in the line.
The week still running is drawn with a hollow marker.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

# the dashboard's mode styles (app/web/palette.py; a test keeps them equal)
MODE_SVG: dict[str, tuple[str, str, str]] = {  # kind -> colour, dash array, marker
    "dedicated": ("#0072B2", "", "circle"),
    "shared": ("#E69F00", "6 3", "square"),
    "pooled": ("#009E73", "2 2", "diamond"),
    "direct": ("#0072B2", "", "circle"),
    "unix": ("#CC79A7", "6 2 2 2", "triangle-up"),
    "pgbouncer_session": ("#D55E00", "6 3", "square"),
    "pgbouncer_transaction": ("#56B4E9", "2 2", "diamond"),
}
FALLBACK = ("#000000", "9 3", "x")

W, H = 330, 150
LEFT, RIGHT, TOP, BOTTOM = 44, 14, 18, 24


@dataclass(frozen=True, slots=True)
class Line:
    name: str
    kind: str
    values: Sequence[float | None]  # one per week (None: no samples)


def nice_step(span: float, ticks: int = 4) -> float:
    raw = span / max(ticks, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _fmt(v: float, step: float) -> str:
    digits = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{v:.{digits}f}"


def _marker(shape: str, x: float, y: float, colour: str, hollow: bool) -> str:
    fill = "#fff" if hollow else colour
    style = f'fill="{fill}" stroke="{colour}" stroke-width="1.2"'
    if shape == "square":
        return f'<rect x="{x - 2.6:.1f}" y="{y - 2.6:.1f}" width="5.2" height="5.2" {style}/>'
    if shape == "diamond":
        r = 3.4
        pts = f"{x:.1f},{y - r:.1f} {x + r:.1f},{y:.1f} {x:.1f},{y + r:.1f} {x - r:.1f},{y:.1f}"
        return f'<polygon points="{pts}" {style}/>'
    if shape == "triangle-up":
        pts = f"{x:.1f},{y - 3.4:.1f} {x + 3.2:.1f},{y + 2.6:.1f} {x - 3.2:.1f},{y + 2.6:.1f}"
        return f'<polygon points="{pts}" {style}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.7" {style}/>'


def _axis(lo: float, hi: float, floor_at: float | None) -> tuple[float, float, float]:
    if hi <= lo:
        pad = abs(hi) * 0.05 or 1.0
        lo, hi = lo - pad, hi + pad
    step = nice_step(hi - lo)
    a = math.floor(lo / step) * step
    b = math.ceil(hi / step) * step
    if floor_at is not None:
        a = max(a, floor_at)
    return a, b, step


def line_chart(
    title: str,
    weeks: Sequence[datetime],
    lines: Sequence[Line],
    *,
    unit: str,
    partial_last: bool = False,
    ceiling: float | None = None,
    floor_at: float | None = None,
) -> str:
    """One small multi-line chart as an ``<svg>`` element (``role="img"`` with a title)."""
    got = [v for ln in lines for v in ln.values if v is not None]
    n = len(weeks)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" '
        f'height="{H}" role="img" aria-label="{escape(title)}" class="trend-chart" '
        'font-family="DejaVu Sans, Arial, sans-serif" font-size="9">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="11" font-size="10" font-weight="bold">{escape(title)}</text>',
    ]
    if not got or n == 0:
        out.append(f'<text x="{W / 2}" y="{H / 2}" text-anchor="middle" fill="#555">'
                   "no samples in these weeks</text></svg>")  # fmt: skip
        return "".join(out)
    lo, hi = min(got), max(got)
    if ceiling is not None:
        hi = max(hi, min(ceiling, hi))
    a, b, step = _axis(lo, hi, floor_at)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (pw * i / (n - 1) if n > 1 else pw / 2)

    def y(v: float) -> float:
        return TOP + ph * (1.0 - (v - a) / (b - a))

    t = a
    while t <= b + step / 1000:
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y(t):.1f}" y2="{y(t):.1f}" '
                   'stroke="#ddd" stroke-width="0.6"/>')  # fmt: skip
        out.append(f'<text x="{LEFT - 4}" y="{y(t) + 3:.1f}" text-anchor="end" fill="#333">'
                   f"{_fmt(t, step)}</text>")  # fmt: skip
        t += step
    out.append(f'<text x="4" y="{TOP + ph / 2:.1f}" fill="#333" transform="rotate(-90 8 '
               f'{TOP + ph / 2:.1f})" text-anchor="middle">{escape(unit)}</text>')  # fmt: skip
    every = 1 if n <= 6 else 2 if n <= 12 else 3
    for i, wk in enumerate(weeks):
        if (n - 1 - i) % every == 0:
            label = f"W{wk.isocalendar()[1]:02d}"
            out.append(f'<text x="{x(i):.1f}" y="{H - 8}" text-anchor="middle" fill="#333">'
                       f"{label}</text>")  # fmt: skip
    for ln in lines:
        colour, dash, shape = MODE_SVG.get(ln.kind, FALLBACK)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        run: list[str] = []
        segs: list[list[str]] = []
        for i, v in enumerate(ln.values):
            if v is None:
                if run:
                    segs.append(run)
                run = []
                continue
            run.append(f"{x(i):.1f},{y(v):.1f}")
        if run:
            segs.append(run)
        for seg in segs:
            if len(seg) > 1:
                out.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{colour}" '
                           f'stroke-width="1.6"{dash_attr}/>')  # fmt: skip
        for i, v in enumerate(ln.values):
            if v is not None:
                hollow = partial_last and i == n - 1
                out.append(_marker(shape, x(i), y(v), colour, hollow))
    out.append("</svg>")
    return "".join(out)


def legend(lines: Sequence[Line]) -> str:
    """A row of (line sample, mode name) in HTML for under the charts."""
    items = []
    for ln in lines:
        colour, dash, shape = MODE_SVG.get(ln.kind, FALLBACK)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        items.append(
            '<span class="legend-item"><svg xmlns="http://www.w3.org/2000/svg" width="26" '
            f'height="10" aria-hidden="true"><line x1="1" x2="25" y1="5" y2="5" '
            f'stroke="{colour}" stroke-width="1.8"{dash_attr}/>'
            f"{_marker(shape, 13, 5, colour, False)}"
            f"</svg> {escape(ln.name)}</span>"
        )
    return "".join(items)
