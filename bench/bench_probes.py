"""Probe benchmarks, side by side in one run (figures go to docs/benchmarks.md, "Probes").

1. Overhead: the connping probe's logon against a bare ``oracledb.connect_async()``
   loop (and a bare synchronous ``oracledb.connect()`` loop, for reference), and the
   sessionping probe's ping against a bare ``conn.ping()`` loop. Rounds alternate
   bare / probe so machine noise hits both alike. Goals: median logon ratio <= 1.02,
   ping overhead <= 20 us.
2. Accuracy: a delay proxy (``app.oraclesim.tooling.delayproxy``, a child process) between the
   probe and the simulator adds a fixed one-way delay to every chunk. Calibrated at
   zero delay in the same run. Goals: median ping - calibration within 0.3 ms of the
   injected round trip at 1, 5 and 20 ms; logon growing by round trips x RTT.

The simulator runs in a child process with its latency model off, so all time not
spent in the client is the proxy's and the kernel's.

Run:  .venv/bin/python bench/bench_probes.py [--rounds 200] [--accuracy-runs 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import oracledb

from app.oraclesim.tooling.delayproxy import DelayProxyProcess
from app.oraclesim.tooling.runner import SimulatorProcess
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import OracleEndpoint, ProbeSpec

USER, PASSWORD = "scott", "tiger"


def med(values: list[int]) -> float:
    return float(statistics.median(values))


def ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


async def overhead(port: int, rounds: int, warmup: int) -> dict[str, float]:
    dsn = f"127.0.0.1:{port}/FREEPDB1:dedicated"
    ep = OracleEndpoint(dsn, USER, PASSWORD)
    connping = create_probe(ProbeSpec("connping", ep))
    sessionping = create_probe(ProbeSpec("sessionping", ep, params={"query": False}))
    bare_conn = await oracledb.connect_async(user=USER, password=PASSWORD, dsn=dsn)
    bare_async: list[int] = []
    bare_sync: list[int] = []
    probe_logon: list[int] = []
    bare_ping: list[int] = []
    probe_ping: list[int] = []
    try:

        async def bare_logon() -> int:
            t0 = time.perf_counter_ns()
            conn = await oracledb.connect_async(user=USER, password=PASSWORD, dsn=dsn)
            t1 = time.perf_counter_ns()
            await conn.close()
            return t1 - t0

        async def probe_logon_once() -> int:
            s = await run_once(connping)
            assert s.ok and s.logon_ns is not None, s.error_message
            return s.logon_ns

        async def bare_ping_once() -> int:
            await bare_conn.ping()  # warm, as the probe does
            t0 = time.perf_counter_ns()
            await bare_conn.ping()
            return time.perf_counter_ns() - t0

        async def probe_ping_once() -> int:
            p = await run_once(sessionping)
            assert p.ok and p.ping_ns is not None, p.error_message
            return p.ping_ns

        def bare_sync_logon() -> int:
            t0 = time.perf_counter_ns()
            sconn = oracledb.connect(user=USER, password=PASSWORD, dsn=dsn)
            t1 = time.perf_counter_ns()
            sconn.close()
            return t1 - t0

        for i in range(warmup + rounds):
            # alternate the order, and let the server finish each close before the next
            # logon, so neither side systematically follows the other's cleanup
            pair = [(bare_async, bare_logon), (probe_logon, probe_logon_once)]
            pings = [(bare_ping, bare_ping_once), (probe_ping, probe_ping_once)]
            if i % 2:
                pair.reverse()
                pings.reverse()
            for out, fn in pair + pings:
                await asyncio.sleep(0.003)
                value = await fn()
                if i >= warmup:
                    out.append(value)
            await asyncio.sleep(0.003)
            value = bare_sync_logon()
            if i >= warmup:
                bare_sync.append(value)
    finally:
        await bare_conn.close()
        await sessionping.close()
    return {
        "bare_async_logon": med(bare_async),
        "bare_sync_logon": med(bare_sync),
        "probe_logon": med(probe_logon),
        "logon_ratio": med(probe_logon) / med(bare_async),
        # the same rounds paired: robust against load that drifts during the run
        "paired_ratio": 1
        + med([p - b for p, b in zip(probe_logon, bare_async, strict=True)]) / med(bare_async),
        "median_round_ratio": float(
            statistics.median([p / b for p, b in zip(probe_logon, bare_async, strict=True)])
        ),
        "bare_ping": med(bare_ping),
        "probe_ping": med(probe_ping),
        "ping_added": med(probe_ping) - med(bare_ping),
    }


async def accuracy_level(port: int, runs: int) -> dict[str, float]:
    """Probe pings and logons through the proxy, each interleaved with the same call
    made bare with python-oracledb (the reference: what the driver itself sees)."""
    dsn = f"127.0.0.1:{port}/FREEPDB1:dedicated"
    ep = OracleEndpoint(dsn, USER, PASSWORD)
    sessionping = create_probe(ProbeSpec("sessionping", ep, params={"query": False}))
    connping = create_probe(ProbeSpec("connping", ep))
    bare = await oracledb.connect_async(user=USER, password=PASSWORD, dsn=dsn)
    pings: list[int] = []
    bare_pings: list[int] = []
    logons: list[int] = []
    bare_logons: list[int] = []
    trips: set[int] = set()
    try:
        await run_once(sessionping)  # log on once, untimed here
        for _ in range(runs):
            p = await run_once(sessionping)
            assert p.ok and p.ping_ns is not None, p.error_message
            pings.append(p.ping_ns)
            await bare.ping()
            t0 = time.perf_counter_ns()
            await bare.ping()
            bare_pings.append(time.perf_counter_ns() - t0)
            c = await run_once(connping)
            assert c.ok and c.logon_ns is not None and c.round_trips, c.error_message
            logons.append(c.logon_ns)
            trips.add(c.round_trips)
            t0 = time.perf_counter_ns()
            conn = await oracledb.connect_async(user=USER, password=PASSWORD, dsn=dsn)
            bare_logons.append(time.perf_counter_ns() - t0)
            await conn.close()
    finally:
        await sessionping.close()
        await bare.close()
    assert len(trips) == 1
    return {
        "ping": med(pings),
        "bare_ping": med(bare_pings),
        "logon": med(logons),
        "bare_logon": med(bare_logons),
        "round_trips": float(trips.pop()),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--accuracy-runs", type=int, default=40)
    args = ap.parse_args()
    with SimulatorProcess(no_latency=True) as sim:
        o = asyncio.run(overhead(sim.port, args.rounds, args.warmup))
        print(f"== overhead ({args.rounds} alternating rounds after {args.warmup} warm-up)")
        print(
            f"logon median  bare connect_async {ms(o['bare_async_logon'])} ms"
            f"  connping probe {ms(o['probe_logon'])} ms"
            f"  ratio of medians {o['logon_ratio']:.3f}, median of per-round ratios"
            f" {o['median_round_ratio']:.3f} (goal <= 1.02), paired {o['paired_ratio']:.3f}"
            f"  [bare sync connect {ms(o['bare_sync_logon'])} ms]"
        )
        print(
            f"ping  median  bare conn.ping() {o['bare_ping'] / 1e3:.1f} us"
            f"  sessionping probe {o['probe_ping'] / 1e3:.1f} us"
            f"  added {o['ping_added'] / 1e3:+.1f} us (goal <= 20 us)"
        )
        print(f"== accuracy through the delay proxy ({args.accuracy_runs} runs per level)")
        levels = [0.0, 1.0, 5.0, 20.0]  # injected round trip, ms
        results: dict[float, dict[str, float]] = {}
        late: dict[float, dict[str, float | int]] = {}
        for rtt in levels:
            proxy = DelayProxyProcess("127.0.0.1", sim.port, rtt / 2000).start()
            try:
                results[rtt] = asyncio.run(accuracy_level(proxy.port, args.accuracy_runs))
            finally:
                proxy.stop()
            late[rtt] = proxy.stats
        cal = results[0.0]
        print(
            f"calibration (0 ms): ping {ms(cal['ping'])} ms, logon {ms(cal['logon'])} ms,"
            f" {cal['round_trips']:.0f} round trips"
        )
        print(
            "RTT ms | ping ms | ping-cal | error | bare ping-cal | logon ms | logon-cal |"
            " trips x RTT | error | bare logon-cal | proxy late p50/p90 us"
        )
        for rtt in levels[1:]:
            r = results[rtt]
            dping = (r["ping"] - cal["ping"]) / 1e6
            dbare = (r["bare_ping"] - cal["bare_ping"]) / 1e6
            dlogon = (r["logon"] - cal["logon"]) / 1e6
            dbare_logon = (r["bare_logon"] - cal["bare_logon"]) / 1e6
            expected = r["round_trips"] * rtt
            lp50 = late[rtt].get("late_us_p50", 0)
            lp90 = late[rtt].get("late_us_p90", 0)
            print(
                f"{rtt:6.1f} | {r['ping'] / 1e6:7.3f} | {dping:8.3f} | {dping - rtt:+6.3f} |"
                f" {dbare:13.3f} | {r['logon'] / 1e6:8.3f} | {dlogon:9.3f} |"
                f" {expected:11.1f} | {dlogon - expected:+6.3f} | {dbare_logon:14.3f} |"
                f" {lp50:.0f}/{lp90:.0f}"
            )


if __name__ == "__main__":
    main()
