from __future__ import annotations

from app.drivers.base import logon_phases, round_trip_labels
from app.samples import LOGON_FLOW_19C, LOGON_FLOW_23AI, LOGON_PHASE_ORDER, logon_phase_key


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


def test_23ai_fast_auth_flow_names_phase_two_auth2() -> None:
    """After fast_authorization (protocol + data types + auth phase one in one round
    trip), the next authorization round trip is phase two: ``auth2``, as in 19c."""
    events = [("connect", 10), ("fast_authorization", 20), ("authorization", 40)]
    phases = logon_phases(0, 50, events)
    assert tuple(phases) == LOGON_FLOW_23AI
    assert phases == {"tcp_connect": 10, "connect": 10, "fast_auth": 20, "auth2": 10}


def test_19c_flow_names_are_the_documented_ones() -> None:
    names = ["connect", "protocol", "data_types", "authorization", "authorization"]
    assert ["tcp_connect", *round_trip_labels(names)] == list(LOGON_FLOW_19C)


def test_labels_follow_the_wire_order_of_logon_phases() -> None:
    """Every label either flow produces (with a REDIRECT's second CONNECT) sorts in the
    documented wire order."""
    for names in (
        ["connect", "connect", "protocol", "data_types", "authorization", "authorization"],
        ["connect", "connect", "fast_authorization", "authorization"],
    ):
        labels = ["tcp_connect", *round_trip_labels(names)]
        assert labels == sorted(labels, key=logon_phase_key)
        assert all(label.split("_2")[0] in LOGON_PHASE_ORDER for label in labels)
