from __future__ import annotations

from app.drivers.base import logon_phases


def test_logon_phases_partition_the_logon() -> None:
    events = [
        ("connect", 110),
        ("protocol", 200),
        ("data_types", 260),
        ("authorization", 300),
        ("authorization", 500),
    ]
    phases = logon_phases(100, 700, events)
    assert list(phases) == ["tcp_connect", "connect", "protocol", "data_types", "auth1", "auth2"]
    assert phases == {
        "tcp_connect": 10,
        "connect": 90,
        "protocol": 60,
        "data_types": 40,
        "auth1": 200,
        "auth2": 200,
    }
    assert sum(phases.values()) == 600


def test_repeated_round_trips_get_suffixes() -> None:
    events = [("connect", 1), ("connect", 5), ("fast_authorization", 9)]
    assert logon_phases(0, 10, events) == {
        "tcp_connect": 1,
        "connect": 4,
        "connect_2": 4,
        "fast_auth": 1,
    }


def test_no_round_trips_is_all_tcp_connect() -> None:
    assert logon_phases(5, 9, []) == {"tcp_connect": 4}
