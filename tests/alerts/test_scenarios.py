"""Alerting end to end with real components: a real ``connwatch agent`` process (which
also runs the alert service) probes the Oracle Net simulator through python-oracledb;
faults are switched on and off; a real HTTP receiver gets the signed webhooks.
And: a process killed between a firing and its delivery still delivers exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.alerts.rules import RuleSpec, upsert_rule
from app.notify.contacts import ContactPointSpec, upsert_contact_point
from app.samples import ErrorClass
from app.secrets import Vault
from tests.agent.conftest import add_mode, add_series, add_target
from tests.agent.procs import KEY, AgentProcs
from tests.alerts.conftest import bad
from tests.fixtures.oraclesim import OracleSimHandle
from tests.fixtures.receivers import HttpReceiver, free_port, run_http_receiver, wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow
FAST = {
    "CONNWATCH_ALERTS_EVAL_INTERVAL_S": "1",
    "CONNWATCH_ALERTS_LEASE_S": "4",
    "CONNWATCH_NOTIFY_TIMEOUT_S": "2",
    "CONNWATCH_PUBLIC_URL": "http://connwatch.test",
}


def _hook(engine: Engine, url: str, secret: str) -> None:
    with engine.begin() as conn:
        upsert_contact_point(
            conn,
            ContactPointSpec(name="hook", channel="webhook", url=url, secret=secret),
            Vault(KEY.encode()),
        )


def _statuses(receiver: HttpReceiver, rule: str) -> list[str]:
    return [r.json()["status"] for r in receiver.requests if r.json()["group"]["rule"] == rule]


def test_simulator_faults_fire_and_resolve(
    migrated_engine: Engine,
    oraclesim: OracleSimHandle,
    http_receiver: HttpReceiver,
    tmp_path: Path,
) -> None:
    engine = migrated_engine
    with engine.begin() as conn:
        t = add_target(
            conn,
            "sim",
            kind="oracle",
            dsn=f"{oraclesim.host}:{oraclesim.port}/FREEPDB1",
            username="scott",
            password_ref="env:CW_TEST_SIM_PW",
        )
        add_series(conn, add_mode(conn, t, "dedicated"), interval_ms=1000, timeout_ms=1000)
        upsert_rule(
            conn,
            RuleSpec(
                name="sim-logon-slow",
                kind="latency",
                phase="logon",
                percentile="p50",
                window="10s",
                threshold_ms=350,
                clear_ms=200,
                pending="3s",
                contact_points=["hook"],
                group_wait="0s",
            ),
        )
        upsert_rule(
            conn,
            RuleSpec(
                name="sim-refused",
                kind="availability",
                m=3,
                n=5,
                codes=["TNS-125*"],
                contact_points=["hook"],
                group_wait="0s",
            ),
        )
    _hook(engine, f"{http_receiver.url}/cw", http_receiver.secret)
    procs = AgentProcs(tmp_path)
    try:
        procs.start(
            str(engine.url.render_as_string(hide_password=False)),
            "a1",
            env={**FAST, "CW_TEST_SIM_PW": "tiger", "CONNWATCH_SECRET_ENV_PREFIX": "CW_TEST_"},
        )
        with engine.connect() as conn:
            assert wait_until(
                lambda: conn.execute(text("select count(*) from samples")).scalar_one() >= 5, 60
            )
            conn.rollback()
        assert _statuses(http_receiver, "sim-logon-slow") == []

        fault = oraclesim.faults.add("slow", "logon", delay_ms=600)
        assert wait_until(lambda: _statuses(http_receiver, "sim-logon-slow") == ["firing"], 60)
        oraclesim.faults.remove(fault.id)
        assert wait_until(
            lambda: _statuses(http_receiver, "sim-logon-slow") == ["firing", "resolved"], 90
        )

        fault = oraclesim.faults.add("refuse", "accept", code=12520)
        assert wait_until(lambda: _statuses(http_receiver, "sim-refused") == ["firing"], 60)
        oraclesim.faults.remove(fault.id)
        assert wait_until(
            lambda: _statuses(http_receiver, "sim-refused") == ["firing", "resolved"], 60
        )
    finally:
        procs.stop_all()
    assert all(r.signature_ok for r in http_receiver.requests)
    firing = next(
        r.json() for r in http_receiver.requests if r.json()["group"]["rule"] == "sim-refused"
    )
    (alert,) = firing["alerts"]
    assert alert["labels"] == {"target": "sim", "mode": "dedicated", "probe": "connping"}
    assert "TNS-12520" in alert["summary"]
    assert alert["samples_url"].startswith("http://connwatch.test/samples?target=sim")
    # no duplicates: one firing and one resolution per rule, nothing else
    assert len(http_receiver.requests) == 4


def _alerts_process(url: str, tmp: Path, name: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **FAST,
        "CONNWATCH_DATABASE_URL": url,
        "CONNWATCH_DATA_DIR": str(tmp / name),
        "CONNWATCH_SECRET_KEY": KEY,
    }
    log = (tmp / f"{name}.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "alerts", "run"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def test_killed_between_firing_and_delivery_delivers_exactly_once(
    migrated_engine: Engine, tmp_path: Path
) -> None:
    engine = migrated_engine
    from tests.store.conftest import make_target

    with engine.begin() as conn:
        sid = make_target(conn, "db", "oracle", {"dedicated": [("connping", 1000)]})[
            ("dedicated", "connping")
        ]
        upsert_rule(
            conn,
            RuleSpec(
                name="down", kind="availability", m=2, n=3, contact_points=["hook"], group_wait="0s"
            ),
        )
    port = free_port()  # nothing listens yet: the first process cannot deliver
    _hook(engine, f"http://127.0.0.1:{port}/cw", "k")
    from app.store.write.ingest import write_samples

    now = datetime.now(UTC)
    with engine.begin() as conn:
        write_samples(
            conn,
            [bad(sid, now - timedelta(seconds=s), "TNS-12541", ErrorClass.TNS) for s in (1, 2, 3)],
        )
    url = engine.url.render_as_string(hide_password=False)
    first = _alerts_process(url, tmp_path, "first")

    def fired() -> bool:
        with engine.connect() as conn:
            return (
                conn.execute(
                    text("select count(*) from notify_outbox where kind = 'alert'")
                ).scalar_one()
                == 1
            )

    try:
        assert wait_until(fired, 60)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    with engine.connect() as conn:
        status = conn.execute(text("select status from notify_outbox")).scalar_one()
    assert status == "pending"  # the firing is stored, its delivery has not happened
    with run_http_receiver(port) as receiver:
        second = _alerts_process(url, tmp_path, "second")
        try:
            assert wait_until(lambda: len(receiver.requests) >= 1, 90)
            time.sleep(4)  # a few more cycles of the new holder: nothing more is sent
        finally:
            second.terminate()
            second.wait(20)
    assert len(receiver.requests) == 1
    doc = json.loads(receiver.requests[0].body)
    assert doc["status"] == "firing" and doc["group"]["rule"] == "down"
    with engine.connect() as conn:
        assert conn.execute(text("select status from notify_outbox")).scalar_one() == "delivered"
        assert (
            conn.execute(
                text("select count(*) from alert_transitions where to_state = 'firing'")
            ).scalar_one()
            == 1
        )
