"""sessionping, poolacquire, commit and sweep against the Oracle Net simulator."""

from __future__ import annotations

import asyncio

import pytest

from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import ProbeSpec
from app.samples import SampleStatus
from tests.fixtures.oraclesim import OracleSimHandle
from tests.probes.conftest import MODES, oracle_endpoint, run_probe


@pytest.mark.parametrize("mode", MODES)
def test_sessionping_every_mode(oraclesim: OracleSimHandle, mode: str) -> None:
    first, second, third = run_probe(ProbeSpec("sessionping", oracle_endpoint(oraclesim, mode)), 3)
    assert first.ok and first.logon_ns is not None and first.round_trips == 5
    assert first.server_type == mode.upper()
    for s in (second, third):
        assert s.ok and s.logon_ns is None and s.sid == first.sid
        assert s.extra["round_trips_run"] == 3  # warm ping, ping, query
        assert s.ping_ns is not None and s.query_ns is not None


def test_sessionping_records_the_reconnect(oraclesim: OracleSimHandle) -> None:
    async def go() -> list:  # type: ignore[type-arg]
        probe = create_probe(ProbeSpec("sessionping", oracle_endpoint(oraclesim), deadline_s=0.5))
        try:
            a = await run_once(probe)
            oraclesim.faults.add("drop", "ping", count=1)
            b = await run_once(probe)
            c = await run_once(probe)
            return [a, b, c]
        finally:
            await probe.close()

    a, b, c = asyncio.run(go())
    assert a.ok and b.status is SampleStatus.ERROR and b.error_code == "DPY-4011"
    assert c.ok and c.extra["reconnected"] is True and c.logon_ns is not None
    assert c.sid != a.sid


def test_sessionping_survives_a_killed_session(oraclesim: OracleSimHandle) -> None:
    async def go() -> list:  # type: ignore[type-arg]
        probe = create_probe(ProbeSpec("sessionping", oracle_endpoint(oraclesim), deadline_s=0.5))
        try:
            a = await run_once(probe)
            assert a.sid is not None
            oraclesim.kill_session(a.sid)
            b = await run_once(probe)
            c = await run_once(probe)
            return [a, b, c]
        finally:
            await probe.close()

    a, b, c = asyncio.run(go())
    assert a.ok and not b.ok and b.error_phase == "ping"
    assert c.ok and c.extra["reconnected"] is True


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("validation", ["foreground", "background"])
def test_poolacquire(oraclesim: OracleSimHandle, mode: str, validation: str) -> None:
    spec = ProbeSpec(
        "poolacquire", oracle_endpoint(oraclesim, mode), params={"validation": validation}
    )
    samples = run_probe(spec, 4)
    assert all(s.ok for s in samples), [s.error_message for s in samples]
    assert samples[0].extra["pool_created"] is True
    assert "pool_created" not in samples[1].extra
    for s in samples:
        assert s.acquire_ns is not None and s.query_ns is not None
        pool = s.extra["pool"]
        assert pool["validation"] == validation
        assert pool["ping_interval"] == (0 if validation == "foreground" else -1)
    sids = {s.sid for s in samples}
    pings = sum(
        1
        for c in oraclesim.ground_truth()
        if c["sid"] in sids and c["mode"] == mode
        for p in c["phases"]
        if p["phase"] == "ping"
    )
    if validation == "background":
        assert pings == 0  # acquire never pinged
    else:
        assert pings >= 3  # every acquire of an already pooled connection pinged


@pytest.mark.parametrize("mode", MODES)
def test_commit(oraclesim: OracleSimHandle, mode: str) -> None:
    samples = run_probe(ProbeSpec("commit", oracle_endpoint(oraclesim, mode)), 2)
    for s in samples:
        assert s.ok, s.error_message
        assert s.commit_ns == s.extra["insert_ns"] + s.extra["commit_only_ns"]
    assert samples[0].logon_ns is not None and samples[1].logon_ns is None


def test_commit_without_scratch_table_says_ora_00942(oraclesim: OracleSimHandle) -> None:
    spec = ProbeSpec("commit", oracle_endpoint(oraclesim), params={"table": "not_there"})
    (s,) = run_probe(spec)
    assert (s.error_code, s.error_phase) == ("ORA-00942", "insert")


@pytest.mark.parametrize("mode", MODES)
def test_sweep(oraclesim: OracleSimHandle, mode: str) -> None:
    spec = ProbeSpec(
        "sweep", oracle_endpoint(oraclesim, mode), params={"levels": [1, 2], "logons": 3}
    )
    (s,) = run_probe(spec)
    assert s.ok, s.error_message
    assert [(lv["level"], lv["logons"], lv["errors"]) for lv in s.extra["levels"]] == [
        (1, 3, 0),
        (2, 6, 0),
    ]
    assert s.round_trips == 5 and s.logon_phases is not None


def test_sweep_counts_refusals(oraclesim: OracleSimHandle) -> None:
    oraclesim.faults.add("refuse", count=2)
    spec = ProbeSpec("sweep", oracle_endpoint(oraclesim), params={"levels": [1, 2], "logons": 2})
    (s,) = run_probe(spec)
    assert s.status is SampleStatus.ERROR and s.error_code == "TNS-12520"
    assert sum(lv["errors"] for lv in s.extra["levels"]) == 2
    assert sum(lv["logons"] for lv in s.extra["levels"]) == 4


def test_poolacquire_reports_the_server_type(oraclesim: OracleSimHandle) -> None:
    (s,) = run_probe(ProbeSpec("poolacquire", oracle_endpoint(oraclesim, "pooled")))
    assert s.ok and s.server_type == "POOLED" and s.sid is not None


@pytest.mark.parametrize("boundary", ["statement", "transaction"])
def test_drcp_implicit_pooling_boundary(oraclesim: OracleSimHandle, boundary: str) -> None:
    ep = oracle_endpoint(oraclesim, "pooled", pool_boundary=boundary)
    for kind in ("connping", "sessionping", "commit"):
        samples = run_probe(ProbeSpec(kind, ep), 2)
        assert all(s.ok for s in samples), (kind, [s.error_message for s in samples])
        assert samples[0].server_type == "POOLED"
