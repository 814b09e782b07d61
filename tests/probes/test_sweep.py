from __future__ import annotations

import asyncio

import pytest

from app.probes.base import ProbeConfigError
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import ProbeSpec
from app.probes.sweep import MAX_LEVEL
from app.samples import SampleStatus
from tests.fixtures.oraclesim import OracleSimHandle
from tests.probes.conftest import PgEndpoints, oracle_endpoint, run_probe


def test_sweep_levels_postgres(all_pg_endpoints: PgEndpoints) -> None:
    for route in ("tcp", "bouncer_transaction"):
        spec = ProbeSpec("sweep", all_pg_endpoints[route], params={"levels": [1, 3], "logons": 4})
        (s,) = run_probe(spec)
        assert s.ok, s.error_message
        levels = s.extra["levels"]
        assert [lv["level"] for lv in levels] == [1, 3]
        assert [lv["logons"] for lv in levels] == [4, 12]
        assert all(lv["errors"] == 0 and lv["throughput_per_s"] > 0 for lv in levels)
        assert s.logon_ns == levels[0]["logon_ns"]["p50"]
        assert levels[1]["logon_ns"]["max"] >= levels[1]["logon_ns"]["p50"]


def test_sweep_guards() -> None:
    from app.probes.spec import PostgresEndpoint

    ep = PostgresEndpoint("h", 1, "d", "u")
    with pytest.raises(ProbeConfigError, match="levels"):
        create_probe(ProbeSpec("sweep", ep, params={"levels": [MAX_LEVEL + 1]}))
    with pytest.raises(ProbeConfigError, match="logons"):
        create_probe(ProbeSpec("sweep", ep, params={"levels": [32, 32], "logons": 100}))
    with pytest.raises(ProbeConfigError, match="unknown parameter"):
        create_probe(ProbeSpec("sweep", ep, params={"parallel": 3}))


def test_sweep_failures_make_an_error_sample(pg_endpoints: PgEndpoints) -> None:
    from dataclasses import replace

    ep = replace(pg_endpoints["tcp"], dbname="missing_db")
    (s,) = run_probe(ProbeSpec("sweep", ep, params={"levels": [1, 2], "logons": 2}))
    assert s.status is SampleStatus.ERROR and s.error_code == "PG-3D000"
    assert [lv["errors"] for lv in s.extra["levels"]] == [2, 4]
    assert s.error_message is not None and s.error_message.startswith("6 logon(s) failed")
    assert s.error_phase == "level 1"  # where it first failed, not the last level walked


def test_a_failure_at_level_1_is_reported_at_level_1(oraclesim: OracleSimHandle) -> None:
    """Levels [1, 2]: the listener refuses the first connection only (level 1); the sample
    names level 1, where it happened, though level 2 ran last and succeeded."""
    oraclesim.faults.add("refuse", count=1)
    spec = ProbeSpec("sweep", oracle_endpoint(oraclesim), params={"levels": [1, 2], "logons": 2})
    (s,) = run_probe(spec)
    assert (s.status, s.error_code, s.error_phase) == (
        SampleStatus.ERROR,
        "TNS-12520",
        "level 1",
    )
    assert [lv["errors"] for lv in s.extra["levels"]] == [1, 0]
    assert [lv["logons"] for lv in s.extra["levels"]] == [1, 4]


def test_one_sweep_per_endpoint_at_a_time(pg_endpoints: PgEndpoints) -> None:
    ep = pg_endpoints["tcp"]

    async def go() -> list:  # type: ignore[type-arg]
        a = create_probe(ProbeSpec("sweep", ep, params={"levels": [2], "logons": 5}))
        b = create_probe(ProbeSpec("sweep", ep, params={"levels": [1], "logons": 1}))
        return list(await asyncio.gather(run_once(a), run_once(b)))

    first, second = asyncio.run(go())
    assert first.ok
    assert second.status is SampleStatus.ERROR and "already running" in (second.error_message or "")
