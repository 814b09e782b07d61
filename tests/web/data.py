"""Known data for the web tests, written through the real store (writer + rollups).

``seed`` creates two Oracle targets imported as targets-as-code ("sales" with
dedicated / shared / pooled, "hr" with dedicated only, plus a disabled "old") and
writes two hours of connping samples every 10 s ending now:

- sales dedicated: logon 60 ms, ping 1.0 ms; shared: logon 42 ms, ping 1.2 ms;
  pooled: logon 45 ms, ping 1.1 ms; each sample varies by +-5 % deterministically;
- sales shared fails with TNS-12520 for 3 samples 30 minutes ago;
- hr dedicated: every sample of the last 10 minutes fails with ORA-12541 (down);
- every ok sample's logon is split into round trips (``PHASE_SHARES``, in wire order);
- sales dedicated also runs sessionping: a reconnect logon of 20 ms every 5 s (twice as
  many samples as its connping; no comparison or chart may pool the two);
- sales dedicated spikes to 300 ms logon for the minute starting 50 minutes ago
  (``spike_at``), and the same UTC hour 1, 2 and 3 weeks earlier has normal samples
  (the store's spike baseline).

The secret password of "sales" is ``SECRET_PW`` (it must never come back).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import psycopg
from cryptography.fernet import Fernet
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from sqlalchemy.engine import Engine

from app import migrate
from app.demo.pgcluster import PgCluster
from app.samples import ErrorClass, Sample, SampleStatus
from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_targets
from tests.fixtures.auth import web_client

SECRET_PW = "s3cr3t-Tiger!-do-not-show"
LOGON_MS = {"dedicated": 60.0, "shared": 42.0, "pooled": 45.0}
SESSIONPING_LOGON_MS = 20.0
PING_MS = {"dedicated": 1.0, "shared": 1.2, "pooled": 1.1}

TARGETS_YAML = f"""
targets:
  - name: sales
    kind: oracle
    dsn: dbhost:1521/SALES
    username: connwatch
    password: "{SECRET_PW}"
    modes:
      - name: dedicated
        probes:
          - {{probe: connping, interval: 10s}}
          - {{probe: sessionping, interval: 5s, timeout: 2s}}
      - name: shared
      - name: pooled
        params: {{cclass: CW, purity: self}}
  - name: hr
    kind: oracle
    dsn: dbhost:1521/HR
    username: connwatch
    password: hr-typed-password
    modes:
      - name: dedicated
  - name: old
    kind: postgres
    dsn: host=old dbname=app
    username: app
    enabled: false
    modes:
      - name: direct
