"""The overview on a store that started a few minutes ago: what exists is shown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.samples import Sample
from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import ModeInfo, SeriesInfo, TargetInfo, load_targets
from app.web.views.overview import ModeStats, classify, sparkline_svg
from tests.web.data import Seeded, _ok

YAML = """
targets:
  - name: fresh
    kind: oracle
    dsn: dbhost:1521/FRESH
    username: connwatch
    modes:
      - name: dedicated
        probes:
          - {probe: connping, interval: 10s}
          - {probe: sessionping, interval: 5s, timeout: 2s}
      - name: shared
        probes:
          - {probe: sessionping, interval: 5s, timeout: 2s}
"""


def _three_minutes(engine: Engine, vault: Vault) -> None:
    """Three minutes of samples ending now: dedicated connping 60 ms and sessionping 20 ms
    (every 5 s), shared sessionping 30 ms only."""
    with engine.begin() as conn:
        import_targets(conn, parse_targets(YAML, "test"), vault)
        targets = load_targets(conn)
    ids = {(m.name, s.probe): s.id for t in targets for m in t.modes for s in m.series}
    now = datetime.now(UTC).replace(microsecond=0)
    samples: list[Sample] = []
    for i in range(36):
        at = now - timedelta(seconds=180 - 5 * i)
        samples.append(_ok(ids[("dedicated", "sessionping")], at, 20.0, 0.5, i))
        samples.append(_ok(ids[("shared", "sessionping")], at, 30.0, 0.5, i))
        if i % 2 == 0:
            samples.append(_ok(ids[("dedicated", "connping")], at, 60.0, 1.0, i))
    with engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(engine)


def test_sparkline_shows_the_first_minutes(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    _three_minutes(migrated_engine, vault)
    rows = {r["mode"]: r for r in client.get("/api/v1/overview").json()["rows"]}
    spark = rows["dedicated"]["spark_logon_p50_ms"]
    assert 60 <= len(spark) <= 61  # one point per minute of the hour
    known = [v for v in spark if v is not None]
    assert 3 <= len(known) <= 4  # 3 minutes of data, on a minute grid
    assert all(57 <= v <= 63 for v in known)  # connping's logons, not sessionping's 20 ms
    assert spark[-1] is not None or spark[-2] is not None  # the newest minutes, at the end
    body = client.get("/", headers={"Accept": "text/html"}).text
    assert body.count("<polyline") >= 2  # both rows draw a line


def test_a_mode_without_connping_is_read_from_one_other_probe(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    _three_minutes(migrated_engine, vault)
    rows = {r["mode"]: r for r in client.get("/api/v1/overview").json()["rows"]}
    assert rows["dedicated"]["probe"] == "connping"
    assert 57 <= rows["dedicated"]["logon_p50_ms"] <= 63
    assert rows["dedicated"]["samples_15m"] == 18  # connping only, not the 36 sessionpings
    assert rows["shared"]["probe"] == "sessionping"
    assert rows["shared"]["state"] == "ok"
    assert 28 <= rows["shared"]["logon_p50_ms"] <= 32
    body = client.get("/", headers={"Accept": "text/html"}).text
    assert 'class="probe"' in body and ">sessionping</span>" in body


def test_sparkline_svg_draws_lines_dots_and_gaps() -> None:
    svg = sparkline_svg([None, 10.0, 12.0, None, 11.0, None], "#0072B2")
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 1
    assert 'fill="#0072B2"' in svg and "10.0 to 12.0 ms" in svg
    assert sparkline_svg([None, None], "#000") == ""
    lone = sparkline_svg([None] * 59 + [42.0], "#000")
    assert "<circle" in lone and "<polyline" not in lone


def _stats(**kw: object) -> ModeStats:
    now = datetime.now(UTC)
    base: dict[str, object] = {"last_at": now, "n_5m": 30, "ok_5m": 30, "n_15m": 90}
    base.update(kw)
    return ModeStats(**base)  # type: ignore[arg-type]


def _classify(stats: ModeStats) -> tuple[str, str]:
    series = [SeriesInfo(1, "connping", "default", 10_000, 5_000, True)]
    mode = ModeInfo(1, "direct", "direct", "tcp", True, {}, series)
    target = TargetInfo(1, "t", "postgres", "h:5432/d", "u", "", True, False, None, {}, [mode])
    return classify(mode, target, stats, datetime.now(UTC))


def test_a_normal_tail_is_not_degraded() -> None:
    # issue 11: p95 above twice the median p50 is what a tail looks like, not a degradation
    state, _ = _classify(
        _stats(logon_p50=5.0, logon_p95=40.0, baseline_logon_p50=5.0, baseline_minutes=60)
    )
    assert state == "ok"


def test_a_doubled_median_is_degraded_and_says_by_how_much() -> None:
    state, reason = _classify(
        _stats(logon_p50=120.0, logon_p95=160.0, baseline_logon_p50=55.0, baseline_minutes=60)
    )
    assert state == "degraded"
    assert reason == "logon p50 120.0 ms is more than 2 times the last hour's median of 55.0 ms"


def test_tiny_or_thinly_based_changes_are_not_degraded() -> None:
    # 1 ms -> 3 ms is noise; 4 minutes of history is too little to compare with
    assert _classify(_stats(logon_p50=3.0, baseline_logon_p50=1.0, baseline_minutes=60))[0] == "ok"
    assert (
        _classify(_stats(logon_p50=200.0, baseline_logon_p50=50.0, baseline_minutes=4))[0] == "ok"
    )


def test_an_hour_with_a_heavy_tail_stays_ok(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    # one logon in ten is 8x slower: p95 is far above twice the median, every minute
    with migrated_engine.begin() as conn:
        import_targets(conn, parse_targets(YAML, "test"), vault)
        sid = next(
            s.id
            for t in load_targets(conn)
            for m in t.modes
            for s in m.series
            if (m.name, s.probe) == ("dedicated", "connping")
        )
    now = datetime.now(UTC).replace(microsecond=0)
    samples = [
        _ok(sid, now - timedelta(seconds=10 * i), 40.0 if i % 10 else 320.0, 1.0, i)
        for i in range(360)
    ]
    with migrated_engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(migrated_engine)
    rows = {r["mode"]: r for r in client.get("/api/v1/overview").json()["rows"]}
    row = rows["dedicated"]
    assert row["logon_p95_ms"] > 2 * row["logon_p50_ms"]  # the old rule's false alarm
    assert row["state"] == "ok", row["reason"]


def test_the_newest_failure_code_is_on_the_overview_with_its_meaning(
    client: TestClient, seeded: Seeded
) -> None:
    rows = {(r["target"], r["mode"]): r for r in client.get("/api/v1/overview").json()["rows"]}
    hr = rows[("hr", "dedicated")]
    assert hr["state"] == "down"
    assert hr["last_error_code"] == "ORA-12541"
    assert hr["last_error_meaning"] == "no listener"
    assert rows[("sales", "dedicated")]["last_error_code"] is None
    body = client.get("/", headers={"Accept": "text/html"}).text
    assert 'data-code="ORA-12541"' in body and "no listener" in body
