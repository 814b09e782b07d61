"""Shared command-line pieces of the ad-hoc commands: options, ``-l`` parsing, helpers.

See :mod:`app.probes.adhoc.commands`.
"""

from __future__ import annotations

import asyncio
import getpass
import math
import signal
import sys
import time
from collections.abc import Coroutine
from dataclasses import asdict
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import IO, Annotated, Any

import psycopg.conninfo
import typer

from app.probes.adhoc import rwlformat as fmt
from app.probes.spec import Endpoint, OracleEndpoint, PgRoute, PostgresEndpoint, Purity
from app.samples import Sample
from app.targets.params import easy_connect_error


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def fail(cmd: str, message: str, code: int = 2) -> typer.Exit:
    print(f"{cmd}: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def ask_for_password(prompt: str) -> str:
    """A password typed at a terminal (not echoed), or the first line of a pipe: no
    GetPassWarning when standard input is not a terminal."""
    if sys.stdin is not None and sys.stdin.isatty():
        return getpass.getpass(prompt)
    print(prompt, end="", file=sys.stderr, flush=True)
    line = sys.stdin.readline() if sys.stdin is not None else ""
    print(file=sys.stderr)
    return line.rstrip("\r\n")


def parse_logon(
    logon: str,
    *,
    config_dir: str | None = None,
    cclass: str | None = None,
    purity: str | None = None,
    route: str = "direct",
    ask_password: bool = False,
    deadline_s: float = 10.0,
) -> Endpoint:
    """Build an endpoint from ``-l``; prompts for a missing Oracle password."""
    text = logon.strip()
    if text.startswith(("postgresql://", "postgres://")) or ("=" in text and "@" not in text):
        try:
            d = psycopg.conninfo.conninfo_to_dict(text)
        except psycopg.ProgrammingError as exc:
            raise UsageError(f"-l: not a valid PostgreSQL DSN: {exc}") from None
        try:
            pg_route = PgRoute(route)
        except ValueError:
            raise UsageError(
                f"--route must be one of {', '.join(r.value for r in PgRoute)}"
            ) from None
        password = d.pop("password", None)
        if password is None and ask_password:
            password = ask_for_password("Password: ")
        user = str(d.pop("user", None) or getpass.getuser())
        try:
            port = int(d.pop("port", None) or 5432)
        except ValueError:
            raise UsageError("-l: port must be a number") from None
        return PostgresEndpoint(
            host=str(d.pop("host", None) or "localhost"),
            port=port,
            dbname=str(d.pop("dbname", None) or user),
            user=user,
            password=str(password) if password is not None else None,
            route=pg_route,
            connect_timeout_s=deadline_s,
            options={k: str(v) for k, v in d.items() if v is not None},
        )
    userpart, at, connect = text.rpartition("@")
    if not at or not userpart or not connect:
        raise UsageError("-l must be user/password@connect (or a PostgreSQL DSN)")
    user, slash, password = userpart.partition("/")
    if not user:
        raise UsageError("-l: missing user name before '/'")
    wrong = easy_connect_error(connect)
    if wrong:
        raise UsageError(f"-l: {wrong}")
    if not slash:
        password = ask_for_password(f"Password for {user}: ")
    try:
        pur = Purity(purity.lower()) if purity else Purity.DEFAULT
    except ValueError:
        raise UsageError("--purity must be new, self or default") from None
    return OracleEndpoint(
        connect=connect,
        user=user,
        password=password,
        cclass=cclass,
        purity=pur,
        config_dir=config_dir,
        connect_timeout_s=deadline_s,
    )


def sample_dict(s: Sample) -> dict[str, Any]:
    """A Sample as JSON-ready data (timestamps ISO 8601, enums by value)."""
    out: dict[str, Any] = {}
    for k, v in asdict(s).items():
        if isinstance(v, datetime):
            out[k] = v.isoformat()
        elif isinstance(v, Enum):
            out[k] = v.value
        else:
            out[k] = v
    return out


def to_ms(ns: int | None) -> float:
    return (ns or 0) / 1e6


def phases_text(s: Sample) -> str:
    if not s.logon_phases:
        return ", phases: n/a"
    parts = " ".join(f"{k}={v / 1e6:.3f}" for k, v in s.logon_phases.items())
    return f", phases: {parts} ms, round_trips={s.round_trips}"


def stat_dict(st: fmt.Stat) -> dict[str, float | int | None]:
    mean, sd, lo, hi = st.summary()

    def clean(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {"n": st.n, "mean": clean(mean), "stddev": clean(sd), "min": clean(lo), "max": clean(hi)}


class Clock:
    """runseconds (from the loop's start) and epoch seconds of a perf_counter mark."""

    def __init__(self) -> None:
        self.perf0 = time.perf_counter_ns()
        self.epoch0 = time.time()

    def runsec(self, mark_ns: int) -> float:
        return (mark_ns - self.perf0) / 1e9

    def epoch(self, mark_ns: int) -> float:
        return self.epoch0 + self.runsec(mark_ns)


def time_opts(
    cmd: str, no_timestamp: bool, unixepoch: bool, utctime: bool, utcformat: str
) -> fmt.TimeOpts:
    if unixepoch and utctime:
        print("--unixepoch has been turned of as --utctime is set", file=sys.stderr)
        unixepoch = False
    return fmt.TimeOpts(not no_timestamp, unixepoch, utctime, utcformat)


class Interrupt:
    """Ctrl-C seen by a running command (set by :func:`until_interrupted`)."""

    seen = False


async def until_interrupted(main: Coroutine[Any, Any, None]) -> None:
    """Run a command's loop; Ctrl-C cancels it and is remembered, so the loop also ends
    at its next pause even if a driver swallowed that cancellation (the command would
    otherwise run its whole period after one Ctrl-C)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    Interrupt.seen = False

    def on_sigint() -> None:
        Interrupt.seen = True
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
        await main
        return
    try:
        await main
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def sleep_until(clock: Clock, at_s: float) -> None:
    if Interrupt.seen:
        raise asyncio.CancelledError
    delay = at_s - (time.perf_counter_ns() - clock.perf0) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)


def report_error(cmd: str, s: Sample) -> None:
    print(f"{cmd}: {s.error_code} during {s.error_phase}: {s.error_message}", file=sys.stderr)


def open_csv(path: str | None, cmd: str) -> IO[str] | None:
    if not path:
        return None
    try:
        return Path(path).open("w", newline="", encoding="utf-8")
    except OSError as exc:
        raise fail(cmd, f"--csvoutput: cannot write {path}: {exc.strerror}") from None


Period = Annotated[float, typer.Option("--period", help="runtime in seconds; default 60")]
Interval = Annotated[float, typer.Option("--interval", help="interval between each run, default 1")]
Logon = Annotated[
    str,
    typer.Option(
        "-l",
        "--logon",
        help="user/password@connect (leave out /password to be asked), or a PostgreSQL DSN",
    ),
]
CsvOut = Annotated[str | None, typer.Option("--csvoutput", help="write pure csv to the named file")]
FlushOut = Annotated[bool, typer.Option("--flush-output", help="flush stdout after each line")]
FlushCsv = Annotated[bool, typer.Option("--flush-csv", help="flush the csvfile after each line")]
NoTs = Annotated[bool, typer.Option("--no-timestamp", help="do not include the timestamps")]
UnixEpoch = Annotated[bool, typer.Option("--unixepoch", help="timestamps will be unixepoch")]
UtcTime = Annotated[
    bool, typer.Option("--utctime", help="timestamps will be UTC in YYYY.MM.DD.HH24:MI:SS.FF2")
]
UtcFormat = Annotated[
    str, typer.Option("--utcformat", help="alternative Oracle format model for --utctime")
]
CsvExcel = Annotated[
    bool, typer.Option("--csvexcel", help="csv has ; separator, CRLF line terminator and no #")
]
Json = Annotated[bool, typer.Option("--json", help="one JSON sample per line, JSON summary")]
Phases = Annotated[bool, typer.Option("--phases", help="append the logon round-trip breakdown")]
ConfigDir = Annotated[
    str | None, typer.Option("--config-dir", help="directory of tnsnames.ora (TNS_ADMIN)")
]
CClass = Annotated[str | None, typer.Option("--cclass", help="DRCP connection class")]
PurityOpt = Annotated[str | None, typer.Option("--purity", help="DRCP purity: new | self")]
Route = Annotated[str, typer.Option("--route", help="PostgreSQL: direct | pgbouncer_session | ...")]
AskPw = Annotated[bool, typer.Option("--ask-password", help="PostgreSQL: prompt for a password")]
Deadline = Annotated[float, typer.Option("--deadline", help="seconds before a run is cut")]


def check_times(cmd: str, period: float, interval: float, deadline: float) -> None:
    if not (period > 0 and math.isfinite(period)):
        raise fail(cmd, f"--period must be a positive number of seconds, got {period}")
    if not (interval > 0 and math.isfinite(interval)):
        raise fail(cmd, f"--interval must be a positive number of seconds, got {interval}")
    if not deadline > 0:
        raise fail(cmd, f"--deadline must be positive, got {deadline}")


def endpoint_from(cmd: str, logon: str, **kw: Any) -> Endpoint:
    try:
        return parse_logon(logon, **kw)
    except UsageError as exc:
        raise fail(cmd, str(exc)) from None
