"""tcps end to end: probes over TLS to the simulator's tcps listener, the TLS handshake as
its own logon phase, and each TLS failure as a clear sample code."""

from __future__ import annotations

import dataclasses

import pytest

from app.oraclesim.tls import Pki, make_pki
from app.probes.spec import OracleEndpoint, ProbeSpec
from app.samples import ErrorClass, SampleStatus
from tests.fixtures.oraclesim import OracleSimHandle, tls_config
from tests.probes.conftest import run_probe


@pytest.fixture(scope="module")
def tls_sim(oracle_pki: Pki):
    handle = OracleSimHandle(tls_config(oracle_pki)).start()
    yield handle
    handle.stop()


def tcps(sim: OracleSimHandle, pki: Pki, mode: str = "dedicated", **kw: object) -> OracleEndpoint:
    base = OracleEndpoint(
        f"127.0.0.1:{sim.tls_port}/FREEPDB1:{mode}",
        "scott",
        "tiger",
        protocol="tcps",
        wallet_location=str(pki.wallet_dir),
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["dedicated", "shared", "pooled"])
def test_connping_over_tcps_has_the_handshake_as_a_phase(tls_sim, oracle_pki, mode):
    ep = tcps(tls_sim, oracle_pki, mode, cclass="CW" if mode == "pooled" else None)
    (sample,) = run_probe(ProbeSpec("connping", ep))
    assert sample.ok, sample.error_message
    phases = sample.logon_phases or {}
    assert list(phases)[:3] == ["tcp_connect", "tls_handshake", "connect"]
    assert sum(phases.values()) == sample.logon_ns
    assert phases["tls_handshake"] > 0
    (plain,) = run_probe(
        ProbeSpec("connping", OracleEndpoint(tls_sim.dsn("FREEPDB1", mode), "scott", "tiger"))
    )
    assert sample.round_trips == plain.round_trips  # TLS is not an Oracle Net round trip
    assert "tls_handshake" not in (plain.logon_phases or {})


def test_ca_from_a_pem_file_and_the_dn_matched(tls_sim, oracle_pki):
    ep = tcps(
        tls_sim,
        oracle_pki,
        wallet_location=None,
        ssl_ca_file=str(oracle_pki.ca_cert),
        ssl_server_cert_dn=oracle_pki.server_dn,
    )
    samples = run_probe(ProbeSpec("sessionping", ep), runs=2)
    assert all(s.ok for s in samples), samples[0].error_message
    assert "tls_handshake" in (samples[0].logon_phases or {})


def test_tcps_connect_string_without_the_protocol_field(tls_sim, oracle_pki):
    ep = OracleEndpoint(
        f"tcps://127.0.0.1:{tls_sim.tls_port}/FREEPDB1",
        "scott",
        "tiger",
        ssl_ca_file=str(oracle_pki.ca_cert),
    )
    (sample,) = run_probe(ProbeSpec("connping", ep))
    assert sample.ok and "tls_handshake" in (sample.logon_phases or {})


def _failure(ep: OracleEndpoint, deadline_s: float = 10.0):
    (sample,) = run_probe(ProbeSpec("connping", ep, deadline_s=deadline_s))
    assert sample.status is not SampleStatus.OK
    return sample


def test_untrusted_certificate(tls_sim, oracle_pki):
    s = _failure(tcps(tls_sim, oracle_pki, wallet_location=None))
    assert (s.error_class, s.error_code) == (ErrorClass.TLS, "TLS-UNTRUSTED")
    assert s.error_phase == "logon:tls_handshake"
    assert "CERTIFICATE_VERIFY_FAILED" in (s.error_message or "")


def test_dn_mismatch(tls_sim, oracle_pki):
    s = _failure(tcps(tls_sim, oracle_pki, ssl_server_cert_dn="CN=sales-db,O=elsewhere"))
    assert (s.error_class, s.error_code) == (ErrorClass.TLS, "TLS-DN-MISMATCH")


def test_host_name_mismatch(oraclesim_factory, tmp_path):
    other = make_pki(tmp_path, host="db.example.com")
    sim = oraclesim_factory(tls_config(other))
    s = _failure(tcps(sim, other))
    assert (s.error_class, s.error_code) == (ErrorClass.TLS, "TLS-NAME-MISMATCH")
    ok = run_probe(ProbeSpec("connping", tcps(sim, other, ssl_server_dn_match=False)))[0]
    assert ok.ok, ok.error_message


def test_tls_version(oraclesim_factory, oracle_pki):
    sim = oraclesim_factory(tls_config(oracle_pki, max_version="1.2"))
    s = _failure(tcps(sim, oracle_pki, ssl_version="1.3"))
    assert (s.error_class, s.error_code) == (ErrorClass.TLS, "TLS-VERSION")
    ok = run_probe(ProbeSpec("connping", tcps(sim, oracle_pki, ssl_version="1.2")))[0]
    assert ok.ok, ok.error_message


def test_tcps_to_a_plain_tcp_port(tls_sim, oracle_pki):
    ep = dataclasses.replace(tcps(tls_sim, oracle_pki), connect=tls_sim.dsn())
    s = _failure(ep)
    assert (s.error_class, s.error_code) == (ErrorClass.TLS, "TLS-HANDSHAKE")


def test_a_hanging_handshake_times_out_in_its_phase(tls_sim, oracle_pki):
    tls_sim.faults.add("hang", "tls", count=1)
    s = _failure(tcps(tls_sim, oracle_pki), deadline_s=1.0)
    assert s.status is SampleStatus.TIMEOUT
    assert s.error_phase == "logon:tls_handshake"
