"""The logon phase names of both Oracle logon flows, against the simulator speaking each.

19c (5 round trips: connect, protocol, data_types, auth1, auth2) and 23ai fast
authentication (3: connect, fast_auth, auth2), as python-oracledb 26.1 negotiates them:
the simulator's ACCEPT offers fast authentication (or not) and the driver picks the flow.
The same failure carries the same phase name in both (docs/probes.md, "Logon phases").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from app.oraclesim import SimConfig
from app.probes.spec import ProbeSpec
from app.samples import LOGON_FLOW_19C, LOGON_FLOW_23AI, ErrorClass, SampleStatus
from tests.fixtures.oraclesim import OracleSimHandle
from tests.probes.conftest import oracle_endpoint, run_probe

FLOWS = {"19c": LOGON_FLOW_19C, "23ai": LOGON_FLOW_23AI}


def _config(flow: str) -> SimConfig:
    cfg = SimConfig.default(no_latency=True)
    if flow == "23ai":
        cfg.fast_auth, cfg.version = True, "23.26"
    cfg.users["ADAMS"] = replace(cfg.users["SCOTT"], name="adams", password="wood", locked=True)
    return cfg


@pytest.fixture(scope="module", params=sorted(FLOWS))
def flow_sim(request: pytest.FixtureRequest) -> Iterator[tuple[str, OracleSimHandle]]:
    handle = OracleSimHandle(_config(request.param))
    handle.start()
    try:
        yield request.param, handle
    finally:
        handle.stop()


@pytest.fixture(autouse=True)
def _no_faults_left(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "flow_sim" in request.fixturenames:
        request.getfixturevalue("flow_sim")[1].faults.clear()


@pytest.mark.parametrize("mode", ["dedicated", "pooled"])
def test_phases_name_each_round_trip(flow_sim: tuple[str, OracleSimHandle], mode: str) -> None:
    flow, sim = flow_sim
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(sim, mode)))
    assert s.status is SampleStatus.OK, s.error_message
    assert s.logon_phases is not None and tuple(s.logon_phases) == FLOWS[flow]
    assert s.round_trips == len(FLOWS[flow]) - 1  # tcp_connect is not a round trip
    assert sum(s.logon_phases.values()) == s.logon_ns
    assert all(v > 0 for v in s.logon_phases.values())


@pytest.mark.parametrize(
    ("user", "password", "code"),
    [
        ("scott", "wrong", "ORA-01017"),
        ("nobody", "tiger", "ORA-01017"),
        ("adams", "wood", "ORA-28000"),
    ],
)
def test_a_refused_logon_fails_at_auth2_in_both_flows(
    flow_sim: tuple[str, OracleSimHandle], user: str, password: str, code: str
) -> None:
    _, sim = flow_sim
    ep = replace(oracle_endpoint(sim), user=user, password=password)
    (s,) = run_probe(ProbeSpec("connping", ep))
    assert (s.error_class, s.error_code, s.error_phase) == (ErrorClass.ORA, code, "logon:auth2")
    assert password not in (s.error_message or "")


def test_a_slow_session_creation_shows_in_auth2(flow_sim: tuple[str, OracleSimHandle]) -> None:
    """The simulator spends its 'logon' time after authentication phase two arrives: the
    breakdown puts it in auth2 in both flows, not in auth1 or fast_auth."""
    _, sim = flow_sim
    sim.faults.add("slow", "logon", delay_ms=60)
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(sim)))
    assert s.ok and s.logon_phases is not None
    assert max(s.logon_phases, key=s.logon_phases.__getitem__) == "auth2"
    assert s.logon_phases["auth2"] >= 60_000_000


def test_a_dropped_handshake_names_the_round_trip_it_was(
    flow_sim: tuple[str, OracleSimHandle],
) -> None:
    """The simulator drops the connection when authentication phase one arrives: in 19c
    that is the auth1 round trip, in 23ai the fast_auth round trip that carries it."""
    flow, sim = flow_sim
    sim.faults.add("drop", "logon")
    (s,) = run_probe(ProbeSpec("connping", oracle_endpoint(sim)))
    expected = "logon:auth1" if flow == "19c" else "logon:fast_auth"
    assert (s.error_code, s.error_phase) == ("DPY-4011", expected)
