from __future__ import annotations

import asyncio
import os
import socket
import time

import pytest

from app.probes.base import Probe, ProbeContext
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import OracleEndpoint, PostgresEndpoint, ProbeSpec
from app.samples import ErrorClass, SampleStatus
from tests.probes.hanging import hanging_listener


def _open_sockets() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            continue
    return n


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _oracle(port: int, password: str = "tiger") -> OracleEndpoint:
    return OracleEndpoint(f"127.0.0.1:{port}/FREEPDB1", "scott", password)


@pytest.mark.parametrize("kind", ["oracle", "postgres"])
def test_hanging_listener_gives_timeout_sample_within_deadline(kind: str) -> None:
    deadline = 0.5
    with hanging_listener() as port:
        ep = _oracle(port) if kind == "oracle" else PostgresEndpoint("127.0.0.1", port, "db", "u")

        async def go() -> tuple[list[object], int, int, int]:
            before_sockets = _open_sockets()
            probe = create_probe(ProbeSpec("connping", ep, deadline_s=deadline))
            samples = []
            for _ in range(3):
                t0 = time.perf_counter()
                samples.append(await run_once(probe))
                elapsed = time.perf_counter() - t0
                assert elapsed <= deadline * 1.10, elapsed
            await asyncio.sleep(0.05)
            tasks = len(asyncio.all_tasks()) - 1
            return samples, before_sockets, _open_sockets(), tasks

        samples, before, after, tasks = asyncio.run(go())
    for s in samples:
        assert s.status is SampleStatus.TIMEOUT
        assert s.error_class is ErrorClass.TIMEOUT and s.error_code == "TIMEOUT"
        assert s.error_phase is not None and s.error_phase.startswith("logon")
        assert s.total_ns is not None and deadline * 1e9 <= s.total_ns <= deadline * 1.1e9
        assert s.logon_ns is None
    if kind == "oracle":  # the TCP handshake succeeded; CONNECT got no answer
        assert samples[0].error_phase == "logon:connect"
    assert after <= before, "abandoned connection attempts left sockets open"
    assert tasks == 0, "abandoned connection attempts left tasks behind"


@pytest.mark.parametrize("kind", ["oracle", "postgres"])
def test_refused_port_is_a_net_error(kind: str) -> None:
    port = _free_port()
    ep = (
        _oracle(port, "s3cr3t-pw")
        if kind == "oracle"
        else PostgresEndpoint("127.0.0.1", port, "db", "u", password="s3cr3t-pw")
    )

    async def go() -> object:
        return await run_once(create_probe(ProbeSpec("connping", ep, deadline_s=5)))

    s = asyncio.run(go())
    assert s.status is SampleStatus.ERROR  # type: ignore[attr-defined]
    assert s.error_class is ErrorClass.NET  # type: ignore[attr-defined]
    assert s.error_code == "NET-ECONNREFUSED"  # type: ignore[attr-defined]
    assert s.error_phase == ("logon:tcp_connect" if kind == "oracle" else "logon")  # type: ignore[attr-defined]
    assert "s3cr3t-pw" not in (s.error_message or "")  # type: ignore[attr-defined]


def test_missing_unix_socket_is_a_net_error(tmp_path: object) -> None:
    ep = PostgresEndpoint(str(tmp_path), 5999, "db", "u")
    s = asyncio.run(run_once(create_probe(ProbeSpec("connping", ep))))
    assert s.error_code == "NET-ENOENT"


class _Boom(Probe):
    name = "boom"

    def __init__(self, spec: ProbeSpec, where: str) -> None:
        super().__init__(spec)
        self.where = where
        self.cleaned = 0
        self.resets = 0

    async def run(self, ctx: ProbeContext) -> None:
        with ctx.timed("logon", "logon_ns"):
            await asyncio.sleep(0)

        async def cleanup() -> None:
            self.cleaned += 1

        ctx.defer(cleanup)
        ctx.phase = self.where
        if self.where == "hang":
            await asyncio.sleep(3600)
        raise RuntimeError("password=hunter2 went wrong\nsecond line")

    async def reset(self) -> None:
        self.resets += 1


