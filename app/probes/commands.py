"""Ad-hoc commands that behave like rwloadsim's connping and ociping, plus sweep.

Typer-compatible functions (``app/cli.py`` registers them as ``connwatch connping``,
``connwatch ociping``, ``connwatch sweep``); also runnable as
``python -m app.probes.commands connping -l scott/tiger@//host:1521/svc``.

``-l`` takes ``user[/password]@connect`` for Oracle (Easy Connect, descriptor or a
tnsnames.ora alias with ``--config-dir``); the password is prompted for when
omitted. A ``postgresql://`` URI or a libpq ``key=value`` string selects
PostgreSQL (the password then comes from the string, PGPASSWORD or .pgpass, as
libpq does; ``--ask-password`` prompts). Output formats: :mod:`app.probes.rwlformat`.
Numbers come from the same probes the agent runs (connping, sessionping), so an
ad-hoc run and the dashboard measure the same thing.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import math
import sys
import time
from dataclasses import asdict
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import IO, Annotated, Any

import psycopg.conninfo
import typer

from app.probes import rwlformat as fmt
from app.probes.base import ProbeContext
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import (
    Endpoint,
    OracleEndpoint,
    OracleServerType,
    PgRoute,
    PostgresEndpoint,
    ProbeSpec,
    Purity,
)
from app.samples import Sample

app = typer.Typer(add_completion=False, help="rwloadsim-style ad-hoc probes")


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def _fail(cmd: str, message: str, code: int = 2) -> typer.Exit:
    print(f"{cmd}: error: {message}", file=sys.stderr)
    return typer.Exit(code)


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
            password = getpass.getpass("Password: ")
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
    if not slash:
        password = getpass.getpass(f"Password for {user}: ")
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


def _ms(ns: int | None) -> float:
    return (ns or 0) / 1e6


def _phases_text(s: Sample) -> str:
    if not s.logon_phases:
        return ", phases: n/a"
    parts = " ".join(f"{k}={v / 1e6:.3f}" for k, v in s.logon_phases.items())
    return f", phases: {parts} ms, round_trips={s.round_trips}"


def _stat_dict(st: fmt.Stat) -> dict[str, float | int | None]:
    mean, sd, lo, hi = st.summary()

    def clean(x: float) -> float | None:
        return None if math.isnan(x) else x

    return {"n": st.n, "mean": clean(mean), "stddev": clean(sd), "min": clean(lo), "max": clean(hi)}


class _Clock:
    """runseconds (from the loop's start) and epoch seconds of a perf_counter mark."""

    def __init__(self) -> None:
        self.perf0 = time.perf_counter_ns()
        self.epoch0 = time.time()

    def runsec(self, mark_ns: int) -> float:
        return (mark_ns - self.perf0) / 1e9

    def epoch(self, mark_ns: int) -> float:
        return self.epoch0 + self.runsec(mark_ns)


def _time_opts(
    cmd: str, no_timestamp: bool, unixepoch: bool, utctime: bool, utcformat: str
) -> fmt.TimeOpts:
    if unixepoch and utctime:
        print("--unixepoch has been turned of as --utctime is set", file=sys.stderr)
        unixepoch = False
    return fmt.TimeOpts(not no_timestamp, unixepoch, utctime, utcformat)


async def _sleep_until(clock: _Clock, at_s: float) -> None:
    delay = at_s - (time.perf_counter_ns() - clock.perf0) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)


def _report_error(cmd: str, s: Sample) -> None:
    print(f"{cmd}: {s.error_code} during {s.error_phase}: {s.error_message}", file=sys.stderr)


def _open_csv(path: str | None, cmd: str) -> IO[str] | None:
    if not path:
        return None
    try:
        return Path(path).open("w", newline="", encoding="utf-8")
    except OSError as exc:
        raise _fail(cmd, f"--csvoutput: cannot write {path}: {exc.strerror}") from None


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


