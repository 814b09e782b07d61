"""``connwatch alerts ...`` and ``connwatch annotate`` as a user runs them."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, text

from app import migrate
from app.alerts.engine.cycle import Evaluator
from app.alerts.rules import RuleSpec, upsert_rule
from app.store.write.ingest import write_samples
from app.store.write.rollups import roll_up_pending
from tests.alerts.conftest import ok
from tests.alerts.test_ascode import GOOD
from tests.store.conftest import make_target
from tests.test_cli import assert_clean_failure, run_cli, store_env  # noqa: F401


def test_alerts_as_code_and_shell_commands(store_env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    f = tmp_path / "alerts.yaml"
    f.write_text(GOOD)
    res = run_cli("alerts", "import", str(f), env=store_env)
    assert res.returncode == 0, res.stderr
    assert "7 created, 0 updated, 0 removed" in res.stdout
    exported = run_cli("alerts", "export", env=store_env)
    assert exported.returncode == 0 and "hunter2" not in exported.stdout

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "rules:\n  - {name: new-rule, kind: nodata}\n  - {name: broken, kind: latency}\n"
    )
    res = run_cli("alerts", "import", str(bad), env=store_env)
    assert_clean_failure(res, f"{bad}: rule #2 'broken': threshold_ms: a latency rule needs")
    engine = create_engine(
        store_env["CONNWATCH_DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    )
    with engine.connect() as conn:
        assert (
            conn.execute(
                text("select count(*) from alert_rules where name = 'new-rule'")
            ).scalar_one()
            == 0
        )

    res = run_cli(
        "alerts",
        "silence",
        "--for",
        "2h",
        "--target",
        "sales*",
        "--comment",
        "DRCP pool resize",
        "--author",
        "ann",
        env=store_env,
    )
    assert res.returncode == 0 and "until" in res.stdout, res.stderr

    res = run_cli(
        "annotate", "listener restarted", "--tag", "deploy", "--author", "ci", env=store_env
    )
    assert res.returncode == 0 and "every target" in res.stdout, res.stderr
    res = run_cli("annotate", "x", "--target", "nope", env=store_env)
    assert_clean_failure(res, "target: no target named 'nope'")

    status = run_cli("alerts", "status", "--json", env=store_env)
    assert status.returncode == 0 and json.loads(status.stdout) == []
    res = run_cli("alerts", "test-contact", "ghost", env=store_env)
    assert_clean_failure(res, "no contact point named 'ghost'")
    with engine.connect() as conn:
        assert conn.execute(text("select count(*) from annotations")).scalar_one() == 1
        assert conn.execute(text("select count(*) from alert_silences")).scalar_one() == 2
    engine.dispose()


def test_list_backtest_status_and_ack_of_a_firing_alert(
    store_env: dict[str, str],  # noqa: F811
) -> None:
    """A latency rule fires on slow samples in the store; then, as on-call runs them:
    ``alerts list``, ``alerts backtest``, ``alerts status --json`` and ``alerts ack`` (four
    processes: each CLI start costs seconds of CPU, so no more than that)."""
    engine = create_engine(
        store_env["CONNWATCH_DATABASE_URL"].replace("postgresql://", "postgresql+psycopg://")
    )
    migrate.upgrade(engine)
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    with engine.begin() as conn:
        sid = make_target(conn, "sales", "oracle", {"pooled": [("connping", 10_000)]})[
            ("pooled", "connping")
        ]
        upsert_rule(
            conn,
            RuleSpec(name="logon-slow", kind="latency", window="5m", threshold_ms=200),
        )
        write_samples(
            conn, [ok(sid, now - timedelta(minutes=8, seconds=-10 * i), 400.0) for i in range(48)]
        )
    roll_up_pending(engine)
    Evaluator(engine, lease=None, base_url="http://cw.example").run_cycle(now)

    listed = run_cli("alerts", "list", env=store_env)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"logon-slow +latency +page +logon p95 over 5m > 200 ms", listed.stdout)
    bt = run_cli("alerts", "backtest", "logon-slow", "--days", "1", env=store_env)
    assert bt.returncode == 0, bt.stderr
    assert "this rule would have fired 1 time" in bt.stdout
    assert '-> still firing UTC  {"target": "sales", "probe": "connping", "mode": "pooled"}' in (
        bt.stdout
    )

    status = run_cli("alerts", "status", "--json", env=store_env)
    (alert,) = json.loads(status.stdout)
    assert (alert["rule"], alert["state"], alert["labels"]["mode"]) == (
        "logon-slow",
        "firing",
        "pooled",
    )
    args = ("alerts", "ack", "logon-slow", alert["fingerprint"], "--comment", "DBA on it")
    res = run_cli(*args, "--author", "ann", env=store_env)
    assert res.returncode == 0 and "acknowledged logon-slow" in res.stdout, res.stderr
    with engine.connect() as conn:
        by, why = conn.execute(text("select ack_by, ack_comment from alert_instances")).one()
    assert (by, why) == ("ann", "DBA on it")
    engine.dispose()
