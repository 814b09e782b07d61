"""Hand-built weeks with known answers for the weekly report and the heatmap.

Target ``weekly`` (Oracle), one sample every 30 minutes per series over two whole ISO
weeks: A (two weeks before this one) and B (the last complete week):

- dedicated connping: logon 50 ms / ping 1.0 ms in A, 60 ms / 1.5 ms in B (p95 +20 %
  and +50 %: slower, worse); in B 8 samples fail with TNS-12520, 2 time out and 4 are
  skipped: availability 322 / 332 = 96.9879 % (skipped not counted), A 100 %;
  Monday 09:00 and 09:30 UTC of week B log on in 100 ms (the heatmap's hot cell);
- dedicated sessionping (must never be mixed in): logon 5 ms, ping 0.2 ms, and 6
  DPY-4011 errors in B;
- shared connping: logon 40 ms in A, 36 ms in B (-10 %: faster), ping 1.2 ms, no errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlalchemy.engine import Engine

from app.samples import ErrorClass, Sample, SampleStatus
from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_target

NAME = "weekly"
STEP = timedelta(minutes=30)
PER_WEEK = 336
YAML = f"""
targets:
  - name: {NAME}
    kind: oracle
    dsn: dbhost:1521/WEEKLY
    username: connwatch
    password: weekly-typed-password
    modes:
      - name: dedicated
        probes:
          - {{probe: connping, interval: 30m}}
          - {{probe: sessionping, interval: 30m}}
      - name: shared
        probes:
          - {{probe: connping, interval: 30m}}
"""
B_ERRORS, B_TIMEOUTS, B_SKIPPED = 8, 2, 4
B_AVAILABILITY = 100.0 * (PER_WEEK - 14) / (PER_WEEK - 4)


@dataclass
class Weeks:
    a: datetime  # Monday 00:00 UTC of week A
    b: datetime  # Monday 00:00 UTC of week B (the last complete week)
    hot: list[datetime]  # the two 100 ms samples

    @property
    def b_label(self) -> str:
        y, w, _ = self.b.date().isocalendar()
        return f"{y}-W{w:02d}"


def _monday(d: date) -> datetime:
    m = d - timedelta(days=d.isoweekday() - 1)
    return datetime(m.year, m.month, m.day, tzinfo=UTC)


def _ok(sid: int, at: datetime, logon_ms: float, ping_ms: float) -> Sample:
    logon, ping = int(logon_ms * 1e6), int(ping_ms * 1e6)
    return Sample(
        series_id=sid, scheduled_at=at, started_at=at, status=SampleStatus.OK,
        total_ns=logon + ping + 1_000_000, logon_ns=logon, ping_ns=ping, query_ns=500_000,
        logoff_ns=500_000, agent="t", site="default",
    )  # fmt: skip


def _failed(sid: int, at: datetime, status: SampleStatus, code: str | None) -> Sample:
    cls = None
    if code:
        cls = ErrorClass(code.split("-")[0]) if "-" in code else ErrorClass.TIMEOUT
    return Sample(
        series_id=sid, scheduled_at=at, started_at=at, status=status, error_class=cls,
        error_code=code, error_phase="logon" if code else None, agent="t", site="default",
    )  # fmt: skip


def seed_weeks(engine: Engine, vault: Vault, now: datetime | None = None) -> Weeks:
    """Write the two weeks (idempotent: a second call changes nothing)."""
    now = now or datetime.now(UTC)
    b = _monday(now.date()) - timedelta(days=7)
    a = b - timedelta(days=7)
    hot = [b + timedelta(hours=9), b + timedelta(hours=9, minutes=30)]
    with engine.begin() as conn:
        if load_target(conn, NAME) is None:
            import_targets(conn, parse_targets(YAML, "weekly"), vault)
        t = load_target(conn, NAME)
    assert t is not None
    ded = t.mode("dedicated")
    sh = t.mode("shared")
    assert ded is not None and sh is not None
    cp = ded.series_for("connping")[0].id
    sp = ded.series_for("sessionping")[0].id
    shc = sh.series_for("connping")[0].id
    samples: list[Sample] = []
    for week, start in (("A", a), ("B", b)):
        for i in range(PER_WEEK):
            at = start + i * STEP
            if week == "A":
                samples.append(_ok(cp, at, 50.0, 1.0))
            elif 100 <= i < 100 + B_ERRORS:
                samples.append(_failed(cp, at, SampleStatus.ERROR, "TNS-12520"))
            elif 200 <= i < 200 + B_TIMEOUTS:
                samples.append(_failed(cp, at, SampleStatus.TIMEOUT, "TIMEOUT"))
            elif 300 <= i < 300 + B_SKIPPED:
                samples.append(_failed(cp, at, SampleStatus.SKIPPED, None))
            else:
                samples.append(_ok(cp, at, 100.0 if at in hot else 60.0, 1.5))
            sp_at = at + timedelta(minutes=15)
            if week == "B" and 50 <= i < 56:
                samples.append(_failed(sp, sp_at, SampleStatus.ERROR, "DPY-4011"))
            else:
                samples.append(_ok(sp, sp_at, 5.0, 0.2))
            samples.append(_ok(shc, at, 40.0 if week == "A" else 36.0, 1.2))
    with engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(engine)
    return Weeks(a, b, hot)
