"""What ``params`` each probe kind, target kind and mode accepts: one schema, checked twice.

``targets import``, the web's target form and the API check a target against it
before anything is stored (:mod:`app.targets`), so a typo is an error naming the
file, entry and field instead of CONFIG error samples an hour later; the probes
(:mod:`app.probes`) and the agent's spec builder check the same schema again when
they are built, for rows written by older versions or by hand.

This module is plain data and functions: it imports nothing from the probes, the
agent or the web, so all of them may use it.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast


class ParamError(ValueError):
    """A parameter is unknown or has a wrong type or value; the message names it."""


@dataclass(frozen=True, slots=True)
class Param:
    kind: type
    default: Any
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    doc: str = ""


def _show(value: Any) -> str:
    """A value for a message: its repr, cut short (a hostile one may be megabytes)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _read(name: str, spec: Param, params: Mapping[str, Any]) -> Any:
    value: Any = params[name] if name in params else copy.copy(spec.default)
    if spec.kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, spec.kind) or (spec.kind is not bool and isinstance(value, bool)):
        raise ParamError(f"parameter {name!r} must be {spec.kind.__name__}, got {_show(value)}")
    # ints compare as ints (10**400 does not fit a float); NaN and infinity are refused
    number = cast(float, value) if spec.kind in (int, float) else 0.0
    if not math.isfinite(min(abs(number), 1e300) if isinstance(number, int) else number):
        raise ParamError(f"parameter {name!r} must be a finite number, got {_show(value)}")
    if spec.minimum is not None and number < spec.minimum:
        raise ParamError(f"parameter {name!r} must be >= {_num(spec.minimum)}, got {_show(value)}")
    if spec.maximum is not None and number > spec.maximum:
        raise ParamError(f"parameter {name!r} must be <= {_num(spec.maximum)}, got {_show(value)}")
    if spec.choices is not None and value not in spec.choices:
        raise ParamError(
            f"parameter {name!r} must be one of {', '.join(spec.choices)}, got {_show(value)}"
        )
    return value


# -- probe kinds ---------------------------------------------------------------------

COMMIT_TABLE = "connwatch_probe"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_$#]{0,127}(\.[A-Za-z_][A-Za-z0-9_$#]{0,127})?$")
SWEEP_MAX_LEVEL = 32  # parallel logon loops in one sweep step
SWEEP_MAX_TOTAL_LOGONS = 5000  # logons in one sweep run

PROBE_PARAMS: dict[str, dict[str, Param]] = {
    "connping": {
        "warm": Param(bool, True, doc="one untimed logon first (connping's warm-up)"),
        "server_time": Param(
            bool, False, doc="also read the server's time for the logon (V$SESS_TIME_MODEL)"
        ),
    },
    "sessionping": {
        "warm": Param(bool, True, doc="one untimed round trip after (re)connecting"),
        "query": Param(bool, True, doc="also time select 1 from dual"),
    },
    "commit": {
        "table": Param(str, COMMIT_TABLE, doc="table the probe inserts into"),
        "probe_id": Param(str, "connwatch", doc="value of the probe_id column"),
        "purge_every": Param(int, 100, minimum=1, maximum=1_000_000, doc="runs between purges"),
        "keep_seconds": Param(
            int, 3600, minimum=0, maximum=366 * 86_400, doc="age of the rows a purge keeps"
        ),
    },
    "poolacquire": {
        "validation": Param(
            str, "foreground", choices=("foreground", "background"), doc="pool ping_interval"
        ),
        "min": Param(int, 1, minimum=0, maximum=1000, doc="pool min"),
        "max": Param(int, 2, minimum=1, maximum=1000, doc="pool max"),
        "increment": Param(int, 1, minimum=1, maximum=1000, doc="pool increment"),
    },
    "serverstats": {
        "gv": Param(
            str,
            "auto",
            choices=("auto", "on", "off"),
            doc="read GV$ views (every RAC instance): auto falls back to V$",
        ),
        "classes": Param(bool, True, doc="also read V$CPOOL_CC_STATS per connection class"),
        "user": Param(str, "", doc="monitoring account (default: the target's account)"),
        "password_ref": Param(str, "", doc="its password: env:NAME or file:PATH"),
    },
    "sweep": {
        "levels": Param(list, [1, 2, 4], doc="concurrency levels, each 1..32"),
        "logons": Param(
            int, 20, minimum=1, maximum=SWEEP_MAX_TOTAL_LOGONS, doc="logons per loop and level"
        ),
        "pause_s": Param(
            float, 0.0, minimum=0.0, maximum=60.0, doc="pause between logons, seconds"
        ),
    },
}


