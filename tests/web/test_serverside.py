"""What the server saw, on the pages: the server charts' API on the latency grid, the
panel of a window (what stands out against the time before), the server page, the
Spikes page's per-incident line, the Samples page's panel, and the compare page's
server cost per logon. Data is written through the real store (writer)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.demo.pgcluster import PgCluster
from app.explain import explain
from app.samples import ErrorClass, Sample, SampleStatus
from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_targets
from tests.web.data import seeded_app

YAML = """
targets:
  - name: rac
    kind: oracle
    dsn: racdb:1521/SALES
    username: connwatch
    password: pw
    modes:
      - name: dedicated
        probes:
          - {probe: connping, interval: 1m}
          - {probe: serverstats, interval: 1m}
      - name: pooled
        probes: [{probe: connping, interval: 1m, params: {server_time: true}}]
  - name: plain
    kind: oracle
    dsn: plain:1521/P
    username: u
    password: pw
    modes: [{name: dedicated}]
"""


@dataclass
class Storm:
    start: datetime  # DRCP pool waits on SALES2 from here ...
    end: datetime  # ... to here
    now: datetime


def _reading(sid: int, at: datetime, stormy: bool) -> Sample:
    def metrics(inst: int) -> dict[str, Any]:
        waits = 5.0 if stormy and inst == 2 else 0.0
        return {
            "logons_per_s": 2.0,
            "cm_ms_per_logon": 8.0,
            "pool_waits_per_s": waits,
            "pool_busy_pct": 100.0 if waits else 20.0,
            "dispatcher_busy_pct": 3.0,
            "common_wait_ms": 0.5,
            "processes_pct": 30.0,
            "sessions_pct": 12.0,
            "processes": 90.0,
            "processes_limit": 300.0,
        }

    return Sample(
        series_id=sid,
        scheduled_at=at,
        started_at=at,
        status=SampleStatus.OK,
        query_ns=3_000_000,
        extra={
            "serverstats": {
                "source": "GV$",
                "instances": [
                    {
                        "inst_id": i,
                        "instance": f"SALES{i}",
                        "startup": "2026-11-01 00:00:00",
                        "interval_s": 60.0,
                        "reset": False,
                        "metrics": metrics(i),
                        "classes": {"CONNWATCH.CW": {"waits_per_s": 1.0 if stormy else 0.0}},
                    }
                    for i in (1, 2)
                ],
                "unavailable": {"V$AUTHPOOL_STATS": "ORA-00942"},
            }
        },
    )


def _connping(sid: int, at: datetime, logon_ms: float, server_ms: float | None) -> Sample:
    extra: dict[str, Any] = {} if server_ms is None else {"server_logon_ms": server_ms}
    return Sample(
        series_id=sid,
        scheduled_at=at,
        started_at=at,
        status=SampleStatus.OK,
        total_ns=int((logon_ms + 5) * 1e6),
        logon_ns=int(logon_ms * 1e6),
        instance="SALES2",
        extra=extra,
    )


def seed(engine: Engine, vault: Vault) -> Storm:
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    storm = Storm(now - timedelta(minutes=60), now - timedelta(minutes=50), now)
    with engine.begin() as conn:
        import_targets(conn, parse_targets(YAML, "t"), vault)
        ids = {
            (m.name, s.probe): s.id
            for t in load_targets(conn)
            if t.name == "rac"
            for m in t.modes
            for s in m.series
        }
        samples: list[Sample] = []
        for i in range(120):
            at = now - timedelta(minutes=120 - i)
            stormy = storm.start <= at < storm.end
            samples.append(_reading(ids[("dedicated", "serverstats")], at, stormy))
            samples.append(_connping(ids[("dedicated", "connping")], at, 60.0, None))
            samples.append(
                _connping(ids[("pooled", "connping")], at, 400.0 if stormy else 45.0, 12.0)
            )
        for k in range(3):  # an outage of the pooled mode inside the storm
            at = storm.start + timedelta(minutes=2, seconds=10 * k + 5)
            samples.append(
                Sample(
                    series_id=ids[("pooled", "connping")],
                    scheduled_at=at,
                    started_at=at,
                    status=SampleStatus.ERROR,
                    error_class=ErrorClass.TNS,
                    error_code="TNS-12520",
                    error_phase="logon:auth2",
                )
            )
        write_samples(conn, samples)
    return storm


@pytest.fixture(scope="module")
def env(pg_cluster: PgCluster) -> Iterator[tuple[TestClient, Storm]]:
    with seeded_app(pg_cluster, "server_", seed) as made:
        yield made


def _window(storm: Storm, pad: int = 0) -> dict[str, str]:
    return {
        "from": (storm.start - timedelta(minutes=pad)).isoformat(),
        "to": (storm.end + timedelta(minutes=pad)).isoformat(),
    }


def test_server_series_per_instance_on_the_latency_axis(env) -> None:
    client, storm = env
    data = client.get("/api/v1/targets/rac/server", params={"range": "6h"}).json()
    lat = client.get("/api/v1/targets/rac/timeseries", params={"range": "6h"}).json()
    for key in ("window_start", "window_end"):  # one x axis (each request's own "now")
        gap = datetime.fromisoformat(data[key]) - datetime.fromisoformat(lat[key])
        assert abs(gap) < timedelta(seconds=5)
    assert [i["instance"] for i in data["instances"]] == ["SALES1", "SALES2"]
    assert [m["name"] for m in data["metrics"]][:3] == [
        "logons_per_s",
        "cm_ms_per_logon",
        "pool_waits_per_s",
    ]
    waits = data["instances"][1]["series"]["pool_waits_per_s"]
    hot = [t for t, v in zip(waits["t"], waits["max"], strict=True) if v > 0]
    assert hot, waits
    first = datetime.fromisoformat(hot[0])
    last = datetime.fromisoformat(hot[-1])
    step = timedelta(seconds=data["step_s"])
    assert storm.start - step <= first and last < storm.end
    assert max(data["instances"][0]["series"]["pool_waits_per_s"]["max"]) == 0
    assert data["resolution"] == "raw" and data["step_s"] >= 60


def test_long_ranges_read_the_hourly_rows(env) -> None:
    client, _ = env
    data = client.get("/api/v1/targets/rac/server", params={"range": "30d"}).json()
    assert data["resolution"] == "1h" and data["step_s"] >= 3600
    assert max(data["instances"][1]["series"]["pool_waits_per_s"]["max"]) == 5.0


def test_the_panel_says_what_stands_out_against_the_time_before(env) -> None:
    client, storm = env
    panel = client.get("/api/v1/targets/rac/server/window", params=_window(storm)).json()
    assert any("DRCP pool waits" in f and f.startswith("SALES2") for f in panel["findings"])
    assert not any(f.startswith("SALES1") for f in panel["findings"])
    sales2 = {r["name"]: r for r in panel["instances"][1]["rows"]}
    assert sales2["pool_waits_per_s"]["mean"] == 5.0 and sales2["pool_waits_per_s"]["before"] == 0
    assert sales2["pool_waits_per_s"]["notable"] is True
    ora942 = explain("ORA-00942")
    assert ora942 is not None
    assert panel["unavailable"] == [
        {"view": "V$AUTHPOOL_STATS", "code": "ORA-00942", "meaning": ora942.meaning}
    ]
    assert panel["classes"]["CONNWATCH.CW"]["waits_per_s"] == 1.0
    calm = client.get(
        "/api/v1/targets/rac/server/window",
        params={
            "from": (storm.now - timedelta(minutes=20)).isoformat(),
            "to": storm.now.isoformat(),
        },
    ).json()
    assert calm["findings"] == [] and len(calm["instances"]) == 2
    none = client.get("/api/v1/targets/plain/server/window", params={"range": "1h"}).json()
    assert none["has_series"] is False and "serverstats" in none["note"]


def test_pages_show_the_server_side(env) -> None:
    client, storm = env
    target = client.get("/target/rac", params={"range": "6h"}).text
    assert 'id="chart-server"' in target and 'data-chart="server"' in target
    assert "data-server-missing" in client.get("/target/plain").text
    page = client.get("/target/rac/server", params=_window(storm)).text
    assert "Stands out" in page and "DRCP pool waits" in page and "SALES2" in page
    assert 'id="chart-logon"' in page and 'id="chart-server"' in page
    assert client.get("/target/nosuch/server").status_code == 404
    assert client.get("/api/v1/targets/rac/server", params={"range": "2w"}).status_code == 422


def test_incident_links_open_what_the_server_saw(env) -> None:
    client, storm = env
    spikes = client.get(
        "/spikes",
        params={
            "target": "rac",
            "from": (storm.start - timedelta(hours=1)).isoformat(),
            "to": storm.now.isoformat(),
        },
    ).text
    assert "data-server-inline" in spikes
    assert "what the server saw</a>: SALES2: DRCP pool waits" in spikes
    assert "/target/rac/server?from=" in spikes
    samples = client.get("/samples", params={"target": "rac", **_window(storm)}).text
    assert "data-server-panel" in samples and "DRCP pool waits" in samples
    assert "data-server-panel" not in client.get("/samples", params={"target": "plain"}).text


def test_compare_shows_the_servers_cost_per_logon(env) -> None:
    client, _ = env
    page = client.get("/compare", params={"target": "rac", "range": "6h"}).text
    assert 'id="server-cost"' in page
    row = page.split('id="server-cost"')[1].split("</table>")[0]
    assert "pooled" in row and ">12.0<" in row and ">45.0<" in row  # server / client p50
    assert "dedicated" not in row  # its connping does not read the server's time
    plain = client.get("/compare", params={"target": "plain"}).text
    assert "data-server-cost-missing" in plain
