from __future__ import annotations

import oracledb
import psycopg

from app.probes.base import ProbeConfigError
from app.probes.errors import MAX_MESSAGE, classify, sanitise
from app.samples import ErrorClass


def _dpy(message: str, cls: type[oracledb.Error] = oracledb.OperationalError) -> oracledb.Error:
    """An oracledb exception as the driver builds it (its args[0] is an _Error)."""
    from oracledb import errors as oerrors

    err = oerrors._Error(message)
    return cls(err)


def test_listener_refusal_becomes_tns_code() -> None:
    exc = _dpy(
        "DPY-6005: cannot connect to database (CONNECTION_ID=x).\n"
        "DPY-6000: Listener refused connection. (Similar to ORA-12520)"
    )
    c = classify(exc)
    assert (c.error_class, c.code) == (ErrorClass.TNS, "TNS-12520")


def test_dpy_6005_keeps_the_inner_dpy_code() -> None:
    exc = _dpy(
        "DPY-6005: cannot connect to database (CONNECTION_ID=x).\n"
        "DPY-4011: the database or network closed the connection"
    )
    assert classify(exc).code == "DPY-4011"


def test_ora_code_passes_through() -> None:
    c = classify(
        _dpy(
            "ORA-01017: invalid credential or not authorized; logon denied", oracledb.DatabaseError
        )
    )
    assert (c.error_class, c.code) == (ErrorClass.ORA, "ORA-01017")


def test_os_errors_are_net() -> None:
    assert classify(ConnectionRefusedError(111, "refused")).code == "NET-ECONNREFUSED"
    assert classify(ConnectionResetError(104, "reset")).code == "NET-ECONNRESET"
    c = classify(psycopg.OperationalError("connection failed: ... failed: Connection refused"))
    assert (c.error_class, c.code) == (ErrorClass.NET, "NET-ECONNREFUSED")


def test_postgres_startup_fatals_map_to_sqlstate() -> None:
    def code(text: str) -> str:
        return classify(psycopg.OperationalError(text)).code

    assert code('failed: FATAL:  password authentication failed for user "x"') == "PG-28P01"
    assert code('failed: FATAL:  role "x" does not exist') == "PG-28000"
    assert code("failed: FATAL:  sorry, too many clients already") == "PG-53300"
    assert code("failed: FATAL:  something new") == "PG-08004"
    assert code("failed: server closed the connection unexpectedly") == "PG-08006"


def test_sanitise_removes_secrets_and_truncates() -> None:
    text = "login scott/tiger@db failed; password=tiger; pwd='x y' and tiger again\nline two"
    out = sanitise(text, ["tiger"])
    assert "tiger" not in out and "x y" not in out
    assert "\n" not in out and out.endswith("line two")
    assert len(sanitise("x" * 2000)) == MAX_MESSAGE


def test_exceptions_of_no_driver_or_os_are_probe_side() -> None:
    """An exception that is neither the database's nor the network's answer is the
    instrument's own failure: class PROBE, code PROBE-<class name>."""
    c = classify(KeyError("AUTH_SESSION_ID"))
    assert (c.error_class, c.code) == (ErrorClass.PROBE, "PROBE-KeyError")
    c = classify(IndexError("array assignment index out of range"))
    assert (c.error_class, c.code) == (ErrorClass.PROBE, "PROBE-IndexError")
    c = classify(ProbeConfigError("a sweep of x is already running"))
    assert (c.error_class, c.code) == (ErrorClass.PROBE, "PROBE-CONFIG")


def test_driver_errors_without_a_code_stay_other() -> None:
    c = classify(oracledb.InterfaceError("no code here"))
    assert (c.error_class, c.code) == (ErrorClass.OTHER, "InterfaceError")
