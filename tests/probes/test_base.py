from __future__ import annotations

import pytest

from app.drivers.base import RoundTripLog
from app.probes.base import ProbeConfigError, ProbeContext, check_params, param


def test_param_types_and_ranges() -> None:
    assert param({"n": 3}, "n", int, 1) == 3
    assert param({}, "n", int, 1) == 1
    assert param({"x": 2}, "x", float, 0.0) == 2.0
    with pytest.raises(ProbeConfigError, match="'n' must be int"):
        param({"n": True}, "n", int, 1)
    with pytest.raises(ProbeConfigError, match="'n' must be >= 1"):
        param({"n": 0}, "n", int, 1, minimum=1)
    with pytest.raises(ProbeConfigError, match="unknown parameter"):
        check_params({"zzz": 1}, {"n"}, "p")


def test_where_names_the_logon_round_trip() -> None:
    ctx = ProbeContext()
    ctx.phase = "logon"
    ctx.trips = RoundTripLog()
    assert ctx.where() == "logon:tcp_connect"
    for name in ("connect", "protocol", "data_types", "authorization", "authorization"):
        ctx.trips(name)
    assert ctx.where() == "logon:auth2"
    ctx.phase = "ping"
    assert ctx.where() == "ping"


def test_timed_records_into_result() -> None:
    ctx = ProbeContext()
    with ctx.timed("ping", "ping_ns"):
        pass
    assert ctx.phase == "ping" and ctx.result.ping_ns is not None and ctx.result.ping_ns >= 0
