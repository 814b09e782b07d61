"""The Compare page's words and shapes, from the store's comparison of known data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.samples import Sample, SampleStatus
from app.secrets import Vault
from app.store.read.compare import ModeStats
from app.store.write.ingest import write_samples
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.comparing import sentence, weighted_quantiles
from tests.web.data import Seeded


@pytest.fixture
def client(seeded_env: tuple[TestClient, Seeded]) -> TestClient:
    return seeded_env[0]


@pytest.fixture
def seeded(seeded_env: tuple[TestClient, Seeded]) -> Seeded:
    return seeded_env[1]


def _stats(kind: str, ratio: float, lo: float, hi: float, significant: bool) -> ModeStats:
    return ModeStats(
        mode_id=2, mode=kind, kind=kind, series_ids=[1], n=100, n_ok=100, n_error=0,
        n_timeout=0, availability=1.0, count=100, mean_ms=40.0, min_ms=30.0, p50_ms=40.0,
        p90_ms=45.0, p95_ms=46.0, p99_ms=50.0, max_ms=55.0, ratio=ratio, ci_low=lo,
        ci_high=hi, p_value=0.001, significant=significant,
    )  # fmt: skip


def test_sentence_says_faster_with_its_interval() -> None:
    s = sentence("logon", _stats("shared", 0.72, 0.69, 0.75, True), "dedicated", 0.95)
    assert s == "shared-server logons were 28 % faster than dedicated-server, 95 % CI 25-31 %"


def test_sentence_says_slower() -> None:
    s = sentence("ping", _stats("pooled", 1.10, 1.05, 1.16, True), "dedicated", 0.95)
    assert s is not None and s.startswith("DRCP (pooled) pings were 10 % slower than dedicated")


def test_sentence_refuses_to_claim_an_unclear_difference() -> None:
    s = sentence("logon", _stats("shared", 0.98, 0.9, 1.05, False), "dedicated", 0.95)
    assert s is not None and "not a clear difference" in s


def test_no_sentence_for_the_baseline_itself() -> None:
    assert sentence("logon", _stats("dedicated", 1.0, 1.0, 1.0, False), "dedicated", 0.95) is None


def test_weighted_quantiles_nearest_rank() -> None:
    hist = [(10.0, 50), (20.0, 40), (30.0, 10)]
    assert weighted_quantiles(hist, [0.5, 0.51, 0.9, 0.95]) == [10.0, 20.0, 20.0, 30.0]


def test_compare_api_on_known_data(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/api/v1/compare", params={"target": "sales", "range": "6h"})
    assert res.status_code == 200, res.text
    doc = res.json()
    by = {m["name"]: m for m in doc["modes"]}
    assert doc["baseline"] == "dedicated"
    assert abs(by["shared"]["ratio"] - 42 / 60) < 0.03
    assert by["shared"]["significant"] is True
    assert by["shared"]["n_failed"] == 3
    assert "faster than dedicated-server" in by["shared"]["sentence"]
    ecdf = by["dedicated"]["ecdf_y"]
    assert ecdf == sorted(ecdf) and ecdf[-1] == 1.0
    assert (
        by["dedicated"]["box"]["p5"]
        <= by["dedicated"]["box"]["p50"]
        <= by["dedicated"]["box"]["p95"]
    )


def test_compare_uses_one_probe_kind(client: TestClient, seeded: Seeded) -> None:
    """sales dedicated also runs sessionping (20 ms reconnect logons, twice as often): the
    default comparison is connping only, every mode with the same number of samples."""
    doc = client.get("/api/v1/compare", params={"target": "sales", "range": "1h"}).json()
    assert doc["probe"] == "connping"
    by = {m["name"]: m for m in doc["modes"]}
    n = by["pooled"]["n"]
    assert by["dedicated"]["n"] == n and 355 <= n <= 365  # an hour of 10-s runs, not pooled
    assert 57 < by["dedicated"]["p50"] < 63
    sp = client.get(
        "/api/v1/compare", params={"target": "sales", "range": "1h", "probe": "sessionping"}
    ).json()
    by = {m["name"]: m for m in sp["modes"]}
    assert sp["probe"] == "sessionping"
    assert by["dedicated"]["n"] in (2 * n - 1, 2 * n, 2 * n + 1)
    assert 19 < by["dedicated"]["p50"] < 21
    assert by["shared"]["n"] == 0 and by["shared"]["ratio"] is None
    daily = client.get(
        "/api/v1/compare/daily", params={"target": "sales", "probe": "sessionping"}
    ).json()
    by = {m["name"]: m for m in daily["modes"]}
    assert daily["probe"] == "sessionping" and by["shared"]["days"] == []
    assert all(19 < v < 21 for v in by["dedicated"]["p50"])


def test_compare_page_has_a_probe_selector(client: TestClient, seeded: Seeded) -> None:
    body = client.get("/compare?target=sales&range=1h", headers={"Accept": "text/html"}).text
    assert (
        '<select name="probe"><option selected>connping</option><option>sessionping</option>'
        in body
    )
    assert "Samples of the connping probe only" in body
    assert "/api/v1/compare?target=sales&amp;phase=logon&amp;probe=connping" in body
    other = client.get("/compare?target=sales&range=1h&probe=sessionping").text
    assert "Samples of the sessionping probe only" in other
    assert client.get("/compare?target=sales&probe=nope").status_code == 422


def test_daily_p50_per_mode(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/api/v1/compare/daily", params={"target": "sales", "range": "24h"})
    assert res.status_code == 200, res.text
    by = {m["name"]: m for m in res.json()["modes"]}
    assert by["dedicated"]["days"]
    assert all(55 < v < 65 for v in by["dedicated"]["p50"])


def test_sweep_without_sweeps_is_empty_not_an_error(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/api/v1/compare/sweep", params={"target": "sales"})
    assert res.status_code == 200
    assert all(m["levels"] == [] for m in res.json()["modes"])


def test_sweep_chart_reads_the_newest_run_per_mode(migrated_engine: Engine, vault: Vault) -> None:
    from tests.fixtures.auth import web_client

    doc = parse_targets(
        "targets:\n  - name: sw\n    kind: oracle\n    dsn: h:1521/S\n    username: u\n"
        "    modes:\n      - name: dedicated\n        probes: [{probe: sweep, interval: 1m}]\n",
        "t",
    )
    with migrated_engine.begin() as conn:
        import_targets(conn, doc, vault)
        sid = conn.execute(text("select id from series where probe = 'sweep'")).scalar_one()
    now = datetime.now(UTC).replace(microsecond=0)

    def run(at: datetime, scale: float) -> Sample:
        levels = [
            {"level": lv, "logons": 20, "errors": 0, "throughput_per_s": 100.0 / lv,
             "logon_ns": {"p50": int(scale * lv * 1e7), "p90": int(scale * lv * 2e7)}}
            for lv in (4, 1, 2)
        ]  # fmt: skip
        return Sample(sid, at, at, SampleStatus.OK, logon_ns=int(1e7), extra={"levels": levels})

    with migrated_engine.begin() as conn:
        write_samples(
            conn, [run(now - timedelta(minutes=30), 9.0), run(now - timedelta(minutes=5), 1.0)]
        )
    with web_client(migrated_engine, vault, role="viewer") as client:
        res = client.get("/api/v1/compare/sweep", params={"target": "sw", "range": "1h"})
    assert res.status_code == 200, res.text
    mode = res.json()["modes"][0]
    assert mode["levels"] == [1, 2, 4]
    assert mode["p50"] == [10.0, 20.0, 40.0]
    assert mode["p90"] == [20.0, 40.0, 80.0]
