"""Ad-hoc commands that behave like rwloadsim's connping and ociping, plus sweep.

Typer-compatible functions (``app/cli/main.py`` registers them as ``connwatch connping``,
``connwatch ociping``, ``connwatch sweep``); also runnable as
``python -m app.probes.adhoc.commands connping -l scott/tiger@//host:1521/svc``.

``-l`` takes ``user[/password]@connect`` for Oracle (Easy Connect, descriptor or a
tnsnames.ora alias with ``--config-dir``); the password is prompted for when
omitted. A ``postgresql://`` URI or a libpq ``key=value`` string selects
PostgreSQL (the password then comes from the string, PGPASSWORD or .pgpass, as
libpq does; ``--ask-password`` prompts). Output formats: :mod:`app.probes.adhoc.rwlformat`.
Numbers come from the same probes the agent runs (connping, sessionping), so an
ad-hoc run and the dashboard measure the same thing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from typing import IO, Annotated, Any

import typer

from app.drivers import eventloop
from app.probes.adhoc import rwlformat as fmt
from app.probes.adhoc.cmdargs import (
    AskPw,
    CClass,
    Clock,
    ConfigDir,
    CsvExcel,
    CsvOut,
    Deadline,
    FlushCsv,
    FlushOut,
    Interval,
    Json,
    Logon,
    NoTs,
    Period,
    Phases,
    PurityOpt,
    Route,
    UnixEpoch,
    UtcFormat,
    UtcTime,
    check_times,
    endpoint_from,
    fail,
    open_csv,
    phases_text,
    report_error,
    sample_dict,
    sleep_until,
    stat_dict,
    time_opts,
    to_ms,
    until_interrupted,
)
from app.probes.adhoc.sweepreport import Progress, sweep_all, sweep_table
from app.probes.base import ProbeConfigError, ProbeContext
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import Endpoint, OracleEndpoint, OracleServerType, ProbeSpec
from app.samples import Sample

app = typer.Typer(add_completion=False, help="rwloadsim-style ad-hoc probes")


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
    check_times(cmd, period, interval, deadline)
    t = time_opts(cmd, no_timestamp, unixepoch, utctime, utcformat)
    ep = endpoint_from(
        cmd,
        logon,
        config_dir=config_dir,
        cclass=cclass,
        purity=purity,
        route=route,
        ask_password=ask_password,
        deadline_s=deadline,
    )
    csv = open_csv(csvoutput, cmd)
    stats = (fmt.Stat(), fmt.Stat(), fmt.Stat())
    if csv is not None:
        csv.write(fmt.connping_csv_header(t, csvexcel))
    _run(
        cmd,
        csv,
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
        ),
    )
    if json_out:
        names = ("connect", "ociping", "dualping")
        print(json.dumps({"summary": {n: stat_dict(s) for n, s in zip(names, stats, strict=True)}}))
    else:
        for line in fmt.connping_summary(*stats):
            print(line)
    sys.stdout.flush()


class _FirstConnectFailed(Exception):
    def __init__(self, sample: Sample) -> None:
        super().__init__(sample.error_message)
        self.sample = sample


def _run(cmd: str, csv: IO[str] | None, loop: Coroutine[Any, Any, None]) -> None:
    """Run a command's loop until it ends or Ctrl-C; exit 1 if its first logon failed.
    The CSV file (if any) is closed either way."""
    try:
        with contextlib.suppress(KeyboardInterrupt, asyncio.CancelledError):
            eventloop.run(until_interrupted(loop))
    except _FirstConnectFailed as exc:
        report_error(cmd, exc.sample)
        raise typer.Exit(1) from None
    finally:
        if csv is not None:
            csv.close()


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
    clock = Clock()
    k = 0
    while k * interval < period:
        await sleep_until(clock, k * interval)
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
                report_error("connping", s)
            continue
        conn, oci, dual = to_ms(s.logon_ns), to_ms(s.ping_ns), to_ms(s.query_ns)
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
            print(line + (phases_text(s) if phases else ""), flush=flush_output)


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
    check_times(cmd, period, interval, deadline)
    t = time_opts(cmd, no_timestamp, unixepoch, utctime, utcformat)
    ep = endpoint_from(
        cmd,
        logon,
        config_dir=config_dir,
        cclass=cclass,
        purity=purity,
        route=route,
        ask_password=ask_password,
        deadline_s=deadline,
    )
    csv = open_csv(csvoutput, cmd)
    stat = fmt.Stat()
    if csv is not None:
        csv.write(fmt.ociping_csv_header(t, csvexcel))
    _run(
        cmd,
        csv,
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
        ),
    )
    if json_out:
        print(json.dumps({"summary": {"ociping": stat_dict(stat)}}))
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
        clock = Clock()
        k = 0
        while k * interval < period:
            await sleep_until(clock, k * interval)
            k += 1
            ctx = ProbeContext()
            s = await run_once(probe, ctx=ctx)
            if json_out:
                print(json.dumps(sample_dict(s)), flush=flush_output)
            if not s.ok:
                if not json_out:
                    report_error("ociping", s)
                continue
            ping = to_ms(s.ping_ns)
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
        raise fail(
            cmd, f"{what} must be a comma-separated list of integers, got {text!r}"
        ) from None
    if not values:
        raise fail(cmd, f"{what} is empty")
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
    ep = endpoint_from(
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
            raise fail(cmd, f"--modes must list dedicated, shared, pooled; got {modes!r}") from None
    else:
        mode_list = [None]
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
        raise fail(cmd, str(exc)) from None
    total = sum(level_list) * logons * len(probes)
    results: list[tuple[str, Sample]] = []
    bar = Progress(total)
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(sweep_all(probes, bar, results))
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


if __name__ == "__main__":
    app()
