"""Look a recorded code up: exact entry, else a sentence for its family, never nothing."""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass

from app.explain.codes import CONNWATCH, DPY, NET, ORA, PG, PROBE, TLS, TNS

# family -> (title, what codes of the family are), in the order the reference page shows
FAMILIES: dict[str, tuple[str, str]] = {
    "connwatch": (
        "Recorded by connwatch",
        "Timeouts, unusable configuration and runs the agent skipped (the monitor's own "
        "trouble, never counted against the database's availability when skipped).",
    ),
    "PROBE": (
        "Probe-side (PROBE-)",
        "The measurement failed on connwatch's side (a driver defect, a bug, a series it "
        "cannot build): the sample says nothing about the database and is never counted "
        "against its availability, alerts or reports.",
    ),
    "ORA": ("Oracle server (ORA-)", "The database answered with an error."),
    "TNS": (
        "Oracle listener (TNS-)",
        "The listener refused the connection; thin mode reports these as DPY-6005 "
        "'Similar to ORA-125xx' and connwatch records the ORA-125xx number as TNS-.",
    ),
    "DPY": (
        "python-oracledb client (DPY-)",
        "The driver itself failed or gave up, with no server error to report.",
    ),
    "PG": (
        "PostgreSQL and pgbouncer (PG-SQLSTATE)",
        "The server's SQLSTATE; start-up failures libpq reports without one are "
        "recognised by their message.",
    ),
    "TLS": (
        "TLS handshake (TLS-)",
        "A tcps logon failed before Oracle Net started: trust, certificate name or DN, "
        "or TLS version.",
    ),
    "NET": (
        "Network, from the operating system (NET-ERRNO)",
        "The agent's operating system could not reach the target (errno name).",
    ),
    "OTHER": (
        "Anything else",
        "An exception no rule recognised, coded by its class name.",
    ),
}

_TABLES = {
    "connwatch": CONNWATCH,
    "PROBE": PROBE,
    "ORA": ORA,
    "TNS": TNS,
    "DPY": DPY,
    "PG": PG,
    "TLS": TLS,
    "NET": NET,
}

# SQLSTATE classes (the first two characters), for PG- codes not in the table
_PG_CLASSES: dict[str, str] = {
    "08": "connection exception",
    "28": "invalid authorization",
    "3D": "invalid database name",
    "42": "syntax error or access rule violation",
    "53": "insufficient resources",
    "54": "program limit exceeded",
    "55": "object not in prerequisite state",
    "57": "operator intervention",
    "58": "system error outside PostgreSQL",
    "40": "transaction rollback",
    "25": "invalid transaction state",
    "XX": "internal error",
}
_CODE = re.compile(r"^(PROBE|ORA|TNS|DPY|PG|TLS|NET)-(.+)$")


@dataclass(frozen=True, slots=True)
class Explanation:
    """One code's meaning and likely cause (``known``: from the table, not the family)."""

    code: str
    family: str
    meaning: str
    cause: str
    known: bool

    def line(self) -> str:
        """One line for hover text and alert messages: ``CODE: meaning (likely: cause)``."""
        return f"{self.code}: {self.meaning} (likely: {self.cause})"

    def as_dict(self) -> dict[str, str | bool]:
        return {
            "code": self.code,
            "family": self.family,
            "meaning": self.meaning,
            "cause": self.cause,
            "known": self.known,
        }


def family_of(code: str) -> str:
    """``connwatch``, ``PROBE``, ``ORA``, ``TNS``, ``DPY``, ``PG``, ``TLS``, ``NET``, ``OTHER``."""
    if code in CONNWATCH:
        return "connwatch"
    m = _CODE.match(code)
    return m.group(1) if m else "OTHER"


def _family_sentence(code: str, family: str) -> tuple[str, str]:
    rest = code.split("-", 1)[1] if "-" in code else code
    if family == "ORA":
        return (
            f"Oracle server error {code}",
            f"not in connwatch's table: run `oerr ora {rest.lstrip('0') or '0'}` on the "
            "database host or see Oracle's error reference",
        )
    if family == "TNS":
        return (
            f"Oracle Net listener error {code}",
            "the listener refused the connection; its log (listener.log) says why",
        )
    if family == "DPY":
        return (
            f"python-oracledb client error {code}",
            "the sample's message says more; python-oracledb's documentation lists every DPY- code",
        )
    if family == "PG":
        what = _PG_CLASSES.get(rest[:2].upper(), "PostgreSQL error")
        return (
            f"PostgreSQL SQLSTATE {rest}: {what}",
            "the sample's message says more; PostgreSQL's 'Error Codes' appendix lists "
            "every SQLSTATE",
        )
    if family == "TLS":
        return (
            f"the TLS handshake failed ({rest.lower()})",
            "the sample's message has the TLS library's reason",
        )
    if family == "NET":
        number = getattr(errno, rest, None)
        text = os.strerror(number) if isinstance(number, int) else "a network error"
        return (
            f"network error from the operating system: {text.lower()}",
            "the agent's host could not reach or keep the connection to the target",
        )
    if family == "PROBE":
        return (
            f"probe-side: {rest} was raised on connwatch's side while probing, not by the database",
            "a defect of the driver or of connwatch; the sample's message says more; "
            "not counted against the target; report it",
        )
    return (
        f"an unexpected {code} was raised while probing",
        "the sample's message says more; if it looks like connwatch's fault, report it",
    )


def explain(code: str | None) -> Explanation | None:
    """The explanation of one recorded code; ``None`` for no code (a good sample)."""
    if not code:
        return None
    code = code.strip()
    family = family_of(code)
    entry = _TABLES.get(family, {}).get(code)
    if entry is None and family == "ORA" and code[4:7] == "125":  # the listener's, as ORA-
        entry = TNS.get("TNS-" + code[4:])
    if entry is not None:
        return Explanation(code, family, entry[0], entry[1], True)
    meaning, cause = _family_sentence(code, family)
    return Explanation(code, family, meaning, cause, False)


def catalogue() -> list[Explanation]:
    """Every code in the table, family by family (the ``/errors`` page's rows)."""
    out: list[Explanation] = []
    for family in FAMILIES:
        for code, (meaning, cause) in _TABLES.get(family, {}).items():
            out.append(Explanation(code, family, meaning, cause, True))
    return out