def test_failure_keeps_measured_phases_and_runs_cleanups() -> None:
    spec = ProbeSpec("boom", PostgresEndpoint("h", 1, "d", "u", password="hunter2"), deadline_s=1)
    probe = _Boom(spec, "ping")
    s = asyncio.run(run_once(probe))
    assert s.status is SampleStatus.ERROR and s.error_class is ErrorClass.PROBE
    assert s.error_code == "PROBE-RuntimeError" and s.error_phase == "ping"
    assert s.logon_ns is not None and s.logon_ns >= 0
    assert s.error_message == "password=*** went wrong | second line"
    assert probe.cleaned == 1 and probe.resets == 1


def test_timeout_names_the_phase_and_cleans_up() -> None:
    spec = ProbeSpec("boom", PostgresEndpoint("h", 1, "d", "u"), deadline_s=0.2)
    probe = _Boom(spec, "hang")
    s = asyncio.run(run_once(probe))
    assert s.status is SampleStatus.TIMEOUT and s.error_phase == "hang"
    assert s.error_message == "deadline of 0.2 s exceeded during hang"
    assert probe.cleaned == 1 and probe.resets == 1


def test_driver_timeout_is_not_the_deadline() -> None:
    class DriverTimeout(Probe):
        name = "dt"

        async def run(self, ctx: ProbeContext) -> None:
            raise TimeoutError("driver gave up")

    s = asyncio.run(run_once(DriverTimeout(ProbeSpec("dt", PostgresEndpoint("h", 1, "d", "u")))))
    assert s.status is SampleStatus.ERROR and s.error_code == "NET-ETIMEDOUT"


def test_a_task_that_swallows_cancellation_is_abandoned_then_ended() -> None:
    """The sample comes back while the stubborn task still lives (order, not a stopwatch):
    the runner abandons it instead of waiting, and its background re-cancels end it."""
    from app.probes import runner

    stubborn_rounds = 30  # 30 re-cancels at RECANCEL_S apart: seconds, if anyone waited

    class Stubborn(Probe):
        name = "stubborn"
        swallowed = 0

        async def run(self, ctx: ProbeContext) -> None:
            ctx.phase = "ping"
            while True:  # like a driver that answers cancellation with another wait
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    Stubborn.swallowed += 1
                    if Stubborn.swallowed >= stubborn_rounds:
                        raise

    async def go() -> tuple[object, int, int]:
        s = await run_once(Stubborn(ProbeSpec("x", PostgresEndpoint("h", 1, "d", "u"), 0.2)))
        swallowed_at_return = Stubborn.swallowed
        abandoned = len(runner._ABANDONED)
        for _ in range(600):  # generous: up to 30 s on a loaded machine
            if not runner._ABANDONED:
                break
            await asyncio.sleep(0.05)
        return s, swallowed_at_return, abandoned

    s, swallowed_at_return, abandoned = asyncio.run(go())
    assert s.status is SampleStatus.TIMEOUT  # type: ignore[attr-defined]
    assert 1 <= swallowed_at_return < stubborn_rounds  # returned while the task lived on
    assert abandoned == 1 and not runner._ABANDONED  # ended by the background re-cancels
    assert Stubborn.swallowed == stubborn_rounds


@pytest.mark.parametrize(
    ("kind", "params", "phase"),
    [
        ("poolacquire", {}, "acquire"),
        ("sweep", {"levels": [1, 2], "logons": 2}, "level 1"),
        ("sessionping", {}, "logon:connect"),
        ("commit", {}, "logon:connect"),
    ],
)
def test_every_probe_kind_times_out_on_a_hanging_listener(
    kind: str, params: dict[str, object], phase: str
) -> None:
    deadline = 0.4
    with hanging_listener() as port:

        async def go() -> tuple[object, float, int]:
            probe = create_probe(ProbeSpec(kind, _oracle(port), deadline_s=deadline, params=params))
            t0 = time.perf_counter()
            s = await run_once(probe)
            elapsed = time.perf_counter() - t0
            await probe.close()
            await asyncio.sleep(0.05)
            return s, elapsed, len(asyncio.all_tasks()) - 1

        s, elapsed, tasks = asyncio.run(go())
    assert s.status is SampleStatus.TIMEOUT and s.error_phase == phase  # type: ignore[attr-defined]
    assert elapsed <= deadline * 1.10 and tasks == 0
