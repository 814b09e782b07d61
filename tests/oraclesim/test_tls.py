"""tcps: the unmodified python-oracledb thin driver over TLS to the simulator's tcps
listener, with the CA from a PEM file (ssl_context) or a wallet directory, server DN
matching, and the failures a client sees when trust, DN or TLS version do not fit."""

from __future__ import annotations

import asyncio
import ssl

import oracledb
import pytest

from app.oraclesim import ConfigError, SimConfig
from app.oraclesim.tls import make_pki
from tests.fixtures.oraclesim import tls_config

from ._driver import code, eventually


def _connect(sim, **kw):
    return oracledb.connect(user="scott", password="tiger", dsn=sim.tcps_dsn(), **kw)


@pytest.fixture(scope="module")
def tls_sim(oracle_pki):
    from tests.fixtures.oraclesim import OracleSimHandle

    handle = OracleSimHandle(tls_config(oracle_pki)).start()
    yield handle
    handle.stop()


@pytest.mark.parametrize("mode", ["dedicated", "shared", "pooled"])
def test_tcps_with_the_ca_in_a_wallet_directory(tls_sim, oracle_pki, mode):
    with oracledb.connect(
        user="scott",
        password="tiger",
        dsn=tls_sim.tcps_dsn(mode=mode),
        wallet_location=str(oracle_pki.wallet_dir),
    ) as conn:
        row = conn.cursor().execute("select sys_context('USERENV','SERVER_TYPE') from dual")
        assert row.fetchone() == (mode.upper(),)
    phases = [p["phase"] for p in tls_sim.ground_truth()[-1]["phases"]]
    assert phases[:3] == ["tls", "accept", "negotiate"]


def test_tcps_async_with_the_ca_from_a_pem_file_and_the_dn_matched(tls_sim, oracle_pki):
    async def run():
        ctx = ssl.create_default_context(cafile=str(oracle_pki.ca_cert))
        conn = await oracledb.connect_async(
            user="scott",
            password="tiger",
            dsn=tls_sim.tcps_dsn(),
            ssl_context=ctx,
            ssl_server_cert_dn=oracle_pki.server_dn,
        )
        await conn.ping()
        await conn.close()

    asyncio.run(run())


def test_plain_tcp_listener_still_answers_beside_tcps(tls_sim):
    with oracledb.connect(user="scott", password="tiger", dsn=tls_sim.dsn()) as conn:
        conn.ping()


def test_untrusted_certificate(tls_sim):
    with pytest.raises(oracledb.OperationalError) as ei:
        _connect(tls_sim)
    assert code(ei.value) == "DPY-6005"
    assert isinstance(ei.value.__cause__, ssl.SSLCertVerificationError)


def test_server_dn_mismatch(tls_sim, oracle_pki):
    with pytest.raises(oracledb.OperationalError) as ei:
        _connect(
            tls_sim, wallet_location=str(oracle_pki.wallet_dir), ssl_server_cert_dn="CN=sales-db"
        )
    assert "DPY-6002" in str(ei.value)


def test_host_name_mismatch_without_a_dn(tls_sim, tmp_path):
    other = make_pki(tmp_path, host="db.example.com")
    cfg = SimConfig.default(no_latency=True)
    from app.oraclesim.config import TlsConfig
    from tests.fixtures.oraclesim import OracleSimHandle

    cfg.tls = TlsConfig(str(other.server_cert), str(other.server_key))
    with OracleSimHandle(cfg) as sim, pytest.raises(oracledb.OperationalError) as ei:
        _connect(sim, wallet_location=str(other.wallet_dir))
    assert "DPY-6006" in str(ei.value)  # 127.0.0.1 is not a name the certificate carries


def test_tls_version_the_server_does_not_speak(oraclesim_factory, oracle_pki):
    sim = oraclesim_factory(tls_config(oracle_pki, min_version="1.3"))
    with pytest.raises(oracledb.OperationalError) as ei:
        _connect(
            sim, wallet_location=str(oracle_pki.wallet_dir), ssl_version=ssl.TLSVersion.TLSv1_2
        )
    assert isinstance(ei.value.__cause__, ssl.SSLError)
    assert "VERSION" in str(ei.value.__cause__).upper()
    assert eventually(lambda: sim.ground_truth()[-1]["phases"][0]["outcome"].startswith("error:"))


def test_slow_and_dropped_handshake_faults(oraclesim_factory, oracle_pki):
    sim = oraclesim_factory(tls_config(oracle_pki))
    sim.faults.add("slow", "tls", delay_ms=150, count=1)
    with _connect(sim, wallet_location=str(oracle_pki.wallet_dir)):
        pass
    tls = sim.ground_truth()[-1]["phases"][0]
    assert tls["phase"] == "tls" and tls["injected_ns"] == 150_000_000
    assert tls["end_ns"] - tls["start_ns"] >= 150_000_000
    sim.faults.add("drop", "tls", count=1)
    with pytest.raises(oracledb.OperationalError):
        _connect(sim, wallet_location=str(oracle_pki.wallet_dir))


def test_tls_config_names_a_missing_file(tmp_path):
    path = tmp_path / "sim.yaml"
    path.write_text("tls: {cert: nope.pem, key: nope.key}\n")
    with pytest.raises(ConfigError, match=r"tls\.cert: no such file"):
        SimConfig.from_yaml(path)


def test_tls_config_file_paths_are_relative_to_the_file(tmp_path, oracle_pki):
    (tmp_path / "c.pem").write_bytes(oracle_pki.server_cert.read_bytes())
    (tmp_path / "k.pem").write_bytes(oracle_pki.server_key.read_bytes())
    path = tmp_path / "sim.yaml"
    path.write_text("tls: {cert: c.pem, key: k.pem, port: 0, max_version: '1.2'}\n")
    cfg = SimConfig.from_yaml(path)
    assert cfg.tls is not None and cfg.tls.cert == str(tmp_path / "c.pem")
    assert cfg.tls.max_version == "1.2"
