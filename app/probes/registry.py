"""The explicit probe registry: probe kind name -> probe class."""

from __future__ import annotations

from app.probes.base import Probe, ProbeConfigError
from app.probes.commit import CommitProbe
from app.probes.connping import ConnPing
from app.probes.poolacquire import PoolAcquire
from app.probes.serverstats import ServerStats
from app.probes.sessionping import SessionPing
from app.probes.spec import ProbeSpec
from app.probes.sweep import Sweep

PROBES: dict[str, type[Probe]] = {
    "connping": ConnPing,
    "sessionping": SessionPing,
    "poolacquire": PoolAcquire,
    "commit": CommitProbe,
    "sweep": Sweep,
    "serverstats": ServerStats,
}


def create_probe(spec: ProbeSpec) -> Probe:
    """The probe for ``spec``; raises ProbeConfigError for an unknown kind or bad params."""
    try:
        cls = PROBES[spec.kind]
    except KeyError:
        raise ProbeConfigError(
            f"unknown probe kind {spec.kind!r} (known: {', '.join(sorted(PROBES))})"
        ) from None
    if spec.deadline_s <= 0:
        raise ProbeConfigError(f"deadline must be positive, got {spec.deadline_s!r}")
    return cls(spec)
