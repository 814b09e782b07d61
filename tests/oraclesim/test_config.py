"""Configuration: zero-config defaults and the YAML file, with a clear error (file, field)
for every kind of bad input."""

from __future__ import annotations

import pytest

from app.oraclesim import ConfigError, SimConfig

from ._driver import code, connect


def test_zero_config_defaults():
    cfg = SimConfig.default()
    assert (cfg.host, cfg.port, cfg.no_latency) == ("127.0.0.1", 1521, False)
    assert cfg.services["FREEPDB1"].modes == ("dedicated", "shared", "pooled")
    assert cfg.services["DEDONLY"].modes == ("dedicated",)
    assert cfg.users["SCOTT"].password == "tiger"
    assert cfg.pbkdf2_vgen < 4096  # cheap demo logons
    assert SimConfig.default(no_latency=True).no_latency


def test_yaml_file_configures_services_users_modes_and_latency(tmp_path, oraclesim_factory):
    path = tmp_path / "sim.yaml"
    path.write_text(
        """
listener: {host: 127.0.0.1, port: 0}
no_latency: true
fast_auth: true
version: "23.26"
pbkdf2: {vgen: 16, sder: 2}
drcp: {max_servers: 3, wait_timeout_s: 0.5}
shared_servers: 2
users:
  - {name: app, password: s3cret}
  - {name: old, password: x, locked: true}
services:
  - name: sales
    modes: [pooled]
    latency:
      pooled:
        logon: {median_ms: 12, spread: 0.1}
        load: 0.5
  - name: hr
    shared_redirect: true
"""
    )
    cfg = SimConfig.from_yaml(path)
    assert set(cfg.services) == {"SALES", "HR"}
    assert cfg.services["SALES"].modes == ("pooled",)
    assert cfg.services["SALES"].latency["pooled"].phases["logon"].median_ms == 12
    assert cfg.services["SALES"].latency["pooled"].load == 0.5
    assert cfg.services["HR"].shared_redirect
    assert (cfg.pbkdf2_vgen, cfg.pbkdf2_sder, cfg.drcp_max_servers, cfg.shared_servers) == (
        16,
        2,
        3,
        2,
    )
    assert cfg.users["OLD"].locked and cfg.version_tuple == (23, 26)
    sim = oraclesim_factory(cfg)
    with connect(sim, service="sales", mode="pooled", user="app", password="s3cret") as conn:
        assert conn.version.startswith("23.26")
    with pytest.raises(Exception) as ei:
        connect(sim, service="sales", mode="pooled")  # scott is not a user here
    assert code(ei.value) == "ORA-01017"


@pytest.mark.parametrize(
    "text,message",
    [
        ("listener: [1, 2]", "listener: must be a mapping"),
        ("listener: {port: 70000}", "listener.port: must be between 0 and 65535"),
        ("listener: {port: x}", "listener.port: must be an integer"),
        ("colour: red", "top level: unknown field 'colour'"),
        ("users: []", "users: must be a non-empty list"),
        ("users: [{name: a}]", "users\\[0\\]: missing field 'password'"),
        ("services: [{name: X, modes: [turbo]}]", "services\\[0\\].modes: unknown mode 'turbo'"),
        ("services: [{modes: [pooled]}]", "services\\[0\\]: missing field 'name'"),
        (
            "services: [{name: X, latency: {pooled: {logon: {median_ms: -1}}}}]",
            "services\\[0\\].latency.pooled.logon.median_ms: must be between 0",
        ),
        (
            "services: [{name: X, latency: {pooled: {lunch: {}}}}]",
            "services\\[0\\].latency.pooled: unknown field 'lunch'",
        ),
        ("no_latency: maybe", "no_latency: must be true or false"),
        ("version: abc", "version: must look like 19.24"),
        ("pbkdf2: {vgen: 0}", "pbkdf2.vgen: must be between 1"),
        ("drcp: {wait_timeout_s: x}", "drcp.wait_timeout_s: must be a number"),
        ("listener: {port: 1", "not valid YAML"),
    ],
)
def test_bad_files_name_the_file_and_the_field(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as ei:
        SimConfig.from_yaml(path)
    assert str(ei.value).startswith(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        SimConfig.from_yaml(tmp_path / "nope.yaml")


def test_empty_file_gives_the_defaults(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    assert set(SimConfig.from_yaml(path).services) == {"FREEPDB1", "DEDONLY"}


def test_the_reference_example_in_the_docs_loads(tmp_path):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "oraclesim.md").read_text()
    from app.oraclesim.tls import make_pki

    make_pki(tmp_path)  # server.pem / server.key, the files the example names beside it
    path = tmp_path / "example.yaml"
    path.write_text(doc.split("```yaml\n")[1].split("```")[0])
    cfg = SimConfig.from_yaml(path)
    assert cfg.users["ADAMS"].locked
    assert cfg.tls is not None and cfg.tls.port == 2484
    assert [i.name for i in cfg.instance_list()] == ["SALES1", "SALES2"]
    assert cfg.users["CONNWATCH_MON"].grants == {"V$SYSSTAT", "GV$SYSSTAT", "V$INSTANCE"}
    assert cfg.services["FREEPDB1"].latency["dedicated"].phases["accept"].median_ms == 30