def _check_times(cmd: str, period: float, interval: float, deadline: float) -> None:
    if not (period > 0 and math.isfinite(period)):
        raise _fail(cmd, f"--period must be a positive number of seconds, got {period}")
    if not (interval > 0 and math.isfinite(interval)):
        raise _fail(cmd, f"--interval must be a positive number of seconds, got {interval}")
    if not deadline > 0:
        raise _fail(cmd, f"--deadline must be positive, got {deadline}")


def _endpoint(cmd: str, logon: str, **kw: Any) -> Endpoint:
    try:
        return parse_logon(logon, **kw)
    except UsageError as exc:
        raise _fail(cmd, str(exc)) from None


@app.command("connping")
def connping(
    logon: Logon,
    period: Period = 60.0,
    interval: Interval = 1.0,
    csvoutput: CsvOut = None,
    flush_output: FlushOut = False,
    flush_csv: FlushCsv = False,
    no_timestamp: NoTs = False,
    unixepoch: UnixEpoch = False,
    utctime: UtcTime = False,
    utcformat: UtcFormat = fmt.DEFAULT_UTCFORMAT,
    csvexcel: CsvExcel = False,
    json_out: Json = False,
    phases: Phases = False,
    config_dir: ConfigDir = None,
    cclass: CClass = None,
    purity: PurityOpt = None,
    route: Route = "direct",
    ask_password: AskPw = False,
    deadline: Deadline = 10.0,
) -> None:
    """connping - Connect and run OCIPing(): repeatedly log on, ping, query, log off."""
    cmd = "connping"
    _check_times(cmd, period, interval, deadline)
    t = _time_opts(cmd, no_timestamp, unixepoch, utctime, utcformat)
    ep = _endpoint(
        cmd,
        logon,
        config_dir=config_dir,
        cclass=cclass,
        purity=purity,
        route=route,
        ask_password=ask_password,
        deadline_s=deadline,
    )
    csv = _open_csv(csvoutput, cmd)
    stats = (fmt.Stat(), fmt.Stat(), fmt.Stat())
    if csv is not None:
        csv.write(fmt.connping_csv_header(t, csvexcel))
    try:
        asyncio.run(
            _connping_loop(
                ep,
                period,
                interval,
                deadline,
                t,
                csv,
                csvexcel,
                flush_output,
                flush_csv,
                json_out,
                phases,
                stats,
            )
        )
    except KeyboardInterrupt:
        pass
    except _FirstConnectFailed as exc:
        _report_error(cmd, exc.sample)
        if csv is not None:
            csv.close()
        raise typer.Exit(1) from None
    if csv is not None:
        csv.close()
    if json_out:
        names = ("connect", "ociping", "dualping")
        print(
            json.dumps({"summary": {n: _stat_dict(s) for n, s in zip(names, stats, strict=True)}})
        )
    else:
        for line in fmt.connping_summary(*stats):
            print(line)
    sys.stdout.flush()


class _FirstConnectFailed(Exception):
    def __init__(self, sample: Sample) -> None:
        super().__init__(sample.error_message)
        self.sample = sample


