"""Logon contract: the 12c verifier (PBKDF2-SHA512), 19c-style and 23ai fast-auth
handshakes, wrong password, unknown user, locked account."""

from __future__ import annotations

import asyncio

import oracledb
import pytest

from app.oraclesim import SimConfig
from app.oraclesim.config import UserConfig
from app.oraclesim.database.auth import Challenge, Verifier

from ._driver import code, connect, connect_async


def _config(fast_auth: bool = False) -> SimConfig:
    cfg = SimConfig.default(no_latency=True)
    cfg.users["ADAMS"] = UserConfig("adams", "wood", locked=True)
    cfg.users["ALICE"] = UserConfig("alice", "Secr3t!")
    cfg.fast_auth = fast_auth
    if fast_auth:
        cfg.version = "23.26"
    return cfg


def test_per_user_passwords(oraclesim_factory):
    sim = oraclesim_factory(_config())
    with connect(sim, user="alice", password="Secr3t!") as conn:
        assert conn.cursor().execute("select user from dual").fetchone() == ("ALICE",)
    with pytest.raises(oracledb.DatabaseError) as ei:
        connect(sim, user="alice", password="tiger")
    assert code(ei.value) == "ORA-01017"


@pytest.mark.parametrize("user,password", [("scott", "wrong"), ("nobody", "tiger")])
def test_wrong_password_or_unknown_user_is_ora_01017(oraclesim, user, password):
    with pytest.raises(oracledb.DatabaseError) as ei:
        connect(oraclesim, user=user, password=password)
    assert type(ei.value) is oracledb.DatabaseError
    assert code(ei.value) == "ORA-01017"


def test_wrong_password_async(oraclesim):
    with pytest.raises(oracledb.DatabaseError) as ei:
        asyncio.run(connect_async(oraclesim, password="wrong"))
    assert code(ei.value) == "ORA-01017"


def test_locked_account_is_ora_28000(oraclesim_factory):
    sim = oraclesim_factory(_config())
    with pytest.raises(oracledb.DatabaseError) as ei:
        connect(sim, user="adams", password="wood")
    assert code(ei.value) == "ORA-28000"


@pytest.mark.parametrize("fast_auth", [False, True])
def test_handshakes_sync_and_async(oraclesim_factory, fast_auth):
    sim = oraclesim_factory(_config(fast_auth))

    async def run_async() -> str:
        conn = await connect_async(sim)
        await conn.ping()
        version = conn.version
        await conn.close()
        return version

    with connect(sim) as conn:
        conn.ping()
        version = conn.version
    assert version == asyncio.run(run_async()) == ("23.26.0.0.0" if fast_auth else "19.24.0.0.0")
    phases = [[p["phase"] for p in r["phases"]][:3] for r in sim.ground_truth()]
    expected = ["accept", "logon", "ping"] if fast_auth else ["accept", "negotiate", "logon"]
    assert phases == [expected, expected]


def test_fast_auth_wrong_password(oraclesim_factory):
    sim = oraclesim_factory(_config(fast_auth=True))
    with pytest.raises(oracledb.DatabaseError) as ei:
        connect(sim, password="nope")
    assert code(ei.value) == "ORA-01017"


def test_verifier_counts_are_what_the_config_says():
    challenge = Challenge.start(Verifier.create("tiger", 7), sder=2)
    params = {k: (v, f) for k, v, f in challenge.phase_one_params()}
    assert params["AUTH_PBKDF2_VGEN_COUNT"][0] == "7"
    assert params["AUTH_PBKDF2_SDER_COUNT"][0] == "2"
    assert params["AUTH_VFR_DATA"][1] == 0x4815  # 12c verifier type
    assert len(params["AUTH_SESSKEY"][0]) == 64  # 32 bytes, no padding


def test_malformed_client_keys_count_as_a_wrong_password():
    challenge = Challenge.start(Verifier.create("tiger", 1), sder=1)
    assert challenge.check("zz", "00")[0] is False
