"""Samples survive the spool's compact rows and render as readable JSON without secrets."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from app.agent.output.records import from_row, to_json, to_row
from app.samples import ErrorClass, Sample, SampleStatus


def _sample() -> Sample:
    return Sample(
        series_id=4,
        scheduled_at=datetime(2026, 11, 21, 3, 12, 0, 500000, tzinfo=UTC),
        started_at=datetime(2026, 11, 21, 3, 12, 0, 501234, tzinfo=UTC),
        status=SampleStatus.ERROR,
        total_ns=12_345_678,
        logon_ns=12_000_000,
        round_trips=5,
        logon_phases={"tcp_connect": 100_000, "auth2": 2_000_000},
        error_class=ErrorClass.ORA,
        error_code="ORA-01017",
        error_phase="logon:auth2",
        error_message="invalid credential",
        sid=42,
        instance="FREE",
        agent="a1",
        site="dc1",
        extra={"reconnected": True},
    )


def test_row_round_trip_is_exact() -> None:
    s = _sample()
    row = json.loads(json.dumps(to_row(s)))
    assert from_row(row) == s


def test_json_has_phases_in_ms_and_iso_instants() -> None:
    doc = to_json(_sample())
    assert doc["scheduled_at"] == "2026-11-21T03:12:00.500000+00:00"
    assert doc["status"] == "error" and doc["error_code"] == "ORA-01017"
    assert doc["phases_ms"] == {"logon": 12.0, "total": 12.345678}
    assert doc["logon_phases_ms"] == {"tcp_connect": 0.1, "auth2": 2.0}
    assert doc["sid"] == 42
    json.dumps(doc)  # serialisable as is
