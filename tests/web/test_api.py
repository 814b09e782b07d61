"""The JSON API on known data: shapes, numbers, strict validation (4xx with a message)."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from app.web.timerange import iso
from tests.web.data import LOGON_MS, SECRET_PW, SESSIONPING_LOGON_MS, Seeded


@pytest.fixture
def client(seeded_env: tuple[TestClient, Seeded]) -> TestClient:
    return seeded_env[0]


@pytest.fixture
def seeded(seeded_env: tuple[TestClient, Seeded]) -> Seeded:
    return seeded_env[1]


def test_timeseries_per_mode_with_band_and_error_codes(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/api/v1/targets/sales/timeseries", params={"phase": "logon", "range": "6h"})
    assert res.status_code == 200, res.text
    doc = res.json()
    assert doc["resolution"] == "raw"
    by = {m["name"]: m for m in doc["modes"]}
    assert set(by) == {"dedicated", "shared", "pooled"}
    for name, m in by.items():
        p50s = [v for v in m["p50"] if v is not None]
        assert p50s, name
        median = sorted(p50s)[len(p50s) // 2]
        assert abs(median - LOGON_MS[name]) / LOGON_MS[name] < 0.06, name
        for lo, mid, hi in zip(m["p5"], m["p50"], m["p95"], strict=True):
            if mid is not None:
                assert lo <= mid <= hi
    marks = [e for e in doc["errors"] if e["mode"] == "shared"]
    assert sum(e["count"] for e in marks) == 3
    assert all(e["codes"] == ["TNS-12520"] for e in marks)


def test_band_is_p5_to_p95(client: TestClient, seeded: Seeded) -> None:
    # logon = L x (0.95 .. 1.05 in 21 equal steps, cycling): in a bucket of >= 100 samples
    # the 5th percentile is the lowest or second-lowest step, the 95th the highest two
    res = client.get(
        "/api/v1/targets/sales/timeseries",
        params={"phase": "logon", "range": "6h", "modes": "pooled", "points": 12},
    )
    assert res.status_code == 200, res.text
    doc = res.json()
    assert doc["band_low"] == "p5"
    (m,) = doc["modes"]
    want = LOGON_MS["pooled"]
    full = [i for i, n in enumerate(m["n"]) if n >= 100]
    assert full
    for i in full:
        assert want * 0.95 - 1e-6 <= m["p5"][i] <= want * 0.955 + 1e-6
        assert want * 1.045 - 1e-6 <= m["p95"][i] <= want * 1.05 + 1e-6


def test_error_codes_beyond_raw_ranges_come_from_rollups(
    client: TestClient, seeded: Seeded
) -> None:
    res = client.get("/api/v1/targets/sales/timeseries", params={"phase": "logon", "range": "7d"})
    assert res.status_code == 200, res.text
    doc = res.json()
    assert doc["resolution"] == "1h"
    marks = [e for e in doc["errors"] if e["mode"] == "shared"]
    assert sum(e["count"] for e in marks) == 3
    assert all(e["codes"] == ["TNS-12520"] for e in marks)


def test_a_long_range_is_answered_from_rollups(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/api/v1/targets/sales/timeseries", params={"range": "30d"})
    assert res.status_code == 200
    assert res.json()["resolution"] in ("1m", "1h")


def test_zoomed_window_gets_finer_buckets(client: TestClient, seeded: Seeded) -> None:
    wide = client.get("/api/v1/targets/sales/timeseries", params={"range": "24h"}).json()
    end = seeded.now - timedelta(minutes=20)
    narrow = client.get(
        "/api/v1/targets/sales/timeseries",
        params={"from": iso(end - timedelta(minutes=10)), "to": iso(end)},
    ).json()
    assert narrow["step_s"] < wide["step_s"]


def test_breakdown_by_instance_and_site(client: TestClient, seeded: Seeded) -> None:
    inst = client.get("/api/v1/targets/sales/breakdown", params={"by": "instance"}).json()
    ded = next(m for m in inst["modes"] if m["name"] == "dedicated")
    assert ded["groups"] == ["inst1", "inst2"]
    site = client.get("/api/v1/targets/sales/breakdown", params={"by": "site"}).json()
    assert next(m for m in site["modes"] if m["name"] == "dedicated")["groups"] == ["default"]


@pytest.mark.parametrize(
    ("url", "status", "fragment"),
    [
        ("/api/v1/targets/sales/timeseries?phase=nope", 422, "phase"),
        ("/api/v1/targets/sales/timeseries?range=2w", 422, "range: '2w' is not one of"),
        ("/api/v1/targets/sales/timeseries?from=yesterday", 422, "from: 'yesterday' is not"),
        (
            "/api/v1/targets/sales/timeseries?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z",
            422,
            "must be after",
        ),
        ("/api/v1/targets/sales/timeseries?range=1h&from=2026-01-01", 422, "not both"),
        ("/api/v1/targets/sales/timeseries?modes=bogus", 422, "has no mode 'bogus'"),
        ("/api/v1/targets/sales/timeseries?points=1", 422, "points"),
        ("/api/v1/targets/nobody/timeseries", 404, "no target named 'nobody'"),
        ("/api/v1/compare", 422, "target"),
        ("/api/v1/incidents?factor=0.5", 422, "factor"),
        ("/api/v1/samples?mode=dedicated", 422, "give target too"),
        ("/api/v1/samples?after=%%%%", 422, "invalid page cursor"),
        ("/api/v1/samples?status=broken", 422, "status"),
        ("/api/v1/samples?limit=0", 422, "limit"),
        ("/api/v1/probe-requests/0", 422, "request_id"),
        ("/api/v1/targets/sales/breakdown?by=colour", 422, "by"),
    ],
)
def test_malformed_calls_get_a_4xx_with_a_message(
    client: TestClient, seeded: Seeded, url: str, status: int, fragment: str
) -> None:
    res = client.get(url)
    assert res.status_code == status, res.text
    assert fragment in res.json()["detail"]


def test_samples_keyset_pages_do_not_overlap(client: TestClient, seeded: Seeded) -> None:
    params = {
        "target": "sales",
        "mode": "dedicated",
        "probe": "connping",
        "range": "1h",
        "limit": 50,
    }
    first = client.get("/api/v1/samples", params=params).json()
    second = client.get("/api/v1/samples", params={**params, "after": first["next"]}).json()
    a = [s["scheduled_at"] for s in first["samples"]]
    b = [s["scheduled_at"] for s in second["samples"]]
    assert len(a) == 50 and len(b) == 50
    assert a == sorted(a, reverse=True) and max(b) < min(a)


def test_samples_filter_failed_by_code(client: TestClient, seeded: Seeded) -> None:
    doc = client.get(
        "/api/v1/samples", params={"status": "failed", "code": "TNS-12520", "range": "6h"}
    ).json()
    assert len(doc["samples"]) == 3
    assert {(s["target"], s["mode"]) for s in doc["samples"]} == {("sales", "shared")}
    assert doc["next"] is None


def test_csv_download_streams_the_filtered_samples(client: TestClient, seeded: Seeded) -> None:
    res = client.get("/api/v1/samples.csv", params={"target": "hr", "status": "failed"})
    assert res.status_code == 200
    assert res.headers["content-type"].startswith("text/csv")
    assert "attachment" in res.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(res.text)))
    assert len(rows) == 60  # 10 minutes at 10 s
    assert {r["error_code"] for r in rows} == {"ORA-12541"}


def test_incidents_find_the_outage_and_the_spike(client: TestClient, seeded: Seeded) -> None:
    doc = client.get("/api/v1/incidents", params={"range": "24h", "samples": "true"}).json()
    hr = [o for o in doc["outages"] if o["target"] == "hr"]
    assert len(hr) == 1 and hr[0]["codes"] == {"ORA-12541": 60}
    assert hr[0]["samples"], "the raw samples around it"
    spike = next(s for s in doc["spikes"] if s["mode"] == "dedicated")
    assert spike["start"].startswith(iso(seeded.spike_at)[:16])
    assert spike["factor"] > 4


def test_no_api_response_holds_a_password(client: TestClient, seeded: Seeded) -> None:
    urls = [
        "/api/v1/targets",
        "/api/v1/targets/sales",
        "/api/v1/overview",
        "/api/v1/targets/sales/timeseries",
        "/api/v1/compare?target=sales",
        "/api/v1/samples?target=sales",
        "/api/v1/samples.csv?target=sales",
        "/api/v1/incidents?samples=true",
        "/metrics",
        "/openapi.json",
    ]
    for url in urls:
        res = client.get(url)
        assert res.status_code == 200, url
        assert SECRET_PW not in res.text, url
        assert "hr-typed-password" not in res.text, url
    target = client.get("/api/v1/targets/sales").json()
    assert target["password"] == "encrypted"
    # hr's password is typed since references need an allow list (issue 12); old has none
    assert client.get("/api/v1/targets/hr").json()["password"] == "encrypted"
    assert client.get("/api/v1/targets/old").json()["password"] == "none"


def test_openapi_documents_every_api_route(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for p in (
        "/api/v1/overview",
        "/api/v1/targets/{name}/timeseries",
        "/api/v1/compare",
        "/api/v1/incidents",
        "/api/v1/samples",
        "/api/v1/samples.csv",
        "/api/v1/agents",
        "/metrics",
    ):
        assert p in paths, p


def test_timeseries_reads_one_probe_kind(client: TestClient, seeded: Seeded) -> None:
    url = "/api/v1/targets/sales/timeseries"
    default = client.get(url, params={"range": "1h", "modes": "dedicated"}).json()
    sping = client.get(
        url, params={"range": "1h", "modes": "dedicated", "probe": "sessionping"}
    ).json()
    assert default["probe"] == "connping" and sping["probe"] == "sessionping"
    for doc, want, per_bucket in (
        (default, LOGON_MS["dedicated"], 1),
        (sping, SESSIONPING_LOGON_MS, 2),
    ):
        (m,) = doc["modes"]
        p50s = sorted(v for v in m["p50"] if v is not None)
        assert abs(p50s[len(p50s) // 2] - want) / want < 0.06
        # samples per bucket: connping every 10 s, sessionping every 5 s (never the sum)
        step_samples = doc["step_s"] / 10 * per_bucket
        assert max(m["n"]) <= step_samples


def test_samples_carry_their_probe_and_filter_by_it(client: TestClient, seeded: Seeded) -> None:
    base = {"target": "sales", "mode": "dedicated", "range": "1h", "limit": 1000}
    every = client.get("/api/v1/samples", params=base).json()["samples"]
    assert {s["probe"] for s in every} == {"connping", "sessionping"}
    only = client.get("/api/v1/samples", params={**base, "probe": "sessionping"}).json()
    assert only["samples"] and {s["probe"] for s in only["samples"]} == {"sessionping"}
    assert {s["series_id"] for s in only["samples"]} == {seeded.sessionping}
    none = client.get("/api/v1/samples", params={"target": "hr", "probe": "commit"}).json()
    assert none["samples"] == []
    bad = client.get("/api/v1/samples", params={"probe": "ping"})
    assert bad.status_code == 422 and "probe" in bad.text
    csv_res = client.get("/api/v1/samples.csv", params={**base, "probe": "sessionping"})
    rows = list(csv.DictReader(io.StringIO(csv_res.text)))
    assert rows and {r["series_id"] for r in rows} == {str(seeded.sessionping)}
