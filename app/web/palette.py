"""Colours and line styles for modes: Okabe-Ito, safe for the common colour blindnesses.

Colour is never the only cue: each mode also has its own dash pattern and marker
symbol, and every chart has a legend naming the modes.
"""

from __future__ import annotations

from typing import TypedDict


class ModeStyle(TypedDict):
    color: str
    dash: str
    symbol: str


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
_FALLBACK: ModeStyle = {"color": OKABE_ITO["black"], "dash": "longdash", "symbol": "x"}


def mode_style(kind: str) -> ModeStyle:
    return MODE_STYLES.get(kind, _FALLBACK)
