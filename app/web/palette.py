"""Colours and line styles for modes: Okabe-Ito, safe for the common colour blindnesses.

Colour is never the only cue: each mode also has its own dash pattern and marker
symbol, and every chart has a legend naming the modes.

Every mode of a target has a colour of its own, the same on every page (target, compare,
overview, phases, breakdown, sweeps, API): :func:`target_styles` gives each mode its
kind's style (:data:`MODE_STYLES`; over TLS, :data:`TLS_STYLES`, so ``dedicated-tls`` is
not drawn as ``dedicated``), and a mode whose colour an earlier mode of the same target
(in the order the modes were created) already has takes the next free one
(:data:`SPARE_STYLES`). Pages always pass the target's whole mode list, never the modes
a page happens to show, so a mode keeps its colour whatever else is on the chart.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypedDict


class ModeStyle(TypedDict):
    color: str
    dash: str
    symbol: str


class StyledMode(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def transport(self) -> str: ...


# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
}

MODE_STYLES: dict[str, ModeStyle] = {
    "dedicated": {"color": OKABE_ITO["blue"], "dash": "solid", "symbol": "circle"},
    "shared": {"color": OKABE_ITO["orange"], "dash": "dash", "symbol": "square"},
    "pooled": {"color": OKABE_ITO["green"], "dash": "dot", "symbol": "diamond"},
    "direct": {"color": OKABE_ITO["blue"], "dash": "solid", "symbol": "circle"},
    "unix": {"color": OKABE_ITO["purple"], "dash": "dashdot", "symbol": "triangle-up"},
    "pgbouncer_session": {"color": OKABE_ITO["vermillion"], "dash": "dash", "symbol": "square"},
    "pgbouncer_transaction": {"color": OKABE_ITO["sky"], "dash": "dot", "symbol": "diamond"},
}
# The same kinds over TLS (transport tcps): the transport comparison of seed 003 puts
# them beside their tcp twins, so they get colours (and dashes) of their own.
TLS_STYLES: dict[str, ModeStyle] = {
    "dedicated": {"color": OKABE_ITO["vermillion"], "dash": "longdash", "symbol": "hexagon"},
    "shared": {"color": OKABE_ITO["sky"], "dash": "longdashdot", "symbol": "star"},
    "pooled": {"color": OKABE_ITO["purple"], "dash": "dashdot", "symbol": "triangle-down"},
}
# For a second mode of one style on a target (two dedicated modes pinned to two RAC
# instances, say): first colours no kind prefers and no instance line uses (Paul Tol's
# muted scheme, colour-blind safe), so a TLS mode added later still finds its own colour
# free; then the kinds' colours (yellow is too light on white).
SPARE_STYLES: tuple[ModeStyle, ...] = tuple(
    {"color": c, "dash": d, "symbol": s}
    for c, d, s in (
        ("#CC6677", "dash", "triangle-left"),
        ("#117733", "dot", "triangle-right"),
        ("#AA4499", "dashdot", "pentagon"),
        ("#DDCC77", "longdash", "cross"),
        (OKABE_ITO["blue"], "solid", "circle"),
        (OKABE_ITO["orange"], "dash", "square"),
        (OKABE_ITO["green"], "dot", "diamond"),
        (OKABE_ITO["vermillion"], "longdash", "hexagon"),
        (OKABE_ITO["sky"], "longdashdot", "star"),
        (OKABE_ITO["purple"], "dashdot", "triangle-down"),
        (OKABE_ITO["black"], "longdash", "x"),
        ("#882255", "longdashdot", "bowtie"),
    )
)
# The server charts' lines, one per instance: colours no mode prefers, so an instance
# line under the latency charts is never read as a mode (SALES2 was dedicated-tls's
# vermillion): near-black, then Tol's muted wine, teal, olive, indigo, grey.
INSTANCE_COLORS: tuple[str, ...] = (
    "#222222",
    "#882255",
    "#44AA99",
    "#999933",
    "#332288",
    "#888888",
)

_FALLBACK: ModeStyle = {"color": OKABE_ITO["black"], "dash": "longdash", "symbol": "x"}


def mode_style(kind: str, transport: str = "tcp") -> ModeStyle:
    """The preferred style of a kind of mode (on its own: see :func:`target_styles`)."""
    if transport == "tcps" and kind in TLS_STYLES:
        return TLS_STYLES[kind]
    return MODE_STYLES.get(kind, _FALLBACK)


def target_styles(modes: Iterable[StyledMode]) -> dict[str, ModeStyle]:
    """A style per mode name, no two modes of the target in one colour (while colours
    last: past 12 modes of one target colours repeat, with another dash)."""
    out: dict[str, ModeStyle] = {}
    used: set[str] = set()
    spare = 0
    for m in modes:
        style = mode_style(m.kind, m.transport)
        if style["color"] in used:
            free = [s for s in SPARE_STYLES if s["color"] not in used]
            if free:
                style = free[0]
            else:
                base = SPARE_STYLES[spare % len(SPARE_STYLES)]
                dash = SPARE_STYLES[(spare + 3) % len(SPARE_STYLES)]["dash"]
                style = ModeStyle(color=base["color"], dash=dash, symbol=base["symbol"])
                spare += 1
        used.add(style["color"])
        out[m.name] = style.copy()
    return out
