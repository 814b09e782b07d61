"""Benchmark: how many logons/s and pings/s the Oracle Net simulator serves (latency off).

The simulator runs in its own process (SimulatorProcess); the load comes from worker
processes running the unmodified python-oracledb thin driver, sync, each with a few
threads. A baseline in the same run: an asyncio TCP echo server in its own process with
the same number of raw-socket clients (the floor of one asyncio round trip here), so the
ping figure can be read as a ratio against it.

    uv run --frozen python bench/bench_oraclesim.py [--seconds 5] [--procs 2] [--threads 2]

Numbers: logons/s = completed connect()+close() pairs (TCP connect, CONNECT/ACCEPT,
negotiation, two auth round trips, logoff) per second summed over all workers;
pings/s = completed Connection.ping() round trips per second on already open connections.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import oracledb

from app.oraclesim.tooling.runner import SimulatorProcess


def _threads(n: int, window: tuple[float, float], body: Callable[[float], int]) -> int:
    """Run body(deadline) in n threads over the same wall-clock window (start, seconds)."""
    counts = [0] * n
    start, seconds = window
    time.sleep(max(0.0, start - time.time()))

    def run(i: int) -> None:
        counts[i] = body(start + seconds)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts)


def logon_worker(dsn: str, threads: int, window: tuple[float, float], out: Any) -> None:
    def body(deadline: float) -> int:
        n = 0
        while time.time() < deadline:
            oracledb.connect(user="scott", password="tiger", dsn=dsn).close()
            n += 1
        return n

    out.put(_threads(threads, window, body))


def ping_worker(dsn: str, threads: int, window: tuple[float, float], out: Any) -> None:
    conns = [oracledb.connect(user="scott", password="tiger", dsn=dsn) for _ in range(threads)]
    it = iter(conns)
    lock = threading.Lock()

    def body(deadline: float) -> int:
        with lock:
            conn = next(it)
        n = 0
        while time.time() < deadline:
            for _ in range(50):
                conn.ping()
            n += 50
        return n

    out.put(_threads(threads, window, body))
    for c in conns:
        c.close()


def echo_server(port_out: Any) -> None:
    class Echo(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport

        def data_received(self, data: bytes) -> None:
            self.transport.write(data)  # type: ignore[attr-defined]

    async def main() -> None:
        server = await asyncio.get_running_loop().create_server(Echo, "127.0.0.1", 0)
        port_out.put(server.sockets[0].getsockname()[1])
        await asyncio.sleep(3600)

    asyncio.run(main())


def echo_worker(port: int, threads: int, window: tuple[float, float], out: Any) -> None:
    def body(deadline: float) -> int:
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            n = 0
            msg = b"x" * 21  # the size of a TTC ping request
            while time.time() < deadline:
                for _ in range(50):
                    s.sendall(msg)
                    s.recv(64)
                n += 50
            return n

    out.put(_threads(threads, window, body))


def run_load(
    target: Callable[..., None], arg: Any, procs: int, threads: int, seconds: float
) -> float:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    window = (time.time() + 3.0, seconds)  # all workers start together, after their imports
    workers = [ctx.Process(target=target, args=(arg, threads, window, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    total = sum(out.get(timeout=seconds + 60) for _ in workers)
    for w in workers:
        w.join(30)
    return total / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--procs", type=int, default=2, help="client worker processes")
    ap.add_argument("--threads", type=int, default=2, help="threads per worker process")
    ap.add_argument("--modes", default="dedicated,shared,pooled")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    port_q = ctx.Queue()
    echo = ctx.Process(target=echo_server, args=(port_q,), daemon=True)
    echo.start()
    echo_port = port_q.get(timeout=30)
    print(f"load: {args.procs} processes x {args.threads} threads, {args.seconds:.0f} s each")
    with SimulatorProcess(no_latency=True) as sim:
        for mode in args.modes.split(","):
            dsn = f"127.0.0.1:{sim.port}/FREEPDB1:{mode}"
            rate = run_load(logon_worker, dsn, args.procs, args.threads, args.seconds)
            print(f"logons/s  {mode:<9} {rate:10.0f}")
        dsn = f"127.0.0.1:{sim.port}/FREEPDB1:dedicated"
        pings = run_load(ping_worker, dsn, args.procs, args.threads, args.seconds)
        print(f"pings/s   dedicated {pings:10.0f}")
    echoes = run_load(echo_worker, echo_port, args.procs, args.threads, args.seconds)
    print(f"baseline: asyncio echo round trips/s {echoes:10.0f}")
    print(f"ratio pings/s : echo round trips/s = {pings / echoes:.2f}")
    echo.terminate()
    echo.join(10)


if __name__ == "__main__":
    main()
