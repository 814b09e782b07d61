"""Prometheus /metrics on known data: cumulative counters and histograms counted by the
store (exact against the raw samples, identical from two app instances, only growing),
the overview's state per mode, and a text Debian's promtool accepts without a problem."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.metrics.registry import labels
from app.samples import ErrorClass
from app.store.histogram.buckets import bucket_index
from app.store.read.totals import EXPORT_GROUP, FIRST_GROUP, LAST_GROUP
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.web.app import create_app
from tests.fixtures.auth import web_settings
from tests.web.data import Seeded, _fail, _ok

BASE = {"target": "sales", "mode": "dedicated", "probe": "connping", "site": "default"}

# a second web process as Prometheus reads it: /metrics public (tokens: tests/web/test_access.py)
METRICS_PUBLIC = web_settings(metrics_public=True)


def _value(body: str, name: str, **lbl: str) -> float:
    line = next(x for x in body.splitlines() if x.startswith(name + labels(lbl.items()) + " "))
    return float(line.rsplit(" ", 1)[1])


def _histogram(body: str, family: str, **lbl: str) -> list[tuple[str, float]]:
    head = family + "_bucket" + labels(lbl.items())[:-1] + ',le="'
    return [
        (x[len(head) :].split('"')[0], float(x.rsplit(" ", 1)[1]))
        for x in body.splitlines()
        if x.startswith(head)
    ]


@pytest.fixture
def client(seeded_env: tuple[TestClient, Seeded]) -> TestClient:
    return seeded_env[0]


def _engine(client: TestClient) -> Engine:
    return client.app.state.engine  # type: ignore[attr-defined,no-any-return]


def test_counters_are_the_stored_samples_by_outcome(client: TestClient) -> None:
    res = client.get("/metrics")
    assert res.status_code == 200
    assert res.headers["content-type"].startswith("text/plain; version=0.0.4")
    body = res.text
    with _engine(client).connect() as conn:
        stored = dict(
            conn.execute(
                text(
                    "select s.id, count(*) from samples x join series s on s.id = x.series_id "
                    "group by 1"
                )
            ).all()
        )
        ids = dict(
            conn.execute(
                text(
                    "select t.name || '/' || m.name || '/' || s.probe, s.id from series s "
                    "join modes m on m.id = s.mode_id join targets t on t.id = m.target_id"
                )
            ).all()
        )
    for key, sid in ids.items():
        target, mode, probe = key.split("/")
        if target == "old":  # disabled: not exported
            assert f'target="{target}"' not in body
            continue
        lbl = {"target": target, "mode": mode, "probe": probe, "site": "default"}
        outcomes = {
            o: _value(body, "connwatch_samples_total", **lbl, outcome=o)
            for o in ("ok", "error", "timeout", "skipped", "probe_error")
        }
        assert sum(outcomes.values()) == stored[sid], key
    hr = {"target": "hr", "mode": "dedicated", "probe": "connping", "site": "default"}
    assert _value(body, "connwatch_samples_total", **hr, outcome="error") == 60
    shared = {**BASE, "mode": "shared"}
    assert _value(body, "connwatch_samples_total", **shared, outcome="error") == 3
    assert "# TYPE connwatch_samples_total counter" in body


def test_histograms_are_cumulative_and_exact(client: TestClient) -> None:
    """Every exported bound is a store bucket edge: the count at ``le`` is exactly the
    number of ok samples whose logon is at most that edge (computed here from the raw
    samples with the store's bucket rule)."""
    body = client.get("/metrics").text
    with _engine(client).connect() as conn:
        for mode in ("dedicated", "shared", "pooled"):
            logons = np.array(
                conn.execute(
                    text(
                        "select x.logon_ns from samples x join series s on s.id = x.series_id "
                        "join modes m on m.id = s.mode_id join targets t on t.id = m.target_id "
                        "where t.name = 'sales' and m.name = :m and s.probe = 'connping' "
                        "and x.status = 'ok'"
                    ),
                    {"m": mode},
                )
                .scalars()
                .all(),
                dtype=np.float64,
            )
            lbl = {**BASE, "mode": mode}
            buckets = _histogram(body, "connwatch_logon_duration_seconds", **lbl)
            assert len(buckets) == LAST_GROUP - FIRST_GROUP + 2 and buckets[-1][0] == "+Inf"
            counts = [c for _, c in buckets]
            assert counts == sorted(counts) and counts[-1] == len(logons)
            group = np.ceil(bucket_index(logons) / EXPORT_GROUP)
            for j, (le, count) in zip(range(FIRST_GROUP, LAST_GROUP + 1), buckets, strict=False):
                assert count == int((group <= j).sum()), (mode, le)
                assert float(le) >= 1.04 ** (EXPORT_GROUP * j) / 1e9  # never below the edge
            assert _value(body, "connwatch_logon_duration_seconds_count", **lbl) == len(logons)
            total = _value(body, "connwatch_logon_duration_seconds_sum", **lbl)
            assert math.isclose(total, logons.sum() / 1e9, rel_tol=1e-9)
    # sessionping's logons are their own series, never pooled with connping's
    sp = {**BASE, "probe": "sessionping"}
    assert _value(body, "connwatch_logon_duration_seconds_count", **sp) > _value(
        body, "connwatch_logon_duration_seconds_count", **BASE
    )


def test_mode_gauges_follow_the_overview(client: TestClient) -> None:
    body = client.get("/metrics").text
    ded = {"target": "sales", "mode": "dedicated"}
    hr = {"target": "hr", "mode": "dedicated"}
    assert _value(body, "connwatch_up", **ded) == 1 and _value(body, "connwatch_up", **hr) == 0
    assert _value(body, "connwatch_mode_state", **hr, state="down") == 1
    assert _value(body, "connwatch_mode_state", **hr, state="ok") == 0
    info = {**ded, "kind": "dedicated", "db": "oracle", "probe": "connping"}
    assert _value(body, "connwatch_mode_info", **info) == 1
    assert 0.057 <= _value(body, "connwatch_logon_p50_seconds", **ded) <= 0.063
    assert (
        "quantile=" not in body
        and "_ms{" not in body
        and "kind=" not in body.split("connwatch_mode_info")[0]
    )


def test_two_app_instances_expose_the_same_counters(
    seeded_env: tuple[TestClient, Seeded],
) -> None:
    """Counted by the store: a second web process (here a second app over the same store)
    exposes exactly the same counters and histograms."""
    client = seeded_env[0]
    a = client.get("/metrics").text
    with TestClient(create_app(_engine(client), settings=METRICS_PUBLIC)) as other:
        b = other.get("/metrics").text

    def cumulative(body: str) -> list[str]:
        kept = ("connwatch_samples_total", "connwatch_logon_duration", "connwatch_ping_duration")
        return [x for x in body.splitlines() if x.startswith(kept)]

    assert cumulative(a) == cumulative(b) and len(cumulative(a)) > 100


def test_counters_only_grow_as_samples_arrive(migrated_engine: Engine, vault: object) -> None:
    """New samples, a probe-side error, a sample written twice and the rollups run again:
    every counter and bucket grows or stays, and the probe-side error is its own outcome."""
    from tests.web.data import seed

    seeded = seed(migrated_engine, vault, hours=0.2)  # type: ignore[arg-type]
    with TestClient(create_app(migrated_engine, settings=METRICS_PUBLIC)) as c:
        before = _numbers(c.get("/metrics").text)
        sid = seeded.series[("sales", "dedicated")]
        at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
        probe_side = _fail(sid, at + timedelta(seconds=10), "PROBE-IndexError", ErrorClass.PROBE)
        new = [_ok(sid, at, 61.0, 1.0, 1), probe_side]
        with migrated_engine.begin() as conn:
            write_samples(conn, new)
        with migrated_engine.begin() as conn:
            write_samples(conn, new)  # a replay: stored once
        roll_up_pending(migrated_engine)
        roll_up_pending(migrated_engine)
        after = _numbers(c.get("/metrics").text)
    assert set(before) <= set(after)
    assert all(after[k] >= v for k, v in before.items())
    grown = {k for k in before if after[k] > before[k]}
    assert f"connwatch_samples_total{labels({**BASE, 'outcome': 'ok'}.items())}" in grown
    key = f"connwatch_samples_total{labels({**BASE, 'outcome': 'probe_error'}.items())}"
    assert after[key] == before[key] + 1
    err = f"connwatch_samples_total{labels({**BASE, 'outcome': 'error'}.items())}"
    assert after[err] == before[err]  # a probe-side error is not the target's error
    count = f"connwatch_logon_duration_seconds_count{labels(BASE.items())}"
    assert after[count] == before[count] + 1


def _numbers(body: str) -> dict[str, float]:
    out = {}
    for line in body.splitlines():
        if line.startswith(("connwatch_samples_total", "connwatch_logon_duration")):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def _significant(value: str) -> int:
    """Significant digits of a non-integer sample value's text (0.001531247: 7)."""
    mantissa = value.lower().split("e")[0].lstrip("-").replace(".", "")
    return len(mantissa.strip("0"))


def test_no_value_carries_float_noise(client: TestClient) -> None:
    """Every sample on /metrics, of every family (series histograms and counters, mode
    gauges, agents and their workers, alerts): at most 12 significant digits; Unix times
    to the millisecond. An agent reports figures binary division would blur."""
    stats = {
        "series": 3, "lag_ms": {"p50": 1.531247, "p95": 0.1 + 0.2, "p99": 2 / 3},
        "cpu_percent": 3.3, "cpu_ms_per_run": 1.531247, "spool_fill": 1 / 3,
        "overload": {"active": False, "factor": 2 / 3, "share": 1.0, "busy": 0.1 + 0.7},
        "workers": [{"worker": 1, "series": 3, "lag_p99_ms": 1.531247}],
    }  # fmt: skip
    with _engine(client).begin() as conn:
        conn.execute(
            text(
                "insert into agents (name, site, version, hostname, pid, stats) values "
                "('noisy', 'dc1', '1', 'h', 1, cast(:st as jsonb))"
            ),
            {"st": json.dumps(stats)},
        )
    try:
        body = client.get("/metrics").text
    finally:
        with _engine(client).begin() as conn:
            conn.execute(text("delete from agents where name = 'noisy'"))
    agent = '{agent="noisy",site="dc1"}'
    assert f"connwatch_agent_lag_p50_seconds{agent} 0.001531247\n" in body
    assert f"connwatch_agent_cpu_ratio{agent} 0.033\n" in body
    assert 'worker_lag_p99_seconds{agent="noisy",site="dc1",worker="1"} 0.001531247\n' in body
    values = [line.rsplit(" ", 1) for line in body.splitlines() if not line.startswith("#")]
    families = {re.sub(r"(_bucket|_sum|_count)?\{.*", "", name) for name, _ in values}
    assert len(values) > 200 and len(families) >= 15
    for name, value in values:
        if re.fullmatch(r"-?[0-9]+|[+-]Inf|NaN", value):
            continue  # integers are printed in full: counters stay exact
        if name.startswith("connwatch_last_sample_timestamp_seconds"):
            assert len(value.partition(".")[2]) <= 3, (name, value)
        else:
            assert _significant(value) <= 12, (name, value)


def test_label_values_are_escaped() -> None:
    assert labels([("target", 'x"y')]) == '{target="x\\"y"}'


PROMTOOL = shutil.which("promtool")


@pytest.mark.skipif(PROMTOOL is None, reason="Debian's prometheus (promtool) is not installed")
def test_promtool_finds_no_problem(seeded_env: tuple[TestClient, Seeded]) -> None:
    """Debian's ``promtool check metrics`` (Prometheus 2.42) on the whole output: every
    family of the registry that has data, agents, alerts. It prints each problem and
    exits non-zero on any; connwatch's output must give neither."""
    client = seeded_env[0]
    with _engine(client).begin() as conn:
        conn.execute(
            text(
                "insert into agents (name, site, version, hostname, pid, stats) values "
                "('a1', 'dc1', '1', 'h', 1, cast(:st as jsonb))"
            ),
            {"st": '{"series": 3, "in_flight": 1, "lag_ms": {"p50": 1.5, "p95": 4, "p99": 9}, '
                   '"runs": 7, "runs_failed": 1, "skipped": 0, "spool_samples": 0, '
                   '"spool_bytes": 0, "spool_fill": 0.0, "written": 7, "dropped": 0, '
                   '"cpu_percent": 3.5, "cpu_ms_per_run": 0.8, "workers_configured": 2, '
                   '"workers_alive": 2, "wal_pending": 0, "overload": {"active": true, '
                   '"factor": 1.9, "share": 0.52, "demand_per_s": 40, "capacity_per_s": 21, '
                   '"busy": 0.91, "skipped": 12}, "workers": [{"worker": 1, "series": 2, '
                   '"overload": {"busy": 0.91, "share": 0.5}, "lag_p99_ms": 7}]}'},
        )  # fmt: skip
    try:
        body = client.get("/metrics").text
    finally:
        with _engine(client).begin() as conn:
            conn.execute(text("delete from agents where name = 'a1'"))
    assert "connwatch_agent_lag_p95_seconds" in body and "connwatch_samples_total" in body
    assert 'connwatch_agent_worker_lag_p99_seconds{agent="a1",site="dc1",worker="1"} 0.007' in body
    assert PROMTOOL is not None
    res = subprocess.run(
        [PROMTOOL, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60
    )
    assert (res.returncode, res.stdout + res.stderr) == (0, "")
    families = re.findall(r"^# TYPE (\S+) ", body, flags=re.M)
    assert len(families) == len(set(families))  # each family declared once


def test_a_recent_exposition_is_reused_and_one_render_serves_waiting_scrapes(
    migrated_engine: Engine, vault: object
) -> None:
    from tests.web.data import seed

    seeded = seed(migrated_engine, vault, hours=0.2)  # type: ignore[arg-type]
    sid = seeded.series[("sales", "dedicated")]
    at = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=1)
    settings = web_settings(metrics_public=True, metrics_cache_s=1.0)  # the default
    app = create_app(migrated_engine, settings=settings)
    with TestClient(app) as c:
        first = c.get("/metrics").text
        with migrated_engine.begin() as conn:
            write_samples(conn, [_ok(sid, at, 61.0, 1.0, 1)])
        roll_up_pending(migrated_engine)
        again = c.get("/metrics").text  # within CONNWATCH_METRICS_CACHE_S (1 s)
        renders = app.state.metrics_text.computed
        assert again == first and renders == 1
        time.sleep(1.2)
        later = c.get("/metrics").text  # past it: read from the store again
        assert later != first and app.state.metrics_text.computed == 2
        # eight scrapes at once: they wait for one render instead of each rendering
        time.sleep(1.2)
        with ThreadPoolExecutor(8) as pool:
            bodies = list(pool.map(lambda _: c.get("/metrics").text, range(8)))
        assert len(set(bodies)) == 1 and app.state.metrics_text.computed <= 4
