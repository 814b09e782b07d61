"""The one parameter schema that target import and the probes both check."""

from __future__ import annotations

import pytest

from app.targets.durations import parse_duration_ms
from app.targets.params import (
    PROBE_PARAMS,
    SWEEP_MAX_TOTAL_LOGONS,
    ParamError,
    connection_param_errors,
    probe_params,
)


def test_defaults_are_filled_in_and_copied() -> None:
    a = probe_params("sweep", {})
    assert a == {"levels": [1, 2, 4], "logons": 20, "pause_s": 0.0}
    a["levels"].append(8)  # a caller changing its dict must not change the schema
    assert probe_params("sweep", {})["levels"] == [1, 2, 4]
    assert probe_params("poolacquire", {"max": 4}) == {
        "validation": "foreground",
        "min": 1,
        "max": 4,
        "increment": 1,
    }


def test_ints_are_accepted_as_floats_but_bools_are_not_numbers() -> None:
    assert probe_params("sweep", {"pause_s": 1})["pause_s"] == 1.0
    with pytest.raises(ParamError, match="'logons' must be int, got True"):
        probe_params("sweep", {"logons": True})


@pytest.mark.parametrize(
    ("probe", "params", "message"),
    [
        ("connping", {"wram": True}, "unknown parameter(s) wram (known: server_time, warm)"),
        ("nosuch", {}, "unknown probe 'nosuch'"),
        ("commit", {"purge_every": 0}, "'purge_every' must be >= 1, got 0"),
        ("commit", {"table": "t; drop table x"}, "not a plain table name"),
        ("poolacquire", {"validation": "sometimes"}, "must be one of foreground, background"),
        ("poolacquire", {"min": 3, "max": 2}, "'max' (2) is below 'min' (3)"),
        ("sweep", {"levels": "1,2"}, "'levels' must be list"),
        ("sweep", {"levels": [1, "2"]}, "must be a list of ints"),
        ("sweep", {"levels": [32, 32], "logons": 100}, f"(> {SWEEP_MAX_TOTAL_LOGONS})"),
    ],
)
def test_wrong_params_name_the_parameter(
    probe: str, params: dict[str, object], message: str
) -> None:
    with pytest.raises(ParamError) as info:
        probe_params(probe, params)
    assert message in str(info.value)


def test_every_probe_kind_of_the_schema_accepts_its_defaults() -> None:
    for probe in PROBE_PARAMS:
        assert set(probe_params(probe, {})) == set(PROBE_PARAMS[probe])


def test_connection_params() -> None:
    ok = {"cclass": "CW", "purity": "SELF", "sdu": 8192, "connect_timeout": "3s"}
    assert connection_param_errors("oracle", ok, parse_duration_ms) == []
    errors = connection_param_errors(
        "oracle",
        {"purity": "sel", "sdu": True, "connect_timeout": "soon", "host": "h", "cclass": ""},
        parse_duration_ms,
    )
    assert errors == [
        "unknown oracle parameter 'host' (known: cclass, config_dir, connect_timeout, "
        "instance_name, pool_boundary, port, purity, sdu, ssl_ca_file, ssl_server_cert_dn, "
        "ssl_server_dn_match, ssl_version, tns_admin, wallet_location, wallet_password_ref)",
        "parameter 'purity' must be one of default, new, self, got 'sel'",
        "parameter 'sdu' must be an integer 512..2097152, got True",
        "parameter 'connect_timeout': expected a duration such as 10s, 500ms or 1m (got 'soon')",
        "parameter 'cclass' must be a non-empty string, got ''",
    ]
    assert (
        connection_param_errors(
            "postgres", {"port": 6433, "options": {"application_name": "cw"}}, parse_duration_ms
        )
        == []
    )
    assert connection_param_errors("postgres", {"options": {"a": 1}}, parse_duration_ms) == [
        "parameter 'options' must map libpq keywords to strings"
    ]


def test_tcps_and_rac_connection_params() -> None:
    good = {
        "port": 2484,
        "ssl_ca_file": "/etc/ca.pem",
        "ssl_server_dn_match": False,
        "ssl_server_cert_dn": "CN=db",
        "ssl_version": "1.3",
        "instance_name": "SALES2",
    }
    assert connection_param_errors("oracle", good, parse_duration_ms) == []
    bad = {"port": 0, "ssl_version": "1.1", "ssl_server_dn_match": "yes", "instance_name": ""}
    assert connection_param_errors("oracle", bad, parse_duration_ms) == [
        "parameter 'port' must be an integer 1..65535, got 0",
        "parameter 'ssl_version' must be one of 1.2, 1.3, got '1.1'",
        "parameter 'ssl_server_dn_match' must be true or false, got 'yes'",
        "parameter 'instance_name' must be a non-empty string, got ''",
    ]
