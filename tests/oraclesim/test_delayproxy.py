"""The delay proxy, against a plain asyncio echo server (real loopback sockets)."""

from __future__ import annotations

import asyncio
import socket
import statistics
import time

import pytest

from app.oraclesim.tooling.delayproxy import DelayProxy, DelayProxyThread


async def _echo_server() -> asyncio.Server:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while data := await r.read(65536):
            w.write(data)
            await w.drain()
        w.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def _rtts(port: int, n: int, payload: bytes = b"x" * 64) -> list[float]:
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            s.sendall(payload)
            got = b""
            while len(got) < len(payload):
                got += s.recv(65536)
            out.append(time.perf_counter() - t0)
            assert got == payload
        return out


def test_round_trip_costs_twice_the_delay() -> None:
    async def serve_forever(started: asyncio.Future[int], stop: asyncio.Event) -> None:
        server = await _echo_server()
        started.set_result(server.sockets[0].getsockname()[1])
        async with server:
            await stop.wait()

    import threading

    loop = asyncio.new_event_loop()
    fut: asyncio.Future[int] = loop.create_future()
    stop = asyncio.Event()
    t = threading.Thread(target=loop.run_until_complete, args=(serve_forever(fut, stop),))
    t.start()
    while not fut.done():
        time.sleep(0.01)
    port = fut.result()
    try:
        with DelayProxyThread("127.0.0.1", port, 0.0) as proxy:
            base = statistics.median(_rtts(proxy.port, 20))
            proxy.set_delay(0.002)
            delayed = statistics.median(_rtts(proxy.port, 20))
            assert proxy.proxy.connections == 2
        # 2 x 2 ms one-way, allowing for scheduling noise but not for a missing delay
        assert 0.0039 <= delayed - base <= 0.0055, (base, delayed)
    finally:
        loop.call_soon_threadsafe(stop.set)
        t.join(10)
        loop.close()


def test_large_transfer_arrives_whole_and_in_order() -> None:
    async def go() -> bytes:
        server = await _echo_server()
        port = server.sockets[0].getsockname()[1]
        async with server, DelayProxy("127.0.0.1", port, 0.001) as proxy:
            r, w = await asyncio.open_connection(proxy.host, proxy.port)
            blob = bytes(range(256)) * 4096  # 1 MiB in many chunks
            w.write(blob)
            await w.drain()
            w.write_eof()
            got = await r.read(-1)
            w.close()
            return got

    got = asyncio.run(go())
    assert got == bytes(range(256)) * 4096


def test_negative_delay_is_refused_and_dead_upstream_closes_client() -> None:
    with pytest.raises(ValueError, match="delay_s must be >= 0"):
        DelayProxy("127.0.0.1", 1, -1.0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]

    async def go() -> bytes:
        async with DelayProxy("127.0.0.1", dead) as proxy:
            r, w = await asyncio.open_connection(proxy.host, proxy.port)
            data = await asyncio.wait_for(r.read(), 5)
            w.close()
            return data

    assert asyncio.run(go()) == b""


def test_proxy_as_a_child_process() -> None:
    from app.oraclesim.tooling.delayproxy import DelayProxyProcess

    async def go() -> bytes:
        server = await _echo_server()
        port = server.sockets[0].getsockname()[1]
        async with server:
            with DelayProxyProcess("127.0.0.1", port, 0.001) as proxy:
                r, w = await asyncio.open_connection(proxy.host, proxy.port)
                w.write(b"hello")
                await w.drain()
                data = await asyncio.wait_for(r.readexactly(5), 10)
                w.close()
                return data

    assert asyncio.run(go()) == b"hello"


def test_cli_rejects_bad_upstream() -> None:
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "app.oraclesim.tooling.delayproxy", "--upstream", "nohostport"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 2 and "--upstream must be HOST:PORT" in res.stderr