async def _connping_loop(
    ep: Endpoint,
    period: float,
    interval: float,
    deadline: float,
    t: fmt.TimeOpts,
    csv: IO[str] | None,
    excel: bool,
    flush_output: bool,
    flush_csv: bool,
    json_out: bool,
    phases: bool,
    stats: tuple[fmt.Stat, fmt.Stat, fmt.Stat],
) -> None:
    probe = create_probe(ProbeSpec("connping", ep, deadline_s=deadline))
    clock = _Clock()
    k = 0
    while k * interval < period:
        await _sleep_until(clock, k * interval)
        ctx = ProbeContext()
        s = await run_once(probe, ctx=ctx)
        if k == 0:  # rwloadsim's first iteration only releases the -l session
            if not s.ok:
                raise _FirstConnectFailed(s)
            k += 1
            continue
        k += 1
        if json_out:
            print(json.dumps(sample_dict(s)), flush=flush_output)
        if not s.ok:
            if not json_out:
                _report_error("connping", s)
            continue
        conn, oci, dual = _ms(s.logon_ns), _ms(s.ping_ns), _ms(s.query_ns)
        for st, v in zip(stats, (conn, oci, dual), strict=True):
            st.add(v)
        mark = ctx.marks.get("query", time.perf_counter_ns())
        runsec, epoch = clock.runsec(mark), clock.epoch(mark)
        utc = fmt.oracle_to_char(datetime.fromtimestamp(epoch, UTC), t.utcformat)
        sid = s.sid or 0
        inst = int(s.extra.get("instance_number", 0))
        if csv is not None:
            csv.write(
                fmt.connping_csv_row(conn, oci, dual, sid, inst, t, runsec, epoch, utc, excel)
            )
            if flush_csv:
                csv.flush()
        if not json_out:
            line = fmt.connping_line(conn, oci, dual, sid, inst, t, runsec, epoch, utc)
            print(line + (_phases_text(s) if phases else ""), flush=flush_output)


@app.command("ociping")
def ociping(
    logon: Logon,
    period: Period = 60.0,
    interval: Interval = 1.0,
    csvoutput: CsvOut = None,
    flush_output: FlushOut = False,
    flush_csv: FlushCsv = False,
    no_timestamp: NoTs = False,
    unixepoch: UnixEpoch = False,
    utctime: UtcTime = False,
    utcformat: UtcFormat = fmt.DEFAULT_UTCFORMAT,
    csvexcel: CsvExcel = False,
    json_out: Json = False,
    config_dir: ConfigDir = None,
    cclass: CClass = None,
    purity: PurityOpt = None,
    route: Route = "direct",
    ask_password: AskPw = False,
    deadline: Deadline = 10.0,
) -> None:
    """ociping - run OCIPing() repeatedly on one session and report each round trip."""
    cmd = "ociping"
    _check_times(cmd, period, interval, deadline)
    t = _time_opts(cmd, no_timestamp, unixepoch, utctime, utcformat)
    ep = _endpoint(
        cmd,
        logon,
        config_dir=config_dir,
        cclass=cclass,
        purity=purity,
        route=route,
        ask_password=ask_password,
        deadline_s=deadline,
    )
    csv = _open_csv(csvoutput, cmd)
    stat = fmt.Stat()
    if csv is not None:
        csv.write(fmt.ociping_csv_header(t, csvexcel))
    try:
        asyncio.run(
            _ociping_loop(
                ep,
                period,
                interval,
                deadline,
                t,
                csv,
                csvexcel,
                flush_output,
                flush_csv,
                json_out,
                stat,
            )
        )
    except KeyboardInterrupt:
        pass
    except _FirstConnectFailed as exc:
        _report_error(cmd, exc.sample)
        if csv is not None:
            csv.close()
        raise typer.Exit(1) from None
    if csv is not None:
        csv.close()
    if json_out:
        print(json.dumps({"summary": {"ociping": _stat_dict(stat)}}))
    else:
        print(fmt.ociping_summary(stat))
    sys.stdout.flush()


async def _ociping_loop(
    ep: Endpoint,
    period: float,
    interval: float,
    deadline: float,
    t: fmt.TimeOpts,
    csv: IO[str] | None,
    excel: bool,
    flush_output: bool,
    flush_csv: bool,
    json_out: bool,
    stat: fmt.Stat,
) -> None:
    probe = create_probe(ProbeSpec("sessionping", ep, deadline_s=deadline, params={"query": False}))
    try:
        first = await run_once(probe)  # the -l logon (its ping is not reported)
        if not first.ok:
            raise _FirstConnectFailed(first)
        clock = _Clock()
        k = 0
        while k * interval < period:
            await _sleep_until(clock, k * interval)
            k += 1
            ctx = ProbeContext()
            s = await run_once(probe, ctx=ctx)
            if json_out:
                print(json.dumps(sample_dict(s)), flush=flush_output)
            if not s.ok:
                if not json_out:
                    _report_error("ociping", s)
                continue
            ping = _ms(s.ping_ns)
            stat.add(ping)
            mark = ctx.marks.get("ping", time.perf_counter_ns())
            runsec, epoch = clock.runsec(mark), clock.epoch(mark)
            utc = fmt.oracle_to_char(datetime.fromtimestamp(epoch, UTC), t.utcformat)
            if csv is not None:
                csv.write(fmt.ociping_csv_row(ping, t, runsec, epoch, utc, excel))
                if flush_csv:
                    csv.flush()
            if not json_out:
                print(fmt.ociping_line(ping, t, runsec, epoch, utc), flush=flush_output)
    finally:
        await probe.close()


