"""The demo's Oracle depth: ``sales`` as a two-instance (RAC) database with a tcps
listener, a ``dedicated-tls`` mode beside its tcp modes (seed 003's transport
comparison: TCP against TLS, IPC needing thick mode), a ``serverstats`` series on every
simulated database, and connping reading the server's own cost of each logon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.oraclesim import SimConfig
from app.oraclesim.config import InstanceConfig, TlsConfig
from app.oraclesim.tls import make_pki

SERVERSTATS = {"probe": "serverstats", "interval": "60s", "timeout": "10s"}


def configure(cfg: SimConfig, name: str, instances: tuple[str, ...], data_dir: Path) -> Path | None:
    """Give a demo database its instances and, for more than one (``sales``), a tcps
    listener with a certificate made now in ``<data_dir>/oraclesim-pki/<name>``; returns
    the CA file a client must trust (None without tcps)."""
    if len(instances) > 1:
        cfg.instances = tuple(InstanceConfig(n, i + 1) for i, n in enumerate(instances))
        pki = make_pki(data_dir / "oraclesim-pki" / name, host="127.0.0.1", common_name=name)
        cfg.tls = TlsConfig(str(pki.server_cert), str(pki.server_key))
        return pki.ca_cert
    return None


def extra_modes(tls_port: int, ca_file: Path | None) -> list[dict[str, Any]]:
    """Modes a demo database gets beyond dedicated / shared / pooled."""
    if not tls_port or ca_file is None:
        return []
    return [
        {
            "name": "dedicated-tls",
            "kind": "dedicated",
            "transport": "tcps",
            "params": {"port": tls_port, "ssl_ca_file": str(ca_file)},
            "probes": [
                {"probe": "connping", "interval": "5s", "timeout": "4s", "params": _SERVER_TIME}
            ],
        }
    ]


_SERVER_TIME = {"server_time": True}


def deepen(modes: list[dict[str, Any]]) -> None:
    """connping reads the server's time per logon; the dedicated mode reads the V$ views."""
    for mode in modes:
        for probe in mode.get("probes", ()):
            if probe["probe"] == "connping":
                probe.setdefault("params", {}).update(_SERVER_TIME)
        if mode["name"] == "dedicated":
            mode["probes"].append(dict(SERVERSTATS))