"""


@dataclass
class Seeded:
    now: datetime
    series: dict[tuple[str, str], int]  # (target, mode) -> connping series id
    sessionping: int  # the series id of sales dedicated's sessionping
    errors_at: datetime
    spike_at: datetime


# the logon split into its round trips, in wire order (they add up to the logon)
PHASE_SHARES = {
    "tcp_connect": 0.05,
    "connect": 0.45,
    "protocol": 0.05,
    "data_types": 0.05,
    "auth1": 0.15,
    "auth2": 0.25,
}


def _phases(logon_ns: int) -> dict[str, int]:
    out = {k: int(logon_ns * f) for k, f in PHASE_SHARES.items()}
    out["auth2"] += logon_ns - sum(out.values())
    return out


def _ok(sid: int, at: datetime, logon_ms: float, ping_ms: float, i: int) -> Sample:
    f = 1.0 + 0.05 * ((i * 7919) % 21 - 10) / 10.0
    logon = int(logon_ms * f * 1e6)
    ping = int(ping_ms * f * 1e6)
    return Sample(
        series_id=sid,
        scheduled_at=at,
        started_at=at + timedelta(microseconds=300),
        status=SampleStatus.OK,
        total_ns=logon + ping + 2_000_000,
        logon_ns=logon,
        ping_ns=ping,
        query_ns=1_500_000,
        logoff_ns=500_000,
        round_trips=8,
        logon_phases=_phases(logon),
        sid=100 + i % 50,
        serial=i,
        instance="inst1" if i % 2 else "inst2",
        service="SALES",
        server_type="DEDICATED",
        agent="test-agent",
        site="default",
    )


def _fail(sid: int, at: datetime, code: str, cls: ErrorClass) -> Sample:
    return Sample(
        series_id=sid,
        scheduled_at=at,
        started_at=at + timedelta(microseconds=300),
        status=SampleStatus.ERROR,
        total_ns=3_000_000,
        error_class=cls,
        error_code=code,
        error_phase="logon",
        error_message=f"{code}: refused",
        agent="test-agent",
        site="default",
    )


def seed(engine: Engine, vault: Vault, *, hours: float = 2.0) -> Seeded:
    with engine.begin() as conn:
        import_targets(conn, parse_targets(TARGETS_YAML, "seed"), vault)
        targets = load_targets(conn)
    series = {
        (t.name, m.name): s.id
        for t in targets
        for m in t.modes
        for s in m.series
        if s.probe == "connping"
    }
    sping = next(
        s.id for t in targets for m in t.modes for s in m.series if s.probe == "sessionping"
    )
    now = datetime.now(UTC).replace(microsecond=0)
    start = now - timedelta(hours=hours)
    errors_at = now - timedelta(minutes=30)
    spike_at = (now - timedelta(minutes=50)).replace(second=0)
    samples: list[Sample] = []
    ded = series[("sales", "dedicated")]
    hour = spike_at.replace(minute=0)
    for week in (1, 2, 3):
        for i in range(60):
            at = hour - timedelta(weeks=week) + timedelta(minutes=i)
            samples.append(_ok(ded, at, LOGON_MS["dedicated"], PING_MS["dedicated"], i))
    n = int(hours * 360)
    for i in range(n):
        at = start + timedelta(seconds=10 * i)
        for mode in ("dedicated", "shared", "pooled"):
            sid = series[("sales", mode)]
            if mode == "shared" and errors_at <= at < errors_at + timedelta(seconds=30):
                samples.append(_fail(sid, at, "TNS-12520", ErrorClass.TNS))
            elif mode == "dedicated" and spike_at <= at < spike_at + timedelta(minutes=1):
                samples.append(_ok(sid, at, 300.0, PING_MS[mode], i))
            else:
                samples.append(_ok(sid, at, LOGON_MS[mode], PING_MS[mode], i))
        for half in (0, 5):
            samples.append(
                _ok(sping, at + timedelta(seconds=half), SESSIONPING_LOGON_MS, 0.5, 2 * i + half)
            )
        hr = series[("hr", "dedicated")]
        if at >= now - timedelta(minutes=10):
            samples.append(_fail(hr, at, "ORA-12541", ErrorClass.ORA))
        else:
            samples.append(_ok(hr, at, 80.0, 2.0, i))
    with engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(engine)
    return Seeded(now=now, series=series, sessionping=sping, errors_at=errors_at, spike_at=spike_at)


T = TypeVar("T")


@contextlib.contextmanager
def seeded_app(
    pg_cluster: PgCluster, prefix: str, seeder: Callable[[Engine, Vault], T]
) -> Iterator[tuple[TestClient, T]]:
    """A fresh database migrated to head and filled by ``seeder``, a client on the app over
    it; the database is dropped afterwards."""
    name = prefix + uuid.uuid4().hex[:10]
    pg_cluster.create_database(name)
    engine = create_engine(pg_cluster.url(name))
    try:
        migrate.upgrade(engine)
        vault = Vault(Fernet.generate_key())
        data = seeder(engine, vault)
        with web_client(engine, vault, role="admin") as c:
            yield c, data
    finally:
        engine.dispose()
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as conn:
            conn.execute(f'drop database if exists "{name}" with (force)')