def _int_list(cmd: str, text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise _fail(
            cmd, f"{what} must be a comma-separated list of integers, got {text!r}"
        ) from None
    if not values:
        raise _fail(cmd, f"{what} is empty")
    return values


@app.command("sweep")
def sweep(
    logon: Logon,
    modes: Annotated[
        str, typer.Option("--modes", help="Oracle server types to sweep, comma-separated")
    ] = "dedicated,shared,pooled",
    levels: Annotated[str, typer.Option("--levels", help="parallel loops per level")] = "1,2,4",
    logons: Annotated[int, typer.Option("--logons", help="logons per loop and level")] = 20,
    pause: Annotated[float, typer.Option("--pause", help="seconds between a loop's logons")] = 0.0,
    json_out: Json = False,
    config_dir: ConfigDir = None,
    cclass: CClass = None,
    purity: PurityOpt = None,
    route: Route = "direct",
    ask_password: AskPw = False,
    deadline: Annotated[float, typer.Option("--deadline", help="seconds per mode")] = 600.0,
) -> None:
    """sweep - 1..N parallel logon loops per mode: per-logon latency and throughput."""
    cmd = "sweep"
    level_list = _int_list(cmd, levels, "--levels")
    ep = _endpoint(
        cmd,
        logon,
        config_dir=config_dir,
        cclass=cclass,
        purity=purity,
        route=route,
        ask_password=ask_password,
        deadline_s=min(deadline, 30.0),
    )
    mode_list: list[str | None]
    if isinstance(ep, OracleEndpoint):
        try:
            mode_list = [str(OracleServerType(m.strip().lower())) for m in modes.split(",")]
        except ValueError:
            raise _fail(
                cmd, f"--modes must list dedicated, shared, pooled; got {modes!r}"
            ) from None
    else:
        mode_list = [None]
    from dataclasses import replace

    from app.probes.base import ProbeConfigError

    specs = []
    for m in mode_list:
        mep = (
            replace(ep, server_type=OracleServerType(m))
            if m and isinstance(ep, OracleEndpoint)
            else ep
        )
        specs.append(
            (
                m or str(getattr(ep, "route", "direct")),
                ProbeSpec(
                    "sweep",
                    mep,
                    deadline_s=deadline,
                    params={"levels": level_list, "logons": logons, "pause_s": pause},
                ),
            )
        )
    try:
        probes = [(m, create_probe(spec)) for m, spec in specs]
    except ProbeConfigError as exc:
        raise _fail(cmd, str(exc)) from None
    total = sum(level_list) * logons * len(probes)
    results: list[tuple[str, Sample]] = []
    bar = _Progress(total)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_sweep_all(probes, bar, results))
    bar.finish()
    if json_out:
        for m, s in results:
            print(json.dumps({"mode": m, **sample_dict(s)}))
        return
    for line in sweep_table(results):
        print(line)
    for m, s in results:
        if not s.ok:
            print(f"{m}: {s.error_code}: {s.error_message}", file=sys.stderr)


class _Progress:
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


async def _sweep_all(
    probes: list[tuple[str, Any]], bar: _Progress, results: list[tuple[str, Sample]]
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


if __name__ == "__main__":
    app()
