"""A target added through the form in Chromium, then probed with "test now" by a real agent.

The agent is the real ``connwatch agent`` process on the same store; the target is the
test PostgreSQL itself (trust authentication, so the typed password is simply carried).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from app.demo.pgcluster import PgCluster
from app.samples import logon_phase_key
from tests.fixtures.browser import LiveServer, migrated_database, serve_app
from tests.fixtures.oraclesim import OracleSimHandle

pytestmark = pytest.mark.browser
ROOT = Path(__file__).resolve().parents[2]
TYPED_PW = "typed-Secret-for-pg-77"


@pytest.fixture(scope="module")
def server(pg_cluster: PgCluster, live_key: str) -> Iterator[LiveServer]:
    with serve_app(migrated_database(pg_cluster, "testnow_"), live_key) as s:
        yield s


@pytest.fixture(scope="module")
def agent(server: LiveServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    data_dir = tmp_path_factory.mktemp("agent")
    log_path = data_dir / "agent.log"
    env = {
        **os.environ,
        "CONNWATCH_DATABASE_URL": server.db_url,
        "CONNWATCH_DATA_DIR": str(data_dir),
        "CONNWATCH_SECRET_KEY": server.key,
        "CONNWATCH_AGENT_NAME": "browser-test-agent",
        "CONNWATCH_LOG_LEVEL": "INFO",
    }
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "agent"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            with server.engine.connect() as conn:
                up = conn.execute(
                    text("select count(*) from agents where name = 'browser-test-agent'")
                ).scalar_one()
            if up:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the agent did not start:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        yield log_path
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_add_a_target_in_the_form_and_test_it_now(
    server: LiveServer, agent: Path, page: Any, pg_cluster: PgCluster
) -> None:
    dbname = make_url(server.db_url).database
    server.login(page, "operator")
    page.goto(server.url + "/targets/new?kind=postgres")
    page.fill("#f-name", "pg-local")
    page.fill("#f-dsn", f"127.0.0.1:{pg_cluster.port}/{dbname}")
    page.fill("#f-username", pg_cluster.user)
    page.fill("#f-password", TYPED_PW)
    for label in ("unix", "pgbouncer_session", "pgbouncer_transaction"):
        page.get_by_label(f"monitor {label}").uncheck()
    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/targets/pg-local/edit?saved=1")
    assert TYPED_PW not in page.content()
    assert page.locator("#f-password").input_value() == ""

    page.get_by_role("button", name="Test direct").click()
    page.wait_for_selector("[data-probe-request][data-status=done]", timeout=30000)
    result = page.locator("#probe-result").inner_text()
    assert result.startswith("ok")
    for phase in ("logon", "ping", "query", "logoff", "server_type"):
        assert phase in result, phase
    assert TYPED_PW not in page.content()
    assert page.console_errors == []
    assert TYPED_PW not in agent.read_text()


def test_an_oracle_target_shows_its_round_trips(
    server: LiveServer, agent: Path, page: Any, oraclesim: OracleSimHandle
) -> None:
    server.login(page, "operator")
    page.goto(server.url + "/targets/new?kind=oracle")
    page.fill("#f-name", "sim-freepdb1")
    page.fill("#f-dsn", f"{oraclesim.host}:{oraclesim.port}/FREEPDB1")
    page.fill("#f-username", "scott")
    page.fill("#f-password", "tiger")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/targets/sim-freepdb1/edit?saved=1")
    page.get_by_role("button", name="Test shared").click()
    page.wait_for_selector("[data-probe-request][data-status=done]", timeout=30000)
    result = page.locator("#probe-result").inner_text()
    assert "round trips" in result
    rows = dict(
        (r.split("\t")[0].strip(), r.split("\t")[-1].strip())
        for r in page.locator("#probe-result tr").all_inner_texts()
    )
    assert int(rows["round trips"]) > 0
    assert rows["server_type"] == "SHARED"
    # the logon's round trips, numbered in wire order (tcp_connect first, auth last)
    trips = [k.split(". ", 1)[1] for k in rows if re.match(r"logon \d+\. ", k)]
    assert trips and trips[0] == "tcp_connect", rows
    assert trips == sorted(trips, key=logon_phase_key)
    assert trips[-1].startswith("auth")
    assert "tiger" not in page.content()
    assert page.console_errors == []
