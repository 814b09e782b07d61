"""rwloadsim's connping / ociping output formats, reproduced exactly.

From ``public/connping.rwl`` and ``public/ociping.rwl`` (oracle/rwloadsim):

connping line (stdout), one per measured iteration::

    connect:%.2f ms, ociping:%.3f ms, dualping:%.3f ms, sid=%d, inst#=%d, time=%.1f
    ... , time=%s            with --utctime
    ... , inst#=%d           with --no-timestamp

connping end summary::

    connect mean=%.2f, stddev=%.2f, min=%.2f, max=%.2f
    ociping mean=%.2f, stddev=%.2f, min=%.2f, max=%.2f
    dualping mean=%.2f, stddev=%.2f, min=%.2f, max=%.2f

ociping line ``%.3f %.1f`` (``%.3f %s`` with --utctime, ``%.3f`` without
timestamp) and summary ``ociping mean=%.3f, stddev=%.3f, min=%.3f, max=%.3f``.

CSV (``--csvoutput``): a header ``# CONN OCI DUAL SID INST TIME`` (``EPOCH`` with
--unixepoch, ``UTCTIME`` with --utctime; no last column with --no-timestamp), then
``%.3f %.3f %.3f %d %d %.2f`` per line. ``--csvexcel``: ``;`` separators, CRLF, and
a header without ``#`` (``CONN;OCI;DUAL;SID;INST;TIME``). ociping: ``# PING TIME``
and ``%.3f %.2f``. The standard deviation is the population one,
``sqrt((sumsq - sum*sum/n)/n)``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

DEFAULT_UTCFORMAT = "YYYY.MM.DD.HH24:MI:SS.FF2"

_TOKENS = re.compile(
    r'"[^"]*"|YYYY|YYY|YY|MONTH|MON|MM|DDD|DD|DY|DAY|HH24|HH12|HH|MI|SS|FF[1-9]?|AM|PM|A\.M\.|P\.M\.'
    r"|.",
    re.I | re.S,
)


def oracle_to_char(ts: datetime, fmt: str) -> str:
    """Format ``ts`` with an Oracle datetime format model (the subset connping users need:
    YYYY YY MM MON MONTH DD DDD DY DAY HH24 HH12 HH MI SS FF1-9 AM PM, "quoted text",
    punctuation). FFn truncates to n digits (FF = 6, a timestamp's precision)."""
    out: list[str] = []
    for tok in _TOKENS.findall(fmt):
        up = tok.upper()
        if tok.startswith('"'):
            out.append(tok[1:-1])
        elif up == "YYYY":
            out.append(f"{ts.year:04d}")
        elif up == "YYY":
            out.append(f"{ts.year % 1000:03d}")
        elif up == "YY":
            out.append(f"{ts.year % 100:02d}")
        elif up == "MONTH":
            out.append(ts.strftime("%B").upper().ljust(9))
        elif up == "MON":
            out.append(ts.strftime("%b").upper())
        elif up == "MM":
            out.append(f"{ts.month:02d}")
        elif up == "DDD":
            out.append(f"{ts.timetuple().tm_yday:03d}")
        elif up == "DD":
            out.append(f"{ts.day:02d}")
        elif up == "DY":
            out.append(ts.strftime("%a").upper())
        elif up == "DAY":
            out.append(ts.strftime("%A").upper().ljust(9))
        elif up == "HH24":
            out.append(f"{ts.hour:02d}")
        elif up in ("HH12", "HH"):
            out.append(f"{(ts.hour % 12) or 12:02d}")
        elif up == "MI":
            out.append(f"{ts.minute:02d}")
        elif up == "SS":
            out.append(f"{ts.second:02d}")
        elif up.startswith("FF"):
            digits = int(up[2:]) if len(up) > 2 else 6
            out.append(f"{ts.microsecond:06d}000"[:digits])
        elif up in ("AM", "PM", "A.M.", "P.M."):
            out.append(
                ("PM" if ts.hour >= 12 else "AM")
                if "." not in up
                else ("P.M." if ts.hour >= 12 else "A.M.")
            )
        else:
            out.append(tok)
    return "".join(out)


@dataclass
class Stat:
    """Running sums as rwloadsim keeps them (count, sum, sum of squares, min, max)."""

    n: int = 0
    total: float = 0.0
    sq: float = 0.0
    lo: float | None = None
    hi: float | None = None

    def add(self, v: float) -> None:
        self.n += 1
        self.total += v
        self.sq += v * v
        self.lo = v if self.lo is None or v < self.lo else self.lo
        self.hi = v if self.hi is None or v > self.hi else self.hi

    def summary(self) -> tuple[float, float, float, float]:
        if self.n == 0:
            return (math.nan, math.nan, math.nan, math.nan)
        mean = self.total / self.n
        var = (self.sq - self.total * self.total / self.n) / self.n
        return (mean, math.sqrt(max(var, 0.0)), self.lo or 0.0, self.hi or 0.0)


@dataclass(frozen=True)
class TimeOpts:
    timestamp: bool = True
    unixepoch: bool = False
    utctime: bool = False
    utcformat: str = DEFAULT_UTCFORMAT

    def label(self) -> str:
        return "EPOCH" if self.unixepoch else ("UTCTIME" if self.utctime else "TIME")


def connping_line(
    conn_ms: float,
    oci_ms: float,
    dual_ms: float,
    sid: int,
    inst: int,
    t: TimeOpts,
    runsec: float,
    epoch: float,
    utc: str,
) -> str:
    head = (
        f"connect:{conn_ms:.2f} ms, ociping:{oci_ms:.3f} ms, dualping:{dual_ms:.3f} ms,"
        f" sid={sid:d}, inst#={inst:d}"
    )
    if not t.timestamp:
        return head
    if t.utctime:
        return f"{head}, time={utc}"
    return f"{head}, time={(epoch if t.unixepoch else runsec):.1f}"


def connping_summary(conn: Stat, oci: Stat, dual: Stat) -> list[str]:
    out = []
    for name, st in (("connect", conn), ("ociping", oci), ("dualping", dual)):
        if st.n == 0:  # no successful run (a short --period, or every run failed): no nan
            out.append(f"{name}: no successful run to summarise")
            continue
        mean, sd, lo, hi = st.summary()
        out.append(f"{name} mean={mean:.2f}, stddev={sd:.2f}, min={lo:.2f}, max={hi:.2f}")
    return out


def connping_csv_header(t: TimeOpts, excel: bool) -> str:
    cols = ["CONN", "OCI", "DUAL", "SID", "INST"] + ([t.label()] if t.timestamp else [])
    return ";".join(cols) + "\r\n" if excel else "# " + " ".join(cols) + "\n"


def connping_csv_row(
    conn_ms: float,
    oci_ms: float,
    dual_ms: float,
    sid: int,
    inst: int,
    t: TimeOpts,
    runsec: float,
    epoch: float,
    utc: str,
    excel: bool,
) -> str:
    cells = [f"{conn_ms:.3f}", f"{oci_ms:.3f}", f"{dual_ms:.3f}", f"{sid:d}", f"{inst:d}"]
    if t.timestamp:
        cells.append(utc if t.utctime else f"{(epoch if t.unixepoch else runsec):.2f}")
    return ";".join(cells) + "\r\n" if excel else " ".join(cells) + "\n"


def ociping_line(ping_ms: float, t: TimeOpts, runsec: float, epoch: float, utc: str) -> str:
    if not t.timestamp:
        return f"{ping_ms:.3f}"
    if t.utctime:
        return f"{ping_ms:.3f} {utc}"
    return f"{ping_ms:.3f} {(epoch if t.unixepoch else runsec):.1f}"


def ociping_summary(st: Stat) -> str:
    if st.n == 0:
        return "ociping: no successful run to summarise"
    mean, sd, lo, hi = st.summary()
    return f"ociping mean={mean:.3f}, stddev={sd:.3f}, min={lo:.3f}, max={hi:.3f}"


def ociping_csv_header(t: TimeOpts, excel: bool) -> str:
    cols = ["PING"] + ([t.label()] if t.timestamp else [])
    return ";".join(cols) + "\r\n" if excel else "# " + " ".join(cols) + "\n"


def ociping_csv_row(
    ping_ms: float, t: TimeOpts, runsec: float, epoch: float, utc: str, excel: bool
) -> str:
    cells = [f"{ping_ms:.3f}"]
    if t.timestamp:
        cells.append(utc if t.utctime else f"{(epoch if t.unixepoch else runsec):.2f}")
    return ";".join(cells) + "\r\n" if excel else " ".join(cells) + "\n"
