"""Probe-side errors on the pages: a mode whose recent runs all failed on connwatch's side
is 'probe-error', not 'down'; they are filtered and labelled on the Samples page, drawn
apart on the chart, and the error rate leaves them out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.samples import ErrorClass, Sample
from app.secrets import Vault
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from app.targets.schema import parse_targets
from app.targets.sync import import_targets
from app.web.views.lookups import load_targets
from tests.web.data import _fail, _ok

YAML = """
targets:
  - name: pool
    kind: oracle
    dsn: dbhost:1521/POOL
    username: connwatch
    modes:
      - name: pooled
        probes: [{probe: connping, interval: 10s}]
      - name: dedicated
        probes: [{probe: connping, interval: 10s}]
"""


def _seed(engine: Engine, vault: Vault) -> dict[str, int]:
    """pooled: 10 minutes ok, then its last 5 minutes only probe-side errors;
    dedicated: ok throughout but for 2 probe-side errors and 1 refused logon."""
    with engine.begin() as conn:
        import_targets(conn, parse_targets(YAML, "test"), vault)
        ids = {m.name: m.series[0].id for t in load_targets(conn) for m in t.modes}
    now = datetime.now(UTC).replace(microsecond=0)
    samples: list[Sample] = []
    for i in range(90):
        at = now - timedelta(seconds=900 - 10 * i)
        if at < now - timedelta(seconds=310):
            samples.append(_ok(ids["pooled"], at, 40.0, 0.5, i))
        else:
            samples.append(_fail(ids["pooled"], at, "PROBE-IndexError", ErrorClass.PROBE))
        if i in (30, 31):
            samples.append(_fail(ids["dedicated"], at, "PROBE-IndexError", ErrorClass.PROBE))
        elif i == 50:
            samples.append(_fail(ids["dedicated"], at, "ORA-01017", ErrorClass.ORA))
        else:
            samples.append(_ok(ids["dedicated"], at, 60.0, 0.5, i))
    with engine.begin() as conn:
        write_samples(conn, samples)
    roll_up_pending(engine)
    return ids


def test_overview_says_probe_error_not_down(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    _seed(migrated_engine, vault)
    rows = {r["mode"]: r for r in client.get("/api/v1/overview").json()["rows"]}
    assert rows["pooled"]["state"] == "probe-error"
    assert rows["dedicated"]["state"] == "degraded"  # the ORA-01017, not the probe-side ones
    # 1 failure over the runs that measured it: 88 (87 once the oldest leaves the window),
    # not 90 / 89 with the 2 probe-side errors counted
    assert round(1 / rows["dedicated"]["error_rate_15m"]) in (87, 88)
    html = client.get("/").text
    assert 'class="status status-probe-error"' in html and "probe-error" in html


def test_samples_page_filters_and_labels_probe_side_errors(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    _seed(migrated_engine, vault)
    q = "target=pool&mode=dedicated&range=1h"
    page = client.get(f"/samples?{q}&status=probe-error")
    assert page.status_code == 200
    assert page.text.count(">probe-side</span>") == 2 and "ORA-01017" not in page.text
    assert page.text.count(">PROBE-IndexError</a>") == 2
    assert page.text.count('class="error-detail probe-side-detail"') == 2  # not in red
    api = client.get(f"/api/v1/samples?{q}&status=failed").json()["samples"]
    assert [s["error_code"] for s in api] == ["ORA-01017"]
    api = client.get(f"/api/v1/samples?{q}&status=probe-error").json()["samples"]
    assert {s["error_class"] for s in api} == {"PROBE"} and len(api) == 2


def test_chart_draws_probe_side_errors_apart(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    _seed(migrated_engine, vault)
    res = client.get("/api/v1/targets/pool/timeseries?phase=logon&range=1h&modes=dedicated")
    assert res.status_code == 200, res.text
    marks = res.json()["errors"]
    probe = [m for m in marks if m["probe_side"]]
    target = [m for m in marks if not m["probe_side"]]
    assert sum(m["count"] for m in probe) == 2 and {c for m in probe for c in m["codes"]} == {
        "PROBE-IndexError"
    }
    assert sum(m["count"] for m in target) == 1 and target[0]["codes"] == ["ORA-01017"]


def test_instance_breakdown_counts_no_probe_side_failure(
    client: TestClient, migrated_engine: Engine, vault: Vault
) -> None:
    """Probe-side errors name no instance's failure: pooled's 31 leave no '(unknown)'
    group with failures; dedicated's refused logon still counts."""
    _seed(migrated_engine, vault)
    res = client.get("/api/v1/targets/pool/breakdown", params={"by": "instance", "range": "1h"})
    assert res.status_code == 200, res.text
    modes = {m["name"]: m for m in res.json()["modes"]}
    failed = {n: dict(zip(m["groups"], m["failed"], strict=True)) for n, m in modes.items()}
    assert sum(failed["pooled"].values()) == 0, failed
    assert sum(failed["dedicated"].values()) == 1, failed
