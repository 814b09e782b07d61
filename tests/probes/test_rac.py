"""RAC: probes against one service served by two instances; every sample names the
instance that served it, and when one instance goes down its failures carry its name
(a mode pinned to it, or a kept session on it) while the other instance carries on."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from app.oraclesim import SimConfig
from app.oraclesim.config import InstanceConfig
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import OracleEndpoint, ProbeSpec
from app.samples import Sample
from tests.fixtures.oraclesim import OracleSimHandle
from tests.probes.conftest import run_probe


@pytest.fixture
def rac(oraclesim_factory) -> OracleSimHandle:
    cfg = SimConfig.default(no_latency=True)
    cfg.instances = (InstanceConfig("SALES1", 1), InstanceConfig("SALES2", 2))
    return oraclesim_factory(cfg)


def test_connping_samples_name_both_instances(rac: OracleSimHandle) -> None:
    ep = OracleEndpoint(rac.dsn("FREEPDB1", "dedicated"), "scott", "tiger")
    samples = run_probe(ProbeSpec("connping", ep), runs=6)
    assert all(s.ok for s in samples)
    assert Counter(s.instance for s in samples) == {"SALES1": 3, "SALES2": 3}
    assert {s.extra["instance_number"] for s in samples} == {1, 2}


def test_one_instance_down_shows_as_that_instances_errors_only(rac: OracleSimHandle) -> None:
    dsn = rac.dsn("FREEPDB1", "dedicated")
    pinned = {
        n: OracleEndpoint(dsn, "scott", "tiger", instance_name=n) for n in ("SALES1", "SALES2")
    }
    balanced = OracleEndpoint(dsn, "scott", "tiger")

    async def go() -> dict[str, list[Sample]]:
        kept = {
            n: create_probe(ProbeSpec("sessionping", ep, deadline_s=5)) for n, ep in pinned.items()
        }
        out: dict[str, list[Sample]] = {k: [] for k in ("s1", "s2", "c1", "c2", "bal")}
        try:
            for phase in ("up", "down", "down", "up"):
                if phase == "down" and not rac.faults.active():
                    rac.faults.add("instance_down", instance="SALES2")
                if phase == "up":
                    rac.faults.clear()
                out["s1"].append(await run_once(kept["SALES1"]))
                out["s2"].append(await run_once(kept["SALES2"]))
                for key, n in (("c1", "SALES1"), ("c2", "SALES2")):
                    out[key].append(await run_once(create_probe(ProbeSpec("connping", pinned[n]))))
                out["bal"].append(await run_once(create_probe(ProbeSpec("connping", balanced))))
        finally:
            for p in kept.values():
                await p.close()
        return out

    out = asyncio.run(go())
    # the instance that stayed up: every sample fine, whichever way it was reached
    assert all(s.ok and s.instance == "SALES1" for s in out["s1"] + out["c1"])
    assert all(s.ok for s in out["bal"])
    assert [s.instance for s in out["bal"][1:3]] == ["SALES1", "SALES1"]  # not sent to SALES2
    # the instance that went down: its failures carry its name
    s2 = out["s2"]
    assert s2[0].ok and s2[3].ok and s2[3].extra.get("reconnected") is True
    assert [s.ok for s in s2[1:3]] == [False, False]
    assert {s.instance for s in s2} == {"SALES2"}
    assert s2[1].error_phase == "ping" and s2[1].error_code in ("DPY-4011", "DPY-1001")
    c2 = out["c2"]
    assert [s.ok for s in c2] == [True, False, False, True]
    assert {s.instance for s in c2} == {"SALES2"}
    assert {s.error_code for s in c2[1:3]} == {"TNS-12521"}


def test_kept_session_probes_name_their_instance_on_every_run(rac: OracleSimHandle) -> None:
    ep = OracleEndpoint(rac.dsn("FREEPDB1", "dedicated"), "scott", "tiger")
    for kind in ("commit", "serverstats", "sessionping"):
        samples = run_probe(ProbeSpec(kind, ep), runs=3)
        assert all(s.ok for s in samples), samples[0].error_message
        assert samples[0].logon_ns is not None and samples[2].logon_ns is None
        assert len({(s.instance, s.sid) for s in samples}) == 1, kind
        assert samples[2].instance in ("SALES1", "SALES2")
        assert samples[2].extra["instance_number"] in (1, 2)
