"""connping against the Oracle Net simulator, unmodified python-oracledb thin over TCP."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.oraclesim import SimConfig
from app.oraclesim.config import UserConfig
from app.probes.registry import create_probe
from app.probes.runner import run_once
from app.probes.spec import OracleEndpoint, ProbeSpec
from app.samples import ErrorClass, SampleStatus, logon_phase_key
from tests.fixtures.oraclesim import OracleSimHandle
from tests.probes.conftest import MODES, oracle_endpoint, run_probe

LOGON_PHASES = ["tcp_connect", "connect", "protocol", "data_types", "auth1", "auth2"]


@pytest.mark.parametrize("mode", MODES)
def test_connping_every_mode(oraclesim: OracleSimHandle, mode: str) -> None:
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim, mode)))
    assert s.status is SampleStatus.OK, s.error_message
    assert s.server_type == mode.upper()
    assert s.service == "FREEPDB1" and s.instance is not None
    assert s.round_trips == 5  # CONNECT, protocol, data types, auth one, auth two
    assert s.logon_phases is not None and list(s.logon_phases) == LOGON_PHASES
    assert sum(s.logon_phases.values()) == s.logon_ns
    # the web orders phases by app.samples.LOGON_PHASE_ORDER: the probe's names are in it
    assert sorted(s.logon_phases, key=logon_phase_key) == list(s.logon_phases)
    # logon, untimed info, 2 pings, 2 queries, logoff (DRCP: the one-way release)
    assert s.extra["round_trips_total"] == 5 + 1 + 2 + 2 + 1
    assert s.extra["instance_number"] == 1
    for name in ("ping_ns", "query_ns", "logoff_ns"):
        assert getattr(s, name) > 0
    truth = [c for c in oraclesim.ground_truth() if c["sid"] == s.sid]
    assert truth and truth[-1]["mode"] == mode and truth[-1]["serial"] == s.serial
    if mode == "pooled":
        assert truth[-1]["cclass"] == "CONNWATCH"


def test_logon_breakdown_sees_a_slow_auth_phase(oraclesim: OracleSimHandle) -> None:
    oraclesim.faults.add("slow", "logon", delay_ms=40)
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim)))
    assert s.ok and s.logon_phases is not None
    slowest = max(s.logon_phases, key=lambda k: s.logon_phases[k])  # type: ignore[index]
    assert slowest in ("auth1", "auth2")
    assert s.logon_phases[slowest] >= 40_000_000


FAULTS = [
    # (fault, expected class, expected code, expected phase)
    ({"kind": "refuse"}, ErrorClass.TNS, "TNS-12520", "logon:connect"),
    ({"kind": "refuse", "code": 12514}, ErrorClass.TNS, "TNS-12514", "logon:connect"),
    ({"kind": "refuse", "phase": "logon"}, ErrorClass.ORA, "ORA-01017", "logon:auth2"),
    (
        {"kind": "refuse", "phase": "logon", "code": 28000},
        ErrorClass.ORA,
        "ORA-28000",
        "logon:auth2",
    ),
    ({"kind": "drop", "phase": "accept"}, ErrorClass.DPY, "DPY-4011", "logon:connect"),
    ({"kind": "drop", "phase": "negotiate"}, ErrorClass.DPY, "DPY-4011", "logon:protocol"),
    ({"kind": "drop", "phase": "logon"}, ErrorClass.DPY, "DPY-4011", "logon:auth1"),
    ({"kind": "drop", "phase": "ping"}, ErrorClass.DPY, "DPY-4011", "ping"),
    ({"kind": "hang", "phase": "accept"}, ErrorClass.TIMEOUT, "TIMEOUT", "logon:connect"),
    ({"kind": "hang", "phase": "negotiate"}, ErrorClass.TIMEOUT, "TIMEOUT", "logon:protocol"),
    ({"kind": "hang", "phase": "logon"}, ErrorClass.TIMEOUT, "TIMEOUT", "logon:auth1"),
    ({"kind": "hang", "phase": "ping"}, ErrorClass.TIMEOUT, "TIMEOUT", "ping"),
    ({"kind": "hang", "phase": "logoff"}, ErrorClass.TIMEOUT, "TIMEOUT", "logoff"),
]


@pytest.mark.parametrize(("fault", "cls", "code", "phase"), FAULTS)
def test_each_fault_maps_to_its_error_class(
    oraclesim: OracleSimHandle, fault: dict[str, object], cls: ErrorClass, code: str, phase: str
) -> None:
    oraclesim.faults.add(**fault)  # type: ignore[arg-type]
    deadline = 0.5
    t0 = time.perf_counter()
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim), deadline_s=deadline))
    elapsed = time.perf_counter() - t0
    assert (s.error_class, s.error_code, s.error_phase) == (cls, code, phase), s.error_message
    assert s.status is (SampleStatus.TIMEOUT if cls is ErrorClass.TIMEOUT else SampleStatus.ERROR)
    assert "tiger" not in (s.error_message or "")
    if cls is ErrorClass.TIMEOUT:
        assert elapsed <= deadline * 1.10 + 0.05  # + event-loop start/stop of run_probe
        assert s.total_ns is not None and s.total_ns <= deadline * 1.10 * 1e9


def test_listener_modes_and_services(oraclesim: OracleSimHandle) -> None:
    (shared_on_dedonly,) = run_probe(
        ProbeSpec("connping", oracle_endpoint(oraclesim, "shared", service="DEDONLY"))
    )
    assert shared_on_dedonly.error_code == "TNS-12520"
    (unknown,) = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim, service="NOPE")))
    assert unknown.error_code == "TNS-12514"
    (ok,) = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim, service="DEDONLY")))
    assert ok.ok and ok.server_type == "DEDICATED"


def test_listener_down_is_a_refused_tcp_connect(oraclesim: OracleSimHandle) -> None:
    oraclesim.listener_down()
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim)))
    assert (s.error_code, s.error_phase) == ("NET-ECONNREFUSED", "logon:tcp_connect")


def test_wrong_password_never_leaks(oraclesim: OracleSimHandle) -> None:
    ep = oracle_endpoint(oraclesim)
    from dataclasses import replace

    (s,) = run_probe(ProbeSpec("connping", replace(ep, password="not-the-pw-42")))
    assert s.error_code == "ORA-01017" and "not-the-pw-42" not in (s.error_message or "")


def test_hung_server_does_not_stall_other_probes(oraclesim: OracleSimHandle) -> None:
    oraclesim.faults.add("hang", "logon", user="hanger")
    from dataclasses import replace

    good = oracle_endpoint(oraclesim)
    bad = replace(good, user="hanger")

    async def go() -> tuple[object, list[object], float]:
        hung = create_probe(ProbeSpec("connping", bad, deadline_s=1.0))
        fine = create_probe(ProbeSpec("connping", good, deadline_s=1.0))
        t0 = time.perf_counter()
        hung_task = asyncio.ensure_future(run_once(hung))
        oks = [await run_once(fine) for _ in range(5)]
        ok_elapsed = time.perf_counter() - t0
        return await hung_task, oks, ok_elapsed

    hung_sample, oks, ok_elapsed = asyncio.run(go())
    assert hung_sample.status is SampleStatus.TIMEOUT  # type: ignore[attr-defined]
    assert all(s.ok for s in oks)  # type: ignore[attr-defined]
    assert ok_elapsed < 1.0  # all five finished while the other probe was still hung


def test_tnsnames_alias_in_config_dir(oraclesim: OracleSimHandle, tmp_path: object) -> None:
    from pathlib import Path

    d = Path(str(tmp_path))
    (d / "tnsnames.ora").write_text(
        "CW_POOLED = (DESCRIPTION=(ADDRESS=(PROTOCOL=tcp)(HOST=127.0.0.1)"
        f"(PORT={oraclesim.port}))(CONNECT_DATA=(SERVICE_NAME=FREEPDB1)(SERVER=pooled)))\n"
    )
    from app.probes.spec import OracleEndpoint, Purity

    ep = OracleEndpoint(
        "CW_POOLED",
        "scott",
        "tiger",
        config_dir=str(d),
        cclass="CWALIAS",
        purity=Purity.SELF,
        sdu=16384,
    )
    (s,) = run_probe(ProbeSpec("connping", ep))
    assert s.ok, s.error_message
    assert s.server_type == "POOLED"
    truth = [c for c in oraclesim.ground_truth() if c["sid"] == s.sid][-1]
    assert truth["cclass"] == "CWALIAS" and truth["purity"] in (2, "self", "SELF")


def test_unknown_alias_is_a_dpy_error(tmp_path: object) -> None:
    from pathlib import Path

    from app.probes.spec import OracleEndpoint

    d = Path(str(tmp_path))
    (d / "tnsnames.ora").write_text("OTHER = (DESCRIPTION=(ADDRESS=(HOST=h)(PORT=1)))\n")
    (s,) = run_probe(ProbeSpec("connping", OracleEndpoint("NOPE", "scott", "x", config_dir=str(d))))
    assert s.error_class is ErrorClass.DPY and s.error_code == "DPY-4000"  # alias not found
    assert s.error_phase == "logon:tcp_connect"


def test_slow_ping_shows_in_ping_time_only(oraclesim: OracleSimHandle) -> None:
    oraclesim.faults.add("slow", "ping", delay_ms=40)
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(oraclesim)))
    assert s.ok and s.ping_ns is not None and s.logon_ns is not None
    assert s.ping_ns >= 40_000_000
    truth = [c for c in oraclesim.ground_truth() if c["sid"] == s.sid][-1]
    injected = {p["phase"]: p["injected_ns"] for p in truth["phases"] if p["injected_ns"]}
    assert set(injected) == {"ping"}  # the delay was put on the pings, nowhere else


def test_server_time_reads_the_servers_cost_of_this_logon(oraclesim_factory) -> None:  # type: ignore[no-untyped-def]

    cfg = SimConfig.default(no_latency=False)
    cfg.users["APP"] = UserConfig("app", "pw", grants=frozenset())
    sim = oraclesim_factory(cfg)
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(sim), params={"server_time": True}))
    assert s.ok, s.error_message
    server_ms = s.extra["server_logon_ms"]
    assert 0 < server_ms < s.logon_ns / 1e6  # the server's part of what the client waited
    truth = {
        p["phase"]: p for p in next(r for r in sim.ground_truth() if r["sid"] == s.sid)["phases"]
    }
    server_side = (truth["logon"]["end_ns"] - truth["negotiate"]["start_ns"]) / 1e6
    assert server_ms == pytest.approx(server_side, rel=0.05, abs=0.5)
    ep = OracleEndpoint(sim.dsn("FREEPDB1", "dedicated"), "app", "pw")
    (denied,) = run_probe(ProbeSpec("connping", ep, params={"server_time": True}))
    assert denied.ok and denied.extra["server_time_unavailable"] == "ORA-00942"
    assert "server_logon_ms" not in denied.extra