def _commit_extra(v: dict[str, Any]) -> None:
    if not _IDENT.match(v["table"]):
        raise ParamError(f"parameter 'table' is not a plain table name: {v['table']!r}")


def _poolacquire_extra(v: dict[str, Any]) -> None:
    if v["max"] < v["min"]:
        raise ParamError(f"parameter 'max' ({v['max']}) is below 'min' ({v['min']})")


def _sweep_extra(v: dict[str, Any]) -> None:
    levels = v["levels"]
    if not levels or not all(isinstance(x, int) and not isinstance(x, bool) for x in levels):
        raise ParamError(f"parameter 'levels' must be a list of ints, got {levels!r}")
    if any(x < 1 or x > SWEEP_MAX_LEVEL for x in levels):
        raise ParamError(f"parameter 'levels' must be within 1..{SWEEP_MAX_LEVEL}")
    total = sum(levels) * v["logons"]
    if total > SWEEP_MAX_TOTAL_LOGONS:
        raise ParamError(
            f"sweep would make {total} logons (> {SWEEP_MAX_TOTAL_LOGONS}); lower levels or logons"
        )


def _serverstats_extra(v: dict[str, Any]) -> None:
    if bool(v["user"]) != bool(v["password_ref"]):
        raise ParamError("parameters 'user' and 'password_ref' go together")
    ref = v["password_ref"]
    if ref and not (ref.startswith("env:") or ref.startswith("file:")):
        raise ParamError("parameter 'password_ref' must be env:NAME or file:PATH, not a password")


_EXTRA: dict[str, Callable[[dict[str, Any]], None]] = {
    "serverstats": _serverstats_extra,
    "commit": _commit_extra,
    "poolacquire": _poolacquire_extra,
    "sweep": _sweep_extra,
}


