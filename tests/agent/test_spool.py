"""The spool: durable appends, replay in order, torn tails dropped, bounded size."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.agent.output.spool import Spool, SpoolFull, encode_frame, read_frames
from app.samples import Sample, SampleStatus

T0 = datetime(2026, 11, 21, tzinfo=UTC)


def batch(start: int, n: int, series: int = 1) -> list[Sample]:
    return [
        Sample(
            series_id=series,
            scheduled_at=T0 + timedelta(seconds=start + i),
            started_at=T0 + timedelta(seconds=start + i, microseconds=300),
            status=SampleStatus.OK,
            total_ns=1000 + i,
        )
        for i in range(n)
    ]


def test_replay_in_order_then_empty(tmp_path: Path) -> None:
    sp = Spool(tmp_path, 10_000_000, segment_bytes=2000)
    for k in range(10):
        sp.append(batch(k * 10, 10))
    assert sp.samples == 100 and len(sp.segments()) > 1
    got: list[Sample] = []
    assert sp.replay(got.extend) == 100
    assert [s.scheduled_at for s in got] == [T0 + timedelta(seconds=i) for i in range(100)]
    assert sp.empty and sp.samples == 0 and sp.bytes == 0


def test_a_new_process_finds_what_the_last_one_spooled(tmp_path: Path) -> None:
    sp = Spool(tmp_path, 10_000_000)
    sp.append(batch(0, 5))
    # no close(): the process "dies" here
    again = Spool(tmp_path, 10_000_000)
    assert again.samples == 5
    got: list[Sample] = []
    again.replay(got.extend)
    assert got == batch(0, 5)


def test_failed_replay_keeps_the_segment_for_next_time(tmp_path: Path) -> None:
    sp = Spool(tmp_path, 10_000_000)
    sp.append(batch(0, 3))
    sp.append(batch(3, 3))

    def boom(_: list[Sample]) -> None:
        raise ConnectionError("store away")

    with pytest.raises(ConnectionError):
        sp.replay(boom)
    assert sp.samples == 6
    got: list[Sample] = []
    sp.replay(got.extend)
    assert len(got) == 6


def test_torn_tail_is_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sp = Spool(tmp_path, 10_000_000)
    sp.append(batch(0, 4))
    sp.append(batch(4, 4))
    sp.close()
    seg = sp.segments()[0]
    data = seg.read_bytes()
    seg.write_bytes(data[:-7])  # the second frame was cut by a crash
    with caplog.at_level(logging.WARNING):
        frames = list(read_frames(seg))
    assert [len(f) for f in frames] == [4]
    assert "incomplete or corrupt frame" in caplog.text


def test_bounded_with_warning_then_full(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    one = len(encode_frame(batch(0, 10)))
    sp = Spool(tmp_path, one * 5, warn_share=0.6)
    with caplog.at_level(logging.WARNING):
        for k in range(5):
            sp.append(batch(k * 10, 10))
    assert "full" in caplog.text and "CONNWATCH_SPOOL_MAX_MB" in caplog.text
    with pytest.raises(SpoolFull, match="spool_max_mb"):
        sp.append(batch(100, 10))
    assert sp.samples == 50
