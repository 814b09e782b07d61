from __future__ import annotations

import oracledb

from app.drivers.base import RoundTripLog
from app.drivers.oracle import connect_params
from app.probes.spec import OracleEndpoint, OracleServerType, Purity


def test_connect_params_per_mode() -> None:
    trips = RoundTripLog()
    ep = OracleEndpoint(
        "db:1521/svc",
        "scott",
        "tiger",
        server_type=OracleServerType.POOLED,
        cclass="CW",
        purity=Purity.SELF,
        pool_boundary="statement",
        protocol="tcps",
        wallet_location="/w",
        sdu=65535,
        connect_timeout_s=3.0,
        config_dir="/tns",
    )
    kw = connect_params(ep, trips)
    assert kw["server_type"] == "pooled" and kw["cclass"] == "CW"
    assert kw["purity"] == oracledb.PURITY_SELF and kw["pool_boundary"] == "statement"
    assert kw["protocol"] == "tcps" and kw["wallet_location"] == "/w"
    assert kw["sdu"] == 65535 and kw["tcp_connect_timeout"] == 3.0
    assert kw["config_dir"] == "/tns" and kw["round_trip_callback"] is trips
    # python-oracledb accepts every one of them
    oracledb.ConnectParams(**{k: v for k, v in kw.items() if k not in ("dsn",)})


def test_defaults_stay_out_and_password_is_not_in_repr() -> None:
    ep = OracleEndpoint("db/svc", "scott", "tiger")
    kw = connect_params(ep)
    assert set(kw) == {"user", "password", "dsn"}
    assert "tiger" not in repr(ep) and "tiger" not in ep.describe()


def test_thick_mode_gets_no_round_trip_callback() -> None:
    ep = OracleEndpoint("db/svc", "scott", "tiger", thick_lib_dir="/opt/oracle/instantclient")
    assert "round_trip_callback" not in connect_params(ep, RoundTripLog())
