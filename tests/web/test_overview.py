"""The overview on a store that started a few minutes ago: what exists is shown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.credentials import Vault
from app.samples import Sample
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_targets
from app.web.views.overview import sparkline_svg
from tests.web.data import _ok

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
