"""Prometheus /metrics on known data: latest values per mode and logon histograms."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from app.store.read.compare import compare
from app.web.routes.metrics import labels
from app.web.views.lookups import load_target
from tests.web.data import Seeded


@pytest.fixture
def client(seeded_env: tuple[TestClient, Seeded]) -> TestClient:
    return seeded_env[0]


def _value(body: str, name: str, **lbl: str) -> float:
    line = next(x for x in body.splitlines() if x.startswith(name + labels(**lbl) + " "))
    return float(line.rsplit(" ", 1)[1])


def test_latest_values_per_mode(client: TestClient) -> None:
    res = client.get("/metrics")
    assert res.status_code == 200
    assert res.headers["content-type"].startswith("text/plain; version=0.0.4")
    body = res.text
    base = {"target": "sales", "mode": "dedicated", "kind": "dedicated", "site": "default"}
    p50 = _value(body, "connwatch_logon_seconds", **base, quantile="0.5")
    assert 0.057 <= p50 <= 0.063
    assert _value(body, "connwatch_up", **base) == 1.0
    hr = {"target": "hr", "mode": "dedicated", "kind": "dedicated", "site": "default"}
    assert _value(body, "connwatch_up", **hr) == 0.0
    assert _value(body, "connwatch_failures_15m", **hr) == 60.0
    assert "old" not in re.findall(r'target="([^"]+)"', body)  # disabled: not exported


def test_logon_histogram_is_cumulative_and_consistent(client: TestClient) -> None:
    body = client.get("/metrics").text
    lbl = 'target="sales",mode="shared",kind="shared"'
    buckets = [
        (x.split('le="')[1].split('"')[0], float(x.rsplit(" ", 1)[1]))
        for x in body.splitlines()
        if x.startswith("connwatch_logon_duration_seconds_bucket{" + lbl)
    ]
    counts = [c for _, c in buckets]
    assert counts == sorted(counts)
    assert buckets[-1][0] == "+Inf"
    count = _value(
        body, "connwatch_logon_duration_seconds_count", target="sales", mode="shared", kind="shared"
    )
    assert counts[-1] == count > 300
    le_25ms = dict(buckets)["0.025"]
    le_50ms = dict(buckets)["0.05"]
    assert le_25ms == 0 and le_50ms == count  # every shared logon is about 42 ms
    assert "# TYPE connwatch_logon_duration_seconds histogram" in body


def test_label_values_are_escaped() -> None:
    assert labels(target='x"y') == '{target="x\\"y"}'


def test_histograms_match_the_stores_comparison_and_keep_probes_apart(
    seeded_env: tuple[TestClient, Seeded],
) -> None:
    """/metrics builds its histograms from one rollup query; their content is what the
    store's per-mode comparison of the same hour and probe kind holds."""
    client = seeded_env[0]
    engine = client.app.state.engine  # type: ignore[attr-defined]
    for _ in range(3):  # both reads within one clock minute (the windows are whole minutes)
        minute = datetime.now(UTC).replace(second=0, microsecond=0)
        body = client.get("/metrics").text
        with engine.connect() as conn:
            sales = load_target(conn, "sales")
            assert sales is not None
            end = datetime.now(UTC)
            ref = compare(
                conn, sales.id, end - timedelta(hours=1), end, phase="logon", probe="connping"
            )
        if end.replace(second=0, microsecond=0) == minute:
            break
    for m in ref.modes:
        lbl = {"target": "sales", "mode": m.mode, "kind": m.kind}
        count = _value(body, "connwatch_logon_duration_seconds_count", **lbl)
        assert count == m.count  # connping only: dedicated's sessionping logons left out
        for le in ("0.025", "0.05", "0.1"):
            want = sum(c for v, c in m.histogram if v / 1000.0 <= float(le))
            assert _value(body, "connwatch_logon_duration_seconds_bucket", **lbl, le=le) == want
        total = _value(body, "connwatch_logon_duration_seconds_sum", **lbl)
        assert m.mean_ms is not None and abs(total - m.mean_ms * m.count / 1000.0) < 1e-6
    ded = next(m for m in ref.modes if m.mode == "dedicated")
    assert 300 < ded.count < 400  # an hour of 10-s connping runs, not 3x that
