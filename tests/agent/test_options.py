"""The agent's tuning knobs: CONNWATCH_AGENT_* settings reach a real agent."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from pydantic import ValidationError
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.agent.options import AgentOptions
from app.agent.service import Agent
from app.config import Settings
from app.samples import Sample, SampleStatus


def test_settings_defaults_are_the_options_defaults() -> None:
    assert AgentOptions.from_settings(Settings()) == AgentOptions()


def test_environment_settings_reach_the_agent_and_its_writer(
    store: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        "CONNWATCH_DATABASE_URL": store.url.render_as_string(hide_password=False),
        "CONNWATCH_DATA_DIR": str(tmp_path),
        "CONNWATCH_SECRET_KEY": Fernet.generate_key().decode(),
        "CONNWATCH_AGENT_MAX_IN_FLIGHT": "9",
        "CONNWATCH_AGENT_LOGONS_PER_S": "50",
        "CONNWATCH_AGENT_TARGET_LOGONS_PER_S": "2.5",
        "CONNWATCH_AGENT_MAX_LATE_S": "0.25",
        "CONNWATCH_AGENT_THICK_THREADS": "3",
        "CONNWATCH_AGENT_WRITE_BATCH": "7",
        "CONNWATCH_AGENT_WRITE_THREADS": "1",
        "CONNWATCH_AGENT_FLUSH_S": "0.05",
        "CONNWATCH_AGENT_RETRY_S": "0.5",
        "CONNWATCH_AGENT_MEMORY_BACKLOG_MAX": "1234",
        "CONNWATCH_AGENT_STOP_GRACE_S": "2",
    }
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    settings = Settings()
    agent = Agent(store, settings)
    opt = agent.opt
    assert (opt.max_in_flight, opt.logons_per_s, opt.target_logons_per_s) == (9, 50.0, 2.5)
    assert (opt.max_grace_s, opt.thick_threads, opt.batch_max) == (0.25, 3, 7)
    assert (opt.write_threads, opt.flush_s, opt.retry_s) == (1, 0.05, 0.5)
    assert (opt.memory_backlog_max, opt.stop_grace_s) == (1234, 2.0)
    assert agent.limiter.max_in_flight == 9 and agent.limiter.buckets.target_rate == 2.5
    assert agent.limiter.buckets.bucket.rate == 50.0
    assert agent.scheduler.max_grace_s == 0.25
    # the writer really batches by the setting: 20 samples at once -> 7 + 7 + 6
    w = agent.writer
    w.start()
    at = datetime.now(UTC).replace(microsecond=0)
    for i in range(20):
        t = at + timedelta(seconds=i)
        w.submit(Sample(1, t, t, SampleStatus.OK, total_ns=1000))
    deadline = time.monotonic() + 10
    while w.written < 20 and time.monotonic() < deadline:
        time.sleep(0.01)
    w.stop()
    assert w.written == 20 and w.batches == 3
    with store.connect() as conn:
        assert conn.execute(text("select count(*) from samples")).scalar_one() == 20


def test_explicit_options_win_over_settings(store: Engine, tmp_path: Path) -> None:
    settings = Settings(
        database_url=store.url.render_as_string(hide_password=False),
        data_dir=tmp_path,
        secret_key=Fernet.generate_key().decode(),
        agent_write_batch=5,
    )
    assert Agent(store, settings, AgentOptions(batch_max=11)).opt.batch_max == 11
    assert Agent(store, settings).opt.batch_max == 5


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CONNWATCH_AGENT_WRITE_THREADS", "0"),
        ("CONNWATCH_AGENT_WRITE_THREADS", "33"),
        ("CONNWATCH_AGENT_WRITE_BATCH", "0"),
        ("CONNWATCH_AGENT_TARGET_LOGONS_PER_S", "0"),
        ("CONNWATCH_AGENT_FLUSH_S", "-1"),
        ("CONNWATCH_AGENT_MAX_IN_FLIGHT", "many"),
    ],
)
def test_out_of_range_agent_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name.removeprefix("CONNWATCH_").lower()):
        Settings()
