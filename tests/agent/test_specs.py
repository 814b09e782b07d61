"""Specs from stored rows: every mode kind, parameters, and clear errors for bad ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app.agent.scheduling.specs import SpecError, build_spec, fingerprint, load_series
from app.probes.spec import OracleEndpoint, OracleServerType, PgRoute, PostgresEndpoint, Purity
from app.secrets import Vault
from tests.agent.conftest import add_mode, add_series, add_target, make_settings


def _one(store: Engine, tmp_path: Path, **settings_kw: object):  # type: ignore[no-untyped-def]
    settings = make_settings(tmp_path, "postgresql://x@127.0.0.1/x", **settings_kw)
    with store.connect() as conn:
        rows = load_series(conn, "default")
    return rows, Vault.from_settings(settings), settings


def test_oracle_modes_and_parameters(store: Engine, tmp_path: Path) -> None:
    with store.begin() as conn:
        t = add_target(
            conn,
            "ora",
            kind="oracle",
            dsn="db:1521/FREEPDB1",
            username="scott",
            params={"connect_timeout": "3s", "config_dir": "/etc/tns"},
        )
        s1 = add_series(conn, add_mode(conn, t, "dedicated"), interval_ms=10_000, timeout_ms=4000)
        s2 = add_series(
            conn,
            add_mode(
                conn,
                t,
                "pooled",
                params={"cclass": "CW", "purity": "self", "pool_boundary": "statement"},
            ),
        )
        s3 = add_series(conn, add_mode(conn, t, "shared", transport="tcps"))
    rows, vault, settings = _one(store, tmp_path)
    specs = {sid: build_spec(rows[sid], vault, settings, agent="a", site="default") for sid in rows}
    ded = specs[s1].endpoint
    assert isinstance(ded, OracleEndpoint)
    assert ded.server_type is OracleServerType.DEDICATED and ded.connect == "db:1521/FREEPDB1"
    assert ded.connect_timeout_s == 3.0 and ded.config_dir == "/etc/tns"
    assert specs[s1].deadline_s == 4.0 and specs[s1].series_id == s1
    pooled = specs[s2].endpoint
    assert isinstance(pooled, OracleEndpoint)
    assert pooled.server_type is OracleServerType.POOLED
    assert (pooled.cclass, pooled.purity, pooled.pool_boundary) == ("CW", Purity.SELF, "statement")
    shared = specs[s3].endpoint
    assert isinstance(shared, OracleEndpoint) and shared.protocol == "tcps"
    assert shared.thick_lib_dir is None


def test_tns_admin_and_thick_mode_come_from_settings(store: Engine, tmp_path: Path) -> None:
    with store.begin() as conn:
        t = add_target(conn, "ora", kind="oracle", dsn="HRPROD", username="u")
        sid = add_series(conn, add_mode(conn, t, "dedicated", transport="ipc"))
    rows, vault, settings = _one(
        store, tmp_path, tns_admin=tmp_path / "tns", oracle_client_lib_dir=tmp_path / "ic"
    )
    ep = build_spec(rows[sid], vault, settings).endpoint
    assert isinstance(ep, OracleEndpoint)
    assert ep.config_dir == str(tmp_path / "tns") and ep.thick_lib_dir == str(tmp_path / "ic")
    assert ep.protocol == "ipc"


def test_postgres_modes(store: Engine, tmp_path: Path) -> None:
    with store.begin() as conn:
        t = add_target(conn, "pg", dsn="db.example:5433/billing", username="cw")
        direct = add_series(conn, add_mode(conn, t, "direct"))
        unix = add_series(
            conn, add_mode(conn, t, "unix", transport="unix", params={"host": "/run/pg"})
        )
        bouncer = add_series(conn, add_mode(conn, t, "pgbouncer_transaction"))
        bouncer2 = add_series(
            conn, add_mode(conn, t, "pgb", "pgbouncer_session", params={"host": "pgb", "port": 7})
        )
    rows, vault, settings = _one(store, tmp_path)
    eps = {sid: build_spec(rows[sid], vault, settings).endpoint for sid in rows}
    assert eps[direct] == PostgresEndpoint("db.example", 5433, "billing", "cw")
    assert eps[unix] == PostgresEndpoint("/run/pg", 5433, "billing", "cw")
    assert eps[bouncer] == PostgresEndpoint(
        "db.example", 6432, "billing", "cw", route=PgRoute.PGBOUNCER_TRANSACTION
    )
    b2 = eps[bouncer2]
    assert isinstance(b2, PostgresEndpoint)
    assert (b2.host, b2.port, b2.route) == ("pgb", 7, PgRoute.PGBOUNCER_SESSION)


@pytest.mark.parametrize(
    ("kind", "dsn", "mode", "mode_params", "ref", "message"),
    [
        ("oracle", "db/S", "dedicated", {"purity": "dirty"}, None, "'purity' must be"),
        ("oracle", "db/S", "dedicated", {"colour": 1}, None, "unknown oracle parameter(s) colour"),
        ("oracle", "db/S", "dedicated", {"sdu": "big"}, None, "'sdu' must be an integer"),
        ("oracle", "db/S", "dedicated", {"connect_timeout": "soon"}, None, "connect_timeout"),
        ("oracle", "db/S", "dedicated", {}, "env:CW_TEST_UNSET_PW", "CW_TEST_UNSET_PW is not set"),
        ("postgres", "no-slash", "direct", {}, None, "is not host[:port]/dbname"),
        ("postgres", "h/db", "unix", {"host": "relative"}, None, "absolute path"),
        ("postgres", "h/db", "direct", {"port": 0}, None, "'port' must be an integer 1..65535"),
    ],
)
def test_bad_series_give_a_clear_error(
    store: Engine,
    tmp_path: Path,
    kind: str,
    dsn: str,
    mode: str,
    mode_params: dict[str, object],
    ref: str | None,
    message: str,
) -> None:
    with store.begin() as conn:
        t = add_target(conn, "bad", kind=kind, dsn=dsn, username="u", password_ref=ref)
        sid = add_series(conn, add_mode(conn, t, mode, params=mode_params))
    rows, vault, settings = _one(store, tmp_path)
    with pytest.raises(SpecError) as err:
        build_spec(rows[sid], vault, settings)
    assert message in str(err.value)
    assert f"series {sid} (bad/{mode}/connping)" in str(err.value)


def test_fingerprint_changes_with_any_relevant_edit(store: Engine) -> None:
    from sqlalchemy import text

    with store.begin() as conn:
        t = add_target(conn, "pg", dsn="h/db", username="u")
        m = add_mode(conn, t, "direct")
        add_series(conn, m)
        fp0 = fingerprint(conn, "default")
        conn.execute(text("update modes set params = '{\"port\": 7}' where id = :m"), {"m": m})
        fp1 = fingerprint(conn, "default")
        conn.execute(text("update series set interval_ms = 2000, timeout_ms = 2000"))
        fp2 = fingerprint(conn, "default")
        conn.execute(text("update targets set enabled = false"))
        fp3 = fingerprint(conn, "default")
        other_site = fingerprint(conn, "elsewhere")
    assert len({fp0, fp1, fp2, fp3}) == 4
    assert fp3 == other_site  # nothing enabled at either site


def test_serverstats_logs_on_as_its_monitoring_account(
    store: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_TEST_MON_PW", "m0n-secret")
    with store.begin() as conn:
        t = add_target(conn, "ora", kind="oracle", dsn="db:1521/FREEPDB1", username="scott")
        m = add_mode(conn, t, "dedicated")
        own = add_series(conn, m, "serverstats", interval_ms=60_000)
        t2 = add_target(conn, "ora2", kind="oracle", dsn="db:1521/FREEPDB1", username="scott")
        mon = add_series(
            conn,
            add_mode(conn, t2, "dedicated"),
            "serverstats",
            interval_ms=60_000,
            params={"user": "c##mon", "password_ref": "env:CW_TEST_MON_PW"},
        )
    rows, vault, settings = _one(store, tmp_path)
    ep = build_spec(rows[mon], vault, settings).endpoint
    assert isinstance(ep, OracleEndpoint)
    assert (ep.user, ep.password) == ("c##mon", "m0n-secret")
    assert "m0n-secret" not in repr(ep)
    assert build_spec(rows[own], vault, settings).endpoint.user == "scott"
    monkeypatch.delenv("CW_TEST_MON_PW")
    with pytest.raises(SpecError, match="CW_TEST_MON_PW"):
        build_spec(rows[mon], vault, settings)


def test_tcps_mode_with_its_port_ca_dn_version_and_instance(store: Engine, tmp_path: Path) -> None:
    tls = {
        "port": 2484,
        "ssl_ca_file": "/etc/connwatch/ca.pem",
        "ssl_server_cert_dn": "CN=sales,O=Example",
        "ssl_server_dn_match": True,
        "ssl_version": "1.3",
        "instance_name": "SALES2",
    }
    with store.begin() as conn:
        t = add_target(conn, "rac", kind="oracle", dsn="db.example.com:1521/SALES", username="u")
        tcps = add_series(conn, add_mode(conn, t, "dedicated", transport="tcps", params=tls))
        t2 = add_target(conn, "alias", kind="oracle", dsn="SALES_ALIAS", username="u")
        alias = add_series(conn, add_mode(conn, t2, "dedicated", params={"port": 2484}))
    rows, vault, settings = _one(store, tmp_path)
    ep = build_spec(rows[tcps], vault, settings).endpoint
    assert isinstance(ep, OracleEndpoint)
    assert (ep.connect, ep.protocol) == ("db.example.com:2484/SALES", "tcps")
    assert (ep.ssl_ca_file, ep.ssl_server_cert_dn) == (
        tls["ssl_ca_file"],
        tls["ssl_server_cert_dn"],
    )
    assert (ep.ssl_server_dn_match, ep.ssl_version, ep.instance_name) == (True, "1.3", "SALES2")
    with pytest.raises(SpecError, match="'port' needs an Easy Connect dsn"):
        build_spec(rows[alias], vault, settings)


def test_a_reference_to_the_key_file_or_outside_the_allow_list_is_refused_by_rule(
    store: Engine, tmp_path: Path
) -> None:
    """Even written straight into the store, a reference to the key file, a file outside
    CONNWATCH_SECRET_FILE_DIRS or a variable without the prefix never resolves: the
    error names the rule, never the content."""
    data = tmp_path / "data"
    data.mkdir()
    from app.config import Settings

    settings = Settings(
        database_url="postgresql://x@127.0.0.1/x",
        data_dir=data,
        secret_env_prefix="CW_TEST_",
        secret_file_dirs=[str(tmp_path)],
    )
    from app.secrets.vault import load_keys

    vault = Vault(load_keys(settings, create=True))  # writes <data dir>/secret.key
    key_text = settings.key_file.read_text().strip()
    refs = {
        f"file:{settings.key_file}": "never read connwatch's key file or data directory",
        f"file:{data}/../data/secret.key": "never read connwatch's key file or data directory",
        "file:/etc/passwd": "must point inside CONNWATCH_SECRET_FILE_DIRS",
        "env:HOME": "starting with 'CW_TEST_'",
        "env:CONNWATCH_DATABASE_URL": "starting with 'CW_TEST_'",
    }
    with store.begin() as conn:
        ids = {}
        for i, ref in enumerate(refs):
            t = add_target(conn, f"r{i}", dsn="127.0.0.1:5432/x", password_ref=ref)
            ids[add_series(conn, add_mode(conn, t, "direct"))] = ref
    with store.connect() as conn:
        rows = load_series(conn, "default")
    for sid, ref in ids.items():
        with pytest.raises(SpecError) as info:
            build_spec(rows[sid], vault, settings)
        msg = str(info.value)
        assert refs[ref] in msg, msg
        assert key_text not in msg and "root:" not in msg


def test_a_sealed_password_goes_only_to_its_endpoint(store: Engine, tmp_path: Path) -> None:
    """The connect string edited behind the policy's back (straight in the store): the
    agent refuses to send the password to the new host."""
    from sqlalchemy import text

    from app.secrets.rotate import target_endpoints

    settings = make_settings(tmp_path, "postgresql://x@127.0.0.1/x")
    vault = Vault.from_settings(settings)
    with store.begin() as conn:
        t = add_target(conn, "sealed", dsn="db1:5432/app", username="u")
        sid = add_series(conn, add_mode(conn, t, "direct"))
        ids = [e.id for e in target_endpoints(conn, t)]
        conn.execute(
            text("update targets set password_enc = :p where id = :t"),
            {"p": vault.seal("Canary-sealed-77", ids), "t": t},
        )
    with store.connect() as conn:
        row = load_series(conn, "default")[sid]
    assert build_spec(row, vault, settings).endpoint.password == "Canary-sealed-77"
    with store.begin() as conn:
        conn.execute(
            text("update targets set dsn = 'evil.example:5432/app' where id = :t"), {"t": t}
        )
    with store.connect() as conn:
        row = load_series(conn, "default")[sid]
    with pytest.raises(SpecError, match="given for another endpoint") as info:
        build_spec(row, vault, settings)
    assert "Canary-sealed" not in str(info.value)