def probe_params(probe: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter of ``probe`` with defaults filled in; :class:`ParamError` if not valid."""
    schema = PROBE_PARAMS.get(probe)
    if schema is None:
        raise ParamError(f"unknown probe {probe!r} (one of {', '.join(PROBE_PARAMS)})")
    unknown = sorted(set(params) - set(schema))
    if unknown:
        raise ParamError(
            f"probe {probe!r}: unknown parameter(s) {', '.join(unknown)}"
            f" (known: {', '.join(sorted(schema))})"
        )
    values = {name: _read(name, spec, params) for name, spec in schema.items()}
    check = _EXTRA.get(probe)
    if check is not None:
        check(values)
    return values


# -- target and mode params (connection knobs) -----------------------------------------

ORACLE_KEYS = frozenset(
    {
        "cclass",
        "purity",
        "pool_boundary",
        "sdu",
        "connect_timeout",
        "wallet_location",
        "wallet_password_ref",
        "config_dir",
        "tns_admin",
        "port",
        "ssl_ca_file",
        "ssl_server_dn_match",
        "ssl_server_cert_dn",
        "ssl_version",
        "instance_name",
    }
)
POSTGRES_KEYS = frozenset({"host", "port", "dbname", "connect_timeout", "sslmode", "options"})

_CHOICES = {
    "purity": ("default", "new", "self"),
    "pool_boundary": ("statement", "transaction"),
    "ssl_version": ("1.2", "1.3"),
}
_INT_RANGES = {"sdu": (512, 2_097_152), "port": (1, 65535)}
_BOOLS = {"ssl_server_dn_match"}
_STRINGS = {
    "ssl_ca_file",
    "ssl_server_cert_dn",
    "instance_name",
    "cclass",
    "wallet_location",
    "wallet_password_ref",
    "config_dir",
    "tns_admin",
    "host",
    "dbname",
    "sslmode",
}


def connection_param_errors(
    kind: str, params: Mapping[str, Any], parse_duration_ms: Callable[[Any], int]
) -> list[str]:
    """What is wrong with a target's or mode's ``params`` for a ``kind`` target ("oracle"
    or "postgres"), one message per key; empty when they are fine.

    Checks the names and the values that need no secret or file to check; references
    (``wallet_password_ref``) and paths are resolved only when a probe is built.
    """
    known = ORACLE_KEYS if kind == "oracle" else POSTGRES_KEYS
    errors: list[str] = []
    for key in sorted(set(params) - known):
        errors.append(f"unknown {kind} parameter {key!r} (known: {', '.join(sorted(known))})")
    for key, value in params.items():
        if key not in known:
            continue
        if key in _CHOICES:
            if str(value).lower() not in _CHOICES[key]:
                errors.append(
                    f"parameter {key!r} must be one of {', '.join(_CHOICES[key])}, got {value!r}"
                )
        elif key in _INT_RANGES:
            lo, hi = _INT_RANGES[key]
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                errors.append(f"parameter {key!r} must be an integer {lo}..{hi}, got {value!r}")
        elif key == "connect_timeout":
            try:
                ms = parse_duration_ms(value)
            except ValueError as exc:
                errors.append(f"parameter 'connect_timeout': {exc} (got {value!r})")
            else:
                if ms <= 0 or ms > 86_400_000:
                    errors.append(
                        f"parameter 'connect_timeout' must be from 1ms to 1d, got {value!r}"
                    )
        elif key == "options":
            if not isinstance(value, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()
            ):
                errors.append("parameter 'options' must map libpq keywords to strings")
        elif key in _BOOLS and not isinstance(value, bool):
            errors.append(f"parameter {key!r} must be true or false, got {value!r}")
        elif key in _STRINGS and (not isinstance(value, str) or not value):
            errors.append(f"parameter {key!r} must be a non-empty string, got {value!r}")
    return errors


SERVER_TYPES = ("dedicated", "shared", "pooled")
_EASY = re.compile(
    r"^(?:tcps?://|//)?(?P<host>\[[^\]]*\]|[^:/?\[]*)(?::(?P<port>[^/?]*))?"
    r"(?:/(?P<service>[^:/?]*)(?::(?P<stype>[^/?]*))?(?:/(?P<inst>[^?]*))?)?(?:\?.*)?$"
)


def easy_connect_error(connect: str, *, server_type_allowed: bool = True) -> str | None:
    """What is wrong with an Oracle Easy Connect string, in words (None: nothing seen).

    Only strings that look like Easy Connect (a ``:`` or ``/``) are checked: a tnsnames
    alias or a ``(DESCRIPTION=...)`` descriptor is left to the driver. Catches what
    python-oracledb would misreport: a port that is not a number (the driver then takes
    the whole string for a tnsnames alias: "DPY-4027: no configuration directory") and a
    server type other than dedicated, shared or pooled.
    """
    text = connect.strip()
    if text.startswith("(") or (":" not in text and "/" not in text):
        return None
    m = _EASY.match(text)
    if m is None or not m.group("host"):
        return f"{text!r} is not host[:port][/service] (Easy Connect) nor a tnsnames alias"
    port = m.group("port")
    if port is not None and not (port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        return f"port {port!r} in {text!r} must be a number from 1 to 65535"
    stype = m.group("stype")
    if stype is not None:
        if not server_type_allowed:
            return (
                f"{text!r} ends in ':{stype}': give the server type as the mode's kind "
                f"({', '.join(SERVER_TYPES)}), not in the connect string"
            )
        if stype.lower() not in SERVER_TYPES:
            return f"server type {stype!r} in {text!r} must be one of {', '.join(SERVER_TYPES)}"
    return None
