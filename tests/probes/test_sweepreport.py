from __future__ import annotations

from datetime import UTC, datetime

from app.probes.adhoc.sweepreport import sweep_table
from app.samples import Sample, SampleStatus


def test_sweep_table_rows_per_mode_and_level() -> None:
    now = datetime.now(UTC)
    level = {
        "level": 2,
        "logons": 10,
        "errors": 1,
        "throughput_per_s": 123.45,
        "logon_ns": {"p50": 2_500_000, "p90": 4_000_000, "max": 9_000_000, "mean": 3_000_000},
        "logoff_ns": {"p50": 300_000, "p90": 1, "max": 1, "mean": 1},
    }
    s = Sample(None, now, now, SampleStatus.OK, extra={"levels": [level]})
    lines = sweep_table([("shared", s)])
    assert lines[0].split() == [
        "mode",
        "level",
        "logons",
        "errors",
        "logon",
        "p50",
        "p90",
        "max",
        "logoff",
        "p50",
        "logons/s",
    ]
    assert lines[2].split() == ["shared", "2", "10", "1", "2.50", "4.00", "9.00", "0.30", "123.5"]
