"""python-oracledb 26.1's two defects that made connwatch record failures no database caused
(docs/probes.md, "Driver defects connwatch works around"). Each is reproduced with the
unmodified driver against the simulator, then shown harmless through connwatch's probes:
400 DRCP poolacquire runs and 300 redirected shared-server logons, zero false failures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import oracledb
import pytest

from app.drivers.eventloop import RedirectSafeEventLoop
from app.oraclesim import SimConfig
from app.oraclesim.config import MODES, LatencyProfile, PhaseLatency
from app.probes.poolacquire import PoolAcquire
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import ProbeSpec
from app.samples import ErrorClass, Sample
from tests.fixtures.oraclesim import OracleSimHandle
from tests.oraclesim._driver import cause_code, code, make_pool_async
from tests.probes.conftest import oracle_endpoint, run_probe, run_with

QUERIES = ("select 1 from dual", "select sys_context('USERENV','SID') from dual")


# --- DRCP: the statement cache's queue of cursors to close overflows ----------------------


# The driver's own Cursor.__del__ closes the failed cursor again and hits the same
# IndexError ("Exception ignored in BaseCursor.__del__"): part of the defect shown here.
UNRAISABLE = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@UNRAISABLE
def test_bare_async_drcp_pool_fails_once_its_cursor_queue_is_full(
    oraclesim: OracleSimHandle,
) -> None:
    """An application's loop over a python-oracledb asyncio DRCP pool: acquire, two
    statements, release. Every statement after a DRCP release is queued for closing and
    never sent (no session piggyback comes back): run 1's statements are cached, runs 2
    to 151 queue 300 ids, and with max_open_cursors = 300 the 301st, in run 152, raises
    IndexError from the cursor's close."""

    async def loop() -> tuple[int, str, int]:
        pool = make_pool_async(oraclesim, min=1, max=2, increment=1, cclass="BARE")
        try:
            for run in range(1, 401):
                conn = await pool.acquire()
                limit = conn.max_open_cursors
                try:
                    for sql in QUERIES:
                        with conn.cursor() as cur:
                            await cur.execute(sql)
                            await cur.fetchone()
                except IndexError as exc:
                    return run, str(exc), limit
                await pool.release(conn)
            return 0, "", 0
        finally:
            await pool.close(force=True)

    run, message, limit = asyncio.run(loop())
    assert limit == 300
    assert (run, message) == (limit // len(QUERIES) + 2, "array assignment index out of range")


@pytest.mark.parametrize("validation", ["foreground", "background"])
def test_400_drcp_poolacquire_runs_without_a_false_failure(
    oraclesim: OracleSimHandle, validation: str
) -> None:
    spec = ProbeSpec(
        "poolacquire", oracle_endpoint(oraclesim, "pooled"), params={"validation": validation}
    )
    samples = run_probe(spec, runs=400)
    assert [(s.error_code, s.error_phase) for s in samples if not s.ok] == []
    assert all(s.server_type == "POOLED" for s in samples)
    assert [i for i, s in enumerate(samples) if s.extra.get("pool_created")] == [0]
    # replaced (untimed, warmed) before run 151 and again 149 runs later
    recycled = [i for i, s in enumerate(samples) if s.extra.get("pool_recycled")]
    assert recycled == [149, 298]
    assert all(s.acquire_ns is not None and s.query_ns is not None for s in samples)


@UNRAISABLE
def test_if_the_drcp_defect_strikes_it_is_a_probe_side_error(oraclesim: OracleSimHandle) -> None:
    """Without the recycling, run 152 hits the driver's IndexError: recorded as a
    probe-side error (class PROBE), never the database's, and the next run is fine."""

    class Unguarded(PoolAcquire):
        def _recycle_due(self) -> bool:
            return False

    spec = ProbeSpec("poolacquire", oracle_endpoint(oraclesim, "pooled"))
    samples = run_with(lambda: Unguarded(spec), runs=153)
    failed = [(i, s) for i, s in enumerate(samples) if not s.ok]
    assert [i for i, _ in failed] == [151]
    s = failed[0][1]
    assert (s.error_class, s.error_code, s.error_phase) == (
        ErrorClass.PROBE,
        "PROBE-IndexError",
        "query",
    )
    assert samples[152].ok and samples[152].extra.get("pool_created")


# --- shared server: the listener's REDIRECT races the dispatcher's reply -------------------


@pytest.fixture(scope="module")
def redirecting() -> Iterator[OracleSimHandle]:
    """A simulator whose listener REDIRECTs shared-server connects to its dispatcher, with
    1 ms of accept latency so the dispatcher's reply is awaited for a moment (as on a
    network) and nothing else slowed down."""
    cfg = SimConfig.default()
    quick = LatencyProfile(
        phases={"accept": PhaseLatency(1.0, 0.0)}, drift=0.0, spike_probability=0.0, load=0.0
    )
    for svc in cfg.services.values():
        svc.latency = {m: quick for m in MODES}
    cfg.services["FREEPDB1"].shared_redirect = True
    handle = OracleSimHandle(cfg)
    handle.start()
    try:
        yield handle
    finally:
        handle.stop()


def _dsn(sim: OracleSimHandle) -> str:
    return sim.dsn("FREEPDB1", "shared")


def test_bare_async_driver_loses_redirected_logons(redirecting: OracleSimHandle) -> None:
    """python-oracledb's asyncio connect on an ordinary event loop: some redirected logons
    fail with DPY-6005 / DPY-4011 although the dispatcher closed nothing; the synchronous
    driver never does."""

    async def loop() -> tuple[int, BaseException | None]:
        for n in range(1, 301):
            try:
                conn = await oracledb.connect_async(
                    user="scott", password="tiger", dsn=_dsn(redirecting)
                )
            except oracledb.Error as exc:
                return n, exc
            await conn.close()
        return 300, None

    tried, exc = asyncio.run(loop())
    assert exc is not None, f"no redirected logon of {tried} lost: the race did not show"
    assert (code(exc), cause_code(exc)) == ("DPY-6005", "DPY-4011")
    for _ in range(100):
        with oracledb.connect(user="scott", password="tiger", dsn=_dsn(redirecting)) as conn:
            conn.ping()


def test_300_redirected_logons_through_connwatch(redirecting: OracleSimHandle) -> None:
    samples = run_probe(ProbeSpec("connping", oracle_endpoint(redirecting, "shared")), runs=300)
    assert [(s.error_code, s.error_phase) for s in samples if not s.ok] == []
    # every logon really was redirected: a second CONNECT, to the dispatcher
    assert all(s.logon_phases is not None and "connect_2" in s.logon_phases for s in samples)
    assert all(s.server_type == "SHARED" and s.round_trips == 6 for s in samples)


def test_on_a_foreign_event_loop_the_race_is_a_probe_side_error(
    redirecting: OracleSimHandle,
) -> None:
    """Run on an ordinary asyncio loop (not connwatch's), the race still strikes, but its
    DPY-4011 after a REDIRECT is recorded as probe-side, never as the database's."""

    async def loop() -> list[Sample]:
        probe = create_probe(ProbeSpec("connping", oracle_endpoint(redirecting, "shared")))
        out: list[Sample] = []
        try:
            for _ in range(300):
                out.append(await run_once(probe))
                if not out[-1].ok:
                    break
        finally:
            await probe.close()
        return out

    samples = asyncio.run(loop())
    failed = [s for s in samples if not s.ok]
    assert failed, f"no logon of {len(samples)} lost: the race did not show"
    s = failed[0]
    assert (s.error_class, s.error_code) == (ErrorClass.PROBE, "PROBE-DPY-4011")
    assert s.error_phase is not None and s.error_phase.startswith("logon:")
    assert "REDIRECT race" in (s.error_message or "")


def test_the_loop_detaches_a_protocols_abandoned_transport() -> None:
    """The mechanism, with plain asyncio servers: one protocol object connects twice (as
    python-oracledb does on a REDIRECT); the first server then closes. On an ordinary loop
    the protocol hears that connection_lost; on connwatch's loop it does not, and the
    abandoned transport is closed."""

    class Proto(asyncio.Protocol):
        def __init__(self) -> None:
            self.lost = 0
            self.data = b""

        def data_received(self, data: bytes) -> None:
            self.data += data

        def connection_lost(self, exc: Exception | None) -> None:
            self.lost += 1

    async def scenario() -> tuple[int, bytes, bool]:
        first_closes = asyncio.Event()

        async def listener(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            w.write(b"REDIRECT")
            await first_closes.wait()
            w.close()

        async def dispatcher(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await r.read(1)
            w.write(b"ACCEPT")
            await r.read(1)

        loop = asyncio.get_running_loop()
        s1 = await asyncio.start_server(listener, "127.0.0.1", 0)
        s2 = await asyncio.start_server(dispatcher, "127.0.0.1", 0)
        proto = Proto()
        t1, _ = await loop.create_connection(
            lambda: proto, "127.0.0.1", s1.sockets[0].getsockname()[1]
        )
        await asyncio.sleep(0.05)
        t2, _ = await loop.create_connection(
            lambda: proto, "127.0.0.1", s2.sockets[0].getsockname()[1]
        )
        first_closes.set()
        t2.write(b"C")
        await asyncio.sleep(0.2)
        lost_before_own_close, closed = proto.lost, t1.is_closing()
        t2.close()
        t1.close()
        for s in (s1, s2):
            s.close()
        await asyncio.sleep(0.05)
        return lost_before_own_close, proto.data, closed

    lost, data, closed = asyncio.run(scenario())
    assert (lost, data) == (1, b"REDIRECTACCEPT")  # the abandoned transport's loss arrives
    with asyncio.Runner(loop_factory=RedirectSafeEventLoop) as runner:
        lost, data, closed = runner.run(scenario())
    assert (lost, data, closed) == (0, b"REDIRECTACCEPT", True)
