"""Read the CSV files rwloadsim's connping (and ``connwatch connping``) write into Samples.

Accepted (see :mod:`app.probes.adhoc.rwlformat`): the plain form (header
``# CONN OCI DUAL SID INST [TIME|EPOCH|UTCTIME]``, space separated) and the
``--csvexcel`` form (header ``CONN;OCI;DUAL;SID;INST[;...]``, ``;`` separated,
CRLF). Each row becomes one OK Sample: ``logon_ns``/``ping_ns``/``query_ns``
from the millisecond columns (CONN/OCI/DUAL), ``sid``, and
``extra["instance_number"]`` from INST; ``extra["source"] = "connping-csv"``.
connping files carry neither logoff times nor failures, so none are invented.

Time of each row: EPOCH is absolute; UTCTIME is parsed with ``utcformat`` (the
Oracle format model the run used, default connping's); TIME is seconds since
the run's clock start, so ``start`` (that instant) is required. A file written
with ``--no-timestamp`` needs ``start`` and ``interval``: row *i* is then placed
at ``start + (i + 1) * interval`` (connping's schedule, whose first iteration is
not printed) and marked ``extra["time_estimated"] = True``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta

from app.probes.adhoc.rwlformat import DEFAULT_UTCFORMAT
from app.samples import Sample, SampleStatus

COLUMNS = ("CONN", "OCI", "DUAL", "SID", "INST")
# What a row may hold, checked before anything is stored: times are finite milliseconds
# up to a day (no logon takes longer; 1e300 would overflow the int8 nanosecond columns),
# SID and INST fit the store's int4 (a larger SID used to wrap around silently).
MAX_MS = 86_400_000.0
MAX_INT4 = 2**31 - 1
TIME_COLUMNS = ("TIME", "EPOCH", "UTCTIME")


class ConnpingCsvError(ValueError):
    """The file is not connping CSV; the message names the line and the problem."""


_FMT_PARTS = re.compile(r'"[^"]*"|YYYY|MM|DD|HH24|MI|SS|FF[1-9]?|.', re.I | re.S)


def _utc_parser(fmt: str) -> re.Pattern[str]:
    out = []
    for tok in _FMT_PARTS.findall(fmt):
        up = tok.upper()
        if tok.startswith('"'):
            out.append(re.escape(tok[1:-1]))
        elif up == "YYYY":
            out.append(r"(?P<Y>\d{4})")
        elif up in ("MM", "DD", "HH24", "MI", "SS"):
            name = {"MM": "m", "DD": "d", "HH24": "H", "MI": "M", "SS": "S"}[up]
            out.append(rf"(?P<{name}>\d{{2}})")
        elif up.startswith("FF"):
            n = int(up[2:]) if len(up) > 2 else 6
            out.append(rf"(?P<f>\d{{{n}}})")
        else:
            out.append(re.escape(tok))
    return re.compile("^" + "".join(out) + "$")


def _parse_utc(text: str, pattern: re.Pattern[str], line: int) -> datetime:
    m = pattern.match(text)
    if not m:
        raise ConnpingCsvError(f"line {line}: UTCTIME {text!r} does not match --utcformat")
    g = m.groupdict()
    frac = (g.get("f") or "0").ljust(6, "0")[:6]
    try:
        return datetime(
            int(g["Y"]),
            int(g["m"]),
            int(g["d"]),
            int(g.get("H") or 0),
            int(g.get("M") or 0),
            int(g.get("S") or 0),
            int(frac),
            tzinfo=UTC,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConnpingCsvError(f"line {line}: UTCTIME {text!r}: {exc}") from None


def _text_lines(lines: Iterable[str]) -> Iterator[str]:
    """The lines, with a file that is not text reported as bad input, not a crash."""
    n = 0
    source = iter(lines)
    while True:
        try:
            line = next(source)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise ConnpingCsvError(f"not UTF-8 text (at or after line {n + 1})") from None
        n += 1
        if "\0" in line:
            raise ConnpingCsvError(f"line {n}: not text (NUL byte)")
        yield line


def _numbers(cells: list[str], lineno: int, text: str) -> tuple[float, float, float, int, int]:
    """CONN, OCI, DUAL (ms) and SID, INST of a row, each within what the store holds."""
    try:
        conn, oci, dual = (float(c) for c in cells[:3])
        sid, inst = int(cells[3]), int(cells[4])
    except ValueError:
        raise ConnpingCsvError(f"line {lineno}: not numbers: {text[:80]!r}") from None
    for name, ms in zip(COLUMNS, (conn, oci, dual), strict=False):
        if not (math.isfinite(ms) and 0 <= ms <= MAX_MS):
            raise ConnpingCsvError(
                f"line {lineno}: {name} {cells[COLUMNS.index(name)].strip()[:40]!r} is not a "
                f"time in milliseconds from 0 to {MAX_MS:.0f} (a day)"
            )
    for name, n in (("SID", sid), ("INST", inst)):
        if not 0 <= n <= MAX_INT4:
            raise ConnpingCsvError(f"line {lineno}: {name} {n} is not from 0 to {MAX_INT4}")
    return conn, oci, dual, sid, inst


def parse_connping_csv(
    lines: Iterable[str],
    *,
    start: datetime | None = None,
    interval: float | None = None,
    utcformat: str = DEFAULT_UTCFORMAT,
    series_id: int | None = None,
    window: tuple[datetime, datetime] | None = None,
) -> list[Sample]:
    """Parse connping CSV lines into Samples (raises ConnpingCsvError on bad input).

    ``window`` (aware instants, inclusive) refuses a row timed outside it, naming the line.
    """
    it = _text_lines(lines)
    header = None
    lineno = 0
    for raw in it:
        lineno += 1
        if raw.strip():
            header = raw.strip()
            break
    if header is None:
        raise ConnpingCsvError("empty file: expected a connping CSV header")
    excel = ";" in header or not header.startswith("#")
    cols = header.split(";") if excel else header.lstrip("#").split()
    cols = [c.strip().upper() for c in cols]
    if (
        tuple(cols[:5]) != COLUMNS
        or len(cols) > 6
        or (len(cols) == 6 and cols[5] not in TIME_COLUMNS)
    ):
        raise ConnpingCsvError(
            f"line {lineno}: not a connping CSV header (expected CONN OCI DUAL SID INST"
            f" [TIME|EPOCH|UTCTIME]), got {header[:80]!r}"
        )
    time_col = cols[5] if len(cols) == 6 else None
    if time_col == "TIME" and start is None:
        raise ConnpingCsvError("TIME is relative to the run's start: give the start instant")
    if time_col is None and (start is None or interval is None):
        raise ConnpingCsvError("file has no timestamps: give the run's start and interval")
    if start is not None and start.tzinfo is None:
        raise ConnpingCsvError("start must be timezone-aware")
    if interval is not None and not (math.isfinite(interval) and 0 < interval <= 86_400):
        raise ConnpingCsvError(f"the interval must be from 0 to 86400 seconds, got {interval}")
    pattern = _utc_parser(utcformat) if time_col == "UTCTIME" else None
    samples: list[Sample] = []
    for raw in it:
        lineno += 1
        text = raw.rstrip("\r\n")
        if not text.strip() or text.startswith("#"):
            continue
        cells = text.split(";") if excel else text.split(None, 5 if time_col else 4)
        if len(cells) != len(cols):
            raise ConnpingCsvError(f"line {lineno}: expected {len(cols)} fields, got {len(cells)}")
        conn, oci, dual, sid, inst = _numbers(cells, lineno, text)
        extra: dict[str, object] = {"source": "connping-csv", "instance_number": inst}
        if time_col == "EPOCH":
            try:
                at = datetime.fromtimestamp(float(cells[5]), UTC)
            except (ValueError, OverflowError):
                raise ConnpingCsvError(f"line {lineno}: bad EPOCH {cells[5]!r}") from None
        elif time_col == "UTCTIME":
            assert pattern is not None
            at = _parse_utc(cells[5].strip(), pattern, lineno)
        elif time_col == "TIME":
            assert start is not None
            try:
                at = start + timedelta(seconds=float(cells[5]))
            except (ValueError, OverflowError):
                raise ConnpingCsvError(f"line {lineno}: bad TIME {cells[5]!r}") from None
        else:
            assert start is not None and interval is not None
            try:
                at = start + timedelta(seconds=(len(samples) + 1) * interval)
            except OverflowError:
                raise ConnpingCsvError(
                    f"line {lineno}: start + interval is past year 9999"
                ) from None
            extra["time_estimated"] = True
        if window is not None and not window[0] <= at <= window[1]:
            raise ConnpingCsvError(
                f"line {lineno}: {at:%Y-%m-%d %H:%M:%S} UTC is outside the time the store "
                f"accepts ({window[0]:%Y-%m-%d} to {window[1]:%Y-%m-%d %H:%M} UTC)"
            )
        samples.append(
            Sample(
                series_id=series_id,
                scheduled_at=at,
                started_at=at,
                status=SampleStatus.OK,
                logon_ns=round(conn * 1e6),
                ping_ns=round(oci * 1e6),
                query_ns=round(dual * 1e6),
                sid=sid,
                extra=extra,
            )
        )
    return samples
